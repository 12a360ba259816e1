import Foundation
import RequestEventFormat
import RequestOperations

/// Two runs side by side (`reqtop diff A B`): each operation's outcome, status, attempts and
/// duration where they differ, the operations only one run has, and per host the attempts
/// sent upstream, the retry amplification, p50/p95 and failures; a summary a person can paste.
package struct RunDiff {
    package struct Change: Equatable {
        package var id: String
        package var before: RunDigest.Operation?
        package var after: RunDigest.Operation?
        /// Why it differs, where that is known; nil: unexplained.
        package var cause: DifferenceCause?
    }

    package let a: RunDigest
    package let b: RunDigest
    /// Operations of `a` a what-if re-run (`b`) did not send again, and said why.
    package var notResent: Set<String> = []

    /// Operations whose end differs (outcome, status or attempts), those only one run has,
    /// and those whose duration differs by more than ``DifferenceCause/noise``, by id, each
    /// with its cause where one explains it (``DifferenceCause``).
    package var changes: [Change] {
        var changes: [Change] = []
        for id in Set(a.operations.keys).union(b.operations.keys).sorted() {
            let before = a.operations[id], after = b.operations[id]
            if let before, let after, before.end == after.end {
                guard let x = before.duration, let y = after.duration, abs(x - y) > DifferenceCause.noise else { continue }
                changes.append(Change(id: id, before: before, after: after, cause: abs(x - y) <= DifferenceCause.tolerance(of: x) ? .timing : nil))
            } else {
                changes.append(Change(id: id, before: before, after: after, cause: cause(before: before, after: after, id: id)))
            }
        }
        // The same ends and the same attempts for one host's operations, shared out
        // differently among them (which burst member the budget let through, which waiting
        // request carried the breaker's probe): each of them explained.
        let ended = changes.filter { $0.cause == nil && $0.before != nil && $0.after != nil && $0.before!.end != $0.after!.end }
        for (_, group) in Dictionary(grouping: ended, by: { $0.before?.host ?? "" }) {
            func outcomes(_ ends: [RunDigest.End]) -> [String: Int] {
                Dictionary(grouping: ends.map { "\($0.outcome?.rawValue ?? "-") \($0.status.map(String.init) ?? "-")" }, by: { $0 }).mapValues(\.count)
            }
            let before = group.map { $0.before!.end }, after = group.map { $0.after!.end }
            guard outcomes(before) == outcomes(after) else { continue }
            let shift = abs(before.reduce(0, { $0 + $1.attempts }) - after.reduce(0, { $0 + $1.attempts }))
            // As many attempts: shared out in another order. A few more or fewer, each of them
            // having met the breaker: the race at its opening (or for its probe) went otherwise.
            let cause: DifferenceCause
            if shift == 0 {
                cause = .order
            } else if shift <= group.count, group.allSatisfy({ $0.before!.metBreaker || $0.after!.metBreaker }) {
                cause = .breakerRace
            } else {
                continue
            }
            for change in group { changes[changes.firstIndex { $0.id == change.id }!].cause = cause }
        }
        // The same wait moved from one operation to another: requests made at one moment met a
        // full gate, and another of them waited for the free slot this time (the demo's item
        // made beside six feeds took 0.3 s longer, one feed 0.3 s less). Same ends, and a
        // change of the other sign and the same size within the noise.
        let shift = { (change: Change) -> Double? in
            guard let x = change.before?.duration, let y = change.after?.duration, change.before?.end == change.after?.end else { return nil }
            return y - x
        }
        for index in changes.indices where changes[index].cause == nil {
            guard let moved = shift(changes[index]) else { continue }
            let partner = changes.indices.first { other in
                other != index && shift(changes[other]).map { abs($0 + moved) <= DifferenceCause.noise } == true
            }
            if let partner {
                changes[index].cause = .order
                if changes[partner].cause == nil { changes[partner].cause = .order }
            } else if let before = changes[index].before, let after = changes[index].after,
                      abs(after.slotWait - before.slotWait) > DifferenceCause.noise,
                      abs((after.slotWait - before.slotWait) - moved) <= DifferenceCause.noise {
                // All of the change was spent waiting for a free slot: requests made ready at
                // one moment (a refresh's end releasing its held requests) took the slots in
                // another order, and this one waited for a slow neighbour's to free.
                changes[index].cause = .order
            }
        }
        return changes
    }

    /// Why an operation whose end differs does, where a what-if re-run knows: it was not sent
    /// again, the recording ends before it did, its recorded answer was reqtop's own, or its
    /// request held a redacted value.
    private func cause(before: RunDigest.Operation?, after: RunDigest.Operation?, id: String) -> DifferenceCause? {
        guard b.isWhatIf else { return nil }
        if after == nil, notResent.contains(id) { return .notResent }
        if let before, before.outcome == nil { return .unfinished }
        if before?.injected == true, after?.injected != true { return .injected }
        if after?.redacted == true || before?.redacted == true { return .redacted }
        return nil
    }

    /// The differences no cause explains.
    package var unexplained: [Change] { changes.filter { $0.cause == nil } }

    /// The runs ended alike: every difference has a cause.
    package var isEmpty: Bool { unexplained.isEmpty }

    private static func text(_ operation: RunDigest.Operation?) -> String {
        guard let operation else { return "(not in this run)" }
        let duration = operation.duration.map { String(format: "%.2fs", $0) } ?? "-"
        return "\(operation.outcome?.rawValue ?? "unfinished") \(operation.status.map(String.init) ?? "-") · \(operation.attempts) attempt\(operation.attempts == 1 ? "" : "s") · \(duration)"
    }

    /// Prints the comparison of the runs recorded in `files`: as JSON, or the report.
    package func print(json: Bool, files: (String, String)) throws {
        if json {
            let data = try JSONSerialization.data(withJSONObject: self.json(), options: [.prettyPrinted, .sortedKeys])
            Swift.print(TerminalText.escapingControls(json: String(decoding: data, as: UTF8.self)))
        } else {
            // Ids, hosts and reasons come from the recordings: no control character of
            // theirs reaches the terminal.
            Swift.print(TerminalText.clean(report(names: (URL(fileURLWithPath: files.0).lastPathComponent, URL(fileURLWithPath: files.1).lastPathComponent))),
                        terminator: "")
        }
    }

    /// The report for a person.
    package func report(names: (String, String)) -> String {
        var lines: [String] = []
        let changes = changes
        let listed = changes.filter { $0.cause != .timing }
        if changes.isEmpty { lines.append("no differences between \(names.0) and \(names.1)") }
        if !listed.isEmpty { lines.append("operations that differ (\(listed.count)):") }
        for change in listed {
            lines.append("  \(change.id): \(change.cause.map { "\($0.rawValue) (\($0.meaning))" } ?? "unexplained")")
            lines.append("    \(names.0): \(Self.text(change.before))")
            lines.append("    \(names.1): \(Self.text(change.after))")
        }
        let timing = changes.filter { $0.cause == .timing }
        if !timing.isEmpty {
            lines.append("timing: \(timing.count) operation\(timing.count == 1 ? "" : "s") ended alike in a time within the tolerance "
                         + "(0.25 s, or 20 %; --json lists them): \(timing.prefix(6).map(\.id).joined(separator: ", "))\(timing.count > 6 ? ", …" : "")")
        }
        lines.append("hosts (\(names.0) → \(names.1)):")
        for host in Set(a.hosts.keys).union(b.hosts.keys).sorted() {
            let x = a.hosts[host] ?? RunDigest.Host(), y = b.hosts[host] ?? RunDigest.Host()
            func p(_ value: TimeInterval?) -> String { value.map { String(format: "%.2fs", $0) } ?? "-" }
            lines.append("  \(host): attempts \(x.attempts) → \(y.attempts) (×\(String(format: "%.2f", x.amplification)) → ×\(String(format: "%.2f", y.amplification)) per operation, "
                         + "peak \(x.peak) → \(y.peak) a second), "
                         + "failures \(x.failures) → \(y.failures), p50 \(p(x.percentile(0.5))) → \(p(y.percentile(0.5))), p95 \(p(x.percentile(0.95))) → \(p(y.percentile(0.95)))")
        }
        lines.append(summary(names: names))
        return lines.joined(separator: "\n") + "\n"
    }

    /// One sentence for an incident review.
    package func summary(names: (String, String)) -> String {
        let attempts = (a.hosts.values.reduce(0) { $0 + $1.attempts }, b.hosts.values.reduce(0) { $0 + $1.attempts })
        let failures = (a.operations.values.filter { $0.outcome == .failure }.count, b.operations.values.filter { $0.outcome == .failure }.count)
        let ratio = attempts.0 == 0 ? "" : String(format: " (×%.2f)", Double(attempts.1) / Double(attempts.0))
        // The busiest host's busiest second, each run's own: where an outage's load is.
        let peaks = (a.hosts.values.map(\.peak).max() ?? 0, b.hosts.values.map(\.peak).max() ?? 0)
        let p95 = (a.hosts.values.compactMap { $0.percentile(0.95) }.max(), b.hosts.values.compactMap { $0.percentile(0.95) }.max())
        var said = "summary: attempts sent upstream \(attempts.0) → \(attempts.1)\(ratio), at the peak \(peaks.0) → \(peaks.1) a second, "
            + "failed operations \(failures.0) → \(failures.1)"
        if let before = p95.0, let after = p95.1 { said += String(format: ", slowest host's p95 %.2fs → %.2fs", before, after) }
        let changes = changes
        let unexplained = changes.filter { $0.cause == nil }.count
        let causes = DifferenceCause.allCases.compactMap { cause -> String? in
            let count = changes.filter { $0.cause == cause }.count
            return count == 0 ? nil : "\(count) \(cause.rawValue)"
        }
        return said + ", \(unexplained) unexplained difference\(unexplained == 1 ? "" : "s")"
            + (causes.isEmpty ? "" : " (explained: \(causes.joined(separator: ", ")))") + " (\(names.0) → \(names.1))"
    }

    /// The same as JSON, for scripts.
    package func json() -> [String: Any] {
        func object(_ operation: RunDigest.Operation?) -> Any {
            guard let operation else { return NSNull() }
            var fields: [String: Any] = ["attempts": operation.attempts]
            fields["outcome"] = operation.outcome.map { $0.rawValue as Any } ?? NSNull()
            fields["status"] = operation.status.map { $0 as Any } ?? NSNull()
            fields["duration"] = operation.duration.map { $0 as Any } ?? NSNull()
            return fields
        }
        var hosts: [String: Any] = [:]
        for host in Set(a.hosts.keys).union(b.hosts.keys).sorted() {
            let x = a.hosts[host] ?? RunDigest.Host(), y = b.hosts[host] ?? RunDigest.Host()
            func value(_ seconds: TimeInterval?) -> Any { seconds.map { $0 as Any } ?? NSNull() }
            hosts[host] = ["attempts": [x.attempts, y.attempts], "failures": [x.failures, y.failures], "peakPerSecond": [x.peak, y.peak],
                           "p50": [value(x.percentile(0.5)), value(y.percentile(0.5))],
                           "p95": [value(x.percentile(0.95)), value(y.percentile(0.95))]] as [String: Any]
        }
        let changes = changes
        return ["differences": changes.map { ["op": $0.id, "a": object($0.before), "b": object($0.after),
                                              "cause": $0.cause.map { $0.rawValue as Any } ?? NSNull()] as [String: Any] },
                "unexplained": changes.filter { $0.cause == nil }.count,
                "hosts": hosts, "same": isEmpty]
    }
    package init(a: RunDigest, b: RunDigest, notResent: Set<String> = []) {
        self.a = a
        self.b = b
        self.notResent = notResent
    }
}
