import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import RequestOperations
import Testing

/// Answers whose `Content-Length` does not frame their body, from a raw server (a few lines
/// of Python writing bytes as given), on each transport. Before: on URLSession two
/// conflicting lengths, and a length of 10^23 with a 5-byte body, ended as a success.
@Suite("Broken framing on each transport", .serialized)
struct ResponseFramingTests {
    /// A server on a free loopback port that answers each path with its raw bytes and closes.
    final class RawServer {
        let port: Int
        private let process: Process

        init(_ answers: [String: String]) throws {
            let table = answers.map { "\(String(reflecting: $0.key)): \(String(reflecting: $0.value))" }.joined(separator: ", ")
            let script = """
            import socket, sys
            answers = {\(table)}
            s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", 0)); s.listen(16)
            print(s.getsockname()[1], flush=True)
            while True:
                c, _ = s.accept()
                head = b""
                while b"\\r\\n\\r\\n" not in head:
                    part = c.recv(65536)
                    if not part: break
                    head += part
                path = head.split(b" ")[1].decode() if head.count(b" ") > 1 else "/"
                c.sendall(answers.get(path, "HTTP/1.1 404 Not Found\\r\\nContent-Length: 0\\r\\n\\r\\n").encode("latin-1"))
                c.shutdown(socket.SHUT_RDWR); c.close()
            """
            process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["python3", "-c", script]
            let out = Pipe()
            process.standardOutput = out
            try process.run()
            var line = Data()
            while !line.contains(UInt8(ascii: "\n")) {
                let byte = out.fileHandleForReading.readData(ofLength: 1)
                if byte.isEmpty { break }
                line += byte
            }
            port = Int(String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        }

        func url(_ path: String) -> URL { URL(string: "http://127.0.0.1:\(port)\(path)")! }

        /// SIGKILL: a child started from a thread with SIGTERM blocked inherits the mask.
        func stop() {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    @Test(arguments: TransportKind.allCases)
    func aBodyItsLengthDoesNotFrameFailsByName(_ kind: TransportKind) async throws {
        let server = try RawServer([
            "/conflict": "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 10\r\n\r\nhello",
            "/huge": "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\nhello",
            "/short": "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello",
            "/same": "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello",
            "/fine": "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
        ])
        defer { server.stop() }
        #expect(server.port > 0)
        let queue = RequestQueue(maxConcurrentRequests: 2, transport: kind.make(), earlyRetry: nil)
        let options = RequestOptions(retryPolicy: .never)
        for path in ["/conflict", "/huge", "/short"] {
            do {
                let result = try await queue.response(for: URLRequest(url: server.url(path)), id: path, options: options)
                Issue.record("\(kind) \(path): a body its length does not frame must fail, got \(result.status ?? -1) \(result.data.count) bytes")
            } catch let error as RequestError {
                #expect(error.result.attempts.last?.failure != nil, "\(kind) \(path): \(error)")
            }
        }
        // A repeated equal length: RFC 9110 §8.6 lets a client take it as one (the engine
        // does; libcurl does) or refuse it (SwiftNIO's parser does). Either, never a wrong body.
        if let same = try? await queue.response(for: URLRequest(url: server.url("/same")), id: "same", options: options) {
            #expect(same.data == Data("hello".utf8))
        }
        let fine = try await queue.response(for: URLRequest(url: server.url("/fine")), id: "fine", options: options)
        #expect(fine.data == Data("hello".utf8))
    }

    /// Before: URLSession named an answer that is no HTTP/1.x answer -1002 "unsupported URL",
    /// as if the request were at fault. Now -1011, as NIO names it.
    @Test(arguments: TransportKind.allCases)
    func anAnswerThatIsNotHTTPIsABadServerResponse(_ kind: TransportKind) async throws {
        let server = try RawServer([
            "/zero": "HTTP/1.1 000 Nothing\r\nContent-Length: 0\r\n\r\n",
            "/nine": "hello there, no status line at all\n",
        ])
        defer { server.stop() }
        let queue = RequestQueue(maxConcurrentRequests: 2, transport: kind.make(), earlyRetry: nil)
        for path in ["/zero", "/nine"] {
            do {
                _ = try await queue.response(for: URLRequest(url: server.url(path)), id: path, options: RequestOptions(retryPolicy: .never))
                Issue.record("\(kind) \(path): no HTTP answer is no success")
            } catch let error as RequestError {
                #expect(error.result.attempts.last?.failure == .transport(.badServerResponse), "\(kind) \(path): \(error)")
            }
        }
    }

    @Test func theLengthIsCheckedAsRFC9112Says() {
        #expect(ResponseFraming.lengthProblem(["Content-Length": "5, 10"]) == "conflicting Content-Length headers (5, 10)")
        #expect(ResponseFraming.lengthProblem(["Content-Length": "5, 5"]) == nil)
        #expect(ResponseFraming.declaredLength(["Content-Length": "5, 5"]) == .length(5))
        #expect(ResponseFraming.declaredLength([:]) == .absent)
        #expect(ResponseFraming.mismatch(headers: ["Content-Length": "5, 5"], status: 200, method: "GET", received: 3)?.contains("after 3 of the 5 bytes") == true)
        #expect(ResponseFraming.lengthProblem(["content-length": "99999999999999999999999"])?.contains("is not a length") == true)
        #expect(ResponseFraming.lengthProblem(["Content-Length": "-1"])?.contains("is not a length") == true)
        #expect(ResponseFraming.mismatch(headers: ["Content-Length": "10"], status: 200, method: "GET", received: 5)
                == "the answer ended after 5 of the 10 bytes its Content-Length promised")
        #expect(ResponseFraming.mismatch(headers: ["Content-Length": "10"], status: 200, method: "HEAD", received: 0) == nil)
        #expect(ResponseFraming.mismatch(headers: ["Content-Length": "10"], status: 304, method: "GET", received: 0) == nil)
        #expect(ResponseFraming.mismatch(headers: ["Content-Length": "10", "Content-Encoding": "gzip"], status: 200, method: "GET", received: 99) == nil)
        // The quick path (only digits) and the slow one (spaces, repeats) agree.
        #expect(ResponseFraming.lengthProblem(["Content-Length": "999999999999999999"]) == nil)
        #expect(ResponseFraming.lengthProblem(["Content-Length": "9999999999999999999"])?.contains("is not a length") == true)
        #expect(ResponseFraming.lengthProblem(["Content-Length": ""]) != nil)
        #expect(ResponseFraming.mismatch(headers: ["CONTENT-LENGTH": " 7 , 7"], status: 200, method: "GET", received: 5)
                == "the answer ended after 5 of the 7 bytes its Content-Length promised")
        #expect(ResponseFraming.mismatch(headers: ["content-length": "0012"], status: 200, method: "GET", received: 12) == nil)
    }

    /// Field names are found whatever their case, ASCII letters only folded (RFC 9110 §5.1).
    @Test func headerNamesAreFoundWhateverTheirCase() {
        let headers = ["Content-Type": "text/plain", "x-Trace-ID": "abc", "Retry-After": "3"]
        #expect(headers.value(forHTTPHeader: "content-type") == "text/plain")
        #expect(headers.value(forHTTPHeader: "X-TRACE-ID") == "abc")
        #expect(headers.value(forHTTPHeader: "Retry-After") == "3")
        #expect(headers.value(forHTTPHeader: "Retry-Afte") == nil)
        #expect(headers.value(forHTTPHeader: "Retry-After-") == nil)
        #expect(headers.value(forHTTPHeader: "Content_Type") == nil, "only letters fold: _ is not -")
    }

    /// A body's coding is what `Content-Encoding` names, unless it names none (`identity`, in
    /// any case, or nothing): the length check and the decoded-size limit rely on it.
    @Test func theContentCodingIsNamedOrNone() {
        #expect([String: String]().contentCoding == nil)
        #expect(["Content-Encoding": ""].contentCoding == nil)
        #expect(["content-encoding": "IDENTITY"].contentCoding == nil)
        #expect(["Content-Encoding": "Identity"].contentCoding == nil)
        #expect(["CONTENT-ENCODING": "gzip"].contentCoding == "gzip")
        #expect(["Content-Encoding": "identityx"].contentCoding == "identityx", "a longer name is another coding")
        #expect(ResponseFraming.mismatch(headers: ["Content-Length": "10", "Content-Encoding": "gzip"], status: 200, method: "GET", received: 40) == nil,
                "a coded body's length is the coded one")
        #expect(ResponseFraming.mismatch(headers: ["Content-Length": "10", "Content-Encoding": "identity"], status: 200, method: "GET", received: 4) != nil)
    }
}
