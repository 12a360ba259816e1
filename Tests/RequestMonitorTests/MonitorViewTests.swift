@testable import RequestMonitor
import RequestOperations
import Synchronization
import XCTest

/// A scripted session: the events of a few operations in known states at t = 10.
func scriptedModel() -> QueueModel {
    var model = QueueModel(source: "test plan")
    func event(_ t: TimeInterval, _ op: String, _ attempt: Int, _ payload: RequestEvent.Payload) {
        model.apply(RequestEvent(time: t, operationID: op, attempt: attempt, payload: payload))
    }
    // ok: one attempt.
    event(0, "ok-one", 1, .queued(method: "GET", url: "http://api.test:8080/users/1", headers: ["Accept": "application/json"], maxAttempts: 3))
    event(0.1, "ok-one", 1, .started)
    event(0.1, "ok-one", 1, .taskCreated(taskIdentifier: 1, url: "http://api.test:8080/users/1"))
    event(0.3, "ok-one", 1, .response(status: 200, headers: ["Content-Type": "application/json"], expectedBytes: 2048))
    event(0.4, "ok-one", 1, .data(bytes: 2048))
    event(0.4, "ok-one", 1, .taskCompleted(error: nil))
    event(0.4, "ok-one", 1, .finished(outcome: .success, status: 200, attempts: 1, duration: 0.4, reason: nil))
    // backoff: failed once, waiting until t = 11.25.
    event(1, "flaky", 1, .queued(method: "GET", url: "http://api.test:8080/flaky", headers: [:], maxAttempts: 4))
    event(1, "flaky", 1, .started)
    event(1, "flaky", 1, .taskCreated(taskIdentifier: 2, url: "http://api.test:8080/flaky"))
    event(1.5, "flaky", 1, .response(status: 503, headers: ["Retry-After": "2"], expectedBytes: 15))
    event(1.5, "flaky", 1, .validationFailed(reason: "status 503"))
    event(1.5, "flaky", 1, .taskCompleted(error: nil))
    event(9.0, "flaky", 1, .retryScheduled(delay: 2.25, reason: "status 503; attempt 1 of 4; backoff 2.25s"))
    // running: a download half done.
    event(2, "download", 1, .queued(method: "GET", url: "http://cdn.test/big.bin", headers: [:], maxAttempts: 3))
    event(2, "download", 1, .started)
    event(2, "download", 1, .taskCreated(taskIdentifier: 3, url: "http://cdn.test/big.bin"))
    event(3, "download", 1, .response(status: 200, headers: [:], expectedBytes: 1000))
    event(4, "download", 1, .data(bytes: 500))
    // failed: connection refused, retries exhausted.
    event(3, "down", 1, .queued(method: "POST", url: "http://db.test/write", headers: [:], maxAttempts: 1))
    event(3, "down", 1, .started)
    event(3, "down", 1, .taskCreated(taskIdentifier: 4, url: "http://db.test/write"))
    event(3.1, "down", 1, .taskCompleted(error: TransportError(code: -1004, message: "cannot connect to host")))
    event(3.1, "down", 1, .finished(outcome: .failure, status: nil, attempts: 1, duration: 0.1, reason: "transport error -1004 is not retryable"))
    // cancelled while running.
    event(4, "gone", 1, .queued(method: "GET", url: "http://api.test:8080/hang", headers: [:], maxAttempts: 3))
    event(4, "gone", 1, .started)
    event(4, "gone", 1, .taskCreated(taskIdentifier: 5, url: "http://api.test:8080/hang"))
    event(6, "gone", 1, .cancelled(by: "monitor"))
    event(6, "gone", 1, .finished(outcome: .cancelled, status: nil, attempts: 1, duration: 2, reason: "cancelled by monitor"))
    // queued: not started.
    event(9.5, "later", 1, .queued(method: "DELETE", url: "http://api.test:8080/items/7", headers: [:], maxAttempts: 3))
    return model
}

final class MonitorViewTests: XCTestCase {
    func render(_ model: QueueModel = scriptedModel(), state: MonitorState = MonitorState(), theme: Theme = Theme(),
                width: Int = 120, height: Int = 30, now: TimeInterval = 10) -> CellGrid {
        let visible = VisibleRows.compute(model, filter: state.filter, sort: state.sort, now: now)
        return MonitorView(model: model, state: state, visible: visible, theme: theme, now: now).render(width: width, height: height)
    }

    func line(_ grid: CellGrid, containing text: String) -> String {
        grid.text.split(separator: "\n").map(String.init).first { $0.contains(text) } ?? ""
    }

    func testTheTableShowsEveryOperationWithItsStateAttemptsCountdownAndSize() {
        let grid = render()
        let text = grid.text
        XCTAssert(text.contains("test plan"))
        XCTAssert(line(grid, containing: "▶ 1 running").contains("↻ 1 backoff"), text)
        XCTAssert(line(grid, containing: "running").contains("✓ 1 ok"))
        XCTAssert(line(grid, containing: "running").contains("✗ 1 failed"))
        XCTAssert(line(grid, containing: "running").contains("⊘ 1 cancelled"))
        XCTAssert(line(grid, containing: "ID ").contains("STATE"))

        let flaky = line(grid, containing: "flaky ")
        XCTAssert(flaky.contains("↻ backoff"), flaky)
        XCTAssert(flaky.contains("1/4"), flaky)
        XCTAssert(flaky.contains("1.3s"), "the countdown to t=11.25 at t=10, in tenths: \(flaky)")
        XCTAssert(flaky.contains("503"), flaky)
        XCTAssert(flaky.contains("api.test:8080"), flaky)

        let download = line(grid, containing: "download")
        XCTAssert(download.contains("▶ running"), download)
        XCTAssert(download.contains("50%"), "progress of an expected length: \(download)")
        XCTAssert(line(grid, containing: "ok-one").contains("2.0K"))
        XCTAssert(line(grid, containing: "down ").contains("✗ failed"))
        XCTAssert(line(grid, containing: "down ").contains("POST"))
        XCTAssert(line(grid, containing: "gone").contains("⊘ cancelled"))
        XCTAssert(line(grid, containing: "later").contains("· queued"))
        XCTAssert(line(grid, containing: "Quit").contains("Retry"), "the key hints")
    }

    func testTheCountdownMovesWithTime() {
        XCTAssert(line(render(now: 10), containing: "flaky ").contains("1.3s"))
        XCTAssert(line(render(now: 10.9), containing: "flaky ").contains("0.4s"), "rounded up, never 0.0 while waiting")
        XCTAssert(line(render(now: 11.24), containing: "flaky ").contains("0.1s"))
    }

    func testEightyByTwentyFourFitsAndDropsTheWideColumns() {
        let grid = render(width: 80, height: 24)
        let titles = line(grid, containing: "STATE")
        for title in ["ID", "STATE", "METH", "PATH", "STAT", "ATT", "WAIT", "DUR", "SIZE"] {
            XCTAssert(titles.contains(title), "\(title) missing at 80 columns: \(titles)")
        }
        XCTAssertFalse(titles.contains("HOST"))
        XCTAssertFalse(titles.contains("TIMELINE"))
        XCTAssert(grid.text.split(separator: "\n").allSatisfy { $0.count <= 80 })
    }

    func testATooSmallTerminalIsToldSo() {
        let grid = render(width: 50, height: 10)
        XCTAssertEqual(grid.text.trimmingCharacters(in: .whitespacesAndNewlines), "terminal too small\n50×10, needs 60×12")
    }

    func testMonochromeStillTellsStatesApartAndUsesNoColour() {
        let grid = render(theme: Theme(color: false))
        XCTAssert(grid.cells.allSatisfy { $0.style.color == .normal })
        XCTAssert(line(grid, containing: "flaky ").contains("↻ backoff"))
        XCTAssert(line(grid, containing: "down ").contains("✗ failed"))
        let failedCell = grid.cells.first { $0.character == "✗" && !$0.style.reverse }
        XCTAssertEqual(failedCell?.style.bold, true, "failed rows stand out by weight without colour")
    }

    func testANonUTF8TerminalGetsASCII() {
        let grid = render(theme: Theme(unicode: false))
        XCTAssert(grid.text.unicodeScalars.allSatisfy(\.isASCII), grid.text.unicodeScalars.filter { !$0.isASCII }.map(String.init).joined())
        XCTAssert(line(grid, containing: "flaky ").contains("R backoff"))
    }

    func testOnlyVisibleRowsAreDrawnAndThePositionIsShown() {
        var model = QueueModel(source: "big")
        for index in 0..<500 {
            model.apply(RequestEvent(time: Double(index), operationID: "op-\(index)", attempt: 1,
                                     payload: .queued(method: "GET", url: "http://h/\(index)", headers: [:], maxAttempts: 3)))
        }
        var state = MonitorState()
        state.selectedID = "op-499"
        let grid = render(model, state: state, width: 120, height: 24, now: 500)
        XCTAssert(grid.text.contains("op-499"))
        XCTAssertFalse(grid.text.contains("op-10 "))
        XCTAssert(grid.text.contains("481–500 of 500"), grid.text)
    }

    func testTheDetailViewTabs() {
        var state = MonitorState()
        state.screen = .detail(id: "flaky", tab: .events)
        var grid = render(state: state)
        XCTAssert(line(grid, containing: "retryScheduled").contains("in 2.25s: status 503"), grid.text)
        XCTAssert(line(grid, containing: "validationFailed").contains("status 503"))

        state.screen = .detail(id: "flaky", tab: .retries)
        grid = render(state: state)
        XCTAssert(line(grid, containing: "#1").contains("wait 2.25s"), grid.text)

        state.screen = .detail(id: "ok-one", tab: .request)
        XCTAssert(render(state: state).text.contains("Accept: application/json"))
        state.screen = .detail(id: "ok-one", tab: .response)
        XCTAssert(render(state: state).text.contains("Content-Type: application/json"))
        state.screen = .detail(id: "down", tab: .response)
        XCTAssert(render(state: state).text.contains("no response yet"))
        state.screen = .detail(id: "flaky", tab: .timing)
        grid = render(state: state)
        let lines = grid.text.split(separator: "\n").map(String.init)
        XCTAssert(lines.first { $0.hasPrefix(" attempt 1 ") }?.contains("█") == true, grid.text)
        XCTAssert(lines.first { $0.hasPrefix(" backoff ") }?.contains("░") == true, grid.text)
    }

    /// A hedged read: two attempts at once; the copy that lost is not the row's error.
    func testAHedgedReadShowsBothCopiesAndWhichAnswered() {
        var model = QueueModel(source: "test")
        func event(_ t: TimeInterval, _ attempt: Int, _ payload: RequestEvent.Payload) {
            model.apply(RequestEvent(time: t, operationID: "read", attempt: attempt, payload: payload))
        }
        event(0, 1, .queued(method: "GET", url: "http://api.test/items", headers: [:], maxAttempts: 3, body: nil,
                            options: RecordedOptions(hedge: .hedge(after: 0.2))))
        event(0, 1, .started)
        event(0, 1, .taskCreated(taskIdentifier: 1, url: "http://api.test/items"))
        event(0.2, 2, .hedged(racing: 1, after: 0.2))
        event(0.2, 2, .taskCreated(taskIdentifier: 2, url: "http://api.test/items"))
        event(0.25, 1, .taskCompleted(error: .hedgeLost(to: 2)))
        event(0.25, 2, .response(status: 200, headers: [:], expectedBytes: 2))
        event(0.25, 2, .data(bytes: 2))
        event(0.25, 2, .taskCompleted(error: nil))
        event(0.25, 2, .finished(outcome: .success, status: 200, attempts: 2, duration: 0.25, reason: nil))
        let row = model.rows[0]
        XCTAssertEqual(row.attempts.map(\.number), [1, 2])
        XCTAssertEqual(row.attempts.map(\.status), [nil, 200])
        XCTAssertEqual(row.attempts[0].decision, "hedged by attempt 2")
        XCTAssertNil(row.lastError, "the copy that lost is not the row's error")
        XCTAssertEqual(row.attempt, 2)

        var state = MonitorState()
        state.screen = .detail(id: "read", tab: .events)
        var grid = render(model, state: state, now: 1)
        XCTAssert(line(grid, containing: "hedged").contains("copy sent: attempt 1 had no response after 0.20s"), grid.text)
        XCTAssert(line(grid, containing: "-999").contains("cancelled by hedge: attempt 2 answered first"), grid.text)
        state.screen = .detail(id: "read", tab: .request)
        grid = render(model, state: state, now: 1)
        XCTAssert(grid.text.contains("hedge after 0.2s"), grid.text)
        state.screen = .detail(id: "read", tab: .retries)
        grid = render(model, state: state, now: 1)
        XCTAssert(line(grid, containing: "#1").contains("hedged by attempt 2"), grid.text)
        XCTAssertEqual(row.segments.map(\.kind), [.attempt(1), .attempt(2)], "both copies on the timeline")
        XCTAssertEqual(row.segments.map(\.end), [0.25, 0.25])
        state.screen = .detail(id: "read", tab: .timing)
        grid = render(model, state: state, now: 1)
        XCTAssert(grid.text.contains("attempt 2"), grid.text)
    }

    /// A transparent proxy's row says so in its Request tab, not retry and budget settings the
    /// session does not use.
    func testATransparentRowsRequestTabSaysItIsTransparent() {
        var options = RecordedOptions(retry: RetrySettings(maxAttempts: 1, baseDelay: 0.5, multiplier: 2, maxDelay: 30, jitter: .equal,
                                                           retryNonIdempotent: false, retryBudget: nil), earlyRetry: false)
        options.maxRedirects = 0
        options.relaysEveryAnswer = true
        let text = requestTab(ofAProxyRowWith: options)
        XCTAssert(text.contains("transparent: one attempt, no redirect followed, every answer relayed as it came"), text)
        XCTAssertFalse(text.contains("jitter"), text)
        XCTAssertFalse(text.contains("budget"), text)
    }

    /// A request the proxy refused says so in its Request tab, not a retry policy it never had.
    func testARefusedRowsRequestTabSaysTheProxyAnsweredIt() {
        var options = RecordedOptions()
        (options.origin, options.refusedByProxy) = ("curl 4242", true)
        let text = requestTab(ofAProxyRowWith: options)
        XCTAssert(text.contains("refused by the proxy: answered by it, never sent"), text)
        XCTAssertFalse(text.contains("retry"), text)
    }

    /// The Request tab of a proxy's one-attempt GET whose `queued` carries `options`, as text.
    private func requestTab(ofAProxyRowWith options: RecordedOptions) -> String {
        var model = QueueModel(source: "proxy")
        model.apply(RequestEvent(time: 0, operationID: "c1-r1", attempt: 1,
                                 payload: .queued(method: "GET", url: "http://api.test/", headers: [:], maxAttempts: 1, options: options)))
        var state = MonitorState()
        state.screen = .detail(id: "c1-r1", tab: .request)
        return render(model, state: state, now: 1).text
    }

    /// A redirect the proxy passes on reads as its answer in the Events tab, not as a refusal;
    /// one refused (a scheme not followed) still says refused.
    func testARedirectPassedOnReadsAsTheAnswerNotARefusal() {
        var model = QueueModel(source: "proxy")
        model.apply(RequestEvent(time: 0, operationID: "c1-r1", attempt: 1,
                                 payload: .queued(method: "GET", url: "http://api.test/login", headers: [:], maxAttempts: 1)))
        model.apply(RequestEvent(time: 0.1, operationID: "c1-r1", attempt: 1,
                                 payload: .redirect(status: 302, location: "com.example.app://oauth", dropped: [], refused: RedirectPolicy.notFollowed)))
        model.apply(RequestEvent(time: 0.1, operationID: "lib", attempt: 1,
                                 payload: .queued(method: "GET", url: "http://api.test/go", headers: [:], maxAttempts: 1)))
        model.apply(RequestEvent(time: 0.2, operationID: "lib", attempt: 1,
                                 payload: .redirect(status: 302, location: "file:///etc/passwd", dropped: [], refused: "only http and https redirects are followed")))
        var state = MonitorState()
        state.screen = .detail(id: "c1-r1", tab: .events)
        var grid = render(model, state: state, now: 1)
        XCTAssert(line(grid, containing: "com.example.app").contains("the answer, passed on (redirects are not followed)"), grid.text)
        XCTAssertFalse(grid.text.contains("refused"), grid.text)
        state.screen = .detail(id: "lib", tab: .events)
        grid = render(model, state: state, now: 1)
        XCTAssert(line(grid, containing: "file:///etc/passwd").contains("refused: only http and https"), grid.text)
    }

    /// The Request tab shows the recorded body and options, and a dependent request as built.
    func testTheRequestTabShowsBodyOptionsAndTheBuiltRequest() {
        var model = QueueModel(source: "bodies")
        let options = RecordedOptions(attemptTimeout: 0.3, deadline: 300,
                                      retry: RetrySettings(maxAttempts: 1, baseDelay: 0.05, multiplier: 2, maxDelay: 30, jitter: .none,
                                                           retryNonIdempotent: false, retryBudget: 60))
        model.apply(RequestEvent(time: 0, operationID: "up", attempt: 1,
                                 payload: .queued(method: "POST", url: "http://api.test/up", headers: ["Content-Type": "application/json"],
                                                  maxAttempts: 1, body: .bytes(Data("{\"a\":1,\n\"password\":\"[redacted]\"}".utf8)), options: options)))
        model.apply(RequestEvent(time: 0, operationID: "child", attempt: 1,
                                 payload: .queued(method: "GET", url: "http://api.test/items/%7B%7Bup.id%7D%7D", headers: [:], maxAttempts: 3,
                                                  body: .omitted(bytes: 70_000, reason: "over the 65536-byte limit"))))
        model.apply(RequestEvent(time: 1, operationID: "child", attempt: 1, payload: .built(method: "GET", url: "http://api.test/items/7", headers: [:], body: nil)))
        var state = MonitorState()
        state.screen = .detail(id: "up", tab: .request)
        var text = render(model, state: state, now: 2).text
        XCTAssert(text.contains("timeout 0.3s · deadline 5m00s · retry 1 attempt, 0.05s×2 up to 30s, no jitter, budget 1m00s"), text)
        XCTAssert(text.contains("body 32B"), text)
        XCTAssert(text.contains(#" "password":"[redacted]"}"#), "each line of the body: \(text)")
        state.screen = .detail(id: "child", tab: .request)
        text = render(model, state: state, now: 2).text
        XCTAssert(text.contains("GET http://api.test/items/7"), "the request as built: \(text)")
        XCTAssertFalse(text.contains("body"), "the built request has no body: \(text)")
        state.screen = .detail(id: "child", tab: .events)
        text = render(model, state: state, width: 200, now: 2).text
        XCTAssert(text.contains("body 68.4K not recorded: over the 65536-byte limit"), text)
        XCTAssert(text.contains("built"), text)
    }

    /// With a `sent` event (the NIO transport) the Timing tab splits each attempt.
    func testTheTimingTabSplitsAnAttemptWhenTheTransportSaidWhenItWasSent() {
        let model = QueueModel.oneOperation("timed", source: "nio", [
            (0, .queued(method: "GET", url: "http://api.test/x", headers: [:], maxAttempts: 1)),
            (0, .started),
            (0.001, .taskCreated(taskIdentifier: 1, url: "http://api.test/x")),
            (0.002, .sent),
            (0.052, .response(status: 200, headers: [:], expectedBytes: 10)),
            (0.062, .data(bytes: 10)),
            (0.062, .taskCompleted(error: nil)),
            (0.062, .finished(outcome: .success, status: 200, attempts: 1, duration: 0.062, reason: nil)),
        ])
        var state = MonitorState()
        state.screen = .detail(id: "timed", tab: .timing)
        let text = render(model, state: state, now: 1).text
        XCTAssert(text.contains("attempt 1: send 1.0ms · wait 50.0ms · receive 10.0ms"), text)
    }

    /// A request of 62 ms reads `62ms` in the table's DUR and in the detail, not `0.1s`.
    func testAFastRequestsTimeReadsInMilliseconds() {
        let model = QueueModel.oneOperation("fast", source: "proxy", [
            (0, .queued(method: "GET", url: "http://api.test/x", headers: [:], maxAttempts: 1)),
            (0, .started),
            (0.062, .finished(outcome: .success, status: 200, attempts: 1, duration: 0.062, reason: nil)),
        ])
        let table = render(model, now: 5).text
        let row = table.split(separator: "\n").first { $0.contains("fast") }.map(String.init) ?? ""
        XCTAssert(row.contains(" 62ms "), row)
        var state = MonitorState()
        state.screen = .detail(id: "fast", tab: .events)
        let detail = render(model, state: state, now: 5).text
        XCTAssert(detail.contains("attempt 1/1  62ms"), detail)
        XCTAssert(detail.contains("success, status 200, 1 attempt, 62ms"), detail)
    }

    /// With `connection` events the Timing tab says which connection, and whether the time
    /// before it was connecting (new) or waiting for a free one (reused); Events names it.
    func testTheTimingTabSaysWhetherTheConnectionWasNew() {
        var model = QueueModel(source: "nio")
        func event(_ t: TimeInterval, _ attempt: Int, _ payload: RequestEvent.Payload) {
            model.apply(RequestEvent(time: t, operationID: "timed", attempt: attempt, payload: payload))
        }
        event(0, 1, .queued(method: "GET", url: "http://api.test/x", headers: [:], maxAttempts: 2))
        for (attempt, start, reused) in [(1, 0.0, false), (2, 1.0, true)] {
            event(start, attempt, .started)
            event(start + 0.001, attempt, .taskCreated(taskIdentifier: attempt, url: "http://api.test/x"))
            event(start + 0.004, attempt, .connection(id: 3, reused: reused))
            event(start + 0.005, attempt, .sent)
            event(start + 0.025, attempt, .response(status: attempt == 1 ? 503 : 200, headers: [:], expectedBytes: nil))
            event(start + 0.025, attempt, .taskCompleted(error: nil))
            if attempt == 1 { event(0.025, 1, .retryScheduled(delay: 0.975, reason: "status 503")) }
        }
        event(1.025, 2, .finished(outcome: .success, status: 200, attempts: 2, duration: 1.025, reason: nil))
        var state = MonitorState()
        state.screen = .detail(id: "timed", tab: .timing)
        let timing = render(model, state: state, now: 2).text
        XCTAssert(timing.contains("attempt 1 (new connection #3): connect 3.0ms · send 1.0ms · wait 20.0ms · receive 0.0ms"), timing)
        XCTAssert(timing.contains("attempt 2 (connection #3, reused): pool 3.0ms · send 1.0ms"), timing)
        state.screen = .detail(id: "timed", tab: .events)
        let events = render(model, state: state, now: 2).text
        XCTAssert(events.contains("new connection #3") && events.contains("connection #3, reused"), events)
    }

    func testHeldRequestsAndReactorsShowWhatTheyWaitFor() {
        var model = QueueModel(source: "flow")
        func event(_ t: TimeInterval, _ op: String, _ attempt: Int, _ payload: RequestEvent.Payload) {
            model.apply(RequestEvent(time: t, operationID: op, attempt: attempt, payload: payload))
        }
        event(0, "upload", 1, .queued(method: "POST", url: "http://api.test/up", headers: [:], maxAttempts: 3))
        event(0, "upload", 1, .intercepted(by: "batch:uploads", command: "hold"))
        event(0, "upload", 1, .held(batch: "uploads"))
        event(0, "feed", 1, .queued(method: "GET", url: "http://api.test/feed", headers: [:], maxAttempts: 3))
        event(0, "feed", 1, .intercepted(by: "auth", command: "execute"))
        event(0, "feed", 1, .started)
        event(0, "feed", 1, .taskCreated(taskIdentifier: 1, url: "http://api.test/feed"))
        event(1, "feed", 1, .response(status: 401, headers: [:], expectedBytes: nil))
        event(1, "feed", 1, .validationFailed(reason: "status 401"))
        event(1, "feed", 1, .taskCompleted(error: nil))
        event(1, "feed", 1, .reactorStarted(name: "auth", trigger: "status 401"))
        event(0, "orders", 1, .queued(method: "GET", url: "http://api.test/orders?user=%7B%7Bprofile.id%7D%7D", headers: [:], maxAttempts: 3))
        event(2, "orders", 1, .started)
        event(2, "orders", 1, .taskCreated(taskIdentifier: 2, url: "http://api.test/orders?user=42"))

        var grid = render(model, now: 3)
        XCTAssert(line(grid, containing: "upload").contains("held"), grid.text)
        XCTAssert(line(grid, containing: "upload").contains("batch"), grid.text)
        XCTAssert(line(grid, containing: "feed").contains("auth"), grid.text)
        XCTAssert(line(grid, containing: " orders").contains("/orders?user=42"), "what was sent, not the template: \(grid.text)")
        XCTAssert(grid.text.contains("2 held"), grid.text)

        var state = MonitorState()
        state.screen = .detail(id: "feed", tab: .retries)
        grid = render(model, state: state, now: 3)
        XCTAssert(grid.text.contains("held: waiting for auth"), grid.text)
        XCTAssert(grid.text.contains("interceptors: auth"), grid.text)
        state.screen = .detail(id: "feed", tab: .events)
        XCTAssert(line(render(model, state: state, now: 3), containing: "reactorStarted").contains("auth runs (status 401)"))

        event(3, "feed", 1, .reactorFinished(name: "auth", outcome: "success"))
        event(3, "feed", 1, .requeued(by: "auth", reason: "after auth ran (status 401)"))
        event(0.5, "upload", 1, .released(batch: "uploads", size: 3))
        XCTAssertEqual(model.rows.first { $0.id == "feed" }?.heldBy, nil)
        XCTAssertEqual(model.rows.first { $0.id == "upload" }?.state, .queued)
    }

    func testAnAttachedProgramsHeaderSaysWhenItIsPaused() {
        var state = MonitorState()
        state.playback = "ATTACHED reqtop demo 42"
        XCTAssert(line(render(state: state), containing: "reqtop").contains("ATTACHED reqtop demo 42  · test plan"))
        state.paused = true
        XCTAssert(line(render(state: state), containing: "reqtop").contains("ATTACHED reqtop demo 42 PAUSED"))
        state.playback = "REPLAY 1× PAUSED 3.0/9.0s"
        XCTAssertFalse(line(render(state: state), containing: "reqtop").contains("PAUSED PAUSED"))
    }

    func testTheHelpOverlayListsEveryKey() {
        var state = MonitorState()
        state.showHelp = true
        let text = render(state: state, height: 42).text
        // A binding with no help of its own ("-", ">") shares its partner's line ("+ -", "< >").
        for binding in KeyMap.bindings where !binding.help.isEmpty {
            XCTAssert(text.contains(binding.help), binding.help)
        }
        XCTAssert(text.contains("+ -") && text.contains("< >"))
    }

    func testTheBottomLineAsksBeforeCancelling() {
        var state = MonitorState()
        state.confirmation = .cancel(id: "download")
        XCTAssert(render(state: state).text.hasSuffix("Cancel download? (y/n)"))
        state.confirmation = nil
        state.filterDraft = "state:fa"
        XCTAssert(render(state: state).text.split(separator: "\n").last!.contains("filter: state:fa_"))
    }
}
