import AsyncHTTPClient
import NIOCore
import NIOPosix
import RequestOperations
import Synchronization

/// A request body from ``BodyParts`` (a proxy client's upload), sent as its parts come: each
/// is asked for, and delivered when it is there, so no thread waits on the source. Up to
/// ``StreamedBody/window`` parts are written ahead of the socket, as for a stream. Parts
/// that are NIO buffers already (``ByteBufferParts``) are written as they are.
final class PartsBody: Sendable {
    /// The most asked of ``ByteBufferParts`` at once: their parts are in memory already (as
    /// the source read them, up to 1 MiB), and slicing them to ``StreamedBody/partSize``
    /// only made sixteen writes of one read.
    static let partSize = 1 << 20
    private let parts: any BodyParts
    /// `parts` when they are NIO buffers already (asked once, not at every part).
    private let buffers: (any ByteBufferParts)?
    private let pump = Mutex(Pump())
    private let writer: HTTPClient.Body.StreamWriter
    private let done: EventLoopPromise<Void>

    private struct Pump {
        var inFlight = 0
        /// An ask is out, not answered yet.
        var asking = false
        /// The body's end was delivered.
        var ended = false
        /// `done` was completed (succeeded or failed): nothing more is asked or written.
        var completed = false
    }

    private init(parts: any BodyParts, writer: HTTPClient.Body.StreamWriter, done: EventLoopPromise<Void>) {
        self.parts = parts
        buffers = parts as? any ByteBufferParts
        self.writer = writer
        self.done = done
    }

    /// AsyncHTTPClient's body for `parts`, `length` bytes long when known (chunked when not).
    static func body(_ parts: any BodyParts, length: Int64?) -> HTTPClient.Body {
        let once = Mutex<(any BodyParts)?>(parts)
        return .stream(contentLength: length) { writer in
            let done = MultiThreadedEventLoopGroup.singleton.any().makePromise(of: Void.self)
            // A body is written once per request; a second call (none is expected) sends nothing.
            guard let parts = once.withLock({ value -> (any BodyParts)? in defer { value = nil }; return value }) else {
                done.succeed(())
                return done.futureResult
            }
            PartsBody(parts: parts, writer: writer, done: done).askForMore()
            return done.futureResult
        }
    }

    /// Asks for the next part unless one is asked for, ``StreamedBody/window`` are in flight
    /// or the body is over.
    private func askForMore() {
        let ask = pump.withLock { pump -> Bool in
            guard !pump.completed, !pump.ended, !pump.asking, pump.inFlight < StreamedBody.window else { return false }
            pump.asking = true
            return true
        }
        guard ask else { return }
        if let buffers {
            buffers.nextBuffer(maxLength: Self.partSize) { [self] part in received(part) }
        } else {
            parts.nextPart(maxLength: StreamedBody.partSize) { [self] part in
                switch part {
                case .bytes(let bytes): received(.buffer(ByteBufferAllocator().buffer(bytes: bytes)))
                case .end: received(.end)
                case .failed(let error): received(.failed(error))
                }
            }
        }
    }

    private func received(_ part: ByteBufferPart) {
        switch part {
        case .buffer(let buffer):
            let stop = pump.withLock { pump -> Bool in
                pump.asking = false
                guard !pump.completed else { return true }
                pump.inFlight += 1
                return false
            }
            guard !stop else { return }
            writer.write(.byteBuffer(buffer)).whenComplete { [self] result in
                if case .failure(let error) = result { return finish(.failure(error)) }
                let last = pump.withLock { pump -> Bool in
                    pump.inFlight -= 1
                    return pump.ended && pump.inFlight == 0
                }
                if last { finish(.success(())) } else { askForMore() }
            }
            askForMore()
        case .end:
            let last = pump.withLock { pump -> Bool in
                (pump.asking, pump.ended) = (false, true)
                return pump.inFlight == 0
            }
            if last { finish(.success(())) }
        case .failed(let error):
            finish(.failure(error))
        }
    }

    /// The body ended (or failed): told once; the source is let go of, never waited on.
    private func finish(_ result: Result<Void, Error>) {
        let first = pump.withLock { pump -> Bool in
            defer { pump.completed = true }
            return !pump.completed
        }
        guard first else { return }
        parts.stopReading()
        done.completeWith(result)
    }
}
