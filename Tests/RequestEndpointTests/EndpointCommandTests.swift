import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import RequestEndpoint
import RequestEventFormat
import RequestOperations
import Synchronization
import XCTest

/// The one command vocabulary over the wire: every ``QueueCommand`` arrives as it was sent,
/// every ``QueueCommandOutcome`` comes back as it was made, and faults from an attached
/// monitor only where the program opted in, gone when the monitor is.
final class EndpointCommandTests: EndpointTestCase {
    /// One of each command; the switch fails to compile when a case is added without one.
    static let everyCommand: [QueueCommand] = {
        var edited = URLRequest(url: URL(string: "http://127.0.0.1:9/echo?a=1")!)
        (edited.httpMethod, edited.httpBody) = ("PUT", Data(#"{"x":1}"#.utf8))
        edited.setValue("yes", forHTTPHeaderField: "X-Edited")
        let commands: [QueueCommand] = [
            .retry(operation: "w1-a"), .cancel(operation: "w1-b"), .cancelAll, .setSuspended(true), .setSuspended(false),
            .releaseBatches, .isolate(host: "[::1]:8080"), .closeCircuit(host: "api.example.com:443"),
            .resend(operation: "w1-c", edited: EditedRequest(request: edited, attemptTimeout: 2, deadline: 30)),
            .toggleFault(host: "127.0.0.1:8080"), .clearFaults,
            .addBreakpoint(match: "host:api.example.com path:/v1 method:POST"), .addBreakpoint(match: ""), .clearBreakpoints,
            .resolveBreakpoint(operation: "w1-d", resolution: .proceed), .resolveBreakpoint(operation: "w1-d", resolution: .cancel),
            .resolveBreakpoint(operation: "w1-d", resolution: .fail(.timedOut)),
            .resolveBreakpoint(operation: "w1-d", resolution: .respond(status: 503, headers: ["Retry-After": "2"], body: Data("busy".utf8))),
            .resolveBreakpoint(operation: "w1-d", resolution: .edit(EditedRequest(request: edited, attemptTimeout: 2, deadline: 30))),
            .setBreakpointEnabled(id: 3, enabled: false), .setBreakpointEnabled(id: 3, enabled: true), .removeBreakpoint(id: 4),
        ]
        for command in commands {
            switch command {
            case .retry, .cancel, .cancelAll, .setSuspended, .releaseBatches, .isolate, .closeCircuit, .resend, .toggleFault, .clearFaults,
                 .addBreakpoint, .clearBreakpoints, .resolveBreakpoint, .setBreakpointEnabled, .removeBreakpoint: break
            }
        }
        return commands
    }()

    func testEveryCommandCrossesTheWireAsItWasGiven() throws {
        for (index, command) in Self.everyCommand.enumerated() {
            let line = EndpointProtocol.line(for: command, id: index)
            let read = try EndpointProtocol.parse(line)
            XCTAssertEqual(read.id, index)
            let pair: (String, EditedRequest, String, EditedRequest)? = switch (command, read.command) {
            case (.resend(let operation, let edited), .resend(let readOperation, let readEdited)),
                 (.resolveBreakpoint(let operation, .edit(let edited)), .resolveBreakpoint(let readOperation, .edit(let readEdited))):
                (operation, edited, readOperation, readEdited)
            default: nil
            }
            guard let (operation, edited, readOperation, readEdited) = pair else {
                XCTAssertEqual(read.command, command, line)
                continue
            }
            // URLRequest equality includes internals a round trip need not keep: compare what is sent.
            XCTAssertEqual(readOperation, operation)
            XCTAssertEqual(readEdited.request.url, edited.request.url)
            XCTAssertEqual(readEdited.request.httpMethod, "PUT")
            XCTAssertEqual(readEdited.request.value(forHTTPHeaderField: "X-Edited"), "yes")
            XCTAssertEqual(try JSONSerialization.jsonObject(with: readEdited.request.httpBody ?? Data()) as? [String: Int], ["x": 1])
            XCTAssertEqual(readEdited.attemptTimeout, 2)
            XCTAssertEqual(readEdited.deadline, 30)
        }
    }

    func testEveryOutcomeCrossesTheWireAsItWasMade() throws {
        let outcomes: [QueueCommandOutcome] = [
            .retryingNow(operation: "a"), .runningAgain(operation: "a", as: "a~2"), .sentEdited(operation: "a", as: "a~edit1"),
            .notWaitingToRetry(operation: "a"), .cancelled(operation: "a"), .alreadyEnded(operation: "a"), .cancelledAll(count: 3),
            .paused, .resumed, .released(batches: [ReleasedBatch(name: "uploads", count: 2)]), .released(batches: []),
            .unknownOperation(operation: "a"), .isolated(host: "h:1"), .circuitClosed(host: "h:1"), .circuitAlreadyClosed(host: "h:1"),
            .noCircuitBreaker, .faultSet(host: "h:1", effect: "status 503"), .faultRemoved(host: "h:1"), .faultsCleared(count: 1),
            .faultsNotAccepted, .readOnly, .notCarriedOut(reason: "why"), .breakpointSet(id: 2, match: "path:/x"), .badMatch(reason: "why"),
            .breakpointsCleared(count: 2), .breakpointResolved(operation: "a", how: "continued"), .notStopped(operation: "a"),
            .breakpointEnabled(id: 1, enabled: false), .breakpointRemoved(id: 1), .unknownBreakpoint(id: 9),
        ]
        for outcome in outcomes {
            let line = EndpointProtocol.reply(id: 4, outcome)
            XCTAssertEqual(EndpointClient.outcome(ofReply: line), outcome, line)
            // The words ride along for scripts, and say the same as the monitor's.
            guard case .reply(4, let ok, let message) = EndpointClient.parse(line) else { return XCTFail(line) }
            XCTAssertEqual(ok, outcome.ok)
            XCTAssertEqual(message, outcome.message)
        }
    }

    /// A monitor's breakpoint stops the program's request; when the monitor dies, the
    /// breakpoint goes and the request goes on: nothing is left holding it.
    func testABreakpointFromAnAttachedMonitorHoldsUntilItIsResolvedOrTheMonitorGoes() throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let queue = RequestQueue(earlyRetry: nil)
        let endpoint = try start(queue, acceptsFaults: true)
        let monitor = ClientReader(try EndpointClient.connect(path: endpoint.path))
        guard case .breakpointSet(let id, "after path:/echo")? = Optional(monitor.client.request(.addBreakpoint(match: "after path:/echo"))) else {
            return XCTFail("the breakpoint was not set")
        }
        waitFor("the list to hear of it") {
            monitor.events.contains { if case .breakpointSet(id, "path:/echo", _, true, true) = $0.payload { true } else { false } }
        }
        let first = queue.add(URLRequest(url: server.url("/echo")), id: "first")
        waitFor("it to stop after its answer") { first.breakpointStage == .afterResponse }
        XCTAssertEqual(monitor.client.request(.resolveBreakpoint(operation: "first", resolution: .respond(status: 202, headers: [:], body: Data()))),
                       .breakpointResolved(operation: "first", how: "answered 202 by hand (0 bytes)"))
        waitFor("the made-up answer to end it") { first.result?.status == 202 }
        let second = queue.add(URLRequest(url: server.url("/echo")), id: "second")
        waitFor("the second to stop") { second.breakpointStage == .afterResponse }
        monitor.client.close()
        waitFor("the dead monitor's breakpoint to go and the request with it") { second.result?.status == 200 }
        XCTAssertFalse(queue.breakpoints.isActive)
        XCTAssert(notices.all.contains("removed 1 fault set by a monitor that detached"), "\(notices.all)")
    }

    /// Safety (#33): a program takes faults from an attached monitor only when it opted in,
    /// never read-only; a monitor's faults are its own, and go when it goes.
    func testFaultsFromAnAttachedMonitorNeedTheProgramsConsentAndLeaveWithIt() throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let host = "127.0.0.1:\(server.port)"

        let closed = RequestQueue(earlyRetry: nil)
        let closedEndpoint = try start(closed)
        let refused = ClientReader(try EndpointClient.connect(path: closedEndpoint.path))
        XCTAssertEqual(refused.client.request(.toggleFault(host: host)), .faultsNotAccepted)
        XCTAssertEqual(refused.client.request(.clearFaults), .faultsNotAccepted)
        XCTAssertFalse(closed.faults.isActive)
        closedEndpoint.stop()

        let queue = RequestQueue(earlyRetry: nil)
        let planRule = queue.faults.add(FaultRule(match: try RequestMatch("path:/never"), effect: .reset, setBy: "plan"))
        let endpoint = try start(queue, acceptsFaults: true)
        let first = ClientReader(try EndpointClient.connect(path: endpoint.path))
        let second = ClientReader(try EndpointClient.connect(path: endpoint.path))
        waitFor("both monitors") { endpoint.connectionCount == 2 }
        guard case .message(.hello(let hello)) = try EndpointClient.connect(path: endpoint.path).greeting() else { return XCTFail("no hello") }
        XCTAssertTrue(hello.acceptsFaults)
        XCTAssertEqual(hello.faults, 1, "the plan's rule")

        XCTAssertEqual(first.client.request(.toggleFault(host: host)), .faultSet(host: host, effect: "status 503"))
        waitFor("every monitor to hear of it") { second.all.contains(.faults(2)) }
        queue.add(URLRequest(url: server.url("/echo")), id: "injected")
        waitFor("the injected attempt, naming the monitor that set it") {
            first.events.contains { event in
                guard event.operationID == "injected", case .injected(let fault, let rule, let by) = event.payload else { return false }
                return fault == "status 503" && rule == "host:\(host)" && by.hasPrefix("attached monitor ")
            }
        }
        XCTAssertEqual(server.counters.hits("/echo"), 0, "the 503 never reached the server")
        // Another monitor's ! sets its own fault; it does not take the first one's away.
        XCTAssertEqual(second.client.request(.toggleFault(host: host)), .faultSet(host: host, effect: "status 503"))
        XCTAssertEqual(queue.faults.list.count, 3)

        // The first monitor dies (its socket closes as a killed process's does): its fault goes.
        first.client.close()
        waitFor("the dead monitor's fault to be removed") { queue.faults.list.count == 2 }
        waitFor("the survivor to be told") { second.all.last { if case .faults = $0 { true } else { false } } == .faults(2) }
        XCTAssertTrue(notices.all.contains("removed 1 fault set by a monitor that detached"), "\(notices.all)")
        XCTAssertEqual(queue.faults.list.map(\.id).first, planRule, "the plan's rule stays")
        queue.cancelAll()
        endpoint.stop()
        XCTAssertEqual(queue.faults.list.map(\.rule.setBy), ["plan"], "a program that stops listening keeps no monitor's faults")

        let readOnly = RequestQueue(earlyRetry: nil)
        let readOnlyEndpoint = try start(readOnly, readOnly: true, acceptsFaults: true)
        let watcher = ClientReader(try EndpointClient.connect(path: readOnlyEndpoint.path))
        XCTAssertEqual(watcher.client.request(.toggleFault(host: host)), .readOnly)
        XCTAssertFalse(readOnly.faults.isActive)
    }
}
