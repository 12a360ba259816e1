import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RequestEndpoint
import RequestOperations
import Synchronization

/// `reqtop-bench --paced RATE --seconds S [--tls CERT KEY CA]`: a program for the fleet
/// benchmark (scripts/fleet-bench.sh). It sends RATE small GETs a second to its own fault
/// server for S seconds, with a monitor endpoint open (and a TLS one with `--tls`), and
/// prints what it kept up: requests per second done, events per second, and the latency's
/// p50 and p99. Attached monitors, or a peer abusing the TLS port, show up there.
enum PacedProgram {
    static func run(rate: Int, seconds: Int, tls: [String]?) -> Never {
        let server = try! FaultServer.start()
        let url = server.url("/bytes/64")
        let queue = RequestQueue(maxConcurrentRequests: 16)
        var options = MonitorEndpoint.Options(name: "paced-\(rate)")
        if let tls, tls.count == 3 {
            var settings = EndpointTLS(host: "127.0.0.1", port: 0, certificateFile: tls[0], keyFile: tls[1], clientCAFile: tls[2])
            settings.acceptsCommands = false
            options.tls = settings
            options.notice = { _ in }
        }
        let endpoint = try! queue.startMonitorEndpoint(options: options)
        // Written at once (print is buffered when stdout is a file): the script waits for it.
        FileHandle.standardOutput.write(Data(((endpoint.tlsPort.map { "tls port \($0)\n" } ?? "") + "ready pid \(getpid())\n").utf8))
        let events = Mutex(0)
        let subscription = queue.events.subscribe { batch in events.withLock { $0 += batch.count } }
        let latencies = Mutex<[Double]>([])
        let start = DispatchTime.now().uptimeNanoseconds
        let total = rate * seconds
        var issued = 0
        // Issued on the schedule, never in a burst to catch up: a program that fell behind shows it.
        while issued < total {
            let due = start + UInt64(Double(issued) / Double(rate) * 1e9)
            let now = DispatchTime.now().uptimeNanoseconds
            if due > now { usleep(UInt32((due - now) / 1000)) }
            let sent = DispatchTime.now().uptimeNanoseconds
            queue.add(URLRequest(url: url), options: RequestOptions(retryPolicy: .never)) { _ in
                latencies.withLock { $0.append(Double(DispatchTime.now().uptimeNanoseconds - sent) / 1e6) }
            }
            issued += 1
        }
        queue.waitUntilAllOperationsAreFinished()
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        queue.events.waitUntilDelivered()
        subscription.cancel()
        let sorted = latencies.withLock { $0 }.sorted()
        func at(_ fraction: Double) -> Double { sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))] }
        print(String(format: "paced: %.1f req/s done of %d asked, %.0f events/s, p50 %.2f ms, p99 %.2f ms",
                     Double(sorted.count) / elapsed, rate, Double(events.withLock { $0 }) / elapsed, at(0.5), at(0.99)))
        endpoint.stop()
        server.stop()
        exit(0)
    }
}
