import ChannelGlue
import XCTest

final class ConnectionFieldsTests: XCTestCase {
    /// The fields that are the connection's, one list for the proxy and the fault server.
    func testConnectionFieldsAreTheRFCsAndThoseConnectionNames() {
        let fields = [("Connection", "close, X-Hop"), ("Proxy-Connection", " Keep-Alive "), ("X-Stay", "1")]
        XCTAssertEqual(ConnectionFields.namedByConnection(in: fields), ["close", "x-hop", "keep-alive"])
        XCTAssertTrue(ConnectionFields.all(in: fields).isSuperset(of: ["x-hop", "transfer-encoding", "upgrade", "te", "proxy-authorization"]))
        XCTAssertFalse(ConnectionFields.all(in: fields).contains("x-stay"))
    }
}
