import Foundation
import RequestEventFormat

/// Puts a plan's requests in an order where every parent comes before its children, and
/// names what makes that impossible: a parent that does not exist, a request that depends
/// on itself, a cycle.
///
/// The walk keeps its own stack rather than recursing, so a chain as long as the plan
/// (tens of thousands of requests) cannot overflow the thread's stack, and the current path
/// is indexed, so finding a cycle costs the same at any depth.
package struct PlanOrdering {
    package let file: String

    package func ordered(_ requests: [PlannedRequest], indices: [String: Int]) throws -> [PlannedRequest] {
        for (index, request) in requests.enumerated() {
            for (position, parent) in request.dependsOn.enumerated() {
                let at = "requests[\(index)].dependsOn[\(position)]"
                if parent == request.id { throw PlanError(file: file, path: at, message: "\"\(parent)\" is this request itself") }
                guard indices[parent] != nil else {
                    let known = requests.map(\.id).filter { StrictJSONReader.closeEnough($0, parent) }.first
                    throw PlanError(file: file, path: at, message: "no request has the id \"\(parent)\""
                                        + (known.map { " (did you mean \"\($0)\"?)" } ?? ""))
                }
            }
        }
        let byID = Dictionary(uniqueKeysWithValues: requests.map { ($0.id, $0) })
        var done: Set<String> = []
        var order: [PlannedRequest] = []
        order.reserveCapacity(requests.count)
        for root in requests where !done.contains(root.id) {
            // The path from `root` to the request being looked at, each with the next parent
            // to visit; `onPath` gives each id's place on it.
            var path: [(id: String, next: Int)] = [(root.id, 0)]
            var onPath: [String: Int] = [root.id: 0]
            while let top = path.last {
                let parents = byID[top.id]!.dependsOn
                guard top.next < parents.count else {
                    path.removeLast()
                    onPath[top.id] = nil
                    done.insert(top.id)
                    order.append(byID[top.id]!)
                    continue
                }
                path[path.count - 1].next += 1
                let parent = parents[top.next]
                if done.contains(parent) { continue }
                if let start = onPath[parent] {
                    let cycle = path[start...].map(\.id) + [parent]
                    throw PlanError(file: file, path: "requests[\(indices[parent]!)].dependsOn",
                                    message: "a cycle: \(cycle.joined(separator: " → ")); a request cannot wait for itself")
                }
                onPath[parent] = path.count
                path.append((parent, 0))
            }
        }
        return order
    }
}
