@testable import RequestTransportNIO
import Testing

/// AsyncHTTPClient numbers connections in the order it opens them, one counter for the
/// process: the ledger tells a connection's first request from later ones even when
/// connections are first used out of order or other clients took numbers in between.
@Suite struct ConnectionLedgerTests {
    @Test func firstUseIsNewLaterOnesAreReused() {
        let ledger = ConnectionLedger()
        #expect(ledger.firstUse(of: 0))
        #expect(!ledger.firstUse(of: 0))
        #expect(ledger.firstUse(of: 1))
        #expect(!ledger.firstUse(of: 0) && !ledger.firstUse(of: 1))
    }

    @Test func aConnectionFirstUsedAfterAHigherOneIsStillNew() {
        let ledger = ConnectionLedger()
        #expect(ledger.firstUse(of: 5), "numbers 0–4 skipped (another client's, or not used yet)")
        #expect(ledger.firstUse(of: 3), "opened before 5, first used after it")
        #expect(!ledger.firstUse(of: 3))
        #expect(ledger.firstUse(of: 4) && ledger.firstUse(of: 0))
        #expect(!ledger.firstUse(of: 5))
    }

    @Test func skippedNumbersAreKeptUpToALimitTheOldestForgottenFirst() {
        let ledger = ConnectionLedger()
        let limit = ConnectionLedger.skippedLimit
        #expect(ledger.firstUse(of: 10 * limit), "a jump far ahead remembers only the last `limit` numbers skipped")
        #expect(!ledger.firstUse(of: 0), "too old to remember: taken for reused")
        #expect(ledger.firstUse(of: 10 * limit - 1))
        for number in stride(from: 10 * limit + 2, to: 12 * limit, by: 2) { _ = ledger.firstUse(of: number) }
        #expect(ledger.firstUse(of: 12 * limit - 3), "a recent skipped number is still new")
        #expect(!ledger.firstUse(of: 10 * limit + 1), "an old one was forgotten to keep the set bounded")
    }
}
