import Foundation
@testable import RequestEndpoint
import RequestOperations
import Synchronization
import XCTest

/// Collects what a client reads, on its own thread.
final class ClientReader: Sendable {
    let client: EndpointClient
    private let messages = Mutex<[EndpointClient.Message]>([])
    private let ended = Mutex(false)

    init(_ client: EndpointClient) {
        self.client = client
        let thread = Thread { [self] in
            client.run { message in messages.withLock { $0.append(message) } }
            ended.withLock { $0 = true }
        }
        thread.start()
    }

    var all: [EndpointClient.Message] { messages.withLock { $0 } }
    var hasEnded: Bool { ended.withLock { $0 } }

    var events: [RequestEvent] {
        all.compactMap { if case .event(let event) = $0 { return event } else { return nil } }
    }

    func finished(_ id: String) -> RequestEvent? {
        events.first { $0.operationID == id && $0.payload.name == "finished" }
    }
}

extension XCTestCase {
    func waitFor(_ what: String, _ condition: () -> Bool) {
        waitFor(5, what, condition)
    }

    func waitFor(_ timeout: TimeInterval, _ what: String, _ condition: () -> Bool) {
        let end = Date().addingTimeInterval(timeout)
        while Date() < end {
            if condition() { return }
            usleep(5_000)
        }
        XCTAssertTrue(condition(), "timed out waiting for \(what)")
    }
}

/// An endpoint test: its own socket folder, removed after; endpoints started here are
/// stopped after the test, and what they say on their own is kept in `notices`.
class EndpointTestCase: XCTestCase {
    var directory = ""
    let notices = Notices()

    override func setUp() {
        directory = NSTemporaryDirectory() + "reqtop-endpoint-test-\(UUID().uuidString.prefix(8))"
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: directory)
    }

    func start(_ queue: RequestQueue, readOnly: Bool = false, acceptsFaults: Bool = false, bufferLimit: Int = 1 << 20) throws -> MonitorEndpoint {
        var options = MonitorEndpoint.Options(readOnly: readOnly, acceptsFaults: acceptsFaults, directory: directory, name: "endpoint-test",
                                              bufferLimit: bufferLimit)
        let notices = self.notices
        options.notice = { text in notices.add(text) }
        let endpoint = try queue.startMonitorEndpoint(options: options)
        addTeardownBlock { endpoint.stop() }
        return endpoint
    }
}

/// What an endpoint said on its own.
final class Notices: Sendable {
    private let lines = Mutex<[String]>([])
    func add(_ line: String) { lines.withLock { $0.append(line) } }
    var all: [String] { lines.withLock { $0 } }
}
