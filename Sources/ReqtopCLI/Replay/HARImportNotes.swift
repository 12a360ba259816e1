import Foundation
import RequestArchive

extension HARImport.Result {
    /// Says once, on stderr, what the import read otherwise than the file wrote it.
    func sayHowRead(_ file: String) {
        guard multiValuedHeaders > 0 else { return }
        ReqtopMain.printError("reqtop: \(file): \(multiValuedHeaders) entr\(multiValuedHeaders == 1 ? "y gives" : "ies give") a header's value as an array of strings; "
                              + "read as that header repeated, its values joined with \", \" as a live response's are")
    }
}
