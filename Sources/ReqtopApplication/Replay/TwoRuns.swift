import Foundation
import RequestOperations

/// Two runs on one time axis (`reqtop replay A --against B`): B's operations are shown as
/// `ID@NAME` right under A's of the same id, both from the start of their run, so the
/// timeline column draws each operation's bars one above the other.
package enum TwoRuns {
    /// A's events and B's, merged on one time axis, each from the start of its run. B's
    /// events of an operation A also has are moved by the few milliseconds their starts differ,
    /// so both rows begin together (one under the other) and their bars compare directly.
    package static func merge(_ a: [RequestEvent], _ b: [RequestEvent], name: String) -> [RequestEvent] {
        let originA = a.first { !$0.operationID.isEmpty }?.time ?? 0
        let originB = b.first { !$0.operationID.isEmpty }?.time ?? 0
        func starts(_ events: [RequestEvent], _ origin: TimeInterval) -> [String: TimeInterval] {
            var found: [String: TimeInterval] = [:]
            for event in events where !event.operationID.isEmpty && found[event.operationID] == nil { found[event.operationID] = event.time - origin }
            return found
        }
        let startA = starts(a, originA), startB = starts(b, originB)
        // (time, operation, run, order): one operation's two rows are made one after the other.
        var merged: [(time: TimeInterval, id: String, run: Int, order: Int, event: RequestEvent)] = []
        for (order, event) in a.enumerated() {
            var shifted = event
            shifted.time = max(0, event.time - originA)
            merged.append((shifted.time, event.operationID, 0, order, shifted))
        }
        for (order, event) in b.enumerated() {
            // B's host-level events (breakers, budgets) would be taken for A's: A's stand.
            guard !event.operationID.isEmpty else { continue }
            let offset = startA[event.operationID].flatMap { a in startB[event.operationID].map { a - $0 } } ?? 0
            let time = max(0, event.time - originB + offset)
            merged.append((time, event.operationID, 1, order,
                           RequestEvent(time: time, operationID: "\(event.operationID)@\(name)", attempt: event.attempt, payload: event.payload)))
        }
        merged.sort { ($0.time, $0.id, $0.run, $0.order) < ($1.time, $1.id, $1.run, $1.order) }
        return merged.map(\.event)
    }
}
