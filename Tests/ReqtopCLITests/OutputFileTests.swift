import Foundation
import XCTest

/// What reqtop writes never destroys what it reads, and never goes through a planted link.
final class OutputFileTests: XCTestCase {
    private func folder() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("out-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: path) }
        return path
    }

    private let plan = #"{"requests": [{"id": "a", "url": "{{fault}}/echo"}]}"#

    func testRecordingOverThePlanIsRefusedAndThePlanKept() throws {
        let dir = try folder()
        let plan = dir + "/p.json"
        try self.plan.write(toFile: plan, atomically: true, encoding: .utf8)
        let run = try reqtop(["run", plan, "--no-tui", "--record", plan])
        XCTAssertEqual(run.status, 2)
        XCTAssertEqual(run.stderr, "reqtop: \(plan): is also this command's input (\(plan)); writing it would destroy what is being read. Choose another file\n")
        XCTAssertEqual(try String(contentsOfFile: plan, encoding: .utf8), self.plan)
        // Another name for the same file is caught too.
        try FileManager.default.linkItem(atPath: plan, toPath: dir + "/hard.json")
        XCTAssertEqual(try reqtop(["run", plan, "--no-tui", "--record", dir + "/hard.json"]).status, 2)
        XCTAssertEqual(try String(contentsOfFile: plan, encoding: .utf8), self.plan)
    }

    func testExportOverItsRecordingIsRefused() throws {
        let dir = try folder()
        let plan = dir + "/p.json", recording = dir + "/r.jsonl"
        try self.plan.write(toFile: plan, atomically: true, encoding: .utf8)
        XCTAssertEqual(try reqtop(["run", plan, "--no-tui", "--record", recording]).status, 0)
        let before = try String(contentsOfFile: recording, encoding: .utf8)
        let export = try reqtop(["export", recording, "--har", recording])
        XCTAssertEqual(export.status, 2)
        XCTAssert(export.stderr.contains("is also this command's input"), export.stderr)
        XCTAssertEqual(try String(contentsOfFile: recording, encoding: .utf8), before)
    }

    func testARecordingIsNeverWrittenThroughASymbolicLink() throws {
        let dir = try folder()
        let plan = dir + "/p.json", victim = dir + "/victim", link = dir + "/rec.jsonl", harLink = dir + "/rec.har"
        try self.plan.write(toFile: plan, atomically: true, encoding: .utf8)
        try "precious".write(toFile: victim, atomically: true, encoding: .utf8)
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: victim)
        try FileManager.default.createSymbolicLink(atPath: harLink, withDestinationPath: victim)
        for target in [link, harLink] {
            let run = try reqtop(["run", plan, "--no-tui", "--record", target])
            XCTAssertEqual(run.status, 2)
            XCTAssertEqual(run.stderr, "reqtop: \(target): is a symbolic link; reqtop does not write through one (name the file it points to, or remove the link)\n")
        }
        XCTAssertEqual(try String(contentsOfFile: victim, encoding: .utf8), "precious")
    }

    func testFoldersAndMissingFoldersAreNamed() throws {
        let dir = try folder()
        let plan = dir + "/p.json"
        try self.plan.write(toFile: plan, atomically: true, encoding: .utf8)
        let intoFolder = try reqtop(["run", plan, "--no-tui", "--record", dir])
        XCTAssertEqual(intoFolder.status, 2)
        XCTAssertEqual(intoFolder.stderr, "reqtop: \(dir): is a folder; name a file to write\n")
        let missing = try reqtop(["run", plan, "--no-tui", "--record", dir + "/no/x.jsonl"])
        XCTAssertEqual(missing.status, 2)
        XCTAssertEqual(missing.stderr, "reqtop: \(dir)/no/x.jsonl: cannot write (the folder \(dir)/no does not exist)\n")
    }

    /// Before: exit 2 without the summary, and the path printed twice.
    func testAFullDiskEndsWithTheSummaryThenWhatHappenedToTheRecording() throws {
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/bin/mount") else { throw XCTSkip("needs root to mount a small tmpfs") }
        let dir = try folder()
        let mount = Process()
        mount.executableURL = URL(fileURLWithPath: "/bin/mount")
        mount.arguments = ["-t", "tmpfs", "-o", "size=4k", "tmpfs", dir]
        try mount.run()
        mount.waitUntilExit()
        guard mount.terminationStatus == 0 else { throw XCTSkip("cannot mount a tmpfs here") }
        addTeardownBlock {
            let unmount = Process()
            unmount.executableURL = URL(fileURLWithPath: "/bin/umount")
            unmount.arguments = [dir]
            try? unmount.run()
            unmount.waitUntilExit()
        }
        for name in ["r.jsonl", "r.har"] {
            let run = try reqtop(["demo", "--scenario", "quick", "--no-tui", "--record", dir + "/" + name])
            XCTAssertEqual(run.status, 2)
            let lines = run.stderr.split(separator: "\n")
            XCTAssertEqual(lines.count, 2, run.stderr)
            XCTAssert(lines.first?.hasPrefix("reqtop: 6 operations in") == true, run.stderr)
            XCTAssertEqual(lines.last.map(String.init), "reqtop: \(dir)/\(name): the recording is incomplete: writing failed (No space left on device)")
            XCTAssertEqual(run.events.filter { $0["event"] as? String == "finished" }.count, 6, "stdout still has every event")
            try? FileManager.default.removeItem(atPath: dir + "/" + name)
        }
    }
}
