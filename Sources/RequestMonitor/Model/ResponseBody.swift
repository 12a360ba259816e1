import Foundation
import RequestOperations

/// An answer's body as the `responseBody` event carried it: up to the cap, its whole size,
/// whether it was cut, and its media type.
public struct ResponseBody: Sendable, Equatable {
    /// The attempt that got it.
    public var attempt: Int
    public var body: RecordedBody
    public var totalBytes: Int
    public var truncated: Bool
    public var mediaType: String?

    public init(attempt: Int, body: RecordedBody, totalBytes: Int, truncated: Bool, mediaType: String?) {
        self.attempt = attempt
        self.body = body
        self.totalBytes = totalBytes
        self.truncated = truncated
        self.mediaType = mediaType
    }

    /// The bytes carried (nil when the body was left out).
    public var data: Data? {
        if case .bytes(let data) = body { data } else { nil }
    }
}

extension RecordedBody {
    /// Whether it was left out (only its size and why are known).
    var isOmitted: Bool {
        if case .omitted = self { true } else { false }
    }
}
