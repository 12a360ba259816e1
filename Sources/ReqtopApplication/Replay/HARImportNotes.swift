import Foundation
import RequestArchive

extension HARImport.Result {
    /// Says once, on stderr, what the import read otherwise than the file wrote it.
    package func sayHowRead(_ file: String) {
        for shape in otherShapes {
            // Cookies go back out as given (values redacted); anything else reads as absent.
            let kept = shape.path.hasSuffix("cookies") ? "kept as given for export, values redacted" : "read as absent"
            ErrorOutput.print("reqtop: \(file): \(shape.path) is \(shape.found) in \(shape.entries) entr\(shape.entries == 1 ? "y" : "ies"), not as HAR 1.2 shapes it; "
                                  + "not needed to replay \(shape.entries == 1 ? "it" : "them"): \(kept)")
        }
        guard multiValuedHeaders > 0 else { return }
        ErrorOutput.print("reqtop: \(file): \(multiValuedHeaders) entr\(multiValuedHeaders == 1 ? "y gives" : "ies give") a header's value as an array of strings; "
                              + "read as that header repeated, its values joined with \", \" as a live response's are")
    }
}
