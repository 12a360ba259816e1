import AsyncHTTPClient
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import NIOCore
import NIOHTTP1
import NIOPosix
import RequestOperations
import RequestTransportNIO
import Synchronization

/// One large body down and up, in one process against a server in another (#32's "≥ 0.9 of
/// raw AsyncHTTPClient"), each engine path beside the raw AsyncHTTPClient way that does the
/// same work:
/// - down to the caller: raw AsyncHTTPClient with a delegate that only counts the parts (the
///   floor of all), and its async body sequence (a reader on another task, as
///   `stream(for:)`'s is); a request operation read with `stream(for:)`, with and without a
///   subscriber to its events;
/// - down to a file (the temporary folder's disk): AsyncHTTPClient's `FileDownloadDelegate`,
///   and an operation with a `destination`;
/// - up from a file: AsyncHTTPClient streaming the same bytes from memory in 64 KiB parts,
///   and an operation with a `bodyFile`, both to the server's count-only `/sink?hash=0`.
/// Megabytes per second.
enum BulkCost {
    struct Best {
        var raw = Run(), rawAsync = Run(), stream = Run(), quiet = Run()
        var rawFile = Run(), file = Run(), rawUp = Run(), rawUpFile = Run(), up = Run()
    }

    static func report(url: URL, rounds: Int) {
        print("bulk: \(url.absoluteString), best of \(rounds) alternating rounds")
        let size = Int(url.lastPathComponent) ?? 1 << 30
        let sink = URL(string: "/sink?hash=0", relativeTo: url)!.absoluteURL
        let upFile = sparseFile(size)
        defer { try? FileManager.default.removeItem(at: upFile) }
        var best = Best()
        for round in 0..<rounds {
            best.raw.keepBest(raw(url))
            best.rawAsync.keepBest(rawAsync(url))
            // Which of the two goes first swaps each round: the run after raw's came out
            // slower by up to 2× whichever it was.
            for watched in round % 2 == 0 ? [true, false] : [false, true] {
                let run = streamed(url, watched: watched)
                if watched { best.stream.keepBest(run) } else { best.quiet.keepBest(run) }
            }
            best.rawFile.keepBest(rawToFile(url))
            best.file.keepBest(toFile(url))
            best.rawUp.keepBest(rawUpload(sink, size: size))
            best.rawUpFile.keepBest(rawUpload(sink, from: upFile, size: size))
            best.up.keepBest(upload(sink, from: upFile))
        }
        func line(_ name: String, _ run: Run, of reference: Run? = nil) -> String {
            var text = String(format: "  %@ %.0f MB/s, %.2f CPU s/GiB, peak RSS +%.1f MiB", name, run.rate, run.cpuPerGiB, run.peakGrowthMiB)
            if let reference {
                text += String(format: " (rate %.2f, CPU %.2f of the reference)", run.rate / reference.rate, run.cpuPerGiB / reference.cpuPerGiB)
            }
            return text
        }
        print("bulk down, to the caller:")
        print(line("raw AsyncHTTPClient, counting delegate (reference):", best.raw))
        print(line("raw AsyncHTTPClient, async body:", best.rawAsync, of: best.raw))
        print(line("operation, stream(for:), events watched:", best.stream, of: best.raw))
        print(line("the same, nobody watching:", best.quiet, of: best.raw))
        print("bulk down, to a file:")
        print(line("raw AsyncHTTPClient FileDownloadDelegate (reference):", best.rawFile))
        print(line("operation with a destination:", best.file, of: best.rawFile))
        print("bulk up:")
        print(line("raw AsyncHTTPClient, 64 KiB parts from memory (reference):", best.rawUp))
        print(line("raw AsyncHTTPClient, the file in 64 KiB parts by NonBlockingFileIO:", best.rawUpFile, of: best.rawUp))
        print(line("operation with a bodyFile:", best.up, of: best.rawUp)
              + String(format: " — rate %.2f of NonBlockingFileIO's", best.up.rate / best.rawUpFile.rate))
    }

    /// A rate and what it cost: MB/s; the process's CPU seconds (user and system, every
    /// thread) per GiB — the figure client and server sharing two cores disturb least; and
    /// the most the resident memory grew while it ran (the largest of the rounds).
    struct Run {
        var rate = 0.0
        var cpuPerGiB = Double.infinity
        var peakGrowthMiB = 0.0

        mutating func keepBest(_ other: Run) {
            (rate, cpuPerGiB) = (max(rate, other.rate), min(cpuPerGiB, other.cpuPerGiB))
            peakGrowthMiB = max(peakGrowthMiB, other.peakGrowthMiB)
        }
    }

    private static func timed(_ work: @escaping @Sendable () async throws -> Int) -> Run {
        MemoryCost.resetPeak()
        let resident = MemoryCost.residentKiB()
        let (start, cpu) = (DispatchTime.now(), NIOCost.cpuSeconds())
        let bytes = blockingAwait { try await work() }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
        return Run(rate: Double(bytes) / seconds / 1e6, cpuPerGiB: (NIOCost.cpuSeconds() - cpu) / (Double(bytes) / Double(1 << 30)),
                   peakGrowthMiB: Double(MemoryCost.peakKiB() - resident) / 1024)
    }

    static func raw(_ url: URL) -> Run {
        timed {
            let request = try HTTPClient.Request(url: url.absoluteString)
            return try await NIOTransport.shared.client.execute(request: request, delegate: Counter()).futureResult.get()
        }
    }

    static func rawAsync(_ url: URL) -> Run {
        timed {
            let response = try await NIOTransport.shared.client.execute(HTTPClientRequest(url: url.absoluteString), timeout: .seconds(600))
            var bytes = 0
            for try await part in response.body { bytes += part.readableBytes }
            return bytes
        }
    }

    /// - Parameter watched: a subscriber takes the events (as the monitor or a recording does).
    static func streamed(_ url: URL, watched: Bool) -> Run {
        let queue = RequestQueue(transport: NIOTransport.shared)
        let subscription = watched ? queue.events.subscribe { _ in } : nil
        defer { subscription?.cancel() }
        return timed {
            var options = RequestOptions(retryPolicy: .never)
            options.readTimeout = nil
            let answer = try await queue.stream(for: URLRequest(url: url), options: options)
            var bytes = 0
            for try await part in answer.body { bytes += part.count }
            return bytes
        }
    }

    private static var target: String { NSTemporaryDirectory() + "reqtop-bulk.bin" }

    static func rawToFile(_ url: URL) -> Run {
        timed {
            defer { try? FileManager.default.removeItem(atPath: target) }
            let request = try HTTPClient.Request(url: url.absoluteString)
            let progress = try await NIOTransport.shared.client.execute(request: request, delegate: FileDownloadDelegate(path: target)).futureResult.get()
            return progress.receivedBytes
        }
    }

    static func toFile(_ url: URL) -> Run {
        let queue = RequestQueue(transport: NIOTransport.shared)
        let subscription = queue.events.subscribe { _ in }
        defer { subscription.cancel() }
        return timed {
            var options = RequestOptions(retryPolicy: .never)
            options.destination = URL(fileURLWithPath: target)
            let result = try await queue.response(for: URLRequest(url: url), options: options)
            defer { try? FileManager.default.removeItem(at: options.destination!) }
            return result.attempts.last?.bytes ?? 0
        }
    }

    static func rawUpload(_ sink: URL, size: Int) -> Run {
        timed {
            let part = ByteBuffer(repeating: 0, count: 64 << 10)
            let body = HTTPClient.Body.stream(contentLength: Int64(size)) { writer in
                @Sendable func write(_ left: Int) -> EventLoopFuture<Void> {
                    let next = part.getSlice(at: 0, length: min(left, part.readableBytes))!
                    let written = writer.write(.byteBuffer(next))
                    return left <= next.readableBytes ? written : written.flatMap { write(left - next.readableBytes) }
                }
                return write(size)
            }
            let request = try HTTPClient.Request(url: sink.absoluteString, method: .PUT, body: body)
            let response = try await NIOTransport.shared.client.execute(request: request).get()
            return sinkCount(response.body.map { Data(buffer: $0) })
        }
    }

    /// The same file sent the way NIO reads files: `NonBlockingFileIO` on its thread pool,
    /// each part written when the last one was.
    static func rawUpload(_ sink: URL, from file: URL, size: Int) -> Run {
        timed {
            let body = HTTPClient.Body.stream(contentLength: Int64(size)) { writer in
                let loop = MultiThreadedEventLoopGroup.singleton.any()
                let handle: NIOFileHandle
                do { handle = try NIOFileHandle(_deprecatedPath: file.path) } catch { return loop.makeFailedFuture(error) }
                let io = NonBlockingFileIO(threadPool: .singleton)
                return io.readChunked(fileHandle: handle, byteCount: size, chunkSize: 64 << 10, allocator: ByteBufferAllocator(), eventLoop: loop) { part in
                    writer.write(.byteBuffer(part))
                }.always { _ in try? handle.close() }
            }
            let request = try HTTPClient.Request(url: sink.absoluteString, method: .PUT, body: body)
            let response = try await NIOTransport.shared.client.execute(request: request).get()
            return sinkCount(response.body.map { Data(buffer: $0) })
        }
    }

    static func upload(_ sink: URL, from file: URL) -> Run {
        let queue = RequestQueue(transport: NIOTransport.shared)
        let subscription = queue.events.subscribe { _ in }
        defer { subscription.cancel() }
        return timed {
            var options = RequestOptions(retryPolicy: .never)
            options.bodyFile = file
            var request = URLRequest(url: sink)
            request.httpMethod = "PUT"
            return sinkCount(try await queue.response(for: request, options: options).data)
        }
    }

    /// What `/sink` says it read.
    private static func sinkCount(_ answer: Data?) -> Int {
        let object = answer.flatMap { try? JSONSerialization.jsonObject(with: $0) as? [String: Any] }
        return object?["bodyBytes"] as? Int ?? 0
    }

    /// A file of `size` zeros that takes no disk (its reads come from no device).
    private static func sparseFile(_ size: Int) -> URL {
        let url = URL(fileURLWithPath: NSTemporaryDirectory() + "reqtop-bulk-up.bin")
        _ = FileManager.default.createFile(atPath: url.path, contents: nil)
        let handle = try! FileHandle(forWritingTo: url)
        try! handle.truncate(atOffset: UInt64(size))
        try! handle.close()
        return url
    }

    /// Counts the body's bytes and keeps none.
    final class Counter: HTTPClientResponseDelegate, Sendable {
        private let bytes = Mutex(0)
        func didReceiveBodyPart(task: HTTPClient.Task<Int>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
            bytes.withLock { $0 += buffer.readableBytes }
            return task.eventLoop.makeSucceededVoidFuture()
        }
        func didFinishRequest(task: HTTPClient.Task<Int>) throws -> Int { bytes.withLock { $0 } }
    }
}

/// Runs async work from the benchmark's synchronous top level.
private func blockingAwait<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) -> T {
    let done = DispatchSemaphore(value: 0)
    let box = Mutex<Result<T, Error>?>(nil)
    Task {
        let result: Result<T, Error>
        do { result = .success(try await work()) } catch { result = .failure(error) }
        box.withLock { $0 = result }
        done.signal()
    }
    done.wait()
    return try! box.withLock { $0 }!.get()
}
