import Foundation

extension Dictionary where Key == String, Value == String {
    /// The value of header `name`, compared without regard to case (`content-type` finds
    /// `Content-Type`): the one lookup the engine, the redactor and the archive share.
    public func value(forHTTPHeader name: String) -> String? {
        first { $0.key.caseInsensitiveCompare(name) == .orderedSame }?.value
    }
}
