import Foundation
@testable import ReqtopApplication
import RequestOperations
import XCTest

final class PlanParserTests: XCTestCase {
    private func parse(_ json: String) throws -> Plan {
        try PlanParser(file: "plan.json").parse(Data(json.utf8))
    }

    private func error(_ json: String, file: StaticString = #filePath, line: UInt = #line) -> String {
        do {
            _ = try parse(json)
            XCTFail("parsed", file: file, line: line)
            return ""
        } catch {
            return "\(error)"
        }
    }

    func testAFullPlanWithDefaultsAndOverrides() throws {
        let plan = try parse("""
        {"maxConcurrent": 3, "timeout": 4, "deadline": 50,
         "retry": {"maxAttempts": 5, "baseDelay": 0.25, "jitter": "full", "retryBudget": null},
         "requests": [
           {"url": "http://a.test/x"},
           {"id": "up", "method": "post", "url": "{{fault}}/echo", "headers": {"X-A": "1"}, "body": {"k": [1, 2]},
            "retry": {"maxAttempts": 2, "retryNonIdempotent": true}, "timeout": 1, "deadline": 9}
         ]}
        """)
        XCTAssertEqual(plan.maxConcurrent, 3)
        XCTAssertTrue(plan.usesFaultServer)
        let first = plan.requests[0]
        XCTAssertEqual(first.id, "req-1")
        XCTAssertEqual(first.method, "GET")
        XCTAssertEqual(first.attemptTimeout, 4)
        XCTAssertEqual(first.deadline, 50)
        var expected = RetrySettings()
        (expected.maxAttempts, expected.baseDelay, expected.jitter, expected.retryBudget) = (5, 0.25, .full, nil)
        XCTAssertEqual(first.retry, expected)
        let second = plan.requests[1]
        XCTAssertEqual(second.method, "POST")
        XCTAssertEqual(second.retry.maxAttempts, 2)
        XCTAssertEqual(second.retry.baseDelay, 0.25, "a request's retry overrides only what it names")
        XCTAssertTrue(second.retry.retryNonIdempotent)
        XCTAssertEqual(second.headers, ["X-A": "1", "Content-Type": "application/json"])
        XCTAssertEqual(second.body, Data(#"{"k":[1,2]}"#.utf8))
        XCTAssertEqual((second.attemptTimeout, second.deadline).0, 1)
        let request = second.urlRequest(faultServer: URL(string: "http://127.0.0.1:9")!)
        XCTAssertEqual(request.url?.absoluteString, "http://127.0.0.1:9/echo")
        XCTAssertEqual(request.httpMethod, "POST")
    }

    func testEveryErrorNamesThePlaceAndWhatWasExpected() {
        XCTAssertEqual(error("{\n  \"requests\": [\n    {\"url\": }\n  ]\n}"), "plan.json: not valid JSON (expected a value, found '}' at line 3, column 13)")
        XCTAssertEqual(error("[1]"), #"plan.json: expected a JSON object with a "requests" array, found an array"#)
        XCTAssertEqual(error("{}"), "plan.json: requests: missing; expected an array of requests")
        XCTAssertEqual(error(#"{"requests": []}"#), "plan.json: requests: empty; expected at least one request")
        XCTAssertEqual(error(#"{"transport": "smoke", "requests": [{"url": "http://a.test/"}]}"#),
                       #"plan.json: transport: "smoke" is not a transport; expected urlsession or nio"#)
        XCTAssertEqual(error(#"{"transport": 1, "requests": [{"url": "http://a.test/"}]}"#),
                       "plan.json: transport: expected a string, found 1")
        XCTAssertEqual(error(#"{"requests": [{"id": "a"}]}"#), "plan.json: requests[0].url: missing; expected an absolute http or https URL")
        XCTAssertEqual(error(#"{"requests": [{"url": "ftp://x/y"}]}"#), #"plan.json: requests[0].url: "ftp://x/y" is not an absolute http or https URL"#)
        XCTAssertEqual(error(#"{"requests": [{"url": "http://a/", "method": "GE T"}]}"#),
                       #"plan.json: requests[0].method: "GE T" is not a method: a method is one word of letters, digits or !#$%&'*+-.^_`|~"#)
        XCTAssertEqual(error(#"{"retry": {"baseDelay": -1}, "requests": [{"url": "http://a/"}]}"#),
                       "plan.json: retry.baseDelay: -1 is negative; expected a number of seconds, 0 or more")
        XCTAssertEqual(error(#"{"requests": [{"url": "http://a/", "retry": {"maxAttemps": 3}}]}"#),
                       #"plan.json: requests[0].retry.maxAttemps: unknown field (did you mean "maxAttempts"?); expected one of baseDelay, earlyRetry, jitter, maxAttempts, maxDelay, multiplier, retryBudget, retryNonIdempotent"#)
        XCTAssertEqual(error(#"{"requests": [{"url": "http://a/", "retry": {"maxAttempts": 0}}]}"#),
                       "plan.json: requests[0].retry.maxAttempts: expected a whole number of at least 1, found 0")
        XCTAssertEqual(error(#"{"requests": [{"url": "http://a/", "retry": {"jitter": "lots"}}]}"#),
                       #"plan.json: requests[0].retry.jitter: expected one of none, full, equal, decorrelated, found "lots""#)
        XCTAssertEqual(error(#"{"requests": [{"url": "http://a/", "timeout": "5"}]}"#),
                       #"plan.json: requests[0].timeout: expected a number, found "5""#)
        XCTAssertEqual(error(#"{"requests": [{"url": "http://a/", "headers": {"X": 1}}]}"#),
                       "plan.json: requests[0].headers.X: expected a string, found a number")
        XCTAssertEqual(error(#"{"requests": [{"url": "http://a/", "id": "x"}, {"url": "http://b/", "id": "x"}]}"#),
                       #"plan.json: requests[1].id: "x" is already the id of requests[0]; ids must be unique"#)
        XCTAssertEqual(error(#"{"requests": [{"url": "http://a/", "retry": {"retryNonIdempotent": 1}}]}"#),
                       "plan.json: requests[0].retry.retryNonIdempotent: expected true or false, found 1")
        XCTAssertEqual(error(#"{"maxConcurrent": true, "requests": [{"url": "http://a/"}]}"#),
                       "plan.json: maxConcurrent: expected a number, found true")
    }

    func testEarlyRetryCanBeTurnedOffForAPlanOrARequest() throws {
        let plan = try parse(#"{"retry": {"earlyRetry": false}, "requests": [{"url": "http://a/"}, {"url": "http://b/", "retry": {"earlyRetry": true}}]}"#)
        let flow = PlanFlow(plan: plan, faultServer: nil, queue: RequestQueue())
        let off = flow.item(plan.requests[0]).options
        XCTAssertFalse(off.earlyRetryOnHostSuccess)
        XCTAssertFalse(off.earlyRetryOnProbe)
        XCTAssertTrue(flow.item(plan.requests[1]).options.earlyRetryOnHostSuccess)
        XCTAssertEqual(error(#"{"retry": {"earlyRetry": "no"}, "requests": [{"url": "http://a/"}]}"#),
                       #"plan.json: retry.earlyRetry: expected true or false, found "no""#)
    }

    func testTheRetryBudgetPerHostIsOnByDefaultAndCanBeSetOrTurnedOff() throws {
        XCTAssertEqual(try parse(#"{"requests": [{"url": "http://a/"}]}"#).retryBudgetPerHost, RatioRetryBudget.Options())
        XCTAssertNil(try parse(#"{"retryBudgetPerHost": false, "requests": [{"url": "http://a/"}]}"#).retryBudgetPerHost)
        let set = try parse(#"{"retryBudgetPerHost": {"percent": 50, "window": 30, "minPerSecond": 0}, "requests": [{"url": "http://a/"}]}"#)
        XCTAssertEqual(set.retryBudgetPerHost, RatioRetryBudget.Options(percent: 0.5, window: 30, minRetriesPerSecond: 0))
        XCTAssertEqual(error(#"{"retryBudgetPerHost": {"percent": 120}, "requests": [{"url": "http://a/"}]}"#),
                       "plan.json: retryBudgetPerHost.percent: 120.0 is out of range; expected a share of requests from 0 to 100")
        XCTAssertEqual(error(#"{"retryBudgetPerHost": {"window": 0}, "requests": [{"url": "http://a/"}]}"#),
                       "plan.json: retryBudgetPerHost.window: 0 would fail every request at once; expected a number of seconds above 0 (leave it out for the default)")
        XCTAssertEqual(error(#"{"retryBudgetPerHost": {"precent": 10}, "requests": [{"url": "http://a/"}]}"#),
                       #"plan.json: retryBudgetPerHost.precent: unknown field (did you mean "percent"?); expected one of minPerSecond, percent, window"#)
        XCTAssertEqual(error(#"{"retryBudgetPerHost": true, "requests": [{"url": "http://a/"}]}"#),
                       "plan.json: retryBudgetPerHost: true is the default; expected false (to turn it off) or an object with minPerSecond, percent, window")
        XCTAssertEqual(error(#"{"retryBudgetPerHost": 5, "requests": [{"url": "http://a/"}]}"#),
                       "plan.json: retryBudgetPerHost: expected false or an object, found a number")
    }

    func testRedirectsAreTenByDefaultAndSetForAPlanOrARequest() throws {
        let plan = try parse(#"{"redirects": 3, "requests": [{"url": "http://a/"}, {"url": "http://b/", "redirects": false}, {"url": "http://c/", "redirects": 20}]}"#)
        XCTAssertEqual(plan.requests.map(\.maxRedirects), [3, 0, 20])
        XCTAssertEqual(try parse(#"{"requests": [{"url": "http://a/"}]}"#).requests[0].maxRedirects, 10)
        XCTAssertEqual(error(#"{"requests": [{"url": "http://a/", "redirects": -1}]}"#),
                       "plan.json: requests[0].redirects: expected a number of redirects from 0 to 100, or false, found -1")
    }

    func testRateLimitPushbackIsOnByDefaultAndCanBeTurnedOff() throws {
        XCTAssertTrue(try parse(#"{"requests": [{"url": "http://a/"}]}"#).rateLimitPushback)
        XCTAssertFalse(try parse(#"{"rateLimitPushback": false, "requests": [{"url": "http://a/"}]}"#).rateLimitPushback)
        XCTAssertEqual(error(#"{"rateLimitPushback": "no", "requests": [{"url": "http://a/"}]}"#),
                       "plan.json: rateLimitPushback: expected true or false, found a string")
    }

    func testTheCircuitBreakerIsOnByDefaultAndCanBeSetOrTurnedOff() throws {
        XCTAssertEqual(try parse(#"{"requests": [{"url": "http://a/"}]}"#).circuitBreaker, HostCircuitBreaker.Options())
        XCTAssertNil(try parse(#"{"circuitBreaker": false, "requests": [{"url": "http://a/"}]}"#).circuitBreaker)
        let set = try parse(#"{"circuitBreaker": {"window": 30, "minimumRequests": 100, "failureRatio": 10, "consecutiveFailures": 0, "openFor": 2, "maxOpenFor": 8, "failFast": true, "maxWait": false}, "requests": [{"url": "http://a/"}]}"#)
        XCTAssertEqual(set.circuitBreaker, HostCircuitBreaker.Options(window: 30, minimumRequests: 100, failureRatio: 0.1, consecutiveConnectionFailures: 0,
                                                                     openFor: 2, maxOpenFor: 8, failFast: true, maxWait: nil))
        XCTAssertEqual(error(#"{"circuitBreaker": {"failureRatio": 0}, "requests": [{"url": "http://a/"}]}"#),
                       "plan.json: circuitBreaker.failureRatio: 0.0 is out of range; expected a share of failed attempts above 0, up to 100")
        XCTAssertEqual(error(#"{"circuitBreaker": {"openFor": 10, "maxOpenFor": 5}, "requests": [{"url": "http://a/"}]}"#),
                       "plan.json: circuitBreaker.maxOpenFor: 5.0 is shorter than openFor (10.0); expected at least openFor")
        XCTAssertEqual(error(#"{"circuitBreaker": {"failFast": "yes"}, "requests": [{"url": "http://a/"}]}"#),
                       "plan.json: circuitBreaker.failFast: expected true or false, found a string")
        XCTAssertEqual(error(#"{"circuitBreaker": {"minimumRequests": 0}, "requests": [{"url": "http://a/"}]}"#),
                       "plan.json: circuitBreaker.minimumRequests: expected a whole number of at least 1, found 0")
        XCTAssertEqual(error(#"{"circuitBreaker": {"openfor": 1}, "requests": [{"url": "http://a/"}]}"#),
                       #"plan.json: circuitBreaker.openfor: unknown field (did you mean "openFor"?); expected one of consecutiveFailures, failFast, failureRatio, maxOpenFor, maxWait, minimumRequests, openFor, window"#)
        XCTAssertEqual(error(#"{"circuitBreaker": true, "requests": [{"url": "http://a/"}]}"#),
                       "plan.json: circuitBreaker: true is the default; expected false (to turn breakers off) or an object with consecutiveFailures, failFast, failureRatio, maxOpenFor, maxWait, minimumRequests, openFor, window")
    }

    func testHedgingIsOffByDefaultAndSetForAPlanOrARequest() throws {
        XCTAssertNil(try parse(#"{"requests": [{"url": "http://a/"}]}"#).requests[0].hedge)
        let plan = try parse(#"{"hedge": {"after": 0.2}, "requests": [{"id": "a", "url": "http://a/"}, {"id": "b", "url": "http://b/", "hedge": false}, {"id": "c", "url": "http://c/", "hedge": {"after": 0.5, "max": 2}}, {"id": "d", "method": "POST", "url": "http://d/"}]}"#)
        XCTAssertEqual(plan.requests.map(\.hedge), [.hedge(after: 0.2), nil, .hedge(after: 0.5, max: 2), .hedge(after: 0.2)],
                       "a plan-wide hedge reaches a POST too; the engine never hedges it (not idempotent)")
        XCTAssertEqual(error(#"{"requests": [{"method": "POST", "url": "http://a/", "hedge": {"after": 0.2}}]}"#),
                       #"plan.json: requests[0].hedge: POST is never hedged: a second copy could act twice; add an Idempotency-Key header or remove "hedge""#)
        XCTAssertNotNil(try parse(#"{"requests": [{"method": "POST", "url": "http://a/", "headers": {"Idempotency-Key": "k"}, "hedge": {"after": 0.2}}]}"#).requests[0].hedge)
        XCTAssertEqual(error(#"{"hedge": {"max": 1}, "requests": [{"url": "http://a/"}]}"#),
                       "plan.json: hedge.after: missing; expected the seconds without a response before a copy is sent (e.g. 0.2)")
        XCTAssertEqual(error(#"{"hedge": true, "requests": [{"url": "http://a/"}]}"#),
                       #"plan.json: hedge: expected false (no hedging) or an object with "after" and optional "max", found true"#)
        XCTAssertEqual(error(#"{"requests": [{"url": "http://a/", "hedge": {"after": 0.2, "max": 0}}]}"#),
                       "plan.json: requests[0].hedge.max: expected a whole number of at least 1, found 0")
        XCTAssertEqual(error(#"{"requests": [{"url": "http://a/", "hedge": {"after": 0.2, "max": 11}}]}"#),
                       "plan.json: requests[0].hedge.max: 11 copies is too many; expected 1 to 10")
        XCTAssertEqual(error(#"{"requests": [{"url": "http://a/", "hedge": {"after": 0}}]}"#).prefix(38), "plan.json: requests[0].hedge.after: 0 ")
        XCTAssertEqual(error(#"{"requests": [{"url": "http://a/", "hedge": {"delay": 1}}]}"#).prefix(56),
                       "plan.json: requests[0].hedge.delay: unknown field; expec")
    }

    /// Before: PROPFIND was refused, and a timeout or deadline of 0 was taken and failed
    /// every request.
    func testAnyMethodTokenIsTakenAndZeroTimeLimitsAreRefused() throws {
        let plan = try parse(#"{"requests": [{"url": "http://a/", "method": "PROPFIND"}, {"url": "http://a/", "method": "purge"}, {"url": "http://a/", "method": "post"}]}"#)
        XCTAssertEqual(plan.requests.map(\.method), ["PROPFIND", "purge", "POST"], "standard methods in any case; others as written")
        XCTAssertFalse(plan.requests[0].retry.policy.retryableMethods.contains("PROPFIND"), "an unknown method is not idempotent")
        for field in ["timeout", "deadline"] {
            XCTAssertEqual(error(#"{"\#(field)": 0, "requests": [{"url": "http://a/"}]}"#),
                           "plan.json: \(field): 0 would fail every request at once; expected a number of seconds above 0 (leave it out for the default)")
            XCTAssertEqual(error(#"{"requests": [{"url": "http://a/", "\#(field)": 0}]}"#),
                           "plan.json: requests[0].\(field): 0 would fail every request at once; expected a number of seconds above 0 (leave it out for the default)")
        }
    }

    func testAMissingFileIsNamed() {
        XCTAssertThrowsError(try PlanParser.load(path: "/no/such/plan.json")) { error in
            XCTAssertEqual("\(error)", "/no/such/plan.json: cannot read the file (no such file)")
        }
    }

    /// Before: "NSCocoaErrorDomain error 256" for a folder or "", "permission denied" for
    /// /dev/null or a FIFO, even as root.
    func testFoldersEmptyNamesEmptyFilesAndPipesGetMessagesAPersonCanActOn() throws {
        func message(_ path: String) -> String {
            do { _ = try PlanParser.load(path: path); return "loaded" } catch { return "\(error)" }
        }
        XCTAssertEqual(message(NSTemporaryDirectory()), "\(NSTemporaryDirectory()): is a folder; name a file")
        XCTAssertEqual(message(""), "\"\": no file name given")
        XCTAssertEqual(message("/dev/null"), "/dev/null: is empty: a plan is a JSON object with \"requests\"")
        // A pipe is read to its end, as `reqtop run <(make-plan)` needs.
        let fifo = NSTemporaryDirectory() + "plan-\(UUID().uuidString.prefix(8)).fifo"
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        defer { unlink(fifo) }
        Thread.detachNewThread {
            let handle = FileHandle(forWritingAtPath: fifo)
            handle?.write(Data(#"{"requests": [{"url": "http://a.test/"}]}"#.utf8))
            try? handle?.close()
        }
        XCTAssertEqual(try PlanParser.load(path: fifo).requests.count, 1)
    }

    /// Before: FoundationNetworking dropped such a header without a word.
    func testHeaderValuesThatWouldSplitTheHeaderAndBadHeaderNamesAreRefused() {
        XCTAssertEqual(error(#"{"requests": [{"url": "http://a/", "headers": {"X-A": "one\r\nX-Injected: yes"}}]}"#),
                       "plan.json: requests[0].headers.X-A: its value contains a CR, LF or NUL, which would split the header")
        XCTAssertEqual(error(#"{"requests": [{"url": "http://a/", "headers": {"X A": "1"}}]}"#),
                       "plan.json: requests[0].headers: \"X A\" is not a valid header name (RFC 9110 token)")
    }

    // MARK: - Flow control

    func testDependsOnOrdersParentsFirstAndKeepsTemplates() throws {
        let plan = try parse("""
        {"auth": {"tokenURL": "{{fault}}/auth/token", "credentials": {"username": "u", "password": "secret"}},
         "batches": {"up": {"size": 2, "timeLimit": 1.5}}, "maxConcurrentPerHost": 2,
         "requests": [
           {"id": "items", "url": "{{fault}}/echo?user={{profile.id}}", "dependsOn": "profile", "priority": "high", "batch": "up"},
           {"id": "profile", "url": "{{fault}}/auth/resource/profile", "dependsOn": ["login"]},
           {"id": "login", "method": "POST", "url": "{{fault}}/auth/token", "auth": false,
            "body": {"username": "u", "password": "secret"}}
         ]}
        """)
        XCTAssertEqual(plan.requests.map(\.id), ["login", "profile", "items"])
        XCTAssertEqual(plan.requests[2].dependsOn, ["profile"])
        XCTAssertEqual(plan.requests[2].priority, .high)
        XCTAssertEqual(plan.requests[2].batch, "up")
        XCTAssertEqual(plan.requests.map(\.auth), [false, true, true])
        XCTAssertEqual(plan.batches["up"], BatchSettings(size: 2, timeLimit: 1.5))
        XCTAssertEqual(plan.maxConcurrentPerHost, 2)
        XCTAssertEqual(plan.auth?.credentials["username"], "u")
    }

    func testACycleInDependsOnIsNamed() {
        XCTAssertEqual(error("""
        {"requests": [{"id": "a", "url": "http://h.test/", "dependsOn": "b"},
                      {"id": "b", "url": "http://h.test/", "dependsOn": ["c"]},
                      {"id": "c", "url": "http://h.test/", "dependsOn": ["a"]}]}
        """), "plan.json: requests[0].dependsOn: a cycle: a → b → c → a; a request cannot wait for itself")
        XCTAssertEqual(error(#"{"requests": [{"id": "a", "url": "http://h.test/", "dependsOn": "a"}]}"#),
                       #"plan.json: requests[0].dependsOn[0]: "a" is this request itself"#)
    }

    func testAParentThatDoesNotExistIsNamed() {
        XCTAssertEqual(error(#"{"requests": [{"id": "login", "url": "http://h.test/"}, {"url": "http://h.test/", "dependsOn": ["logn"]}]}"#),
                       #"plan.json: requests[1].dependsOn[0]: no request has the id "logn" (did you mean "login"?)"#)
    }

    func testATemplateMustNameAParent() {
        XCTAssertEqual(error(#"{"requests": [{"id": "login", "url": "http://h.test/"}, {"url": "http://h.test/{{login.id}}"}]}"#),
                       #"plan.json: requests[1].url: {{login.id}} names no request in "dependsOn" (none); write {{ID.field}} with ID listed in dependsOn"#)
    }

    func testBadBatchesAndAuthAreNamed() {
        XCTAssertEqual(error(#"{"batches": {"up": {"size": 0}}, "requests": [{"url": "http://h.test/"}]}"#),
                       "plan.json: batches.up.size: expected a whole number of at least 1, found 0")
        XCTAssertEqual(error(#"{"batches": {"up": {"size": 2}}, "requests": [{"url": "http://h.test/", "batch": "down"}]}"#),
                       #"plan.json: requests[0].batch: no batch "down" in "batches"; expected one of up"#)
        XCTAssertEqual(error(#"{"requests": [{"url": "http://h.test/", "auth": true}]}"#),
                       #"plan.json: requests[0].auth: true, but the plan has no top-level "auth" to say where tokens come from"#)
        XCTAssertEqual(error(#"{"auth": {"tokenURL": "http://h.test/t"}, "requests": [{"url": "http://h.test/"}]}"#),
                       #"plan.json: auth.credentials: missing; expected an object such as {"username": ..., "password": ...}"#)
        XCTAssertEqual(error(#"{"requests": [{"url": "http://h.test/", "priority": "urgent"}]}"#),
                       #"plan.json: requests[0].priority: expected one of veryLow, low, normal, high, veryHigh, found "urgent""#)
    }

    func testTemplatesTakeValuesFromAParentsJSON() throws {
        let body = Data(#"{"token": "t/1", "id": 42, "items": [{"name": "a b"}], "ok": true}"#.utf8)
        let fill = { (text: String) in try PlanTemplate.fill(text, parents: ["login": body], parentIDs: ["login"]) }
        XCTAssertEqual(try fill("Bearer {{login.token}}"), "Bearer t/1")
        XCTAssertEqual(try fill("{{login.id}}-{{login.items.0.name}}-{{login.ok}}"), "42-a b-true")
        XCTAssertEqual(try PlanTemplate.fill("/x?n={{login.items.0.name}}", parents: ["login": body], parentIDs: ["login"],
                                             encode: PlanTemplate.percentEncode), "/x?n=a%20b")
        XCTAssertThrowsError(try fill("{{login.missing}}")) { error in
            XCTAssertEqual("\(error)", "{{login.missing}}: the answer of login has no missing")
        }
    }
}

final class PlanNumberRangeTests: XCTestCase {
    /// Seconds in a plan share the readers' bound: delays of 1e19 trapped the engine.
    func testSecondsBeyondTheBoundAreBadInput() {
        let plan = Data(#"{"retry": {"baseDelay": 1e19}, "requests": [{"url": "http://127.0.0.1:1/"}]}"#.utf8)
        XCTAssertThrowsError(try PlanParser(file: "p.json").parse(plan)) { error in
            XCTAssertEqual("\(error)", "p.json: retry.baseDelay: 1e+19 is too large; expected a number of seconds up to 1000000000")
        }
    }
}

final class PlanOrderingTests: XCTestCase {
    private func plan(_ requests: [String]) -> Data {
        Data(("{\"requests\": [" + requests.joined(separator: ",") + "]}").utf8)
    }

    /// A chain as long as the plan, listed children first: ordering must not recurse on it
    /// (a recursive walk overflowed the stack at about 4,000).
    func testALongReverseChainIsOrderedWithoutRecursion() throws {
        let count = 20_000
        let requests = (0..<count).reversed().map { i in
            i == 0 ? #"{"id": "r0", "url": "http://127.0.0.1:1/"}"# : #"{"id": "r\#(i)", "url": "http://127.0.0.1:1/", "dependsOn": "r\#(i - 1)"}"#
        }
        let parsed = try PlanParser(file: "chain.json").parse(plan(requests))
        XCTAssertEqual(parsed.requests.map(\.id), (0..<count).map { "r\($0)" })
    }

    func testALongCycleIsNamed() {
        let count = 5_000
        let requests = (0..<count).map { i in #"{"id": "c\#(i)", "url": "http://127.0.0.1:1/", "dependsOn": "c\#((i + 1) % count)"}"# }
        XCTAssertThrowsError(try PlanParser(file: "cycle.json").parse(plan(requests))) { error in
            let text = "\(error)"
            XCTAssertTrue(text.hasPrefix("cycle.json: requests[0].dependsOn: a cycle: c0 → c1 → c2"), String(text.prefix(200)))
            XCTAssertTrue(text.hasSuffix("c4999 → c0; a request cannot wait for itself"), String(text.suffix(200)))
        }
    }

    /// A recording's header keeps the run's queue settings as plan members (QueueSettings),
    /// and `reqtop whatif` reads them back with this parser: every key of each section is
    /// written, and what is written parses back to the same settings.
    func testQueueSettingsAreWrittenInTheWordsTheParserReadsBack() throws {
        let breaker = HostCircuitBreaker.Options(window: 7, minimumRequests: 9, failureRatio: 0.3, consecutiveConnectionFailures: 4,
                                                 openFor: 2, maxOpenFor: 20, failFast: true, maxWait: nil)
        let budget = RatioRetryBudget.Options(percent: 0.15, window: 12, minRetriesPerSecond: 3)
        let settings = QueueSettings(maxConcurrent: 5, maxConcurrentPerHost: 2, retryBudgetPerHost: budget, circuitBreaker: breaker,
                                     rateLimitPushback: false)
        XCTAssertEqual(Set((settings.object["circuitBreaker"] as? [String: Any] ?? [:]).keys), PlanParser.circuitBreakerKeys)
        XCTAssertEqual(Set((settings.object["retryBudgetPerHost"] as? [String: Any] ?? [:]).keys), PlanParser.retryBudgetKeys)
        var object = settings.object
        object["requests"] = [["url": "http://a.test/"]]
        let plan = try PlanParser(file: "header").parse(JSONSerialization.data(withJSONObject: object))
        XCTAssertEqual(plan.circuitBreaker, breaker)
        XCTAssertEqual(plan.retryBudgetPerHost, budget)
        XCTAssertEqual([plan.maxConcurrent, plan.maxConcurrentPerHost], [5, 2])
        XCTAssertFalse(plan.rateLimitPushback)
        let off = QueueSettings(maxConcurrent: 1, retryBudgetPerHost: nil, circuitBreaker: nil)
        var offObject = off.object
        offObject["requests"] = [["url": "http://a.test/"]]
        let offPlan = try PlanParser(file: "header").parse(JSONSerialization.data(withJSONObject: offObject))
        XCTAssertNil(offPlan.circuitBreaker)
        XCTAssertNil(offPlan.retryBudgetPerHost)
    }
}
