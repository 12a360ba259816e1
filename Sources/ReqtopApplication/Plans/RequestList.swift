import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RequestEventFormat
import RequestOperations

/// A fixed list of requests to run, as `run` and `replay --send` have: in the monitor (which
/// stays on the final state until `q`) or headless, by the output mode.
package struct RequestList: Sendable {
    package struct Item: Sendable {
        package var id: String
        package var request: RequestMessage
        package var options: RequestOptions
        /// Ids of earlier items that must succeed first.
        package var dependsOn: [String] = []
        package var build: RequestBuilder?
        package var priority: Operation.QueuePriority = .normal
        package init(id: String, request: RequestMessage, options: RequestOptions, dependsOn: [String] = [], build: RequestBuilder? = nil, priority: Operation.QueuePriority = .normal) {
            self.id = id
            self.request = request
            self.options = options
            self.dependsOn = dependsOn
            self.build = build
            self.priority = priority
        }
    }

    /// Parents before their children.
    package var items: [Item]

    package func run(on queue: RequestQueue, mode: OutputMode, source: String, redactor: Redactor?) throws -> RunSummary {
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
    package init(items: [Item]) {
        self.items = items
    }
}
