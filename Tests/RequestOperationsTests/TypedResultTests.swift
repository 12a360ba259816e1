import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import RequestOperations
import Synchronization
import XCTest

final class TypedResultTests: XCTestCase {
    struct Token: Decodable, Sendable { var token: String }
    struct Resource: Decodable, Sendable { var resource: String; var user: String; var id: Int }

    private func login(_ server: FaultServer, password: String = "secret") -> URLRequest {
        var request = URLRequest(url: server.url("/auth/token"))
        request.httpMethod = "POST"
        request.httpBody = Data("{\"username\":\"ann\",\"password\":\"\(password)\"}".utf8)
        return request
    }

    func testABodyDecodesIntoATypedValue() throws {
        let server = try startServer()
        let queue = makeQueue(earlyRetry: nil)
        let operation = queue.add(login(server), decoding: Token.self)
        queue.waitUntilAllOperationsAreFinished()
        XCTAssertEqual(try operation.typedResult?.get().token, "tok-1")
    }

    /// A validator of one's own and a parser are handed FoundationNetworking's response on
    /// every transport (the NIO one makes it only for them).
    func testACustomValidatorAndAParserAreHandedTheResponse() throws {
        struct Seen: Sendable, Equatable { var status: Int; var retryAfter: String?; var url: URL? }
        final class Seeing: Sendable {
            let validated = Mutex<[Seen]>([]), parsed = Mutex<[Seen]>([])
        }
        struct Validator: ResponseValidator {
            let seeing: Seeing
            func validate(_ response: HTTPURLResponse) -> AttemptFailure? {
                seeing.validated.withLock { $0.append(Seen(status: response.statusCode, retryAfter: response.value(forHTTPHeaderField: "retry-after"), url: response.url)) }
                return nil
            }
        }
        struct Parser: ResultParser {
            let seeing: Seeing
            func parse(_ data: Data, response: HTTPURLResponse?) throws -> Int {
                seeing.parsed.withLock { $0.append(Seen(status: response?.statusCode ?? 0, retryAfter: response?.value(forHTTPHeaderField: "Retry-After"), url: response?.url)) }
                return data.count
            }
        }
        let server = try startServer()
        let queue = makeQueue(earlyRetry: nil)
        let seeing = Seeing()
        let url = server.url("/status/503?retry-after=7")
        let operation = TypedRequestOperation(request: URLRequest(url: url), parser: Parser(seeing: seeing),
                                              options: RequestOptions(retryPolicy: .never, validator: Validator(seeing: seeing)),
                                              environment: queue.environment)
        queue.add(operation)
        queue.waitUntilAllOperationsAreFinished()
        XCTAssertEqual(operation.result?.outcome, .success, "the validator accepted the 503")
        let expected = Seen(status: 503, retryAfter: "7", url: url)
        XCTAssertEqual(seeing.validated.withLock { $0 }, [expected])
        XCTAssertEqual(seeing.parsed.withLock { $0 }, [expected])
        XCTAssertEqual(operation.result?.headers["Retry-After"], "7")
    }

    func testABodyThatDoesNotFitFailsAtTheDecodingStage() throws {
        let server = try startServer()
        let queue = makeQueue(earlyRetry: nil)
        let operation = queue.add(URLRequest(url: server.url("/echo")), decoding: Token.self)
        queue.waitUntilAllOperationsAreFinished()
        guard case .failure(let error)? = operation.typedResult else { return XCTFail("expected a failure") }
        XCTAssertEqual(error.stage, .decoding)
        XCTAssertEqual(error.reason, .decoding("the body: missing field \"token\""))
        XCTAssertEqual(error.result.status, 200, "the error carries the whole result")
        XCTAssertEqual(operation.result?.attempts.count, 1, "a decoding failure is not retried")
    }

    func testEveryStageNamesItself() throws {
        let server = try startServer()
        let queue = makeQueue(earlyRetry: nil)
        let status = queue.add(URLRequest(url: server.url("/status/404")), decoding: Token.self)
        let exhausted = queue.add(URLRequest(url: server.url("/status/503")), decoding: Token.self,
                                  options: RequestOptions(retryPolicy: quickPolicy(maxAttempts: 2)))
        let transport = queue.add(URLRequest(url: URL(string: "http://127.0.0.1:1/")!), decoding: Token.self,
                                  options: RequestOptions(retryPolicy: ExponentialBackoffRetryPolicy.never))
        queue.waitUntilAllOperationsAreFinished()
        XCTAssertEqual(status.result?.error?.stage, .status)
        XCTAssertEqual(exhausted.result?.error?.stage, .retriesExhausted)
        XCTAssertEqual(transport.result?.error?.stage, .transport)
    }

    func testADependentOperationBuildsItsRequestFromItsParentsTypedResult() throws {
        let server = try startServer()
        let queue = makeQueue(earlyRetry: nil)
        let token = queue.add(login(server), decoding: Token.self, id: "login")
        let profile = queue.add(URLRequest(url: server.url("/auth/resource/profile")), decoding: Resource.self, id: "profile",
                                after: [token]) { request, parents in
            var request = request
            request.setValue("Bearer \(try parents.value(of: token).token)", forHTTPHeaderField: "Authorization")
            return request
        }
        let items = queue.add(URLRequest(url: server.url("/echo")), id: "items", after: [profile]) { request, parents in
            var request = request
            request.url = server.url("/echo?user=\(try parents.value(of: profile).id)")
            return request
        }
        queue.waitUntilAllOperationsAreFinished()
        XCTAssertEqual(try profile.typedResult?.get().user, "ann")
        XCTAssertEqual(items.result?.outcome, .success)
        let echo = try JSONSerialization.jsonObject(with: items.result!.data) as? [String: Any]
        XCTAssertEqual((echo?["query"] as? [String: String])?["user"], "42")
    }

    func testAFailedParentCancelsItsDependentsWithReasonDependency() throws {
        let counters = FaultCounters()
        let server = try startServer(counters: counters)
        let queue = makeQueue(earlyRetry: nil)
        let recorder = EventRecorder(queue.events)
        let token = queue.add(login(server, password: "wrong"), decoding: Token.self, id: "login")
        let built = Mutex(false)
        let child = queue.add(URLRequest(url: server.url("/echo")), id: "child", after: [token]) { request, _ in
            built.withLock { $0 = true }
            return request
        }
        let grandchild = queue.add(URLRequest(url: server.url("/echo")), id: "grandchild", after: [child])
        queue.waitUntilAllOperationsAreFinished()
        XCTAssertEqual(token.result?.error, .status(403))
        XCTAssertEqual(child.result?.outcome, .cancelled)
        XCTAssertEqual(child.result?.error, .cancelled(by: "dependency"))
        XCTAssertEqual(grandchild.result?.error, .cancelled(by: "dependency"))
        XCTAssertFalse(built.withLock { $0 }, "the builder never runs with nothing")
        XCTAssertEqual(counters.hits("/echo"), 0)
        XCTAssertEqual(recorder.events(of: "child").last?.payload,
                       .finished(outcome: .cancelled, status: nil, attempts: 0, duration: child.result!.duration, reason: "parent login failed"))
    }

    func testACancelledParentCancelsItsDependents() throws {
        let server = try startServer()
        let queue = makeQueue(earlyRetry: nil)
        let parent = queue.add(URLRequest(url: server.url("/hang")), id: "parent")
        let child = queue.add(URLRequest(url: server.url("/echo")), id: "child", after: [parent])
        waitFor(5, "the parent to be in flight") { parent.phase == .inFlight }
        parent.cancel()
        queue.waitUntilAllOperationsAreFinished()
        XCTAssertEqual(child.result?.error, .cancelled(by: "dependency"))
    }

    func testABuilderThatThrowsFailsTheOperation() throws {
        let server = try startServer()
        let queue = makeQueue(earlyRetry: nil)
        let parent = queue.add(URLRequest(url: server.url("/echo")), decoding: Token.self)
        let child = queue.add(URLRequest(url: server.url("/echo")), after: [parent]) { request, parents in
            _ = try parents.value(of: parent)
            return request
        }
        queue.waitUntilAllOperationsAreFinished()
        XCTAssertEqual(parent.result?.error?.stage, .decoding)
        XCTAssertEqual(child.result?.error, .cancelled(by: "dependency"))
    }
}
