import FaultServer
import Foundation
@testable import ReqtopApplication
import RequestOperations
import XCTest

/// What a recording says each upstream answered (`serve --from`, `whatif`), without a server.
final class RecordedUpstreamTests: XCTestCase {
    private func event(_ t: TimeInterval, _ op: String, _ attempt: Int, _ payload: RequestEvent.Payload) -> RequestEvent {
        RequestEvent(time: t, operationID: op, attempt: attempt, payload: payload)
    }

    private var events: [RequestEvent] {
        let down = TransportError(code: URLError.Code.cannotConnectToHost.rawValue, message: "refused")
        return [
            event(1, "a", 1, .queued(method: "GET", url: "http://api:80/x?q=1", headers: [:], maxAttempts: 3)),
            event(1, "a", 1, .taskCreated(taskIdentifier: 1, url: "http://api:80/x?q=1")),
            event(1.2, "a", 1, .response(status: 503, headers: ["Retry-After": "1", "Content-Length": "9", "Content-Encoding": "gzip"], expectedBytes: 9)),
            event(1.2, "a", 1, .responseBody(body: .bytes(Data("busy\n".utf8)), totalBytes: 5, truncated: false, mediaType: nil)),
            event(1.2, "a", 1, .taskCompleted(error: nil)),
            event(3, "a", 2, .taskCreated(taskIdentifier: 2, url: "http://api:80/x?q=1")),
            event(3.1, "a", 2, .response(status: 200, headers: [:], expectedBytes: 0)),
            event(3.1, "a", 2, .taskCompleted(error: nil)),
            // Reqtop's own answer: not the upstream's.
            event(4, "b", 1, .queued(method: "GET", url: "http://api:80/x?q=1", headers: [:], maxAttempts: 1)),
            event(4, "b", 1, .taskCreated(taskIdentifier: -1, url: "http://api:80/x?q=1")),
            event(4, "b", 1, .injected(fault: "status 500", rule: "", by: "test")),
            event(4, "b", 1, .response(status: 500, headers: [:], expectedBytes: 0)),
            event(4, "b", 1, .taskCompleted(error: nil)),
            // A host down at first, then up.
            event(2, "c", 1, .queued(method: "POST", url: "http://db:5/y", headers: [:], maxAttempts: 3)),
            event(2, "c", 1, .taskCreated(taskIdentifier: 3, url: "http://db:5/y")),
            event(2, "c", 1, .taskCompleted(error: down)),
            event(5, "c", 2, .taskCreated(taskIdentifier: 4, url: "http://db:5/y")),
            event(5, "c", 2, .taskCompleted(error: down)),
            event(8, "c", 3, .taskCreated(taskIdentifier: 5, url: "http://db:5/y")),
            event(8.5, "c", 3, .response(status: 201, headers: [:], expectedBytes: 0)),
            event(8.5, "c", 3, .taskCompleted(error: nil)),
        ]
    }

    func testEachAttemptIsAnsweredAsItWasAndReqtopsOwnAnswersAreLeftOut() throws {
        let built = RecordedUpstream.build(events, origin: 1)
        XCTAssertEqual(built.attempts, 5)
        XCTAssertEqual(built.skipped, 1, "the injected attempt")
        let first = try XCTUnwrap(built.answers.answer(method: "GET", target: "/x?q=1", host: nil, operation: "a", attempt: 1))
        XCTAssertEqual(first.outcome, .response(status: 503, headers: [("Retry-After", "1")], body: Array("busy\n".utf8)),
                       "the body as recorded, its framing headers made anew")
        XCTAssertEqual(first.latency, 0.2, accuracy: 0.0001)
        XCTAssertEqual(built.answers.answer(method: "GET", target: "/x?q=1", host: nil, operation: "a", attempt: 2)?.outcome,
                       .response(status: 200, headers: [], body: []))
        XCTAssertNil(built.answers.answer(method: "GET", target: "/nope", host: nil))
        XCTAssertNil(built.answers.answer(method: "PUT", target: "/x?q=1", host: nil), "the method is part of the match")
    }

    func testARefusingHostIsDownOverItsSpanAndItsRefusalsAreNotAnswers() throws {
        let built = RecordedUpstream.build(events, origin: 1)
        let db = try XCTUnwrap(built.hosts["db:5"])
        XCTAssertEqual(db.refused.count, 1)
        XCTAssertEqual(db.refused[0].from, 0, "never connected before: down from the start")
        XCTAssertEqual(db.refused[0].to ?? -1, 5.5, accuracy: 0.0001,
                       "back halfway between its last refusal (4) and the attempt that connected (7): a re-run's attempts a little off their recorded moments meet it as they did")
        XCTAssertNil(built.hosts["api:80"]?.refused.first)
        // A listening server is a host that connects: the 201 is what it says, whatever the attempt.
        XCTAssertEqual(db.answers.answer(method: "POST", target: "/y", host: nil, operation: "c", attempt: 1)?.outcome,
                       .response(status: 201, headers: [], body: []))
    }

    func testWithoutOperationsAnswersGoInAttemptOrderThenByTheMomentOfTheRun() {
        let answers = RecordedUpstream.build(events, origin: 1).answers
        answers.begin(at: Date().addingTimeInterval(-1))
        let statuses = (0..<3).map { _ -> Int? in
            if case .response(let status, _, _)? = answers.answer(method: "GET", target: "/x?q=1", host: "api:80")?.outcome { status } else { nil }
        }
        XCTAssertEqual(statuses, [503, 200, 503], "past the recorded ones: what the host said at 1 s into the run (before the 200 at 2 s)")
    }
}
