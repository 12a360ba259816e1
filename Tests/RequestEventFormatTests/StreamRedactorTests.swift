import Foundation
@testable import RequestEventFormat
import RequestOperations
import XCTest

/// A secret the server echoes back is taken out of the same operation's later events.
final class StreamRedactorTests: XCTestCase {
    private func event(_ op: String, _ payload: RequestEvent.Payload) -> RequestEvent {
        RequestEvent(time: 1, operationID: op, attempt: 1, payload: payload)
    }

    func testAnEchoedCredentialIsTakenOutOfHeadersOfAnyNameURLsAndReasons() {
        let redactor = StreamRedactor()
        let queued = redactor.redact(event("a", .queued(method: "GET", url: "https://u:pw-1234@h/x?access_token=QTOKEN99&page=2",
                                                        headers: ["Authorization": "Bearer SEKRET", "Cookie": "sid=COOKIE42; theme=dark"],
                                                        maxAttempts: nil)))
        guard case .queued(_, let url, let headers, _, _, _) = queued.payload else { return XCTFail() }
        XCTAssertEqual(headers["Authorization"], Redactor.placeholder)
        XCTAssertFalse(url.contains("QTOKEN99"))
        let response = redactor.redact(event("a", .response(status: 401, headers: [
            "WWW-Authenticate": "Bearer error=\"invalid_token\", token=\"SEKRET\"", "X-Echo-Auth": "Bearer SEKRET",
            "X-Seen": "cookie COOKIE42, query QTOKEN99, password pw-1234", "X-Plain": "theme=dark"], expectedBytes: nil)))
        guard case .response(_, let echoed, _, _) = response.payload else { return XCTFail() }
        let text = echoed.values.joined(separator: " ")
        for secret in ["SEKRET", "COOKIE42", "QTOKEN99", "pw-1234"] { XCTAssertFalse(text.contains(secret), "\(secret) in \(echoed)") }
        XCTAssertEqual(echoed["X-Plain"], "theme=dark", "short values and names are left alone")
        let redirect = redactor.redact(event("a", .redirect(status: 302, location: "https://h/cb?echo=SEKRET")))
        XCTAssertEqual(redirect.payload, .redirect(status: 302, location: "https://h/cb?echo=\(Redactor.urlPlaceholder)"))
        let finished = redactor.redact(event("a", .finished(outcome: .failure, status: 401, attempts: 1, duration: 1, reason: "status 401: SEKRET")))
        XCTAssertEqual(finished.payload, .finished(outcome: .failure, status: 401, attempts: 1, duration: 1, reason: "status 401: [redacted]"))
    }

    func testSecretsBelongToTheirOperationAndAreForgottenWhenItFinishes() {
        let redactor = StreamRedactor()
        _ = redactor.redact(event("a", .queued(method: "GET", url: "http://h/", headers: ["X-Api-Key": "KEY-ALPHA"], maxAttempts: nil)))
        let other = redactor.redact(event("b", .response(status: 200, headers: ["X": "KEY-ALPHA"], expectedBytes: nil)))
        XCTAssertEqual(other.payload, .response(status: 200, headers: ["X": "KEY-ALPHA"], expectedBytes: nil), "another operation's value is its own")
        _ = redactor.redact(event("a", .finished(outcome: .success, status: 200, attempts: 1, duration: 1, reason: nil)))
        let later = redactor.redact(event("a", .response(status: 200, headers: ["X": "KEY-ALPHA"], expectedBytes: nil)))
        XCTAssertEqual(later.payload, .response(status: 200, headers: ["X": "KEY-ALPHA"], expectedBytes: nil))
    }

    /// Operations that never finish are remembered up to ``StreamRedactor/operationLimit``, the
    /// oldest forgotten first: the newest still has its secret scrubbed, the first not.
    func testOperationsThatNeverFinishAreForgottenOldestFirst() {
        let redactor = StreamRedactor()
        for index in 0...StreamRedactor.operationLimit {
            _ = redactor.redact(event("op\(index)", .queued(method: "GET", url: "http://h/", headers: ["X-Api-Key": "KEY-\(index)-SECRET"], maxAttempts: nil)))
        }
        let echo = { (index: Int) in
            redactor.redact(self.event("op\(index)", .response(status: 200, headers: ["X": "KEY-\(index)-SECRET"], expectedBytes: nil))).payload
        }
        XCTAssertEqual(echo(StreamRedactor.operationLimit), .response(status: 200, headers: ["X": Redactor.placeholder], expectedBytes: nil))
        XCTAssertEqual(echo(0), .response(status: 200, headers: ["X": "KEY-0-SECRET"], expectedBytes: nil), "the oldest was forgotten")
    }

    func testRecentKeysGivesBackTheOldestPastItsLimit() {
        var keys = RecentKeys<Int>(limit: 3)
        XCTAssertEqual((1...3).compactMap { keys.append($0) }, [])
        XCTAssertEqual((4...10).compactMap { keys.append($0) }, [1, 2, 3, 4, 5, 6, 7])
        XCTAssertEqual(keys.count, 3)
    }

    /// The kinds passed on untouched (no copy, no look-up) are exactly ones the rules and the
    /// scrub leave as they are, even with a learnt secret in every string they hold; and every
    /// kind that holds text a secret could be in goes the whole way.
    func testKindsPassedOnUntouchedAreOnesNothingWouldChange() {
        let secret = "SEKRET-12345"
        let untouched: [RequestEvent.Payload] = [
            .started, .sent, .data(bytes: 5), .uploaded(bytes: 1, totalBytes: 2), .messages(fromClient: 1, toClient: 2),
            .connection(id: 3, reused: true, proxy: "proxy-\(secret):8080"), .taskCompleted(error: nil),
            .hedged(racing: 2, after: 0.1), .missed(count: 3), .breakpointRemoved(id: 1),
        ]
        for payload in untouched {
            XCTAssertFalse(StreamRedactor.mayHoldText(payload), "\(payload)")
            XCTAssertEqual(Redactor().redact(event("a", payload)).payload, payload)
            XCTAssertEqual(StreamRedactor.scrub(payload, of: [secret]), payload)
        }
        let error = TransportError(code: -1, message: "echo \(secret)", tls: nil, timeout: nil, cancelledByHedge: false)
        let textual: [RequestEvent.Payload] = [
            .queued(method: "GET", url: "https://h/?q=\(secret)", headers: [:], maxAttempts: nil),
            .built(method: "GET", url: "https://h/", headers: ["X": secret], body: nil),
            .taskCreated(taskIdentifier: 1, url: "https://h/\(secret)"), .taskCompleted(error: error),
            .response(status: 200, headers: ["X": secret], expectedBytes: nil), .redirect(status: 302, location: "https://h/\(secret)"),
            .responseBody(body: .bytes(Data(secret.utf8)), totalBytes: 12, truncated: false, mediaType: "text/plain"),
            .validationFailed(reason: secret), .retryScheduled(delay: 1, reason: secret), .retryDenied(reason: secret),
            .preparationFailed(reason: secret), .finished(outcome: .failure, status: nil, attempts: 1, duration: 1, reason: secret),
        ]
        for payload in textual {
            XCTAssertTrue(StreamRedactor.mayHoldText(payload), "\(payload)")
        }
        // And through the fast path a learnt secret still goes from the kinds that hold text.
        let redactor = StreamRedactor()
        _ = redactor.redact(event("b", .queued(method: "GET", url: "https://h/", headers: ["Authorization": "Bearer \(secret)"], maxAttempts: nil)))
        _ = redactor.redact(event("b", .started))
        let failed = redactor.redact(event("b", .taskCompleted(error: error)))
        XCTAssertEqual(failed.payload, .taskCompleted(error: TransportError(code: -1, message: "echo [redacted]", tls: nil, timeout: nil,
                                                                             cancelledByHedge: false)))
    }
}
