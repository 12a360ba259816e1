import Foundation

/// A problem with an archive file: which file, and what (with the line, when known).
public struct ArchiveError: Error, Equatable, CustomStringConvertible {
    public var file: String
    public var message: String

    public init(file: String, message: String) {
        self.file = file
        self.message = message
    }

    public var description: String { "\(file): \(message)" }

    /// A file's bytes, or an error that names it (see ``InputFile``).
    static func contents(of path: String) throws -> Data {
        try InputFile.read(path)
    }

    /// Why a file could not be read, in a few plain words ("no such file", "permission
    /// denied"): Foundation's own text on Linux is "The operation could not be completed".
    public static func describe(readError error: Error) -> String {
        let nsError = error as NSError
        if let underlying = nsError.userInfo[NSUnderlyingErrorKey] as? NSError, underlying.domain == NSPOSIXErrorDomain,
           let message = strerror(Int32(underlying.code)) {
            return String(cString: message)
        }
        switch nsError.code {
        case NSFileReadNoSuchFileError: return "no such file"
        case NSFileReadNoPermissionError: return "permission denied"
        default: return nsError.localizedDescription
        }
    }
}
