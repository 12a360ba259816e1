import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RequestEventFormat
import RequestOperations

/// A fixed list of requests to run, as `run` and `replay --send` have: in the monitor (which
/// stays on the final state until `q`) or headless, by the output mode.
struct RequestList: Sendable {
    struct Item: Sendable {
        var id: String
        var request: RequestMessage
        var options: RequestOptions
        /// Ids of earlier items that must succeed first.
        var dependsOn: [String] = []
        var build: RequestBuilder?
        var priority: Operation.QueuePriority = .normal
    }

    /// Parents before their children.
    var items: [Item]

    func run(on queue: RequestQueue, mode: OutputMode, source: String, redactor: Redactor?) throws -> RunSummary {
        let session = try QueueSession.open(queue, mode: mode, source: source, redactor: redactor)
        return session.run { add(to: queue, track: session.track) }
    }

    private func add(to queue: RequestQueue, track: (RequestOperation) -> Void) {
        var added: [String: RequestOperation] = [:]
        for item in items {
            let operation = RequestOperation(message: item.request, id: item.id, options: item.options, environment: queue.environment,
                                             after: item.dependsOn.compactMap { added[$0] }, build: item.build)
            operation.queuePriority = item.priority
            added[item.id] = operation
            track(operation)
            queue.add(operation)
        }
    }
}
