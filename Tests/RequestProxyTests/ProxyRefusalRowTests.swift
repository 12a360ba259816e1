import FaultServer
import Foundation
import RequestEventFormat
import RequestOperations
@testable import RequestProxy
import XCTest

/// A request the proxy answers itself and never sends on is a row of its own, so the person
/// whose client failed through the proxy sees why in the monitor, a recording and HAR: the
/// request as the client sent it, the proxy's answer, and `refused by the proxy: …`.
final class ProxyRefusalRowTests: XCTestCase {
    /// The kinds of a refused request's row, in order: an answer that came whole, and failed.
    private static let rowKinds: [EventKind] = [.queued, .started, .taskCreated, .headerFields, .response, .data, .responseBody, .taskCompleted, .finished]

    func testARequestTheProxyRefusesIsARowWithItsAnswerAndWhy() throws {
        let upstream = try startFaultServer()
        var options = ProxyOptions()
        options.credentials = ProxyCredentials("alice:s3cret")
        let proxy = try startProxy(options)
        let target = upstream.baseURL.absoluteString
        XCTAssertTrue(try run(curl, ["-s", "-i", "-x", proxy.url, target + "/status/200?without"]).stdout.hasPrefix("HTTP/1.1 407"))
        XCTAssertTrue(try run(curl, ["-s", "-i", "-x", proxy.url, "-U", "alice:guessedpw", target + "/status/200?wrong"]).stdout.hasPrefix("HTTP/1.1 407"))
        XCTAssertTrue(try run(curl, ["-s", "-i", "-x", proxy.url, "-U", "alice:s3cret", proxy.url + "/itself"]).stdout.hasPrefix("HTTP/1.1 508"))
        let credentials = "Proxy-Authorization: Basic " + Data("alice:s3cret".utf8).base64EncodedString() + "\r\n"
        let twoHosts = rawExchange(port: proxy.server.port, Array(("GET \(target)/status/200?hosts HTTP/1.1\r\nHost: a.example\r\n" + credentials
                                                                   + "host: b.example\r\n\r\n").utf8))
        XCTAssertTrue(twoHosts.hasPrefix("HTTP/1.1 400 "), twoHosts)
        XCTAssertEqual(try run(curl, ["-s", "-x", proxy.url, "-U", "alice:s3cret", target + "/status/200?served"]).stdout, "status 200\n")
        proxy.queue.waitUntilAllOperationsAreFinished()

        let rows = try refusedRows(proxy, count: 4)
        XCTAssertEqual(rows.map(\.url), [target + "/status/200?without", target + "/status/200?wrong", proxy.url + "/itself", target + "/status/200?hosts"])
        XCTAssertEqual(rows.map(\.status), [407, 407, 508, 400])
        XCTAssertEqual(rows.map(\.reason), ["refused by the proxy: proxy credentials required", "refused by the proxy: proxy credentials required",
                                            "refused by the proxy: the request is aimed at this proxy itself",
                                            "refused by the proxy: more than one Host field"])
        for row in rows {
            XCTAssertEqual(row.events.compactMap(\.payload.kind), Self.rowKinds, row.url)
            // Marked in the format (`refusedByProxy`), read back as written: whatif and replay leave it out.
            let line = EventLog.line(for: row.events[0])
            XCTAssertTrue(line.contains("\"refusedByProxy\":true"), line)
            guard case .queued(_, _, _, _, _, let options)? = try EventLog.parse(line: line, lineNumber: 1)?.payload else { return XCTFail(line) }
            XCTAssertEqual(options?.refusedByProxy, true, line)
            XCTAssertEqual(row.method, "GET")
            // Its answer as the client had it: the words in the body and in Proxy-Status.
            let body = row.events.compactMap { event -> String? in
                if case .responseBody(.bytes(let data), _, _, _) = event.payload { String(decoding: data, as: UTF8.self) } else { nil }
            }
            XCTAssertEqual(body, ["reqtop proxy: " + row.reason.dropFirst("refused by the proxy: ".count) + "\n"], row.url)
        }
        // Who was refused: curl, by its process, as every row of a program says.
        XCTAssertTrue(rows[0].origin?.hasPrefix("curl ") == true, "\(String(describing: rows[0].origin))")
        XCTAssertEqual(rows[0].responseHeaders["Proxy-Authenticate"], "Basic realm=\"reqtop\"")
        // Its headers as sent: a 407 keeps the connection for the credentials, a loop closes it.
        XCTAssertNil(rows[0].responseHeaders["Connection"])
        XCTAssertEqual(rows[2].responseHeaders["Connection"], "close")
        XCTAssertEqual(rows[2].responseHeaders["Proxy-Status"], "reqtop; error=proxy_loop_detected; details=\"the request is aimed at this proxy itself\"")
        // The request as it was said: both Host fields, the second spelled as it came.
        let hostLines = fieldLines(of: rows[3]).filter { $0.lowercased().hasPrefix("host:") }
        XCTAssertEqual(hostLines, ["Host: a.example", "host: b.example"])
        // The wrong credentials the client sent are a secret like any other: redacted on the way out.
        let wrongValue = "Basic " + Data("alice:guessedpw".utf8).base64EncodedString()
        XCTAssertTrue(rows[1].events.contains { EventLog.line(for: $0).contains(wrongValue) }, "the row holds what the client sent")
        let redactor = StreamRedactor()
        let written = rows[1].events.map { EventLog.line(for: redactor.redact($0)) }.joined(separator: "\n")
        XCTAssertFalse(written.contains(wrongValue), written)
        XCTAssertFalse(written.contains(Data("alice:guessedpw".utf8).base64EncodedString()), written)
        XCTAssertTrue(written.contains("Proxy-Authorization: [redacted]"), written)
        // The served request is an operation, as before, and ends well.
        let served = proxy.events.events.filter { event in
            if case .queued(_, let url, _, _, _, _) = event.payload { url.hasSuffix("?served") } else { false }
        }
        XCTAssertEqual(served.count, 1)
        if case .queued(_, _, _, _, _, let options)? = served.first?.payload { XCTAssertEqual(options?.refusedByProxy, false) }
    }

    /// A request NIO's parser could not read has no method or target to show: its row has none,
    /// and says what was wrong. A body that breaks off is its own request's failure, not a row more.
    func testARequestTheProxyCouldNotReadIsARowSayingWhatWasWrong() throws {
        let upstream = try startFaultServer()
        let proxy = try startProxy()
        let target = upstream.baseURL.absoluteString
        let unread = rawExchange(port: proxy.server.port, Array("GET \(target)/status/200 HTTP/1.1\r\nHost: x\r\nBad Name: y\r\n\r\n".utf8))
        XCTAssertTrue(unread.hasPrefix("HTTP/1.1 400 "), unread)
        let broken = rawExchange(port: proxy.server.port,
                                 Array("POST \(target)/echo?chunks HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nZZZ\r\nabc\r\n".utf8))
        XCTAssertTrue(broken.hasPrefix("HTTP/1.1 400 "), broken)
        proxy.queue.waitUntilAllOperationsAreFinished()

        let rows = try refusedRows(proxy, count: 1)
        XCTAssertEqual(rows.count, 1)
        let row = try XCTUnwrap(rows.first)
        XCTAssertEqual(row.method, "")
        XCTAssertEqual(row.url, "")
        XCTAssertEqual(row.status, 400)
        XCTAssertEqual(row.reason, "refused by the proxy: the request could not be read: its head has a character HTTP does not allow there")
        XCTAssertEqual(row.events.compactMap(\.payload.kind), Self.rowKinds.filter { $0 != .headerFields })
        // The broken upload was an operation of its own (its head was whole), not refused.
        XCTAssertFalse(proxy.events.events.contains { event in
            if case .finished(_, _, _, _, let reason?) = event.payload, event.operationID != row.id { reason.hasPrefix("refused by the proxy") } else { false }
        })
    }

    // MARK: - Reading the rows

    private struct RefusedRow {
        let id: String
        let method: String
        let url: String
        let origin: String?
        let status: Int?
        let reason: String
        let responseHeaders: [String: String]
        let events: [RequestEvent]
    }

    /// The rows whose `finished` says the proxy refused them, in the order they were queued;
    /// waits (up to 10 s) for `count` of them.
    private func refusedRows(_ proxy: ProxyUnderTest, count: Int) throws -> [RefusedRow] {
        let deadline = Date().addingTimeInterval(10)
        while true {
            proxy.queue.events.waitUntilDelivered()
            let events = proxy.events.events
            let refused = events.compactMap { event -> String? in
                if case .finished(_, _, _, _, let reason?) = event.payload, reason.hasPrefix("refused by the proxy: ") { event.operationID } else { nil }
            }
            if refused.count >= count || Date() > deadline {
                let queuedOrder = events.filter { if case .queued = $0.payload { true } else { false } }.map(\.operationID)
                return try queuedOrder.filter(refused.contains).map { id in try row(id, events.filter { $0.operationID == id }) }
            }
            usleep(20_000)
        }
    }

    private func row(_ id: String, _ events: [RequestEvent]) throws -> RefusedRow {
        guard case .queued(let method, let url, _, _, _, let options)? = events.first?.payload else { throw XCTSkip("no queued event for \(id)") }
        var status: Int?, reason = "", headers: [String: String] = [:]
        for event in events {
            switch event.payload {
            case .response(_, let fields, _, _): headers = fields
            case .finished(_, let code, _, _, let why): (status, reason) = (code, why ?? "")
            default: break
            }
        }
        return RefusedRow(id: id, method: method, url: url, origin: options?.origin, status: status, reason: reason, responseHeaders: headers, events: events)
    }

    private func fieldLines(of row: RefusedRow) -> [String] {
        row.events.flatMap { event -> [String] in
            if case .headerFields(.request, let fields) = event.payload { fields.map { "\($0.name.rawName): \($0.value)" } } else { [] }
        }
    }
}
