import Foundation
import HTTPTypes
import Synchronization

/// A successful answer's body as it arrives, for a program that processes as it reads
/// (``RequestQueue/stream(for:id:options:bufferSize:)``): an `AsyncSequence` of the parts the transport
/// received, held in a small buffer. When the buffer is full a transport that can wait (NIO)
/// reads no more from the connection until the reader takes what it holds — the memory stays
/// flat however large the body and however slow the reader: at most twice ``capacity`` (the
/// buffer, and the parts the reader took and has not read yet). The URLSession transport cannot be
/// told to wait: there a reader that falls more than ``RequestOptions/maxResponseBytes``
/// behind ends the request with -1103.
///
/// The sequence ends when the body did; it throws ``RequestError`` when the request failed
/// after the body began (a part already read is never sent again: such a failure is not
/// retried). A reader that stops early (breaks out of its loop, or its Task is cancelled)
/// cancels the request.
public final class ResponseBodyStream: AsyncSequence, Sendable {
    public typealias Element = Data

    /// Bytes the buffer holds before it asks the transport to wait.
    public let capacity: Int
    private let state = Mutex(Buffer())
    /// Cancels the request (set once the operation exists).
    private let cancelRequest = Mutex<(@Sendable () -> Void)?>(nil)

    private struct Buffer {
        var parts: [Data] = []
        var bytes = 0
        /// Set once: the body ended whole (nil error) or the request failed.
        var end: End?
        var reader: CheckedContinuation<[Data], Error>?
        /// The transport waiting for room.
        var onRoom: (@Sendable () -> Void)?
        /// The waiting reader is to be woken later (`push`'s `wakeLater`).
        var wakePending = false
        var head: HeadState = .waiting([])
    }

    enum End {
        case whole
        case failed(Error)

        var error: Error? {
            if case .failed(let error) = self { return error }
            return nil
        }
    }

    /// The answer's status and headers.
    struct Head {
        let status: Int
        let headers: [String: String]
        let repeated: [String: [String]]
    }

    /// The answer's status and headers: what ``RequestQueue/stream(for:id:options:bufferSize:)`` returns with.
    enum HeadState {
        case waiting([CheckedContinuation<Head, Error>])
        case arrived(Head)
        case failed(Error)
    }

    /// ``RequestQueue/stream(for:id:options:bufferSize:)``'s default buffer: 4 MiB. At 1 MiB
    /// the connection paused and resumed every few parts (a loopback download ran at 0.3 of
    /// raw AsyncHTTPClient's rate, measured before the reader took parts in batches); at
    /// 4 MiB 0.69–0.83 (docs/benchmarks.md).
    public static let defaultCapacity = 4 << 20

    init(capacity: Int = ResponseBodyStream.defaultCapacity) {
        self.capacity = Swift.max(1, capacity)
    }

    func onCancel(_ cancel: @escaping @Sendable () -> Void) {
        cancelRequest.withLock { $0 = cancel }
    }

    // MARK: - The engine's side

    /// The answer the body belongs to arrived: the caller waiting for it goes on.
    func deliverHead(status: Int, headers: [String: String], repeated: [String: [String]] = [:], fields: HTTPFields? = nil) {
        let waiting = state.withLock { state -> [CheckedContinuation<Head, Error>] in
            guard case .waiting(let waiting) = state.head else { return [] }
            state.head = .arrived(Head(status: status, headers: headers, repeated: repeated))
            return waiting
        }
        let head = Head(status: status, headers: headers, repeated: repeated)
        waiting.forEach { $0.resume(returning: head) }
    }

    /// Runs the work it is given later, once the transport delivered what it has read now.
    typealias WakeScheduler = @Sendable (_ work: @escaping @Sendable () -> Void) -> Void

    /// A part of the body. False when the buffer is now full: a transport that can wait
    /// reads no more until `whenRoom` is called (once). `wakeLater`: a reader waiting for
    /// parts is woken through it rather than at once, so the parts a transport delivers in one
    /// turn reach the reader together — one thread hop for them all (NIO: at the end of the
    /// event loop's turn; AsyncHTTPClient's own async body wakes its reader the same way).
    func push(_ data: Data, whenRoom: (@Sendable () -> Void)? = nil, wakeLater: WakeScheduler? = nil) -> Bool {
        let (reader, parts, full, scheduleWake) = state.withLock { state -> (CheckedContinuation<[Data], Error>?, [Data], Bool, Bool) in
            guard state.end == nil else { return (nil, [], false, false) }
            if let reader = state.reader, wakeLater == nil {
                let parts = state.parts + [data]
                (state.reader, state.parts, state.bytes) = (nil, [], 0)
                return (reader, parts, false, false)
            }
            state.parts.append(data)
            state.bytes += data.count
            let full = state.bytes >= capacity
            if full { state.onRoom = whenRoom }
            let scheduleWake = state.reader != nil && !state.wakePending
            if scheduleWake { state.wakePending = true }
            return (nil, [], full, scheduleWake)
        }
        reader?.resume(returning: parts)
        if scheduleWake, let wakeLater { wakeLater { self.wakeReader() } }
        return !full
    }

    /// Hands the waiting reader every part buffered since it was scheduled.
    private func wakeReader() {
        let (reader, parts, room) = state.withLock { state -> (CheckedContinuation<[Data], Error>?, [Data], (@Sendable () -> Void)?) in
            state.wakePending = false
            guard let reader = state.reader, !state.parts.isEmpty else { return (nil, [], nil) }
            let taken = (reader, state.parts, state.onRoom)
            (state.reader, state.parts, state.bytes, state.onRoom) = (nil, [], 0, nil)
            return taken
        }
        room?()
        reader?.resume(returning: parts)
    }

    /// Bytes read from the transport and not yet taken by the reader.
    var buffered: Int { state.withLock { $0.bytes } }

    /// The reader is suspended, waiting for parts (for tests).
    var readerIsWaiting: Bool { state.withLock { $0.reader != nil } }

    /// The body ended whole, or the request failed: the reader, and a caller still waiting
    /// for the answer, are told. Never called under the operation's lock: telling the
    /// transport there is room may run its reading at once.
    func finish(_ end: End) {
        typealias HeadWaiter = CheckedContinuation<Head, Error>
        typealias Reader = (CheckedContinuation<[Data], Error>, [Data])
        let (reader, waiting, room) = state.withLock { state -> (Reader?, [HeadWaiter], (@Sendable () -> Void)?) in
            guard state.end == nil else { return (nil, [], nil) }
            state.end = end
            var waiting: [HeadWaiter] = []
            if case .waiting(let list) = state.head {
                waiting = list
                state.head = .failed(end.error ?? CancellationError())
            }
            // A reader woken later (see `push`) may be waiting with parts already buffered:
            // it gets them now, and the end on its next call.
            let (reader, parts, room) = (state.reader, state.parts, state.onRoom)
            (state.reader, state.onRoom) = (nil, nil)
            if reader != nil { (state.parts, state.bytes) = ([], 0) }
            return (reader.map { ($0, parts) }, waiting, room)
        }
        room?()
        if let (reader, parts) = reader {
            if !parts.isEmpty {
                reader.resume(returning: parts)
            } else if let error = end.error {
                reader.resume(throwing: error)
            } else {
                reader.resume(returning: [])
            }
        }
        waiting.forEach { $0.resume(throwing: end.error ?? CancellationError()) }
    }

    /// Waits for the answer's status and headers; throws when the request ended without one.
    func head() async throws -> Head {
        try await withCheckedThrowingContinuation { continuation in
            let now = state.withLock { state -> Result<Head, Error>? in
                switch state.head {
                case .arrived(let head): return .success(head)
                case .failed(let error): return .failure(error)
                case .waiting(var list):
                    list.append(continuation)
                    state.head = .waiting(list)
                    return nil
                }
            }
            if let now { continuation.resume(with: now) }
        }
    }

    // MARK: - The reader's side

    /// Every part buffered now, or (when none) waits for the next. The reader takes them all
    /// in one step — one lock, at most one suspension — and reads them from its iterator: a
    /// step per part cost a continuation and a hop between threads for each 64 KiB.
    /// Empty at the end of the body.
    fileprivate func nextParts() async throws -> [Data] {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<[Data], Error>) in
                let (answer, room) = state.withLock { state -> (Result<[Data], Error>?, (@Sendable () -> Void)?) in
                    if !state.parts.isEmpty {
                        // All taken: the transport may read on (the reader holds what it
                        // took, so the stream holds at most twice its capacity).
                        let parts = state.parts
                        let room = state.onRoom
                        (state.parts, state.bytes, state.onRoom) = ([], 0, nil)
                        return (.success(parts), room)
                    }
                    if let end = state.end { return (end.error.map { .failure($0) } ?? .success([]), nil) }
                    state.reader = continuation
                    return (nil, nil)
                }
                room?()
                if let answer { continuation.resume(with: answer) }
            }
        } onCancel: {
            stop()
        }
    }

    /// The reader stopped before the end: the request is cancelled.
    fileprivate func stop() {
        let ended = state.withLock { $0.end != nil }
        guard !ended else { return }
        cancelRequest.withLock { $0 }?()
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        let stream: ResponseBodyStream
        /// Tells the stream when the last copy of the iterator goes without reading to the end.
        private let watch: ReaderWatch
        /// Parts taken from the stream and not yet returned, from `taken`'s index on.
        private var taken: [Data] = []
        private var index = 0

        init(stream: ResponseBodyStream) {
            self.stream = stream
            watch = ReaderWatch(stream: stream)
        }

        public mutating func next() async throws -> Data? {
            if index == taken.count {
                (taken, index) = (try await stream.nextParts(), 0)
                if taken.isEmpty { return nil }
            }
            let part = taken[index]
            taken[index] = Data()  // not kept once read
            index += 1
            return part
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(stream: self)
    }

    /// Cancels the request when the reader's iterator is dropped before the body ended (a
    /// `break` out of `for try await`).
    private final class ReaderWatch: Sendable {
        let stream: ResponseBodyStream
        init(stream: ResponseBodyStream) { self.stream = stream }
        deinit { stream.stop() }
    }
}

/// What ``RequestQueue/stream(for:id:options:bufferSize:)`` returns once a successful answer began.
public struct StreamedResponse: Sendable {
    public let status: Int
    public let headers: [String: String]
    /// Each value of a header the server sent more than once, in order (``headers`` joins
    /// them with ", "); empty when none was, or the transport does not tell (URLSession).
    public let repeatedHeaders: [String: [String]]
    /// The body, part by part as it arrives.
    public let body: ResponseBodyStream
    /// The operation: its ``RequestOperation/finished`` result (attempts, timings) once the
    /// body ended.
    public let operation: RequestOperation
}
