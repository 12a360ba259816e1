import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RequestOperations

/// What a long-running program keeps per finished operation: waves of requests on one
/// queue, resident memory after a first warm wave and after the last, divided by the
/// operations in between. A program that runs for days needs this near zero.
enum MemoryCost {
    /// VmRSS of this process, in KiB.
    static func residentKiB() -> Int {
        statusKiB("VmRSS:")
    }

    /// The resident memory's high-water mark since the last ``resetPeak()``, in KiB.
    static func peakKiB() -> Int {
        statusKiB("VmHWM:")
    }

    /// Starts the high-water mark again from the resident memory now (Linux's `clear_refs`).
    static func resetPeak() {
        try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
    }

    private static func statusKiB(_ field: String) -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix(field) }),
              let kib = Int(line.split(separator: " ").dropFirst().first ?? "") else { return 0 }
        return kib
    }

    /// Bytes kept per operation over `waves` waves of `perWave` GETs (after one warm wave).
    static func bytesPerOperation(waves: Int, perWave: Int, url: URL, transport: RequestTransport,
                                  subscribe: Bool = true) -> Double {
        let queue = RequestQueue(maxConcurrentRequests: 8, transport: transport)
        let subscription = subscribe ? queue.events.subscribe { _ in } : nil
        func wave() {
            for _ in 0..<perWave { queue.add(URLRequest(url: url), options: RequestOptions(retryPolicy: .never)) }
            queue.waitUntilAllOperationsAreFinished()
        }
        wave()
        let before = residentKiB()
        for _ in 0..<waves { wave() }
        queue.events.waitUntilDelivered()
        let after = residentKiB()
        subscription?.cancel()
        return Double(after - before) * 1024 / Double(waves * perWave)
    }
}
