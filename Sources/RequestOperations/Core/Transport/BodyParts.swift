import Foundation
import HTTPTypes

/// A request body that hands its parts over as they come, with no thread waiting for them.
///
/// A stream set as a request's `httpBodyStream` may also have such parts (``BodyPartsStream``); a transport that
/// can (NIO's) then reads it here, and one that cannot (URLSession's, which reads on a
/// thread of its own) through `InputStream.read`, which waits. The proxy's uploads are such
/// streams: their bytes come from a client's socket, and a thread parked on a read that only
/// an event loop can satisfy once deadlocked that loop (a streamed upload whose upstream
/// answered early and closed).
public protocol BodyParts: AnyObject, Sendable {
    /// Asks for the next part. `deliver` is called once: at once, on this thread, when a part
    /// waits; otherwise later, on the thread that brings it. Its bytes (at most `maxLength`)
    /// are lent for the call only: copy what you keep. One ask at a time.
    func nextPart(maxLength: Int, _ deliver: @escaping @Sendable (BodyPart) -> Void)
    /// No more parts are wanted (the request ended, or failed): an ask still waiting is
    /// dropped, what the body holds let go, and its source no longer held back.
    func stopReading()
    /// The body's first bytes as they were handed over, up to the limit it was made with, and
    /// how many were handed over in all: the `requestBody` event's (a proxy's client's upload
    /// is seen as it went). Nil when the body keeps none. Optional: nil by default.
    var keptForEvents: (prefix: Data, total: Int)? { get }
    /// The fields the body's source sent after it (a proxy's client's trailers), once it
    /// ended whole; a transport that can send trailers sends them after the body, and the
    /// `trailers` event shows them. Optional: nil by default.
    var trailers: HTTPFields? { get }
}

extension BodyParts {
    public var keptForEvents: (prefix: Data, total: Int)? { nil }
    public var trailers: HTTPFields? { nil }
}

/// What ``BodyParts/nextPart(maxLength:_:)`` delivers.
public enum BodyPart {
    /// The next bytes, lent for the call.
    case bytes(UnsafeRawBufferPointer)
    /// The body ended whole.
    case end
    /// The body will not end whole (its source went away).
    case failed(any Error)
}

/// An `InputStream` whose bytes can also be had as ``BodyParts`` (Foundation's streams are
/// not `Sendable`; the parts are).
public protocol BodyPartsStream: AnyObject, SendableMetatype {
    var bodyParts: any BodyParts { get }
}
