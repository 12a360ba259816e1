import AsyncHTTPClient
import Dispatch
import Foundation
import NIOCore
import NIOPosix
import Synchronization

/// A request body from an `InputStream` (a body file, a caller's stream), sent in parts as
/// the connection takes them, off the event loop (reading a file blocks), so an upload of any
/// size costs a few parts of memory and never stalls the loop's other connections. Up to
/// ``window`` parts are read ahead of the socket: one at a time (read, wait for the write,
/// read) left the connection idle between parts and ran at a third of AsyncHTTPClient's rate
/// from memory (docs/benchmarks.md). Each part is read straight into the buffer that is sent.
final class StreamedBody: Sendable {
    static let partSize = 64 * 1024
    /// Parts written and not yet taken by the connection, at most.
    static let window = 4

    /// The stream, used by one read at a time on `reading`; in a `Mutex` so the type is
    /// `Sendable` without exceptions.
    private let stream: Mutex<InputStream>
    private let pump = Mutex(Pump())
    private let reading = DispatchQueue(label: "reqtop.nio.upload")
    private let writer: HTTPClient.Body.StreamWriter
    private let done: EventLoopPromise<Void>

    private struct Pump {
        var inFlight = 0
        /// The stream's end was read.
        var ended = false
        /// `done` was completed (succeeded or failed): nothing more is read or written.
        var completed = false
    }

    private init(stream: sending InputStream, writer: HTTPClient.Body.StreamWriter, done: EventLoopPromise<Void>) {
        self.stream = Mutex(stream)
        self.writer = writer
        self.done = done
    }

    /// AsyncHTTPClient's body for `stream`, `length` bytes long when known (chunked when not).
    static func body(_ stream: sending InputStream, length: Int64?) -> HTTPClient.Body {
        let once = Mutex<InputStream?>(stream)
        return .stream(contentLength: length) { writer in
            let done = MultiThreadedEventLoopGroup.singleton.any().makePromise(of: Void.self)
            // A body is written once per request; a second call (none is expected) sends nothing.
            guard let stream = once.withLock({ value -> InputStream? in defer { value = nil }; return value }) else {
                done.succeed(())
                return done.futureResult
            }
            let pump = StreamedBody(stream: stream, writer: writer, done: done)
            pump.reading.async { pump.fill() }
            return done.futureResult
        }
    }

    /// Reads and writes parts until ``window`` are in flight or the stream ended; called
    /// again (on `reading`) as each write is done.
    private func fill() {
        while pump.withLock({ !$0.completed && !$0.ended && $0.inFlight < Self.window }) {
            switch read() {
            case .failure(let error):
                finish(.failure(error))
                return
            case .success(nil):
                let last = pump.withLock { pump -> Bool in
                    pump.ended = true
                    return pump.inFlight == 0
                }
                if last { finish(.success(())) }
                return
            case .success(let buffer?):
                pump.withLock { $0.inFlight += 1 }
                writer.write(.byteBuffer(buffer)).whenComplete { [self] result in
                    if case .failure(let error) = result { return finish(.failure(error)) }
                    let last = pump.withLock { pump -> Bool in
                        pump.inFlight -= 1
                        return pump.ended && pump.inFlight == 0
                    }
                    if last { finish(.success(())) } else { reading.async { self.fill() } }
                }
            }
        }
    }

    /// The next part, nil at the stream's end.
    private func read() -> Result<ByteBuffer?, Error> {
        stream.withLock { stream in
            if stream.streamStatus == .notOpen { stream.open() }
            var buffer = ByteBufferAllocator().buffer(capacity: Self.partSize)
            var result = 0
            buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: Self.partSize) { space in
                result = stream.read(space.baseAddress!.assumingMemoryBound(to: UInt8.self), maxLength: Self.partSize)
                return max(0, result)
            }
            if result < 0 { return .failure(stream.streamError ?? URLError(.cannotOpenFile)) }
            return .success(result == 0 ? nil : buffer)
        }
    }

    /// The body ended (or failed): told once; the stream is closed.
    private func finish(_ result: Result<Void, Error>) {
        let first = pump.withLock { pump -> Bool in
            defer { pump.completed = true }
            return !pump.completed
        }
        guard first else { return }
        stream.withLock { $0.close() }
        done.completeWith(result)
    }
}
