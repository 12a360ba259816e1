import Foundation
@testable import RequestEventFormat
import RequestOperations
import XCTest

final class PackedEventsTests: XCTestCase {
    /// One of every kind, with optional fields present and absent.
    static let everyKind: [RequestEvent.Payload] = [
        .queued(method: "GET", url: "http://h/a?b=1", headers: ["Accept": "*/*", "X-Ünïcode": "✓"], maxAttempts: 4),
        .queued(method: "POST", url: "http://h/", headers: [:], maxAttempts: nil),
        .queued(method: "POST", url: "http://h/", headers: ["Content-Type": "application/json"], maxAttempts: 5,
                body: .bytes(Data(#"{"a":"é\n"}"#.utf8)),
                options: RecordedOptions(attemptTimeout: 2.5, deadline: 300,
                                         retry: RetrySettings(maxAttempts: 5, baseDelay: 0.25, multiplier: 3, maxDelay: 10,
                                                              jitter: .decorrelated, retryNonIdempotent: true, retryBudget: 0.1),
                                         earlyRetry: false, hedge: .hedge(after: 0.2, max: 2))),
        .queued(method: "PUT", url: "http://h/", headers: [:], maxAttempts: nil, body: .bytes(Data([0, 0xFF, 0x10])), options: RecordedOptions(deadline: 300)),
        .queued(method: "POST", url: "http://h/", headers: [:], maxAttempts: nil, body: .omitted(bytes: nil, reason: "a stream")),
        .built(method: "GET", url: "http://h/items/7", headers: ["Authorization": "[redacted]"], body: nil),
        .built(method: "POST", url: "http://h/items", headers: [:], body: .omitted(bytes: 70_000, reason: "over the limit")),
        .started, .sent,
        .connection(id: 12, reused: true), .connection(id: -3, reused: false), .connection(id: 5, reused: false, proxy: "proxy:8080"),
        .taskCompleted(error: TransportError(code: -1201, message: "expired", tls: .expired)),
        .taskCompleted(error: TransportError(code: -1001, message: "timed out", timeout: .connect)),
        .preparationFailed(reason: "no token"),
        .taskCreated(taskIdentifier: Int.max, url: "http://h/a"), .taskCreated(taskIdentifier: Int.min, url: ""),
        .taskCreated(taskIdentifier: 3, url: "https://h/", insecure: true),
        .redirect(status: 302, location: "http://o/", dropped: ["authorization", "x-api-key"], refused: "why"),
        .redirect(status: 302, location: "http://h/b"),
        .response(status: 503, headers: ["Retry-After": "2"], expectedBytes: 15),
        .response(status: 200, headers: [:], expectedBytes: nil),
        .data(bytes: 1024),
        .taskCompleted(error: nil), .taskCompleted(error: TransportError(code: -1004, message: "cannot connect to host")),
        .taskCompleted(error: .hedgeLost(to: 2)),
        .validationFailed(reason: "status 503"),
        .retryScheduled(delay: 0.1 + 0.2, reason: "status 503; backoff"),
        .retryDenied(reason: "budget spent"),
        .hedged(racing: 1, after: 0.25),
        .circuitWaiting(host: "h:80"),
        .circuitOpened(host: "h:80", reason: "5 failures", until: 12.5), .circuitOpened(host: "h:80", reason: "isolated", until: nil),
        .circuitHalfOpen(host: "h:80"), .circuitClosed(host: "h:80", reason: "probe ok"),
        .rateLimitWaiting(host: "h:80", until: 3), .retryBudget(host: "h:80", left: 0),
        .rateLimited(host: "h:80", until: 9.75, reason: "429"),
        .earlyRetry(trigger: "probe", delay: 0.12),
        .intercepted(by: "auth", command: "execute"),
        .held(batch: "uploads"), .released(batch: "uploads", size: 3),
        .reactorStarted(name: "refresh", trigger: "401"), .reactorWaiting(name: "refresh"),
        .reactorFinished(name: "refresh", outcome: "success"),
        .requeued(by: "refresh", reason: "token refreshed"),
        .cancelled(by: "caller"),
        .finished(outcome: .failure, status: nil, attempts: 3, duration: 4.5, reason: "retries exhausted"),
        .finished(outcome: .success, status: 200, attempts: 1, duration: 0.25, reason: nil),
        .missed(count: 7),
        .other(name: "aKindFromLater"),
    ]

    func testEveryKindPacksAndReadsBackExactly() throws {
        let names = Set(Self.everyKind.map(\.name))
        for name in ["queued", "built", "started", "sent", "connection", "preparationFailed", "taskCreated", "redirect", "response",
                     "data", "taskCompleted", "validationFailed", "retryScheduled", "retryDenied", "hedged", "circuitWaiting",
                     "circuitOpened", "circuitHalfOpen", "circuitClosed", "rateLimitWaiting", "retryBudget", "rateLimited",
                     "earlyRetry", "intercepted", "held", "released", "reactorStarted", "reactorWaiting", "reactorFinished",
                     "requeued", "cancelled", "finished", "missed"] {
            XCTAssertTrue(names.contains(name), "no \(name) in the sample")
        }
        let events = Self.everyKind.enumerated().map { index, payload in
            RequestEvent(time: 1.0 / 3 + Double(index), operationID: "op-1", attempt: index % 5 - 1, payload: payload)
        }
        let packed = PackedEvents(events, context: ["http://h/"])
        XCTAssertEqual(try packed.events(operationID: "op-1", context: ["http://h/"]), events)
        // One at a time too: a pack's first string is always written out.
        for event in events {
            XCTAssertEqual(try PackedEvents([event]).events(operationID: "op-1"), [event])
        }
        XCTAssertEqual(try PackedEvents([]).events(operationID: "x"), [])
    }

    /// The monitor benchmark's operation (10 events, a retry) in well under half of what it
    /// costs as events: 10 × 80 bytes inline, plus each payload's heap.
    func testATypicalOperationIsSmall() throws {
        let url = "http://api-3.test:8080/items/4242?page=6"
        let events: [RequestEvent.Payload] = [
            .queued(method: "GET", url: url, headers: ["Accept": "application/json"], maxAttempts: 3), .started,
            .taskCreated(taskIdentifier: 8484, url: url), .response(status: 503, headers: ["Retry-After": "1"], expectedBytes: 15),
            .taskCompleted(error: nil), .retryScheduled(delay: 0.5, reason: "status 503; attempt 1 of 3; backoff 0.5s"), .started,
            .response(status: 200, headers: ["Content-Type": "application/json"], expectedBytes: 2048), .data(bytes: 2048),
            .finished(outcome: .success, status: 200, attempts: 2, duration: 0.51, reason: nil),
        ]
        let packed = PackedEvents(events.enumerated().map { RequestEvent(time: 1000.001 + Double($0) * 0.001, operationID: "op-4242", attempt: 1, payload: $1) },
                                  context: [url])
        XCTAssertLessThanOrEqual(packed.bytes.count, 256, "\(packed.bytes.count) bytes")
    }

    /// Bytes it did not write: an error, never a crash or a hang.
    /// A header count past Int.max (found by the random rounds below, which trapped once in
    /// a few hundred runs): refused, not a crash.
    func testAHeaderCountPastIntMaxIsRefused() {
        var bytes = [UInt8](repeating: 0, count: 8)  // time
        bytes += [0, 4, 1]  // attempt 0, a headers field, keyed by the first known string
        bytes += [UInt8](repeating: 0xFF, count: 9) + [0x01]  // a count of UInt64.max
        XCTAssertThrowsError(try PackedEvents(rawBytes: bytes).events(operationID: "a"))
    }

    func testBytesItDidNotWriteAreRefused() {
        var random = SystemRandomNumberGenerator()
        let good = PackedEvents(Self.everyKind.map { RequestEvent(time: 1, operationID: "a", attempt: 1, payload: $0) }).bytes
        for round in 0..<2_000 {
            var bytes = good
            if round % 2 == 0 {
                bytes = (0..<Int.random(in: 0...64, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            } else {
                for _ in 0...Int.random(in: 0...4, using: &random) {
                    bytes[Int.random(in: 0..<bytes.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
                }
                bytes = Array(bytes.prefix(Int.random(in: 0...bytes.count, using: &random)))
            }
            _ = try? PackedEvents(rawBytes: bytes).events(operationID: "a")
        }
    }
}
