// reqtop-bench: the cost of running requests as operations.
//
// Sends small GETs to the loopback fault server, at 1 and at 8 in flight, three ways in
// the same process and against the same server:
//   - reference: plain data tasks with completion handlers on URLSession.shared;
//   - bare delegate session: the least any delegate-based design does (a second reference);
//   - operations: RequestOperations on a RequestQueue, with events on and one subscriber.
// Runs alternate (reference, operations, reference, ...) and the best of each is kept, so
// that drift on the machine hits both sides alike. Prints both rates and their ratio.
//
// Then the cost of the monitor endpoint to the program: operations with no endpoint, with
// an endpoint and no monitor, and with one monitor attached and reading, alternating.
// Then the cost of the async API: the same operations from completion handlers and from
// Tasks awaiting `response(for:)`, alternating (AsyncCost.swift).
//
// Then, with --transport nio, the NIO transport: operations on it (added as each one ends,
// and all at once) against raw AsyncHTTPClient, against the same raw GETs each run by an
// OperationQueue operation (the floor of that design), and against the URLSession transport;
// and the CPU a process spends while 100 requests wait 10 s for a slow route (NIOCost.swift).
// For perf: --profile-nio [--chained] and --profile-raw [--in-operations [--no-queue]], with
// --in-flight N, run only that and print each round's rate; --warm first opens 8 connections
// as the full run does (at 1 in flight the rate then depends on which one the pool picks:
// one whose server end is on the client's own event loop needs no thread wake-up a request).
// With --memory-only, the memory a queue keeps per finished operation (MemoryCost.swift).
//
//   swift run -c release reqtop-bench [--requests N] [--rounds R] [--endpoint-only | --async-only | --transport nio | --memory-only | --resilience-only | --instruments-only]
//   swift run -c release reqtop-bench --paced RATE --seconds S [--tls CERT KEY CA]  (PacedProgram.swift: one of
//     scripts/fleet-bench.sh's programs)
//   swift run -c release reqtop-bench --bulk http://127.0.0.1:PORT/zeros/1073741824 [--rounds R]  (BulkCost.swift: down to the
//     caller, to a file, and up, each beside raw AsyncHTTPClient; pin server and client to separate cores with taskset)
import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RequestEndpoint
import RequestOperations
import RequestTransportNIO
import Synchronization

func argument(_ name: String, default value: Int) -> Int {
    let arguments = CommandLine.arguments
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count, let number = Int(arguments[index + 1]) else { return value }
    return number
}

if CommandLine.arguments.contains("--paced") {
    // A program for scripts/fleet-bench.sh (PacedProgram.swift).
    let tls = CommandLine.arguments.firstIndex(of: "--tls").map { Array(CommandLine.arguments[($0 + 1)...].prefix(3)) }
    PacedProgram.run(rate: argument("--paced", default: 250), seconds: argument("--seconds", default: 20), tls: tls)
}
let requests = argument("--requests", default: 2_000)
let rounds = argument("--rounds", default: 5)
let server = try FaultServer.start()
let url = server.url("/bytes/64")

/// Plain data tasks, `inFlight` at a time; returns requests per second.
func reference(inFlight: Int) -> Double {
    let url = url
    return Chains.run(requests: requests, inFlight: inFlight) { done in
        URLSession.shared.dataTask(with: url) { data, _, error in
            precondition(error == nil && data?.count == 64, "reference request failed: \(String(describing: error))")
            done()
        }.resume()
    }
}

/// The least a delegate-based session does: collect the body, start the next on completion.
/// The second reference: on Linux each delegate callback is one `OperationQueue` operation,
/// where a completion handler gets one in all, so this is the floor for any design that
/// sees responses and data as they arrive.
final class BareDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // @unchecked: NSObject is not Sendable on Linux; state is behind the lock.
    let state = Mutex((started: 0, bodies: [Int: Data]()))
    let group = DispatchGroup()
    var session: URLSession!

    func next() {
        let go = state.withLock { state -> Bool in
            guard state.started < requests else { return false }
            state.started += 1
            return true
        }
        guard go else { return }
        group.enter()
        session.dataTask(with: url).resume()
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        state.withLock { $0.bodies[dataTask.taskIdentifier, default: Data()].append(data) }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        let body = state.withLock { $0.bodies.removeValue(forKey: task.taskIdentifier) }
        precondition(error == nil && body?.count == 64, "delegate request failed")
        next()
        group.leave()
    }
}

func delegateReference(inFlight: Int) -> Double {
    let delegate = BareDelegate()
    let queue = OperationQueue()
    queue.maxConcurrentOperationCount = 1
    delegate.session = URLSession(configuration: .default, delegate: delegate, delegateQueue: queue)
    let start = DispatchTime.now()
    for _ in 0..<inFlight { delegate.next() }
    delegate.group.wait()
    delegate.session.finishTasksAndInvalidate()
    return Double(requests) / (Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9)
}

/// How a run of operations is watched.
enum Watching {
    case none, endpoint, endpointAndMonitor
}

let endpointDirectory = NSTemporaryDirectory() + "reqtop-bench-\(getpid())"

/// A plain blocking Unix-socket connection.
func rawConnect(_ path: String) -> Int32 {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
        let bytes = Array(path.utf8)
        raw.copyBytes(from: bytes)
        raw[bytes.count] = 0
    }
    let result = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
    precondition(result == 0, "cannot connect to \(path)")
    return fd
}

/// Request operations, `inFlight` at a time, events on and one subscriber; requests per second.
func operations(inFlight: Int, watching: Watching = .none) -> Double {
    let queue = RequestQueue(maxConcurrentRequests: inFlight)
    var endpoint: MonitorEndpoint?
    if watching != .none {
        endpoint = try! queue.startMonitorEndpoint(options: .init(directory: endpointDirectory))
    }
    var reader: Int32 = -1
    if watching == .endpointAndMonitor, let endpoint {
        // The monitor reads every byte but leaves parsing out: what it does with the lines
        // is the monitor's cost, paid in its own process (here it would share the two cores).
        reader = rawConnect(endpoint.path)
        let fd = reader
        Thread {
            var buffer = [UInt8](repeating: 0, count: 64 * 1024)
            while read(fd, &buffer, buffer.count) > 0 {}
        }.start()
        while endpoint.connectionCount == 0 { usleep(1_000) }
    }
    defer {
        if reader >= 0 { shutdown(reader, Int32(SHUT_RDWR)) }
        endpoint?.stop()
        if reader >= 0 { close(reader) }
    }
    let events = Mutex(0)
    let subscription = queue.events.subscribe { batch in events.withLock { $0 += batch.count } }
    let start = DispatchTime.now()
    for _ in 0..<requests {
        queue.add(URLRequest(url: url), options: RequestOptions(retryPolicy: .never))
    }
    queue.waitUntilAllOperationsAreFinished()
    let seconds = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
    queue.events.waitUntilDelivered()
    subscription.cancel()
    precondition(events.withLock { $0 } >= requests * 6, "events were lost")
    return Double(requests) / seconds
}

print("reqtop-bench: \(requests) GETs of 64 bytes on 127.0.0.1, best of \(rounds) alternating rounds")
/// Which parts run: all but the NIO part by default; one part with its flag.
enum Part { case operations, endpoint, async, nio, memory, resilience, instruments }
let parts: Set<Part> = {
    let arguments = CommandLine.arguments
    if arguments.contains("--endpoint-only") { return [.endpoint] }
    if arguments.contains("--async-only") { return [.async] }
    if arguments.contains("--memory-only") { return [.memory] }
    if arguments.contains("--resilience-only") { return [.resilience] }
    if arguments.contains("--instruments-only") { return [.instruments] }
    if let index = arguments.firstIndex(of: "--transport"), index + 1 < arguments.count, arguments[index + 1] == "nio" { return [.nio] }
    if arguments.contains("--profile-nio") || arguments.contains("--profile-raw") || arguments.contains("--profile-endpoint") { return [] }
    if arguments.contains("--bulk") { return [] }
    return [.operations, .endpoint, .async]
}()
// Warm URLSession up for the parts that time it (a profile of the NIO transport must not
// see URLSession's threads).
if !parts.isDisjoint(with: [.operations, .endpoint, .async]) {
    _ = reference(inFlight: 8)
    _ = operations(inFlight: 8)
}
for inFlight in parts.contains(.operations) ? [1, 8] : [] {
    var best = (reference: 0.0, delegate: 0.0, operations: 0.0)
    for _ in 0..<rounds {
        best.reference = max(best.reference, reference(inFlight: inFlight))
        best.delegate = max(best.delegate, delegateReference(inFlight: inFlight))
        best.operations = max(best.operations, operations(inFlight: inFlight))
    }
    print(String(format: "in flight %d: plain data tasks %.0f req/s | bare delegate session %.0f req/s (%.2f) | request operations %.0f req/s (%.2f of plain, %.2f of delegate)",
                 inFlight, best.reference, best.delegate, best.delegate / best.reference, best.operations,
                 best.operations / best.reference, best.operations / best.delegate))
}
if CommandLine.arguments.contains("--profile-endpoint") {
    // For `perf record`: only the watched runs.
    for _ in 0..<rounds { _ = operations(inFlight: 8, watching: .endpointAndMonitor) }
    exit(0)
}
for inFlight in parts.contains(.endpoint) ? [1, 8] : [] {
    var best = (none: 0.0, endpoint: 0.0, monitor: 0.0)
    for _ in 0..<rounds {
        best.none = max(best.none, operations(inFlight: inFlight))
        best.endpoint = max(best.endpoint, operations(inFlight: inFlight, watching: .endpoint))
        best.monitor = max(best.monitor, operations(inFlight: inFlight, watching: .endpointAndMonitor))
    }
    print(String(format: "endpoint, in flight %d: no endpoint %.0f req/s | endpoint, no monitor %.0f req/s (%.2f) | one monitor attached %.0f req/s (%.2f)",
                 inFlight, best.none, best.endpoint, best.endpoint / best.none, best.monitor, best.monitor / best.none))
}
if let index = CommandLine.arguments.firstIndex(of: "--bulk"), index + 1 < CommandLine.arguments.count,
   let bulk = URL(string: CommandLine.arguments[index + 1]) {
    // One large body from a server in another process (`reqtop serve`'s /zeros/{n}).
    BulkCost.report(url: bulk, rounds: rounds)
    exit(0)
}
if parts.contains(.resilience) { ResilienceCost.report(requests: requests, rounds: rounds, url: url) }
if parts.contains(.instruments) { InstrumentCost.report(requests: requests, rounds: rounds, url: url) }
if parts.contains(.async) { _ = AsyncCost.asyncTasks(requests: requests / 4, inFlight: 8, url: url) }  // warm the cooperative pool
for inFlight in parts.contains(.async) ? [1, 8] : [] {
    var best = (completion: 0.0, async: 0.0)
    for _ in 0..<rounds {
        best.completion = max(best.completion, AsyncCost.completionHandlers(requests: requests, inFlight: inFlight, url: url))
        best.async = max(best.async, AsyncCost.asyncTasks(requests: requests, inFlight: inFlight, url: url))
    }
    print(String(format: "async, %d at a time: completion handlers %.0f req/s | await response(for:) %.0f req/s (%.3f)",
                 inFlight, best.completion, best.async, best.async / best.completion))
}
if CommandLine.arguments.contains("--profile-nio") {
    if CommandLine.arguments.contains("--warm") { _ = NIOCost.rawClient(requests: requests / 4, inFlight: 8, url: url) }
    // For `perf record`: only operations on the NIO transport (`--in-flight N`, 8 by default).
    let inFlight = argument("--in-flight", default: 8)
    let chained = CommandLine.arguments.contains("--chained")
    for _ in 0..<rounds {
        let rate = chained ? NIOCost.chainedOperations(requests: requests, inFlight: inFlight, url: url, transport: NIOTransport.shared)
            : NIOCost.operations(requests: requests, inFlight: inFlight, url: url, transport: NIOTransport.shared)
        print(String(format: "%.0f req/s", rate))
    }
    exit(0)
}
if CommandLine.arguments.contains("--profile-raw") {
    if CommandLine.arguments.contains("--warm") { _ = NIOCost.rawClient(requests: requests / 4, inFlight: 8, url: url) }
    // The same for raw AsyncHTTPClient, to set beside --profile-nio under perf.
    let inFlight = argument("--in-flight", default: 8)
    let inOperations = CommandLine.arguments.contains("--in-operations")
    for _ in 0..<rounds {
        let rate = inOperations ? NIOCost.rawClientInOperations(requests: requests, inFlight: inFlight, url: url, queue: !CommandLine.arguments.contains("--no-queue"))
            : NIOCost.rawClient(requests: requests, inFlight: inFlight, url: url)
        print(String(format: "%.0f req/s", rate))
    }
    exit(0)
}
if parts.contains(.nio) {
    _ = NIOCost.rawClient(requests: requests / 4, inFlight: 8, url: url)
    for inFlight in [1, 8] {
        var best = (raw: 0.0, floor: 0.0, chained: 0.0, atOnce: 0.0, urlsession: 0.0)
        for _ in 0..<rounds {
            best.raw = max(best.raw, NIOCost.rawClient(requests: requests, inFlight: inFlight, url: url))
            best.floor = max(best.floor, NIOCost.rawClientInOperations(requests: requests, inFlight: inFlight, url: url))
            best.chained = max(best.chained, NIOCost.chainedOperations(requests: requests, inFlight: inFlight, url: url, transport: NIOTransport.shared))
            best.atOnce = max(best.atOnce, NIOCost.operations(requests: requests, inFlight: inFlight, url: url, transport: NIOTransport.shared))
            best.urlsession = max(best.urlsession, NIOCost.operations(requests: requests, inFlight: inFlight, url: url, transport: SharedSession.shared))
        }
        print(String(format: "nio, in flight %d: raw AsyncHTTPClient %.0f req/s | the same, each in an OperationQueue's operation %.0f req/s (%.2f of raw: the floor of that design)",
                     inFlight, best.raw, best.floor, best.floor / best.raw))
        print(String(format: "nio, in flight %d: operations on NIO, each added as one ends %.0f req/s (%.2f of raw) | added at once %.0f req/s (%.2f of raw) | operations on URLSession, added at once %.0f req/s (NIO is %.2f×)",
                     inFlight, best.chained, best.chained / best.raw, best.atOnce, best.atOnce / best.raw, best.urlsession, best.atOnce / best.urlsession))
    }
    let slow = server.url("/delay/10000")
    for (name, transport) in [("nio", NIOTransport.shared as RequestTransport), ("urlsession", SharedSession.shared)] {
        let share = NIOCost.cpuWhileWaiting(count: 100, seconds: 10, slowURL: slow, transport: transport)
        print(String(format: "cpu, 100 requests waiting 10 s on %@: %.1f %% of a core (this process, the fault server included)", name, share * 100))
    }
}
if parts.contains(.memory) {
    // Against the running server: GETs that succeed, as a service's do.
    for (name, transport) in [("urlsession", SharedSession.shared as RequestTransport), ("nio", NIOTransport.shared)] {
        let kept = MemoryCost.bytesPerOperation(waves: 10, perWave: 1_000, url: url, transport: transport)
        print(String(format: "memory, %@: %.0f bytes kept per finished operation (10 waves of 1000 GETs after a warm one)", name, kept))
    }
}
try? FileManager.default.removeItem(atPath: endpointDirectory)
server.stop()
