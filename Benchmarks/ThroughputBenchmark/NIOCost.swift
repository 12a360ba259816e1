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

    /// The floor for any design that runs each request as an `Operation`: raw AsyncHTTPClient
    /// GETs, each started by an empty-bodied `BlockOperation` on an `OperationQueue` and
    /// finishing it when the response is in (the operation is asynchronous, as ours are).
    /// With `queue` false the operations are started by hand where they are made, with no
    /// queue (what a request queue that ran its operations itself would pay).
    static func rawClientInOperations(requests: Int, inFlight: Int, url: URL, queue useQueue: Bool = true) -> Double {
        let client = NIOTransport.shared.client
        let queue = OperationQueue()
        return Chains.run(requests: requests, inFlight: inFlight) { done in
            let operation = ClientGetOperation(client: client, url: url, done: done)
            if useQueue { queue.addOperation(operation) } else { operation.start() }
        }
    }

    /// Request operations on `transport` driven as the raw client is: `inFlight` chains, each
    /// adding the next operation from the completion handler of the one before.
    static func chainedOperations(requests: Int, inFlight: Int, url: URL, transport: RequestTransport) -> Double {
        let queue = RequestQueue(maxConcurrentRequests: inFlight, transport: transport)
        let subscription = queue.events.subscribe { _ in }
        defer { subscription.cancel() }
        return Chains.gets(on: queue, requests: requests, inFlight: inFlight, url: url)
    }

    /// Request operations on `transport`, all added at once, `inFlight` at a time; requests
    /// per second.
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

/// One raw GET as an asynchronous `Operation` (for ``NIOCost/rawClientInOperations``): the
/// engine's own `AsyncOperation`, so its change notifications are those a request operation sends.
/// `@unchecked Sendable`: as `AsyncOperation`; its own fields are constants.
final class ClientGetOperation: AsyncOperation, @unchecked Sendable {
    private let client: HTTPClient
    private let url: URL
    private let done: @Sendable () -> Void

    init(client: HTTPClient, url: URL, done: @escaping @Sendable () -> Void) {
        self.client = client
        self.url = url
        self.done = done
    }

    override func execute() {
        client.get(url: url.absoluteString).whenComplete { result in
            guard case .success(let response) = result, response.body?.readableBytes == 64 else {
                preconditionFailure("raw request failed: \(result)")
            }
            self.done()
            self.finish()
        }
    }
}
