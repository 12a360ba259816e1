import RequestOperations
import XCTest

/// How a request's fields as its sender wrote them arrange the headers a transport sends.
final class FieldsAsSentTests: XCTestCase {
    private let sent = FieldsAsSent([("X-Zeta", "1"), ("X-Alpha", "2"), ("X-Dup", "a"), ("X-MiXeD-Case", "3"), ("X-Dup", "b"),
                                     ("Cookie", "a=1"), ("Cookie", "b=2")])

    func testOneValuePerNameSpeltAsFirstSentCookiesJoinedBySemicolons() {
        let joined = sent.joinedByName.map { "\($0.name): \($0.value)" }
        XCTAssertEqual(joined, ["X-Zeta: 1", "X-Alpha: 2", "X-Dup: a, b", "X-MiXeD-Case: 3", "Cookie: a=1; b=2"])
    }

    func testUnchangedHeadersGoAsTheFieldsWent() {
        let current = Dictionary(uniqueKeysWithValues: sent.joinedByName.map { ($0.name.lowercased(), $0.value) })
        let arranged = sent.arranged(current.map { ($0.key, $0.value) }).map { "\($0.0): \($0.1)" }
        XCTAssertEqual(arranged, ["X-Zeta: 1", "X-Alpha: 2", "X-Dup: a", "X-MiXeD-Case: 3", "X-Dup: b", "Cookie: a=1", "Cookie: b=2"])
    }

    func testChangedOnceWhereItStoodRemovedGoneAddedLast() {
        let current = [("x-zeta", "1"), ("X-Dup", "edited"), ("X-MiXeD-Case", "3"), ("Cookie", "a=1; b=2"), ("Authorization", "Bearer t")]
        let arranged = sent.arranged(current).map { "\($0.0): \($0.1)" }
        XCTAssertEqual(arranged, ["X-Zeta: 1", "X-Dup: edited", "X-MiXeD-Case: 3", "Cookie: a=1", "Cookie: b=2", "Authorization: Bearer t"])
    }

    func testANameThatIsNoFieldNameIsLeftOut() {
        XCTAssertEqual(FieldsAsSent([("Bad Name", "x"), ("Good", "y")]).fields.count, 1)
    }
}
