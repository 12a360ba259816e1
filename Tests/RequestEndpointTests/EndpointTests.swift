import FaultServer
import Foundation
import RequestEventFormat
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#endif
@testable import RequestEndpoint
import RequestOperations
import Synchronization
import XCTest

final class EndpointTests: EndpointTestCase {
    func testTheSocketIsPrivateAndNamedByThePidAndGoneAfterStop() throws {
        let queue = RequestQueue(earlyRetry: nil)
        let endpoint = try start(queue)
        XCTAssertEqual(endpoint.path, "\(directory)/\(getpid()).sock")
        var info = stat()
        XCTAssertEqual(stat(directory, &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o700)
        XCTAssertEqual(stat(endpoint.path, &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o600)
        XCTAssertEqual(EndpointClient.hello(path: endpoint.path)?.name, "endpoint-test")
        endpoint.stop()
        XCTAssertFalse(FileManager.default.fileExists(atPath: endpoint.path))
    }

    func testALateMonitorGetsASnapshotThenTheStream() throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let queue = RequestQueue(earlyRetry: nil)
        let endpoint = try start(queue)
        for index in 1...3 { queue.add(URLRequest(url: server.url("/echo")), id: "before-\(index)") }
        let hanging = queue.add(URLRequest(url: server.url("/hang")), id: "hanging")
        queue.operationQueue.waitUntilAllOperationsAreFinished(except: hanging)
        queue.events.waitUntilDelivered()

        let reader = ClientReader(try EndpointClient.connect(path: endpoint.path))
        waitFor("the snapshot") { reader.all.contains(.snapshotEnd) }
        guard case .hello(let hello) = reader.all.first else { return XCTFail("no hello first: \(reader.all)") }
        XCTAssertEqual(hello.pid, getpid())
        XCTAssertEqual(hello.live, 1)
        XCTAssertEqual(reader.all[1], .snapshot(operations: 4))
        for index in 1...3 { XCTAssertNotNil(reader.finished("before-\(index)"), "before-\(index) in the snapshot") }

        queue.add(URLRequest(url: server.url("/echo")), id: "after")
        waitFor("the live event") { reader.finished("after") != nil }

        XCTAssertEqual(reader.client.request(.cancel(operation: "hanging")), .cancelled(operation: "hanging"))
        waitFor("the cancel to show") { reader.finished("hanging") != nil }
        XCTAssertTrue(reader.events.contains { $0.operationID == "hanging" && $0.payload == .cancelled(by: "monitor") })
        XCTAssertEqual(reader.client.request(.cancel(operation: "hanging")).message, "hanging has already ended")
        XCTAssertEqual(reader.client.request(.retry(operation: "nobody")), .unknownOperation(operation: "nobody"))
        // r on a finished operation runs it again, as in the live monitor.
        XCTAssertEqual(reader.client.request(.retry(operation: "before-1")), .runningAgain(operation: "before-1", as: "before-1~2"))
        waitFor("the re-run to finish") { reader.finished("before-1~2") != nil }
        XCTAssertEqual(reader.client.request(.retry(operation: "before-1")).message, "running before-1 again as before-1~3")
    }

    func testSuspendResumeAndCancelAllAreAnsweredAndToldToEveryMonitor() throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let queue = RequestQueue(earlyRetry: nil)
        let endpoint = try start(queue)
        let readers = try (1...3).map { _ in ClientReader(try EndpointClient.connect(path: endpoint.path)) }
        waitFor("three monitors") { endpoint.connectionCount == 3 }
        XCTAssertEqual(readers[0].client.request(.setSuspended(true)).message, "paused: no new attempt starts")
        XCTAssertTrue(queue.isSuspended)
        for reader in readers { waitFor("the pause to reach every monitor") { reader.all.contains(.suspended(true)) } }
        let held = queue.add(URLRequest(url: server.url("/echo")), id: "held")
        usleep(100_000)
        XCTAssertNil(held.result)
        XCTAssertEqual(readers[1].client.request(.cancelAll), .cancelledAll(count: 1))
        XCTAssertEqual(readers[2].client.request(.setSuspended(false)), .resumed)
        for reader in readers { waitFor("every monitor to see the cancel") { reader.finished("held") != nil } }
    }

    /// `e` in an attached monitor: the edited request is sent by the program, as `ID~edit1`,
    /// with the edit on the wire; a broken edit is refused with where it broke.
    func testAnEditedRequestIsSentByTheProgram() throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let queue = RequestQueue(earlyRetry: nil)
        let endpoint = try start(queue)
        queue.add(URLRequest(url: server.url("/echo")), id: "orig")
        queue.waitUntilAllOperationsAreFinished()
        let reader = ClientReader(try EndpointClient.connect(path: endpoint.path))
        let entry = RequestEntry(id: "orig", method: "PUT", url: server.url("/echo").absoluteString, headers: ["X-Edited": "yes"], body: Data("new".utf8))
        XCTAssertEqual(reader.client.request(.resend(operation: "orig", edited: entry.edited)), .sentEdited(operation: "orig", as: "orig~edit1"))
        waitFor("the edited request") { server.counters.requests("/echo").count == 2 }
        let sent = try XCTUnwrap(server.counters.requests("/echo").last)
        XCTAssertEqual(sent.headers["x-edited"], "yes")
        XCTAssertEqual(sent.body, Data("new".utf8))
        reader.client.send(line: #"{"id": 7, "command": "resend", "op": "orig", "entry": "{\"url\": 5}"}"#)
        waitFor("the refusal") {
            reader.all.contains { if case .reply(7, false, let text) = $0 { text.contains("url") } else { false } }
        }
    }

    /// A host's circuit breaker isolated and closed from an attached monitor: requests to it
    /// wait without being sent while isolated, and go out when it is closed.
    func testAHostIsIsolatedAndClosedFromTheEndpoint() throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let queue = RequestQueue(earlyRetry: nil)
        let endpoint = try start(queue)
        let reader = ClientReader(try EndpointClient.connect(path: endpoint.path))
        let host = "127.0.0.1:\(server.port)"
        XCTAssertEqual(reader.client.request(.isolate(host: host)).message,
                       "isolated \(host): nothing is sent to it until its circuit is closed (c)")
        let held = queue.add(URLRequest(url: server.url("/echo")), id: "held")
        waitFor("the request to wait for the breaker") { held.phase == .waitingForCircuit(host: host) }
        usleep(100_000)
        XCTAssertEqual(server.counters.hits("/echo"), 0, "nothing reached the isolated host")
        XCTAssertEqual(reader.client.request(.closeCircuit(host: host)).message, "closed the circuit of \(host): what it held goes out")
        waitFor("the held request to succeed") { held.result?.outcome == .success }
        XCTAssertEqual(reader.client.request(.closeCircuit(host: host)), .circuitAlreadyClosed(host: host))
        waitFor("the monitor to see the breaker's events") {
            reader.events.filter { $0.operationID.isEmpty }.map(\.payload.name) == ["circuitOpened", "circuitClosed"]
        }
        reader.client.send(line: #"{"id": 9, "command": "isolate"}"#)
        waitFor("the missing host to be named") { reader.all.contains(.reply(id: 9, ok: false, message: "refused: isolate needs \"host\", as host:port")) }
        let plain = QueueControl(queue: RequestQueue(earlyRetry: nil, circuitBreaker: nil))
        XCTAssertEqual(plain.perform(.isolate(host: host)).outcome, .noCircuitBreaker)
        XCTAssertFalse(plain.perform(.closeCircuit(host: host)).ok)
    }

    func testBadInputIsAnsweredWithAnErrorAndTheProgramGoesOn() throws {
        let queue = RequestQueue(earlyRetry: nil)
        let endpoint = try start(queue)
        let reader = ClientReader(try EndpointClient.connect(path: endpoint.path))
        reader.client.send(line: "garbage {")
        reader.client.send(line: String(repeating: "x", count: 200_000))
        reader.client.send(line: #"{"id": 7, "command": "explode"}"#)
        reader.client.send(line: #"{"id": 8, "command": "cancel"}"#)
        reader.client.send(line: #"{"id": 1e300, "command": "suspend"}"#)
        reader.client.send(line: #"{"id": 9, "command": "isolate", "host": "docker.sock\n:80"}"#)
        reader.client.send(line: #"{"id": 10, "command": "isolate", "host": "made-up-host"}"#)
        XCTAssertEqual(reader.client.request(.setSuspended(false)), .resumed, "the connection still works")
        let errors = reader.all.compactMap { message -> String? in
            switch message {
            case .error(let text): text
            case .reply(_, false, let text): text
            default: nil
            }
        }
        XCTAssertEqual(errors, [
            #"not a JSON object: expected {"id": N, "command": "cancel", "op": "ID"}"#,
            "line too long: a command is at most 65536 bytes",
            "refused: unknown command \"explode\"; expected one of retry, cancel, cancelAll, suspend, resume, releaseBatches, isolate, closeCircuit, resend, toggleFault, clearFaults, addBreakpoint, clearBreakpoints, resolveBreakpoint, setBreakpointEnabled, removeBreakpoint",
            "refused: cancel needs \"op\", the operation's id",
            "\"id\" must be a whole number of at most 15 digits, found 1e+300",
            "refused: isolate: \"host\" must be a host name or address and a port, found \"docker.sock\\n:80\"",
            "refused: isolate: \"host\" must be host:port with a port from 1 to 65535, found \"made-up-host\"",
        ])
        XCTAssertFalse(queue.isSuspended, "a command with a bad id is not carried out")
        XCTAssertNil(EndpointProtocol.hostProblem("api.example.com:443"))
        XCTAssertNil(EndpointProtocol.hostProblem("[::1]:8080"))
        XCTAssertNotNil(EndpointProtocol.hostProblem("a b:80"))
    }

    /// A program (or anything on the socket) that sends numbers out of range cannot trap
    /// the attached monitor: they are checked where they are read.
    func testOutOfRangeNumbersFromTheProgramAreRefusedNotTrapped() {
        guard case .hello(let hello) = EndpointClient.parse(#"{"event":"hello","pid":1e10,"name":"x","t":1e19,"live":1e30}"#) else {
            return XCTFail("a hello is still a hello")
        }
        XCTAssertEqual(hello.pid, 0)
        XCTAssertEqual(hello.time, 0)
        XCTAssertEqual(hello.live, 0)
        guard case .unreadable = EndpointClient.parse(#"{"t":1e19,"op":"a","attempt":1,"event":"started"}"#) else {
            return XCTFail("an event with a time out of range is not shown")
        }
    }

    func testAReadOnlyEndpointRefusesCommands() throws {
        let queue = RequestQueue(earlyRetry: nil)
        let endpoint = try start(queue, readOnly: true)
        let client = try EndpointClient.connect(path: endpoint.path)
        let reader = ClientReader(client)
        let answer = reader.client.request(.setSuspended(true))
        XCTAssertEqual(answer, .readOnly)
        XCTAssertEqual(answer.message, "refused: this endpoint is read-only")
        XCTAssertFalse(queue.isSuspended)
    }

    func testAMonitorThatNeverReadsDoesNotSlowTheProgramAndIsToldWhatItMissed() throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let queue = RequestQueue(maxConcurrentRequests: 8, earlyRetry: nil)
        let endpoint = try start(queue, bufferLimit: 16 * 1024)
        // Connected, never read: its socket buffer and then its 16 KiB fill up.
        let stuck = try EndpointClient.connect(path: endpoint.path)
        waitFor("the stuck monitor") { endpoint.connectionCount == 1 }
        let started = Date()
        let operations = (1...400).map { queue.add(URLRequest(url: server.url("/bytes/2000")), id: "op-\($0)") }
        queue.waitUntilAllOperationsAreFinished()
        let elapsed = Date().timeIntervalSince(started)
        XCTAssertTrue(operations.allSatisfy { $0.result?.outcome == .success })
        XCTAssertLessThan(elapsed, 30, "a wide bound: the program was not held up")
        queue.events.waitUntilDelivered()

        // Now it reads: what fitted, then how much it missed, then a fresh snapshot.
        let reader = ClientReader(stuck)
        waitFor(10, "the missed notice and the new snapshot") {
            reader.all.contains { if case .missed = $0 { return true } else { return false } } && reader.all.last == .snapshotEnd
                && reader.finished("op-400") != nil
        }
        guard case .missed(let count)? = reader.all.first(where: { if case .missed = $0 { return true } else { return false } }) else {
            return XCTFail("no missed notice")
        }
        XCTAssertGreaterThan(count, 0)
        XCTAssertNotNil(reader.finished("op-400"), "the fresh snapshot has everything")
    }

    /// Before: replies to a peer that sends commands and reads nothing were kept without
    /// bound (+65 MB per 10 MB of commands). Now it is disconnected, and the program says so once.
    func testAPeerThatSendsCommandsAndNeverReadsIsDisconnected() throws {
        let queue = RequestQueue(maxConcurrentRequests: 2, earlyRetry: nil)
        let notices = Mutex<[String]>([])
        var options = MonitorEndpoint.Options(directory: directory, name: "endpoint-test", bufferLimit: 16 * 1024)
        options.notice = { text in notices.withLock { $0.append(text) } }
        let endpoint = try queue.startMonitorEndpoint(options: options)
        defer { endpoint.stop() }
        for round in 1...2 {
            let fd = try UnixSocket.connect(to: endpoint.path)
            defer { close(fd) }
            waitFor("the peer") { endpoint.connectionCount == 1 }
            let chunk = Array(String(repeating: "not a command\n", count: 4096).utf8)
            var sent = 0
            while sent < 10 << 20 {
                let count = chunk.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if count <= 0 { break }
                sent += count
            }
            XCTAssertLessThan(sent, 10 << 20, "round \(round): the endpoint let go before 10 MB of commands")
            waitFor("the peer disconnected") { endpoint.connectionCount == 0 }
        }
        XCTAssertEqual(notices.withLock { $0.count }, 1, "said once: \(notices.withLock { $0 })")
        XCTAssert(notices.withLock { $0.first ?? "" }.contains("read none"))
    }

    func testAnotherUserCannotConnect() throws {
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"),
              FileManager.default.isExecutableFile(atPath: "/usr/bin/python3")
        else { throw XCTSkip("needs root, setpriv and /usr/bin/python3 to act as another user") }
        let queue = RequestQueue(earlyRetry: nil)
        let endpoint = try start(queue)
        let connect = """
        import socket, sys
        s = socket.socket(socket.AF_UNIX)
        try:
            s.connect(sys.argv[1])
            print("connected:" + s.recv(4096).decode().strip())
        except OSError as e:
            print("refused:" + e.strerror)
        """
        func asNobody() throws -> String {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            process.arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", connect, endpoint.path]
            let out = Pipe()
            process.standardOutput = out
            try process.run()
            process.waitUntilExit()
            return String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        }
        // The folder is 0700: another user cannot even reach the socket.
        XCTAssertEqual(try asNobody().trimmingCharacters(in: .whitespacesAndNewlines), "refused:Permission denied")
        // Opened up by hand, the peer check still turns it away.
        chmod(directory, 0o777)
        chmod(endpoint.path, 0o777)
        let answer = try asNobody()
        XCTAssertTrue(answer.contains("refused: this endpoint accepts only its own user"), answer)
        XCTAssertEqual(endpoint.connectionCount, 0)
    }
}

extension OperationQueue {
    /// Waits until every operation but `except` has finished.
    func waitUntilAllOperationsAreFinished(except: Operation) {
        while operations.contains(where: { $0 !== except && !$0.isFinished }) { usleep(5_000) }
    }
}

final class OperationJournalTests: XCTestCase {
    private func event(_ t: TimeInterval, _ op: String, _ payload: RequestEvent.Payload, attempt: Int = 1) -> RequestEvent {
        RequestEvent(time: t, operationID: op, attempt: attempt, payload: payload)
    }

    func testFinishedOperationsKeepOneDataEventPerRunAndTheOldestAreForgotten() {
        var journal = OperationJournal(finishedLimit: 2)
        journal.apply([event(0, "a", .queued(method: "GET", url: "http://h/", headers: [:], maxAttempts: 1)), event(0.1, "a", .started)]
                      + (1...100).map { event(0.1 + Double($0) / 1000, "a", .data(bytes: 10)) })
        XCTAssertEqual(journal.events["a"]?.map(\.payload.name), ["queued", "started", "data"],
                       "a live operation's data events are one as they come")
        XCTAssertEqual(journal.events["a"]?[2].payload, .data(bytes: 1000))
        journal.apply([event(1, "a", .finished(outcome: .success, status: 200, attempts: 1, duration: 1, reason: nil))])
        XCTAssertEqual(journal.events["a"]?.map(\.payload.name), ["queued", "started", "data", "finished"])
        XCTAssertEqual(journal.events["a"]?[2].payload, .data(bytes: 1000))
        XCTAssertEqual(journal.events["a"]?[2].time, 0.2)
        for id in ["b", "c"] {
            journal.apply([event(2, id, .queued(method: "GET", url: "http://h/", headers: [:], maxAttempts: 1)),
                           event(3, id, .finished(outcome: .failure, status: nil, attempts: 1, duration: 1, reason: nil))])
        }
        journal.apply([event(4, "live", .queued(method: "GET", url: "http://h/", headers: [:], maxAttempts: 1))])
        XCTAssertNil(journal.events["a"], "the oldest finished operation is forgotten past the limit")
        XCTAssertEqual(journal.snapshot.operations, 3)
        XCTAssertEqual(journal.liveCount, 1)
    }

    /// Before: one slot per host, so a rate-limit pause or a budget note after a breaker
    /// opened hid the open breaker from a monitor that attached later.
    func testALateMonitorSeesEachHostsLatestBreakerPauseAndBudget() {
        var journal = OperationJournal()
        journal.apply([
            event(1, "", .circuitOpened(host: "a:80", reason: "r", until: 9), attempt: 0),
            event(2, "", .rateLimited(host: "a:80", until: 20, reason: "429 with Retry-After: 18"), attempt: 0),
            event(3, "", .retryBudget(host: "a:80", left: 4), attempt: 0),
            event(4, "", .retryBudget(host: "a:80", left: 3), attempt: 0),
            event(5, "", .circuitHalfOpen(host: "a:80"), attempt: 0),
        ])
        XCTAssertEqual(journal.snapshot.events.map(\.payload), [
            .rateLimited(host: "a:80", until: 20, reason: "429 with Retry-After: 18"),
            .retryBudget(host: "a:80", left: 3),
            .circuitHalfOpen(host: "a:80"),
        ])
    }
}
