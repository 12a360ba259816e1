import Foundation
import XCTest

/// docs/whatif.md's walkthrough, run as written: the numbers its quoted outputs show must be
/// what a run gives, within what the demo's timing moves from run to run (an attempt or a few,
/// a failure or two). The page once showed 98 → 85 attempts where a run gave 98 → 97, and
/// "failures 0 → 17" without the breaker where a run gave 0 → 0, and drew the opposite
/// conclusion from it.
final class WhatIfDocsTests: XCTestCase {
    private let page = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("docs/whatif.md")

    /// The two numbers after `label` in `text` ("attempts 26 → 60": (26, 60)).
    private func pair(_ label: String, in text: String) -> (Int, Int)? {
        guard let range = text.range(of: label + " ") else { return nil }
        let rest = text[range.upperBound...].split(separator: " ", maxSplits: 3).map(String.init)
        guard rest.count >= 3, rest[1] == "→", let a = Int(rest[0]), let b = Int(rest[2].trimmingCharacters(in: CharacterSet(charactersIn: ",("))) else { return nil }
        return (a, b)
    }

    /// The quoted line of the page that starts with `prefix` after `marker` (a command it runs).
    private func quoted(_ page: String, after marker: String, startingWith prefix: String) -> String? {
        guard let start = page.range(of: marker) else { return nil }
        return page[start.upperBound...].split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.first { $0.hasPrefix(prefix) }
    }

    func testThePagesNumbersAreARunsWithinTheDemosSpread() throws {
        let text = try String(contentsOf: page, encoding: .utf8)
        let budgetLine = try XCTUnwrap(quoted(text, after: "--set budget.percent=10", startingWith: "summary:"), "the page quotes the budget run")
        let breakerLine = try XCTUnwrap(quoted(text, after: "--set circuitBreaker=false", startingWith: "127.0.0.1:"), "the page quotes the dead host's line")
        let pageBudgetAttempts = try XCTUnwrap(pair("attempts sent upstream", in: budgetLine))
        let pageBudgetFailed = try XCTUnwrap(pair("failed operations", in: budgetLine))
        let pageBreakerAttempts = try XCTUnwrap(pair("attempts", in: breakerLine))
        let pageBreakerFailures = try XCTUnwrap(pair("failures", in: breakerLine))

        let folder = try makeTemporaryFolder("whatif-docs")
        let incident = folder + "/incident.jsonl"
        _ = try reqtop(["demo", "--once", "--no-tui", "--record", incident], timeout: 120)
        let budget = try reqtop(["whatif", incident, "--set", "budget.percent=10", "--record", folder + "/budget10.jsonl"], timeout: 180)
        let breaker = try reqtop(["whatif", incident, "--set", "circuitBreaker=false", "--record", folder + "/nobreaker.jsonl"], timeout: 180)
        let runBudgetLine = try XCTUnwrap(budget.stdout.split(separator: "\n").map(String.init).first { $0.hasPrefix("summary:") }, budget.stdout + budget.stderr)
        XCTAssertTrue(budget.stderr.contains("decided afresh under --set: the retry budget's refusals"), budget.stderr)
        // The dead host is the one whose attempts grew most without the breaker.
        let hostLines = breaker.stdout.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { $0.hasPrefix("127.0.0.1:") }
        let runBreakerLine = try XCTUnwrap(hostLines.max { (pair("attempts", in: $0).map { $1 - $0 } ?? 0) < (pair("attempts", in: $1).map { $1 - $0 } ?? 0) },
                                           breaker.stdout)

        let (budgetAttempts, budgetFailed) = (try XCTUnwrap(pair("attempts sent upstream", in: runBudgetLine)), try XCTUnwrap(pair("failed operations", in: runBudgetLine)))
        let (breakerAttempts, breakerFailures) = (try XCTUnwrap(pair("attempts", in: runBreakerLine)), try XCTUnwrap(pair("failures", in: runBreakerLine)))
        let said = "page: \(budgetLine) / \(breakerLine)\nrun:  \(runBudgetLine) / \(runBreakerLine)"
        XCTAssertLessThanOrEqual(abs(budgetAttempts.1 - pageBudgetAttempts.1), 4, said)
        XCTAssertLessThanOrEqual(abs(budgetFailed.1 - pageBudgetFailed.1), 2, said)
        XCTAssertLessThanOrEqual(abs(breakerAttempts.0 - pageBreakerAttempts.0), 3, said)
        XCTAssertLessThanOrEqual(abs(breakerAttempts.1 - pageBreakerAttempts.1), 10, said)
        XCTAssertLessThanOrEqual(abs(breakerFailures.1 - pageBreakerFailures.1), 2, said)
        // What the page concludes from them holds too: more attempts on the dead host without
        // the breaker, and no more failures there.
        XCTAssertGreaterThan(breakerAttempts.1, breakerAttempts.0 * 3 / 2, said)
        XCTAssertLessThanOrEqual(breakerFailures.1, breakerFailures.0 + 2, said)
    }
}
