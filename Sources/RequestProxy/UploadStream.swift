import Foundation
import NIOCore

/// A client's request body as it arrives, handed to the upstream leg as the request's
/// `httpBodyStream`: the NIO transport reads it on a thread of its own (a read blocks until a
/// part or the end comes), so a body of any size passes in a few parts of memory. When
/// ``capacity`` bytes wait unread, ``append(_:)`` says so and the proxy stops reading from
/// the client until `onRoom` is called: the slow side holds the fast one back.
///
/// Used from two threads (the event loop appends, the transport's reader reads): every field
/// below is read and written only under `condition`.
final class UploadStream: InputStream {
    let capacity: Int
    private let condition = NSCondition()
    private var parts: [ByteBuffer] = []
    private var buffered = 0
    private var ended = false
    private var failure: Error?
    private var status: Stream.Status = .notOpen
    /// Set while the client is held back; called once when the reader made room.
    private var onRoom: (@Sendable () -> Void)?

    init(capacity: Int = 1 << 20) {
        self.capacity = capacity
        super.init(data: Data())
    }

    // MARK: - The client's side (the event loop)

    /// A part of the body. False when the stream is full: read no more from the client until
    /// `whenRoom` is called.
    func append(_ part: ByteBuffer, whenRoom: @escaping @Sendable () -> Void) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !ended, status != .closed else { return true }
        parts.append(part)
        buffered += part.readableBytes
        condition.broadcast()
        guard buffered >= capacity else { return true }
        onRoom = whenRoom
        return false
    }

    /// The body ended whole (nil) or the client went away (the read fails).
    func finish(_ error: Error? = nil) {
        condition.lock()
        if !ended { (ended, failure) = (true, error) }
        let room = onRoom
        onRoom = nil
        condition.broadcast()
        condition.unlock()
        room?()
    }

    // MARK: - The transport's side (a thread of its own)

    override func open() {
        condition.lock()
        if status == .notOpen { status = .open }
        condition.unlock()
    }

    override func close() {
        condition.lock()
        status = .closed
        (parts, buffered) = ([], 0)
        let room = onRoom
        onRoom = nil
        condition.unlock()
        // Nobody reads any more: the client is let go on (what it sends is dropped).
        room?()
    }

    override var streamStatus: Stream.Status {
        condition.lock()
        defer { condition.unlock() }
        if status == .open, ended, parts.isEmpty { return failure == nil ? .atEnd : .error }
        return status
    }

    override var streamError: Error? {
        condition.lock()
        defer { condition.unlock() }
        return failure
    }

    override var hasBytesAvailable: Bool {
        condition.lock()
        defer { condition.unlock() }
        return !parts.isEmpty || !ended
    }

    /// Waits for a part (or the end), then copies up to `length` bytes: 0 at the end, -1 when
    /// the client went away mid-body.
    override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength length: Int) -> Int {
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
        var room: (@Sendable () -> Void)?
        if buffered < capacity / 2 { (room, onRoom) = (onRoom, nil) }
        condition.unlock()
        room?()
        return copied
    }
}
