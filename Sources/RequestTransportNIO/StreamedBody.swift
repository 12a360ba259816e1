import AsyncHTTPClient
import Dispatch
import Foundation
import NIOCore
import NIOPosix
import Synchronization

/// A request body from an `InputStream` (a body file, a caller's stream), sent in parts as
/// the connection takes them: a part is read only after the last one was written, off the
/// event loop (reading a file blocks), so an upload of any size costs one part of memory and
/// never stalls the loop's other connections. Before: the stream was read whole, on the
/// event loop, before the request started.
final class StreamedBody: Sendable {
    static let partSize = 64 * 1024

    /// The stream, used by one read at a time on `reading`; in a `Mutex` so the type is
    /// `Sendable` without exceptions.
    private let stream: Mutex<InputStream>
    private let reading = DispatchQueue(label: "reqtop.nio.upload")
    private let writer: HTTPClient.Body.StreamWriter
    private let done: EventLoopPromise<Void>

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
            pump.reading.async { pump.next() }
            return done.futureResult
        }
    }

    /// Reads the next part and writes it; called again when the write is done.
    private func next() {
        let part: Result<ByteBuffer?, Error> = stream.withLock { stream in
            if stream.streamStatus == .notOpen { stream.open() }
            var bytes = [UInt8](repeating: 0, count: Self.partSize)
            let count = stream.read(&bytes, maxLength: bytes.count)
            if count < 0 {
                stream.close()
                return .failure(stream.streamError ?? URLError(.cannotOpenFile))
            }
            if count == 0 {
                stream.close()
                return .success(nil)
            }
            return .success(ByteBuffer(bytes: bytes[0..<count]))
        }
        switch part {
        case .failure(let error):
            done.fail(error)
        case .success(nil):
            done.succeed(())
        case .success(let buffer?):
            writer.write(.byteBuffer(buffer)).whenComplete { [self] result in
                switch result {
                case .success: reading.async { self.next() }
                case .failure(let error):
                    stream.withLock { $0.close() }
                    done.fail(error)
                }
            }
        }
    }
}
