import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Logging
import RequestLogging
import RequestOperations
import Synchronization
import XCTest

/// A LogHandler that keeps every line, for assertions.
private final class CapturedLog: Sendable {
    struct Line: Sendable {
        var level: Logger.Level
        var message: String
        var metadata: [String: String]
    }

    private let stored = Mutex<[Line]>([])
    var lines: [Line] { stored.withLock { $0 } }

    func logger(level: Logger.Level = .debug) -> Logger {
        var logger = Logger(label: "test") { _ in Handler(log: self) }
        logger.logLevel = level
        return logger
    }

    func append(_ line: Line) { stored.withLock { $0.append(line) } }

    struct Handler: LogHandler {
        let log: CapturedLog
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let all = metadata.merging(event.metadata ?? [:]) { $1 }
            log.append(Line(level: event.level, message: "\(event.message)", metadata: all.mapValues { "\($0)" }))
        }
    }
}

final class RequestLoggerTests: XCTestCase {
    func testRetriesAreDebugAndFailuresInfoWithTheirMetadataAndNoSecret() async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let log = CapturedLog()
        let queue = RequestQueue(maxConcurrentRequests: 4, logger: log.logger(), earlyRetry: nil)
        let policy = ExponentialBackoffRetryPolicy(maxAttempts: 2, baseDelay: 0.01, jitter: .none)
        var request = URLRequest(url: URL(string: server.url("/status/503").absoluteString + "?token=s3cret")!)
        request.setValue("Bearer s3cret", forHTTPHeaderField: "Authorization")
        do {
            _ = try await queue.response(for: request, id: "down", options: RequestOptions(retryPolicy: policy))
            XCTFail("503 twice fails")
        } catch is RequestError {}
        _ = try await queue.response(for: URLRequest(url: server.url("/echo")), id: "fine")
        queue.events.waitUntilDelivered()
        let lines = log.lines
        let retry = try XCTUnwrap(lines.first { $0.message.hasPrefix("retrying in") }, "\(lines)")
        XCTAssertEqual(retry.level, .debug)
        XCTAssertEqual(retry.metadata["op"], "down")
        XCTAssertEqual(retry.metadata["attempt"], "1")
        XCTAssertEqual(retry.metadata["host"], "127.0.0.1:\(server.port)")
        XCTAssert(retry.metadata["reason"]?.contains("status 503") == true, "\(retry)")
        let failed = try XCTUnwrap(lines.first { $0.message == "request failed" }, "\(lines)")
        XCTAssertEqual(failed.level, .info)
        XCTAssertEqual(failed.metadata["attempts"], "2")
        XCTAssertEqual(failed.metadata["status"], "503")
        XCTAssertEqual(failed.metadata["url"], server.url("/status/503").absoluteString + "?token=%5Bredacted%5D")
        XCTAssertFalse(lines.contains { $0.metadata["op"] == "fine" }, "a success is not logged: \(lines)")
        XCTAssertFalse(lines.contains { "\($0)".contains("s3cret") }, "no secret in any line")
    }

    func testWithoutALoggerNothingIsSubscribed() {
        let queue = RequestQueue(logger: nil)
        XCTAssertEqual(queue.events.subscriberCount, 0)
        let logged = RequestQueue(logger: CapturedLog().logger(level: .info))
        XCTAssertEqual(logged.events.subscriberCount, 1)
    }
}
