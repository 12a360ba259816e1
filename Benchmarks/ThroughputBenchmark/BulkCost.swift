import AsyncHTTPClient
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import NIOCore
import NIOHTTP1
import RequestOperations
import RequestTransportNIO
import Synchronization

/// One large body down, three ways in one process against a server in another (#32's
/// "≥ 0.9 of raw AsyncHTTPClient"): raw AsyncHTTPClient with a delegate that only counts the
/// parts (the reference); a request operation on the NIO transport read with `stream(for:)`
/// (the engine's per-part path: events, the stream's buffer, the pacing), with and without a
/// subscriber to its events; the same operation with a `destination` file (written to the
/// temporary folder's disk). Megabytes per second.
enum BulkCost {
    static func report(url: URL, rounds: Int) {
        print("bulk: \(url.absoluteString), best of \(rounds) alternating rounds")
        var best = (raw: 0.0, stream: 0.0, quiet: 0.0, file: 0.0)
        for round in 0..<rounds {
            best.raw = max(best.raw, raw(url))
            // Which of the two goes first swaps each round: the run after raw's came out
            // slower by up to 2× whichever it was.
            for watched in round % 2 == 0 ? [true, false] : [false, true] {
                let rate = streamed(url, watched: watched)
                if watched { best.stream = max(best.stream, rate) } else { best.quiet = max(best.quiet, rate) }
            }
            best.file = max(best.file, toFile(url))
        }
        print(String(format: "bulk: raw AsyncHTTPClient %.0f MB/s | operation, stream(for:), events watched %.0f MB/s (%.2f of raw) | the same, nobody watching %.0f MB/s (%.2f) | operation to a file %.0f MB/s (%.2f)",
                     best.raw, best.stream, best.stream / best.raw, best.quiet, best.quiet / best.raw, best.file, best.file / best.raw))
    }

    private static func timed(_ work: @escaping @Sendable () async throws -> Int) -> Double {
        let start = DispatchTime.now()
        let bytes = blockingAwait { try await work() }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
        return Double(bytes) / seconds / 1e6
    }

    static func raw(_ url: URL) -> Double {
        timed {
            let request = try HTTPClient.Request(url: url.absoluteString)
            return try await NIOTransport.shared.client.execute(request: request, delegate: Counter()).futureResult.get()
        }
    }

    /// - Parameter watched: a subscriber takes the events (as the monitor or a recording does).
    static func streamed(_ url: URL, watched: Bool) -> Double {
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

    static func toFile(_ url: URL) -> Double {
        let queue = RequestQueue(transport: NIOTransport.shared)
        let subscription = queue.events.subscribe { _ in }
        defer { subscription.cancel() }
        return timed {
            var options = RequestOptions(retryPolicy: .never)
            options.destination = URL(fileURLWithPath: NSTemporaryDirectory() + "reqtop-bulk.bin")
            let result = try await queue.response(for: URLRequest(url: url), options: options)
            defer { try? FileManager.default.removeItem(at: options.destination!) }
            return result.attempts.last?.bytes ?? 0
        }
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
