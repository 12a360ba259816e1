import Foundation
import ParserFuzzing
import XCTest

/// A short fuzz run of every parser on each `swift test` (about ten seconds each, bounded by
/// count too), seeded from `scripts/fuzz/corpus`. A crash ends the test process; a hang is
/// an input slower than two seconds. The long runs are libFuzzer's: `scripts/fuzz/run.sh`.
final class ParserFuzzTests: XCTestCase {
    private static let corpus = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("scripts/fuzz/corpus")

    private func fuzz(_ target: FuzzTarget, inputs: Int = 30_000, seconds: TimeInterval = 8) {
        let seeds = FuzzCampaign.seeds(in: Self.corpus.appendingPathComponent(target.rawValue))
        XCTAssertFalse(seeds.isEmpty, "the seeds of \(target.rawValue) are in scripts/fuzz/corpus")
        let report = FuzzCampaign(target: target, seeds: seeds, maxInputs: inputs, maxSeconds: seconds).run()
        print("fuzz \(target.rawValue): \(report.inputs) inputs (\(report.accepted) accepted) in \(String(format: "%.1f", report.seconds)) s, "
              + "slowest \(String(format: "%.3f", report.slowest)) s, \(report.hangs.count) hangs")
        XCTAssertGreaterThan(report.inputs, seeds.count, "mutated inputs ran")
        XCTAssertGreaterThan(report.accepted, 0, "some inputs were read whole, so the code past the parser ran too")
        for hang in report.hangs.prefix(3) {
            XCTFail("an input took more than 2 s: \(String(decoding: hang.prefix(300), as: UTF8.self))")
        }
    }

    func testPlans() { fuzz(.plan) }
    func testJSONLinesRecordings() { fuzz(.jsonLines) }
    func testTheFastJSONLinesReaderAgreesWithJSONSerialization() { fuzz(.jsonLineReaders) }
    func testHARFiles() { fuzz(.har) }
    func testEndpointCommands() { fuzz(.endpointCommand) }
    func testEndpointMessages() { fuzz(.endpointMessage) }
    func testRetryAfterHeaders() { fuzz(.retryAfter) }

    /// Each input that once crashed reqtop, through its target: all come back as errors now.
    func testTheInputsThatOnceCrashedAreRead() {
        let cases: [(FuzzTarget, String)] = [
            (.jsonLines, #"{"event":"session","version":1}"# + "\n" + #"{"t":1e13,"op":"a","event":"queued","attempt":0}"#),
            (.har, #"{"log":{"version":"1.2","entries":[{"startedDateTime":"2020-01-01T00:00:00Z","time":1e19,"request":{"method":"GET","url":"http://a/","headers":[]},"response":{"status":1e19,"headers":[]},"timings":{"wait":1e19}}]}}"#),
            (.endpointMessage, #"{"t":1e19,"op":"a","event":"queued","attempt":0}"#),
            (.endpointMessage, #"{"event":"hello","version":1,"pid":1e10}"#),
            (.retryAfter, "9223372036854775807"),
            (.retryAfter, "18446744073709551616"),
            // FoundationNetworking's DateFormatter trapped on it ("Incorrect range CFRange").
            (.retryAfter, "Wed\u{7F0}ct 21 7:28:10 \u{FFFD}2015"),
            // Read one ulp apart by the fast reader and JSONSerialization: long decimals are declined now.
            (.jsonLineReaders, #"{"t":1.0505888888888888889608,"op":"w1-hanging","attempt":1,"event":"cancelled","by":"demo"}"#),
            (.jsonLineReaders, #"{"t":0.88888888888888046853,"op":"w1-exhausted","attempt":1,"event":"retryScheduled","delay":0.181641,"reason":"r"}"#),
            (.plan, #"{"retry":{"baseDelay":1e19,"maxDelay":1e19},"requests":[{"url":"http://a/","deadline":1e14}]}"#),
        ]
        for (target, text) in cases { target.run(Data(text.utf8)) }
        let chain = (0..<5000).map { #"{"id":"r\#($0)","url":"http://a/"\#($0 < 4999 ? #","dependsOn":"r\#($0 + 1)""# : "")}"# }
        FuzzTarget.plan.run(Data(#"{"requests":[\#(chain.joined(separator: ","))]}"#.utf8))
    }
}
