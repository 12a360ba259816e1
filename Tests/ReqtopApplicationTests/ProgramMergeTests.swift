import Foundation
@testable import ReqtopApplication
import RequestOperations
import XCTest

/// The merged view of several programs: ids unique by program, one clock, breakpoints
/// numbered anew, and every command sent to the program it is about.
final class ProgramMergeTests: XCTestCase {
    let start = Date(timeIntervalSince1970: 1_000_000)

    func hello(_ pid: Int32, _ name: String, time: TimeInterval, readOnly: Bool = false) -> EndpointHelloFacts {
        EndpointHelloFacts(pid: pid, name: name, time: time, suspended: false, faults: 0, readOnly: readOnly)
    }

    func twoPrograms() -> ProgramMerge {
        var merge = ProgramMerge(start: start)
        // api started with the monitor's clock; worker 2 s later.
        merge.join(hello(4121, "api", time: 10), at: start.addingTimeInterval(10))
        merge.join(hello(4122, "worker", time: 3), at: start.addingTimeInterval(5))
        return merge
    }

    func testEventsNameTheirProgramKeepIdsApartAndShareOneClock() {
        var merge = twoPrograms()
        let api = merge.merge(RequestEvent(time: 4, operationID: "login", attempt: 1, payload: .started), from: 4121)
        let worker = merge.merge(RequestEvent(time: 4, operationID: "login", attempt: 2, payload: .started), from: 4122)
        XCTAssertEqual(api, RequestEvent(time: 4, operationID: "4121/login", attempt: 1, payload: .started, program: "api 4121"))
        XCTAssertEqual(worker, RequestEvent(time: 6, operationID: "4122/login", attempt: 2, payload: .started, program: "worker 4122"))
        // A host-level event keeps its empty id.
        let breaker = merge.merge(RequestEvent(time: 1, operationID: "", attempt: 0, payload: .retryBudget(host: "h:80", left: 3)), from: 4122)
        XCTAssertEqual(breaker.operationID, "")
        XCTAssertEqual(breaker.program, "worker 4122")
        // The ids an event names are its program's too.
        var options = RecordedOptions()
        options.parents = ["token", "me"]
        let queued = merge.merge(RequestEvent(time: 0, operationID: "feed", attempt: 1,
                                              payload: .queued(method: "GET", url: "http://h/", headers: [:], maxAttempts: nil, options: options)), from: 4122)
        guard case .queued(_, _, _, _, _, let merged?) = queued.payload else { return XCTFail("\(queued)") }
        XCTAssertEqual(merged.parents, ["4122/token", "4122/me"])
    }

    func testBreakpointsAreNumberedAnewAndMappedBothWays() {
        var merge = twoPrograms()
        let first = merge.merge(RequestEvent(time: 0, operationID: "", attempt: 0,
                                             payload: .breakpointSet(id: 1, rule: "host:a", by: "monitor", enabled: true, afterResponse: false)), from: 4121)
        let second = merge.merge(RequestEvent(time: 0, operationID: "", attempt: 0,
                                              payload: .breakpointSet(id: 1, rule: "host:a", by: "monitor", enabled: true, afterResponse: false)), from: 4122)
        XCTAssertEqual(first.payload, .breakpointSet(id: 1, rule: "host:a", by: "monitor", enabled: true, afterResponse: false))
        XCTAssertEqual(second.payload, .breakpointSet(id: 2, rule: "host:a", by: "monitor", enabled: true, afterResponse: false))
        // A stop at worker's breakpoint 1 shows as breakpoint 2, and turning 2 off goes to worker as 1.
        let stop = merge.merge(RequestEvent(time: 0, operationID: "x", attempt: 1, payload: .breakpoint(id: 1, rule: "host:a", by: "monitor")), from: 4122)
        XCTAssertEqual(stop.payload, .breakpoint(id: 2, rule: "host:a", by: "monitor"))
        XCTAssertEqual(merge.route(.setBreakpointEnabled(id: 2, enabled: false)), .one(pid: 4122, .setBreakpointEnabled(id: 1, enabled: false)))
        XCTAssertEqual(merge.route(.removeBreakpoint(id: 1)), .one(pid: 4121, .removeBreakpoint(id: 1)))
        XCTAssertEqual(merge.route(.removeBreakpoint(id: 9)), .none("no breakpoint 9"))
        // The program's answer comes back in the merged numbers.
        XCTAssertEqual(merge.merge(.breakpointRemoved(id: 1), from: 4122), .breakpointRemoved(id: 2))
    }

    func testCommandsGoToTheProgramThatOwnsTheOperation() {
        var merge = twoPrograms()
        XCTAssertEqual(merge.route(.cancel(operation: "4122/login")), .one(pid: 4122, .cancel(operation: "login")))
        XCTAssertEqual(merge.route(.retry(operation: "4121/a/b")), .one(pid: 4121, .retry(operation: "a/b")), "only the first slash is the program's")
        XCTAssertEqual(merge.route(.cancel(operation: "login")), .none("no program here has login"))
        XCTAssertEqual(merge.route(.cancel(operation: "999/login")), .none("no program here has 999/login"))
        XCTAssertEqual(merge.route(.setSuspended(true)), .every(.setSuspended(true)))
        XCTAssertEqual(merge.route(.toggleFault(host: "h:80")), .every(.toggleFault(host: "h:80")))
        // A host of one program (the Hosts screen split by program) goes to that one alone.
        XCTAssertEqual(merge.route(.isolate(host: "4122/h:80")), .one(pid: 4122, .isolate(host: "h:80")))
        XCTAssertEqual(merge.route(.toggleFault(host: "4121/h:80")), .one(pid: 4121, .toggleFault(host: "h:80")))
        XCTAssertEqual(merge.merge(.cancelled(operation: "login"), from: 4122), .cancelled(operation: "4122/login"))
        XCTAssertEqual(merge.merge(.runningAgain(operation: "a", as: "a~1"), from: 4121), .runningAgain(operation: "4121/a", as: "4121/a~1"))

        // An ended program takes nothing; when all have ended, nothing is sent.
        merge.update(4122) { $0.ended = true }
        XCTAssertEqual(merge.route(.cancel(operation: "4122/login")), .none("worker 4122 has ended"))
        merge.update(4121) { $0.ended = true }
        XCTAssertEqual(merge.route(.cancelAll), .none("every program has ended"))
    }
}
