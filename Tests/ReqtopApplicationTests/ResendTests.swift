import Foundation
@testable import ReqtopApplication
import RequestOperations
import XCTest

final class ResendTests: XCTestCase {
    /// Before: a path in --target was silently dropped. And a URL whose user:password was
    /// redacted is never sent with the placeholder.
    func testATargetsPathGoesInFrontOfEachRecordedPath() {
        func queued(_ id: String, _ url: String) -> RequestEvent {
            RequestEvent(time: 0, operationID: id, attempt: 1, payload: .queued(method: "GET", url: url, headers: [:], maxAttempts: 1))
        }
        let events = [queued("a", "http://api.test/echo%74?q=a%20b"), queued("b", "http://%5Bredacted%5D@api.test/x")]
        let plan = Resend(events: events, target: URL(string: "http://127.0.0.1:8080/staging/"))
        XCTAssertEqual(plan.requests.map { $0.request.url.absoluteString }, ["http://127.0.0.1:8080/staging/echo%74?q=a%20b"])
        XCTAssertEqual(plan.skipped.map(\.reason), ["its user:password was redacted"])
        let plain = Resend(events: [events[0]], target: URL(string: "http://127.0.0.1:8080"))
        XCTAssertEqual(plain.requests.first?.request.url.absoluteString, "http://127.0.0.1:8080/echo%74?q=a%20b")
    }

    /// A proxy's recording holds its client's head as written (`headerFields`): sent again so,
    /// in order, repeats apart, names as spelled; `queued`'s one value per name is the fallback.
    func testARecordedHeadAsWrittenIsSentAsWritten() {
        let fields = FieldMerge.fields([("X-Zeta", "1"), ("X-Dup", "a"), ("x-MiXeD", "2"), ("X-Dup", "b")])
        let events = [
            RequestEvent(time: 0, operationID: "c1-r1", attempt: 1, payload: .queued(method: "GET", url: "http://api.test/x",
                                                                                    headers: ["X-Zeta": "1", "X-Dup": "a, b", "x-MiXeD": "2"], maxAttempts: 1)),
            RequestEvent(time: 0, operationID: "c1-r1", attempt: 1, payload: .headerFields(side: .request, fields: fields)),
            RequestEvent(time: 0, operationID: "lib", attempt: 1, payload: .queued(method: "GET", url: "http://api.test/y",
                                                                                  headers: ["X-Dup": "a, b"], maxAttempts: 1)),
        ]
        let plan = Resend(events: events, target: nil)
        XCTAssertEqual(plan.requests.first?.request.headerFields.map { "\($0.name.rawName): \($0.value)" },
                       ["X-Zeta: 1", "X-Dup: a", "x-MiXeD: 2", "X-Dup: b"])
        XCTAssertEqual(plan.requests.last?.request.value(forField: "x-dup"), "a, b")
    }

    /// A request a proxy refused and answered itself never reached a server: neither sent again
    /// nor compared (`reqtop whatif`), as a tunnel's bytes are not; a request beside it is.
    func testARequestTheProxyRefusedIsNotSentAgain() {
        var refused = RecordedOptions()
        (refused.origin, refused.refusedByProxy) = ("curl 4242", true)
        let events = [
            RequestEvent(time: 0, operationID: "c1-r1", attempt: 1, payload: .queued(method: "GET", url: "http://api.test/x", headers: [:], maxAttempts: 1,
                                                                                    options: refused)),
            RequestEvent(time: 0, operationID: "c2-r1", attempt: 1, payload: .queued(method: "CONNECT", url: "https://api.test:443", headers: [:], maxAttempts: 1)),
            RequestEvent(time: 0, operationID: "c3-r1", attempt: 1, payload: .queued(method: "GET", url: "http://api.test/y", headers: [:], maxAttempts: 1)),
        ]
        let plan = Resend(events: events, target: nil)
        XCTAssertEqual(plan.requests.map { $0.request.url.absoluteString }, ["http://api.test/y"])
        XCTAssertEqual(plan.skipped.map(\.id), ["c1-r1", "c2-r1"])
        XCTAssertEqual(plan.skipped.first?.reason, "the proxy refused it and answered itself; it was never sent")
        XCTAssertEqual(Resend.rowsNotSent(in: events), ["c1-r1", "c2-r1"])
    }
}
