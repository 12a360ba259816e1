import AsyncHTTPClient
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import NIOCore
import RequestOperations
import RequestTransportNIO

/// The NIO transport against what it is built on, and CPU while requests wait.
enum NIOCost {
    /// Raw AsyncHTTPClient: `inFlight` chains of GETs on the transport's own client (the same
    /// pool the operations use); requests per second.
    static func rawClient(requests: Int, inFlight: Int, url: URL) -> Double {
        let client = NIOTransport.shared.client
        return Chains.run(requests: requests, inFlight: inFlight) { done in
            client.get(url: url.absoluteString).whenComplete { result in
                guard case .success(let response) = result, response.body?.readableBytes == 64 else {
                    preconditionFailure("raw request failed: \(result)")
                }
                done()
            }
        }
    }

    /// Request operations on `transport`, `inFlight` at a time; requests per second.
    static func operations(requests: Int, inFlight: Int, url: URL, transport: RequestTransport) -> Double {
        let queue = RequestQueue(maxConcurrentRequests: inFlight, transport: transport)
        let subscription = queue.events.subscribe { _ in }
        let start = DispatchTime.now()
        for _ in 0..<requests {
            queue.add(URLRequest(url: url), options: RequestOptions(retryPolicy: .never))
        }
        queue.waitUntilAllOperationsAreFinished()
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
        subscription.cancel()
        precondition(queue.operations.isEmpty)
        return Double(requests) / seconds
    }

    /// The process's CPU time (user + system) in seconds.
    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }

    /// Share of one core the process uses while `count` requests wait `seconds` for a slow
    /// route (the server answers after the wait, so the sockets are open and idle).
    static func cpuWhileWaiting(count: Int, seconds: Int, slowURL: URL, transport: RequestTransport) -> Double {
        let queue = RequestQueue(maxConcurrentRequests: count, transport: transport)
        for _ in 0..<count {
            queue.add(URLRequest(url: slowURL), options: RequestOptions(retryPolicy: .never, deadline: Double(seconds) + 30))
        }
        Thread.sleep(forTimeInterval: 1)  // every request sent and waiting
        let before = cpuSeconds(), started = Date()
        queue.waitUntilAllOperationsAreFinished()
        return (cpuSeconds() - before) / Date().timeIntervalSince(started)
    }
}
