import Foundation
import XCTest

/// A Ctrl-C or SIGTERM from the first instruction of `main` on ends a session cleanly.
final class EarlySignalTests: XCTestCase {
    /// Whether `pid` has blocked SIGINT yet: the first thing `main` does.
    private func hasBlockedSignals(_ pid: Int32) -> Bool {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("SigBlk:") }),
              let mask = UInt64(line.split(separator: "\t").last ?? "", radix: 16) else { return false }
        return mask & (1 << UInt64(SIGINT - 1)) != 0
    }

    /// Before: a signal that came before the session registered its handler killed the
    /// process (status 130), with no summary and a recording of only its header.
    func testASignalAtTheStartOfMainEndsTheRunWithItsSummaryAndRecording() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("early-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: folder) }
        let plan = folder.appendingPathComponent("slow.json").path, recording = folder.appendingPathComponent("r.jsonl").path
        try #"{"requests": [{"id": "a", "url": "{{fault}}/delay/5000"}, {"id": "b", "url": "{{fault}}/delay/5000"}]}"#
            .write(toFile: plan, atomically: true, encoding: .utf8)
        for (index, signal) in [SIGINT, SIGTERM, SIGINT, SIGHUP, SIGINT].enumerated() {
            let process = Process()
            process.executableURL = CommandLineTests.binary
            process.arguments = ["run", plan, "--no-tui", "--record", recording]
            let err = Pipe()
            process.standardOutput = FileHandle.nullDevice
            process.standardError = err
            try process.run()
            let deadline = Date().addingTimeInterval(10)
            while !hasBlockedSignals(process.processIdentifier), process.isRunning, Date() < deadline { usleep(200) }
            kill(process.processIdentifier, signal)
            let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            XCTAssertEqual(process.terminationReason, .exit, "run \(index): ended by the signal itself")
            XCTAssertEqual(process.terminationStatus, 1, "run \(index): \(stderr)")
            XCTAssert(stderr.contains("2 operations in"), "run \(index): \(stderr)")
            XCTAssert(stderr.contains("2 cancelled"), "run \(index): \(stderr)")
            let replay = try reqtop(["replay", recording])
            XCTAssertEqual(replay.events.filter { $0["event"] as? String == "finished" }.count, 2, "run \(index): \(replay.stderr)")
        }
    }
}
