import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPTypes
import RequestOperations
import Testing

/// A request as the engine carries it: its fields in their order, each repeat apart, names as
/// written; `URLRequest` an adapter at the edge whose changes keep that order.
struct RequestMessageTests {
    private let written = FieldMerge.fields([("X-Zeta", "1"), ("X-Alpha", "2"), ("X-Dup", "a"), ("X-MiXeD-Case", "3"), ("X-Dup", "b"),
                                             ("Cookie", "a=1"), ("Cookie", "b=2")])

    private func lines(_ fields: HTTPFields) -> [String] {
        fields.map { "\($0.name.rawName): \($0.value)" }
    }

    @Test func oneValuePerNameSpeltAsFirstWrittenCookiesJoinedBySemicolons() {
        let joined = FieldMerge.joinedByName(written).map { "\($0.name): \($0.value)" }
        #expect(joined == ["X-Zeta: 1", "X-Alpha: 2", "X-Dup: a, b", "X-MiXeD-Case: 3", "Cookie: a=1; b=2"])
    }

    @Test func unchangedHeadersStayAsTheFieldsWere() {
        let current = FieldMerge.joinedByName(written).map { ($0.name.lowercased(), $0.value) }
        #expect(lines(FieldMerge.merged(written, with: current)) == lines(written))
    }

    @Test func aChangedNameGoesOnceWhereItStoodARemovedOneGoesAnAddedOneLast() {
        let current = [("x-zeta", "1"), ("X-Dup", "edited"), ("X-MiXeD-Case", "3"), ("Cookie", "a=1; b=2"), ("Authorization", "Bearer t")]
        #expect(lines(FieldMerge.merged(written, with: current))
                == ["X-Zeta: 1", "X-Dup: edited", "X-MiXeD-Case: 3", "Cookie: a=1", "Cookie: b=2", "Authorization: Bearer t"])
    }

    @Test func aNameThatIsNoFieldNameIsLeftOut() {
        #expect(FieldMerge.fields([("Bad Name", "x"), ("Good", "y")]).count == 1)
    }

    /// What code at the edge (an interceptor) does to the `URLRequest` it is shown comes back
    /// into the fields without disturbing the rest; a stream body it cannot see stays.
    @Test func anEditAtTheEdgeKeepsTheOrderAndTheBody() {
        var message = RequestMessage(method: "POST", url: URL(string: "http://h.test/a")!, headerFields: written,
                                     body: .stream(BodyStream(InputStream(data: Data("body".utf8)))))
        var edited = message.foundationHead
        #expect(edited.httpBodyStream == nil, "a stream is read once, by the transport")
        edited.setValue("edited", forHTTPHeaderField: "x-alpha")
        edited.setValue(nil, forHTTPHeaderField: "X-Zeta")
        edited.url = URL(string: "http://h.test/b")
        message = message.updated(by: edited)
        #expect(lines(message.headerFields) == ["X-Alpha: edited", "X-Dup: a", "X-MiXeD-Case: 3", "X-Dup: b", "Cookie: a=1", "Cookie: b=2"])
        #expect(message.url.path == "/b")
        #expect(message.body.stream != nil)
        #expect(message.body.stream?.take() != nil)
        #expect(message.body.stream?.take() == nil, "taken once")
    }

    /// A `Host` naming the URL (as a proxied request carries its client's) follows an edit of
    /// the URL where it stood, whether the edit kept it or left it out (a copy leaves it to the
    /// URL); one naming another host (a virtual host on an address), or changed by the edit, stays.
    @Test func aHostNamingTheURLFollowsItsEditWhereItStood() {
        let fields = FieldMerge.fields([("X-First", "1"), ("hOsT", "Shop.example"), ("Accept", "*/*")])
        let message = RequestMessage(url: URL(string: "http://shop.example/cart")!, headerFields: fields)
        var moved = message.foundationHead
        moved.url = URL(string: "http://staging.example:8080/cart")
        #expect(lines(message.updated(by: moved).headerFields) == ["X-First: 1", "hOsT: staging.example:8080", "Accept: */*"])
        moved.setValue(nil, forHTTPHeaderField: "Host")
        #expect(lines(message.updated(by: moved).headerFields) == ["X-First: 1", "hOsT: staging.example:8080", "Accept: */*"])
        var samePlace = message.foundationHead
        samePlace.url = URL(string: "http://shop.example/checkout")
        #expect(lines(message.updated(by: samePlace).headerFields) == lines(fields), "the client's spelling kept")
        var chosen = message.foundationHead
        chosen.url = URL(string: "http://10.0.0.7/cart")
        chosen.setValue("shop.example", forHTTPHeaderField: "Host")
        #expect(message.updated(by: chosen).value(forField: "Host") == "shop.example")
        let virtual = RequestMessage(url: URL(string: "http://10.0.0.7/")!, headerFields: FieldMerge.fields([("Host", "shop.example")]))
        var elsewhere = virtual.foundationHead
        elsewhere.url = URL(string: "http://10.0.0.8/")
        #expect(virtual.updated(by: elsewhere).value(forField: "Host") == "shop.example")
    }

    @Test func settingAValueReplacesEveryFieldOfTheNameWhereTheFirstStood() {
        var message = RequestMessage(url: URL(string: "http://h.test/")!, headerFields: written)
        message.setValue("c", forField: "x-dup")
        #expect(lines(message.headerFields) == ["X-Zeta: 1", "X-Alpha: 2", "X-Dup: c", "X-MiXeD-Case: 3", "Cookie: a=1", "Cookie: b=2"])
        #expect(message.value(forField: "cookie") == "a=1; b=2")
        message.setValue(nil, forField: "Cookie")
        message.setValue("1", forField: "X-New")
        #expect(lines(message.headerFields) == ["X-Zeta: 1", "X-Alpha: 2", "X-Dup: c", "X-MiXeD-Case: 3", "X-New: 1"])
    }

    /// A `URLRequest` header that cannot be a field is refused by name, never dropped or
    /// changed without a word (FoundationNetworking dropped a CR LF one; HTTPTypes would
    /// turn the CR LF into spaces).
    @Test func aHeaderThatCannotBeAFieldIsNamed() {
        var request = URLRequest(url: URL(string: "http://h.test/")!)
        request.allHTTPHeaderFields = ["Authorization": "Bearer t\r\nX-Evil: 1"]
        #expect(HTTPFieldCheck.problem(in: RequestMessage(request))?.contains("header Authorization") == true)
        var named = URLRequest(url: URL(string: "http://h.test/")!)
        named.setValue("x", forHTTPHeaderField: "Bad Name")
        #expect(HTTPFieldCheck.problem(in: RequestMessage(named))?.contains("\"Bad Name\"") == true)
        #expect(HTTPFieldCheck.problem(in: RequestMessage(method: "GE T", url: URL(string: "http://h.test/")!))?.contains("method") == true)
    }

    /// A library request given as a message reaches the server as written on a transport that
    /// writes its own heads (NIO's); URLSession's sends one value per name, none lost.
    @Test(arguments: TransportKind.allCases)
    func aMessagesFieldsReachTheServerAsWritten(_ kind: TransportKind) async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let queue = RequestQueue(maxConcurrentRequests: 2, transport: kind.make(), earlyRetry: nil)
        let fields = FieldMerge.fields([("X-Zeta", "1"), ("X-Alpha", "2"), ("X-Dup", "a"), ("X-MiXeD-Case", "3"), ("X-Dup", "b")])
        let result = try await queue.response(for: RequestMessage(url: server.url("/echo?fields=1"), headerFields: fields))
        let echoed = try #require(try JSONSerialization.jsonObject(with: result.data) as? [String: Any])
        let sent = (echoed["fields"] as? [[String]] ?? []).filter { $0[0].lowercased().hasPrefix("x-") }.map { "\($0[0]): \($0[1])" }
        switch kind {
        case .nio:
            #expect(sent == ["X-Zeta: 1", "X-Alpha: 2", "X-Dup: a", "X-MiXeD-Case: 3", "X-Dup: b"])
        case .urlsession:
            #expect(Set(sent.map { $0.lowercased() }) == ["x-zeta: 1", "x-alpha: 2", "x-dup: a, b", "x-mixed-case: 3"])
        }
    }

    /// A body given as a stream is read once: a retry after the attempt that sent it fails by
    /// name, never goes out with an empty body in its place.
    @Test(arguments: TransportKind.allCases)
    func aStreamSentOnceIsNotSentEmptyOnARetry(_ kind: TransportKind) async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let queue = RequestQueue(maxConcurrentRequests: 2, transport: kind.make(), earlyRetry: nil)
        let message = RequestMessage(method: "PUT", url: server.url("/status/503"),
                                     body: .stream(BodyStream(InputStream(data: Data("once".utf8)))))
        let options = RequestOptions(retryPolicy: ExponentialBackoffRetryPolicy(maxAttempts: 2, baseDelay: 0.01, jitter: .none))
        let operation = queue.add(message, options: options)
        let result = await operation.finished
        #expect(result.attempts.count == 2)
        guard case .status(503, _)? = result.attempts.first?.failure else { Issue.record("\(String(describing: result.attempts.first?.failure))"); return }
        #expect(result.attempts.last?.failure == .preparation("not sent: the request's body is a stream that was sent already"))
        #expect(server.counters.hits("/status/503") == 1)
    }
}
