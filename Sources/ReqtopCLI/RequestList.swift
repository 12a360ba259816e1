import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RequestOperations

/// A fixed list of requests to run, as `run` and `replay --send` have: in the monitor (which
/// stays on the final state until `q`) or headless, by the output mode.
struct RequestList: Sendable {
    struct Item: Sendable {
        var id: String
        var request: URLRequest
        var options: RequestOptions
    }

    var items: [Item]

    func run(on queue: RequestQueue, mode: OutputMode, source: String) throws -> RunSummary {
        let items = self.items
        if case .monitor(let color) = mode {
            let session = try MonitorSession(queue: queue, source: source, color: color)
            return session.run {
                for item in items { session.track(queue.add(item.request, id: item.id, options: item.options)) }
            }
        }
        let session = HeadlessSession(queue: queue)
        return session.run {
            for item in items { session.track(queue.add(item.request, id: item.id, options: item.options)) }
        }
    }
}
