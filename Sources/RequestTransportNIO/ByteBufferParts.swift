import NIOCore
import RequestOperations

/// `BodyParts` whose parts are NIO buffers already (a proxy client's upload, as its
/// connection read it): the transport takes them as they are and writes them on, where the
/// engine's lent bytes (`BodyPart.bytes`) must be copied into a buffer of their own — a copy
/// of every byte uploaded, a tenth of the proxy's CPU moving 1 GiB up.
public protocol ByteBufferParts: BodyParts {
    /// Asks for the next part, as `BodyParts.nextPart(maxLength:_:)` does (one ask at a
    /// time; `deliver` called once, at once or later), giving the buffer itself: it may be
    /// kept, and shares storage with what the source read (at most `maxLength` bytes).
    func nextBuffer(maxLength: Int, _ deliver: @escaping @Sendable (ByteBufferPart) -> Void)
}

/// What ``ByteBufferParts/nextBuffer(maxLength:_:)`` delivers.
public enum ByteBufferPart: Sendable {
    /// The next bytes.
    case buffer(ByteBuffer)
    /// The body ended whole.
    case end
    /// The body will not end whole (its source went away).
    case failed(any Error)
}
