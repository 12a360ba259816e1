import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import RequestOperations
import Synchronization
import XCTest

/// A ``TransportResponse`` files header names as FoundationNetworking's `HTTPURLResponse` does,
/// so events and results read the same on both transports. FoundationNetworking is the reference.
final class TransportResponseTests: XCTestCase {
    private let url = URL(string: "http://127.0.0.1/x")!

    private func foundationNames(_ name: String) -> [String] {
        HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: [name: "v"])!.headerDictionary.keys.sorted()
    }

    private func ourNames(_ name: String) -> [String] {
        TransportResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", fields: [(name, "v")]).headers.keys.sorted()
    }

    func testRealHeaderNamesAreFiledAsHTTPURLResponseFilesThem() {
        let names = ["content-type", "Content-Type", "CONTENT-LENGTH", "etag", "ETag", "www-authenticate", "WWW-AUTHENTICATE",
                     "Www-Authenticate", "x-custom", "X-RateLimit-Remaining", "x-", "X", "p3p", "content-md5", "set-cookie",
                     "retry-after", "ratelimit-policy", "Accept-CH", "te", "a_b.c~d", "1abc", "abc1def", "a--b", "-ab",
                     "h\u{e9}ader-name", "\u{c9}t\u{e9}"]
        for name in names {
            XCTAssertEqual(ourNames(name), foundationNames(name), name)
        }
    }

    func testGeneratedTokenNamesAreFiledAsHTTPURLResponseFilesThem() {
        // Names of 1 to 12 characters: of those real names use (our own quick path), then of
        // every character a header name may have (RFC 9110 tchar; `String.capitalized`'s).
        let alphabets = [Array("-_0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"),
                         Array("!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")]
        let random = SeededRandomSource(seed: 7)
        for alphabet in alphabets {
            for _ in 0..<2_000 {
                let length = 1 + Int(random.nextUnit() * 12)
                let name = String((0..<length).map { _ in alphabet[Int(random.nextUnit() * Double(alphabet.count))] })
                XCTAssertEqual(ourNames(name), foundationNames(name), name)
            }
        }
    }

    func testANameSentTwiceHasItsValuesJoined() {
        let response = TransportResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1",
                                          fields: [("Set-Cookie", "a=1"), ("set-cookie", "b=2"), ("", "dropped")])
        XCTAssertEqual(response.headers, ["Set-Cookie": "a=1, b=2"])
    }

    func testTheExpectedLengthIsAContentLengthThatIsANumberOfBytes() {
        func expected(_ value: String) -> Int? {
            TransportResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", fields: [("content-length", value)]).expectedContentLength
        }
        XCTAssertEqual(expected("64"), 64)
        XCTAssertNil(expected("-1"))
        XCTAssertNil(expected("lots"))
    }

    /// A handler of one's own that only knows `URLResponse`s gets one made from it (the
    /// protocol's default), so a transport may report either.
    func testAHandlerWithoutTheNewCallbackIsGivenAnHTTPURLResponse() {
        final class OldHandler: TransportCallbacks {
            let seen = Mutex<HTTPURLResponse?>(nil)
            func task(_ task: Int, willRedirect response: HTTPURLResponse, to request: RequestMessage) -> RequestMessage? { request }
            func task(_ task: Int, didReceive response: URLResponse) -> URLSession.ResponseDisposition {
                seen.withLock { $0 = response as? HTTPURLResponse }
                return .allow
            }
            func task(_ task: Int, didReceive data: Data) {}
            func task(_ task: Int, didReceive challenge: URLAuthenticationChallenge) -> (URLSession.AuthChallengeDisposition, URLCredential?) {
                (.performDefaultHandling, nil)
            }
            func task(_ task: Int, didCompleteWithError error: Error?) {}
        }
        let handler = OldHandler()
        let response = TransportResponse(url: url, statusCode: 204, httpVersion: "HTTP/1.1", fields: [("etag", "\"v1\"")])
        XCTAssertEqual(handler.task(1, didReceive: response), .allow)
        let seen = handler.seen.withLock { $0 }
        XCTAssertEqual(seen?.statusCode, 204)
        XCTAssertEqual(seen?.value(forHTTPHeaderField: "ETag"), "\"v1\"")
    }

    func testTheHTTPURLResponseMadeFromItCarriesStatusVersionAndHeaders() {
        let response = TransportResponse(url: url, statusCode: 429, httpVersion: "HTTP/1.1",
                                         fields: [("retry-after", "7"), ("content-type", "text/plain; charset=utf-8")]).httpURLResponse()
        XCTAssertEqual(response.statusCode, 429)
        XCTAssertEqual(response.url, url)
        XCTAssertEqual(response.value(forHTTPHeaderField: "Retry-After"), "7")
        XCTAssertEqual(response.mimeType, "text/plain")
        XCTAssertEqual(response.textEncodingName, "utf-8")
    }

    func testAHeaderSentMoreThanOnceKeepsEachValueApartBesideTheJoinedOne() {
        let response = TransportResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1",
                                         fields: [("set-cookie", "a=1; Expires=Wed, 21 Oct 2037 07:28:00 GMT"), ("content-type", "text/plain"),
                                                  ("Set-Cookie", "b=2"), ("set-cookie", "c=3")])
        XCTAssertEqual(response.headers["Set-Cookie"], "a=1; Expires=Wed, 21 Oct 2037 07:28:00 GMT, b=2, c=3")
        XCTAssertEqual(response.repeatedHeaders, ["Set-Cookie": ["a=1; Expires=Wed, 21 Oct 2037 07:28:00 GMT", "b=2", "c=3"]])
        XCTAssertEqual(TransportResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", fields: [("a", "1")]).repeatedHeaders, [:])
    }
}
