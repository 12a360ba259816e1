import Foundation
import HTTPTypes
import NIOCore
import RequestOperations
import RequestTransportNIO

/// A client's request body as it arrives, handed to the upstream leg as the request's
/// body (``BodyStream``). The NIO transport asks for its parts as ``BodyParts`` and is answered
/// when they come, so no thread waits on the client's socket; a transport that reads it as an
/// `InputStream` waits in `read` (URLSession's, on a thread of its own). When ``capacity``
/// bytes wait unread, ``append(_:whenRoom:)`` says so and the proxy stops reading from the
/// client until `whenRoom` is called: the slow side holds the fast one back.
///
/// The stream itself is only the `InputStream` face of its ``UploadBuffer`` (Foundation's
/// streams are not `Sendable`); the proxy and the NIO transport hold the buffer.
final class UploadStream: InputStream, BodyPartsStream {
    let buffer: UploadBuffer
    var bodyParts: any BodyParts { buffer }

    /// - Parameter keeping: bytes of the body's start kept for the events (the queue's body limit).
    init(capacity: Int = 1 << 20, keeping: Int = 0) {
        buffer = UploadBuffer(capacity: capacity, keeping: keeping)
        super.init(data: Data())
    }

    override func open() { buffer.open() }
    override func close() { buffer.close() }
    override var streamStatus: Stream.Status { buffer.streamStatus }
    override var streamError: Error? { buffer.streamError }
    override var hasBytesAvailable: Bool { buffer.hasBytesAvailable }
    override func read(_ bytes: UnsafeMutablePointer<UInt8>, maxLength length: Int) -> Int {
        buffer.read(bytes, maxLength: length)
    }
}

/// An upload's parts between the client's event loop and the upstream leg.
///
/// `@unchecked Sendable`: used from the client's event loop (appends) and the transport's
/// threads (reads); every field below is read and written only under `condition`.
final class UploadBuffer: ByteBufferParts, @unchecked Sendable {
    let capacity: Int
    private let condition = NSCondition()
    private var parts: [ByteBuffer] = []
    private var buffered = 0
    private var ended = false
    private var failure: Error?
    private var status: Stream.Status = .notOpen
    /// Set while the client is held back; called once when the reader made room.
    private var onRoom: (@Sendable () -> Void)?
    /// An ask of ``nextBuffer(maxLength:_:)`` (or ``nextPart(maxLength:_:)``) waiting for a part.
    private var waiting: (maxLength: Int, deliver: @Sendable (ByteBufferPart) -> Void)?
    /// The body's first ``keepLimit`` bytes and how many came in all, for the `requestBody`
    /// event: a streamed upload is seen as it went, and no more than the limit is held.
    private let keepLimit: Int
    private var kept = Data()
    private var received = 0
    /// The client's trailers, given with the end (``finish(_:trailers:)``).
    private var endedWith: HTTPFields?

    init(capacity: Int, keeping keepLimit: Int = 0) {
        self.capacity = capacity
        self.keepLimit = max(0, keepLimit)
    }

    var keptForEvents: (prefix: Data, total: Int)? {
        condition.lock()
        defer { condition.unlock() }
        return keepLimit > 0 ? (kept, received) : nil
    }

    var trailers: HTTPFields? {
        condition.lock()
        defer { condition.unlock() }
        return endedWith
    }

    // MARK: - The client's side (the event loop)

    /// A part of the body. False when the stream is full: read no more from the client until
    /// `whenRoom` is called.
    func append(_ part: ByteBuffer, whenRoom: @escaping @Sendable () -> Void) -> Bool {
        condition.lock()
        guard !ended, status != .closed else {
            condition.unlock()
            return true
        }
        parts.append(part)
        buffered += part.readableBytes
        received += part.readableBytes
        if kept.count < keepLimit {
            let room = keepLimit - kept.count
            part.withUnsafeReadableBytes { kept.append(contentsOf: $0.prefix(room)) }
        }
        condition.broadcast()
        let answer = takeForWaitingAsk()
        let full = buffered >= capacity
        if full { onRoom = whenRoom }
        condition.unlock()
        answer?()
        return !full
    }

    /// The body ended whole (nil) or the client went away (the read fails).
    func finish(_ error: Error? = nil, trailers: HTTPFields? = nil) {
        condition.lock()
        if !ended { (ended, failure, endedWith) = (true, error, trailers) }
        let room = onRoom
        onRoom = nil
        condition.broadcast()
        let answer = takeForWaitingAsk()
        condition.unlock()
        answer?()
        room?()
    }

    // MARK: - Read without waiting (BodyParts)

    func nextPart(maxLength: Int, _ deliver: @escaping @Sendable (BodyPart) -> Void) {
        nextBuffer(maxLength: maxLength) { part in
            switch part {
            case .buffer(let slice): slice.withUnsafeReadableBytes { deliver(.bytes($0)) }
            case .end: deliver(.end)
            case .failed(let error): deliver(.failed(error))
            }
        }
    }

    /// The next part as the client's connection read it (a slice of its buffer, no copy).
    func nextBuffer(maxLength: Int, _ deliver: @escaping @Sendable (ByteBufferPart) -> Void) {
        condition.lock()
        waiting = (maxLength, deliver)
        let answer = takeForWaitingAsk()
        condition.unlock()
        answer?()
    }

    func stopReading() {
        condition.lock()
        waiting = nil
        condition.unlock()
        close()
    }

    /// The waiting ask's answer, taken from what the body holds (under the lock), to be called
    /// after it: a part, the end or the failure; nil while there is nothing to give.
    private func takeForWaitingAsk() -> (() -> Void)? {
        guard let ask = waiting else { return nil }
        if let first = parts.first {
            var part = first
            let slice = part.readSlice(length: min(ask.maxLength, part.readableBytes)) ?? ByteBuffer()
            if part.readableBytes == 0 { parts.removeFirst() } else { parts[0] = part }
            buffered -= slice.readableBytes
            waiting = nil
            let room = madeRoom()
            return {
                ask.deliver(.buffer(slice))
                room?()
            }
        }
        guard ended || status == .closed else { return nil }
        waiting = nil
        let failure = self.failure
        return { ask.deliver(failure.map { ByteBufferPart.failed($0) } ?? ByteBufferPart.end) }
    }

    /// The client's resumption, once less than half of ``capacity`` waits (under the lock).
    private func madeRoom() -> (@Sendable () -> Void)? {
        guard buffered < capacity / 2, let room = onRoom else { return nil }
        onRoom = nil
        return room
    }

    // MARK: - Read as an InputStream (a thread that may wait)

    func open() {
        condition.lock()
        if status == .notOpen { status = .open }
        condition.unlock()
    }

    func close() {
        condition.lock()
        status = .closed
        (parts, buffered) = ([], 0)
        let room = onRoom
        onRoom = nil
        condition.broadcast()
        condition.unlock()
        // Nobody reads any more: the client is let go on (what it sends is dropped).
        room?()
    }

    var streamStatus: Stream.Status {
        condition.lock()
        defer { condition.unlock() }
        if status == .open, ended, parts.isEmpty { return failure == nil ? .atEnd : .error }
        return status
    }

    var streamError: Error? {
        condition.lock()
        defer { condition.unlock() }
        return failure
    }

    var hasBytesAvailable: Bool {
        condition.lock()
        defer { condition.unlock() }
        return !parts.isEmpty || !ended
    }

    /// Waits for a part (or the end), then copies up to `length` bytes: 0 at the end, -1 when
    /// the client went away mid-body.
    func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength length: Int) -> Int {
        condition.lock()
        while parts.isEmpty, !ended, status != .closed { condition.wait() }
        guard !parts.isEmpty else {
            let result = failure == nil ? 0 : -1
            condition.unlock()
            return result
        }
        var copied = 0
        while copied < length, !parts.isEmpty {
            let taken = parts[0].readWithUnsafeReadableBytes { bytes in
                let count = min(bytes.count, length - copied)
                (buffer + copied).update(from: bytes.bindMemory(to: UInt8.self).baseAddress!, count: count)
                return count
            }
            copied += taken
            if parts[0].readableBytes == 0 { parts.removeFirst() }
        }
        buffered -= copied
        let room = madeRoom()
        condition.unlock()
        room?()
        return copied
    }
}
