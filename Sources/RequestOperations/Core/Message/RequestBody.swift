import Foundation
import Synchronization

/// What a ``RequestMessage`` sends after its head.
public enum RequestBody: Sendable {
    /// No body.
    case none
    /// Bytes in memory, sent whole (and again on a retry or a 307/308).
    case data(Data)
    /// Bytes read as they are sent, once (``BodyStream``): a body file's, a caller's
    /// `httpBodyStream`, a proxy's client's upload.
    case stream(BodyStream)

    /// The bytes, when the body is in memory.
    public var data: Data? {
        if case .data(let data) = self { return data }
        return nil
    }

    /// The stream, when the body is one.
    public var stream: BodyStream? {
        if case .stream(let stream) = self { return stream }
        return nil
    }

    /// Its length when it can be known before it is sent (a stream's is not).
    public var knownLength: Int? {
        switch self {
        case .none: 0
        case .data(let data): data.count
        case .stream: nil
        }
    }
}

/// A body read once as it is sent: an `InputStream` handed to the one transport task that
/// reads it (Foundation's streams are not `Sendable`, so it is taken out under a lock, once),
/// and, when the stream can hand its parts over without a thread waiting for them (a proxy's
/// upload, ``BodyPartsStream``), those parts.
public final class BodyStream: Sendable {
    /// The stream until a transport took it.
    private let held: Mutex<InputStream?>
    /// The stream's parts, for a transport that asks for them rather than read (NIO's).
    public let parts: (any BodyParts)?

    public init(_ stream: sending InputStream) {
        parts = (stream as? any BodyPartsStream)?.bodyParts
        held = Mutex(stream)
    }

    /// The stream, for the one reader that sends it; nil once taken (a stream is read once:
    /// an attempt that would send it again has nothing to send).
    public func take() -> InputStream? {
        held.withLock { $0.take() }
    }

    /// Whether a transport took the stream already (it has nothing more to send).
    public var wasTaken: Bool {
        held.withLock { $0 == nil }
    }
}
