@testable import RequestMonitor
import RequestOperations
import XCTest

/// The Hosts screen (`H`): one line per host, from the rows alone.
final class HostsViewTests: XCTestCase {
    private func modelWithARefusedRetry() -> QueueModel {
        var model = scriptedModel()
        func event(_ t: TimeInterval, _ op: String, _ attempt: Int, _ payload: RequestEvent.Payload) {
            model.apply(RequestEvent(time: t, operationID: op, attempt: attempt, payload: payload))
        }
        for (index, duration) in [0.2, 0.6, 1.0].enumerated() {
            let op = "burst-\(index)"
            event(5, op, 1, .queued(method: "GET", url: "http://legacy.test/status/503", headers: [:], maxAttempts: 5))
            event(5, op, 1, .started)
            if index == 0 {
                event(5.1, op, 1, .retryScheduled(delay: 0.1, reason: "status 503"))
                event(5.2, op, 2, .started)
            }
            event(5 + duration, op, index == 0 ? 2 : 1, .retryDenied(reason: "retry budget for legacy.test exhausted: 20 % of requests in 10s, plus 10 a second"))
            event(5 + duration, op, index == 0 ? 2 : 1, .finished(outcome: .failure, status: 503, attempts: index == 0 ? 2 : 1, duration: duration, reason: "status 503; retry budget"))
        }
        return model
    }

    func testEachHostIsCountedFromItsRows() throws {
        let hosts = HostSummary.compute(modelWithARefusedRetry())
        let legacy = try XCTUnwrap(hosts.first { $0.host == "legacy.test" })
        XCTAssertEqual(legacy.operations, 3)
        XCTAssertEqual(legacy.failed, 3)
        XCTAssertEqual(legacy.denied, 3)
        XCTAssertEqual(legacy.retries, 1)
        XCTAssertEqual(legacy.failureRatio, 1)
        XCTAssertEqual(legacy.p50, 0.6)
        XCTAssertEqual(legacy.p95, 1.0)
        let api = try XCTUnwrap(hosts.first { $0.host == "api.test:8080" })
        XCTAssertEqual(api.denied, 0)
        XCTAssertEqual(hosts.first?.host, "api.test:8080", "the busiest first: \(hosts.map(\.host))")
        XCTAssertEqual(hosts.map(\.operations).reduce(0, +), modelWithARefusedRetry().rows.count)
    }

    func testHOpensTheHostsScreenAndItShowsEveryHost() {
        var state = MonitorState()
        let model = modelWithARefusedRetry()
        let context = MonitorUpdate.Context(visible: [], pageSize: 10, model: model, canCommand: false, canCancel: false)
        _ = MonitorUpdate.update(&state, KeyMap.action(for: .character("H"), in: state)!, context)
        XCTAssertEqual(state.screen, .hosts)
        let grid = MonitorView(model: model, state: state, visible: [], theme: Theme(), now: 10).render(width: 120, height: 20)
        let lines = grid.text.split(separator: "\n").map(String.init)
        let title = lines.first { $0.contains("HOST") } ?? ""
        for column in ["IN FLIGHT", "WAITING", "BREAKER", "PAUSED", "OPS", "RETRIES", "BUDGET", "REFUSED", "FAILED", "FAIL %", "P50", "P95"] {
            XCTAssert(title.contains(column), "\(column) in \(title)")
        }
        let legacy = lines.first { $0.contains("legacy.test") } ?? ""
        XCTAssertEqual(legacy.split(separator: " ").map(String.init), ["legacy.test", "0", "0", "closed", "-", "3", "1", "-", "3", "0", "3", "100%", "600ms", "1.0s"], grid.text)
        XCTAssert(grid.text.contains("Esc Back") || grid.text.contains("EscBack"), grid.text)
        _ = MonitorUpdate.update(&state, .back, context)
        XCTAssertEqual(state.screen, .table, "Esc goes back to the table")
        _ = MonitorUpdate.update(&state, .toggleHosts, context)
        _ = MonitorUpdate.update(&state, .toggleHosts, context)
        XCTAssertEqual(state.screen, .table, "H again goes back too")
    }

    /// A breaker's state comes from the host-level events (empty `op`), matched to the rows'
    /// host whether or not the row names the default port, with its countdown.
    func testTheBreakerColumnFollowsTheHostLevelEvents() throws {
        var model = modelWithARefusedRetry()
        func host(_ t: TimeInterval, _ payload: RequestEvent.Payload) {
            model.apply(RequestEvent(time: t, operationID: "", attempt: 0, payload: payload))
        }
        let rows = model.rows.count
        host(6, .circuitOpened(host: "legacy.test:80", reason: "5 attempts in a row got no answer", until: 11))
        host(6.5, .circuitOpened(host: "isolated.test:443", reason: "isolated by monitor", until: nil))
        XCTAssertEqual(model.rows.count, rows, "host-level events make no row")
        func label(_ name: String, at now: TimeInterval) -> String? {
            HostSummary.compute(model).first { $0.host.hasPrefix(name) }?.circuit?.label(now: now)
        }
        XCTAssertEqual(label("legacy.test", at: 7.8), "open 3.2s")
        XCTAssertEqual(label("isolated.test", at: 7.8), "isolated", "a breaker without rows still shows")
        host(11, .circuitHalfOpen(host: "legacy.test:80"))
        XCTAssertEqual(label("legacy.test", at: 11.1), "half-open")
        host(11.3, .circuitClosed(host: "legacy.test:80", reason: "the probe succeeded"))
        XCTAssertEqual(label("legacy.test", at: 12), "closed")
        host(12, .retryBudget(host: "legacy.test:80", left: 7))
        XCTAssertEqual(HostSummary.compute(model).first { $0.host.hasPrefix("legacy.test") }?.budgetLeft, 7)
        var state = MonitorState()
        state.screen = .hosts
        let grid = MonitorView(model: model, state: state, visible: [], theme: Theme(), now: 12).render(width: 120, height: 20)
        XCTAssert(grid.text.contains("isolated"), grid.text)
        let header = grid.text.split(separator: "\n").first { $0.contains("BREAKER") } ?? ""
        XCTAssert(header.contains("BUDGET"), grid.text)
        let budgetColumn = header.range(of: "BUDGET")!.upperBound
        let legacy = grid.text.split(separator: "\n").first { $0.contains("legacy.test") } ?? ""
        XCTAssertEqual(legacy[legacy.index(legacy.startIndex, offsetBy: header.distance(from: header.startIndex, to: budgetColumn) - 1)], "7", grid.text)
    }

    /// The running tallies against a recount of the rows, over a random session (hosts that
    /// change when a dependent request is built, retries, refusals, every outcome).
    func testTheRunningTalliesEqualARecountOfTheRows() {
        var generator = SystemRandomNumberGenerator()
        var model = QueueModel(source: "random")
        var t = 0.0
        for index in 0..<400 {
            let op = "op-\(index % 150)"
            let host = ["a.test", "b.test:8080", "c.test"][Int.random(in: 0..<3, using: &generator)]
            t += 0.01
            let payload: RequestEvent.Payload = switch Int.random(in: 0..<7, using: &generator) {
            case 0: .queued(method: "GET", url: "http://\(host)/x", headers: [:], maxAttempts: 3)
            case 1: .built(method: "GET", url: "http://\(host)/y", headers: [:], body: nil)
            case 2: .started
            case 3: .retryScheduled(delay: 0.1, reason: "status 503")
            case 4: .retryDenied(reason: "retry budget")
            case 5: .finished(outcome: [.success, .failure, .cancelled][index % 3], status: 200, attempts: 1, duration: Double(index % 17) / 10, reason: nil)
            default: .taskCreated(taskIdentifier: index, url: "http://\(host)/z")
            }
            model.apply(RequestEvent(time: t, operationID: op, attempt: 1 + index % 3, payload: payload))
        }
        var recount: [String: (ops: Int, retries: Int, denied: Int, failed: Int, inFlight: Int)] = [:]
        for row in model.rows {
            let host = row.host.isEmpty ? "(no host)" : row.host
            var entry = recount[host] ?? (0, 0, 0, 0, 0)
            entry.ops += 1
            entry.retries += max(0, row.attempt - 1)
            if row.deniedRetry { entry.denied += 1 }
            if row.state == .failed { entry.failed += 1 }
            if row.state == .running || row.state == .preparing { entry.inFlight += 1 }
            recount[host] = entry
        }
        let summaries = HostSummary.compute(model).filter { $0.operations > 0 }
        XCTAssertEqual(Set(summaries.map(\.host)), Set(recount.keys))
        for summary in summaries {
            let expected = recount[summary.host]!
            XCTAssertEqual(summary.operations, expected.ops, summary.host)
            XCTAssertEqual(summary.retries, expected.retries, summary.host)
            XCTAssertEqual(summary.denied, expected.denied, summary.host)
            XCTAssertEqual(summary.failed, expected.failed, summary.host)
            XCTAssertEqual(summary.inFlight, expected.inFlight, summary.host)
        }
    }

    func testSelectionFindsTheNearestRankPercentile() {
        for count in [1, 2, 3, 10, 101, 1_000] {
            var values = (0..<count).map { _ in Double(Int.random(in: 0..<50)) / 10 }
            let sorted = values.sorted()
            for fraction in [0.5, 0.95, 0.99] {
                let rank = min(count - 1, max(0, Int((fraction * Double(count)).rounded(.up)) - 1))
                XCTAssertEqual(HostSummary.select(&values, fraction), sorted[rank], "\(count) values, \(fraction)")
            }
        }
    }
}

/// The Hosts screen of a merged view split by program (`P`, #45): each program's own tallies
/// and breaker for a host, and its commands for that program alone.
final class HostsByProgramTests: XCTestCase {
    private func mergedModel() -> QueueModel {
        var model = QueueModel(source: "attach")
        for (pid, failures) in [(4121, 0), (4122, 2)] {
            let program = "reqtop demo \(pid)"
            for index in 0..<3 {
                let op = "\(pid)/op-\(index)"
                model.apply(RequestEvent(time: 1, operationID: op, attempt: 1,
                                         payload: .queued(method: "GET", url: "http://api.test/x", headers: [:], maxAttempts: 1), program: program))
                let failed = index < failures
                model.apply(RequestEvent(time: 2, operationID: op, attempt: 1,
                                         payload: .finished(outcome: failed ? .failure : .success, status: failed ? 503 : 200, attempts: 1, duration: 1, reason: nil),
                                         program: program))
            }
        }
        // Only the second program's breaker opened.
        model.apply(RequestEvent(time: 3, operationID: "", attempt: 0, payload: .circuitOpened(host: "api.test:80", reason: "2 failures", until: 30),
                                 program: "reqtop demo 4122"))
        return model
    }

    func testEachProgramKeepsItsOwnLineForAHost() throws {
        let model = mergedModel()
        let merged = HostSummary.compute(model)
        XCTAssertEqual(merged.map(\.host), ["api.test"])
        XCTAssertEqual(merged.first?.operations, 6)
        let split = HostSummary.compute(model, byProgram: true)
        XCTAssertEqual(Set(split.map(\.host)), ["4121/api.test", "4122/api.test"])
        let calm = try XCTUnwrap(split.first { $0.host == "4121/api.test" })
        let failing = try XCTUnwrap(split.first { $0.host == "4122/api.test" })
        XCTAssertEqual(calm.failed, 0)
        XCTAssertNil(calm.circuit, "the other program's breaker is not this one's")
        XCTAssertEqual(failing.failed, 2)
        XCTAssertEqual(failing.circuit?.state, .open(until: 30))
        XCTAssertEqual(failing.circuitHost, "4122/api.test:80", "its commands name the program")

        var state = MonitorState()
        state.screen = .hosts
        let context = MonitorUpdate.Context(visible: [], pageSize: 20, model: model, canCommand: true, canCancel: true)
        XCTAssertEqual(MonitorUpdate.update(&state, .splitHostsByProgram, context), [])
        XCTAssertTrue(state.hostsByProgram)
        state.selectedHost = "4122/api.test"
        XCTAssertEqual(MonitorUpdate.update(&state, .isolateHost, context), [.command(.queue(.isolate(host: "4122/api.test:80")))])

        // One program's events only: nothing to split.
        var single = MonitorState()
        single.screen = .hosts
        let plain = MonitorUpdate.Context(visible: [], pageSize: 20, model: scriptedModel(), canCommand: true, canCancel: true)
        XCTAssertEqual(MonitorUpdate.update(&single, .splitHostsByProgram, plain), [])
        XCTAssertFalse(single.hostsByProgram)
        XCTAssertEqual(single.flash, "only a merged view of several programs (reqtop attach --all) splits hosts by program")
    }
}
