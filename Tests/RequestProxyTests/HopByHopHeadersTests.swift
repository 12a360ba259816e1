import ChannelGlue
@testable import RequestProxy
import XCTest

/// What stays on its hop, field by field, in order, whatever the spelling: the fields always
/// the connection's, those a `Connection` field names, and `TE: trailers` kept for gRPC.
final class HopByHopHeadersTests: XCTestCase {
    private func kept(_ fields: [(String, String)]) -> [String] {
        HopByHopHeaders.removed(from: fields).map { "\($0.0): \($0.1)" }
    }

    func testTheConnectionsFieldsGoInAnySpellingAndTheRestStayInOrder() {
        XCTAssertEqual(kept([("X-Zeta", "1"), ("CONNECTION", "keep-alive"), ("Keep-Alive", "timeout=5"), ("x-dup", "a"),
                             ("Proxy-Connection", "Keep-Alive"), ("TRANSFER-encoding", "chunked"), ("Upgrade", "h2c"),
                             ("trailer", "X-T"), ("Proxy-Authorization", "Basic eA=="), ("X-Dup", "b"),
                             // Lengths and first letters of hop-by-hop names, and not such a name.
                             ("Transfer-Encodinx", "k"), ("Proxy-Authorizatio", "k"), ("Ke", "k"), ("Upgradex", "k")]),
                       ["X-Zeta: 1", "x-dup: a", "X-Dup: b", "Transfer-Encodinx: k", "Proxy-Authorizatio: k", "Ke: k", "Upgradex: k"])
    }

    func testWhatConnectionNamesGoesToo() {
        XCTAssertEqual(kept([("Connection", "close, X-Hop"), ("x-hop", "1"), ("X-Kept", "2"), ("Proxy-Connection", "x-other"),
                             ("X-OTHER", "3")]),
                       ["X-Kept: 2"])
    }

    func testTETrailersIsKeptUnlessConnectionNamesIt() {
        XCTAssertEqual(kept([("TE", " trailers "), ("Content-Type", "application/grpc")]), ["TE:  trailers ", "Content-Type: application/grpc"])
        XCTAssertEqual(kept([("te", "gzip")]), [])
        XCTAssertEqual(kept([("Connection", "TE"), ("te", "trailers")]), [])
    }
}
