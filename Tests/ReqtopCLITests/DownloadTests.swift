import FaultServer
import Foundation
import XCTest

/// A plan's `saveTo` and `bodyFile`: `reqtop run` writes the answer to the file as it
/// arrives and sends a file as it reads it; a file that cannot be written or read is named
/// before anything is sent.
final class DownloadTests: XCTestCase {
    func testAPlanSavesAnAnswerToAFileAndRefusesOneItCannotWrite() throws {
        let folder = NSTemporaryDirectory() + "saveto-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder + "/out", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let plan = folder + "/plan.json"
        try #"{"requests": [{"id": "report", "url": "{{fault}}/bytes/250000?seed=2", "saveTo": "out/report.bin"}]}"#
            .write(toFile: plan, atomically: true, encoding: .utf8)
        let run = try reqtop(["run", plan, "--no-tui"])
        XCTAssertEqual(run.status, 0, run.stderr)
        XCTAssertEqual(Array(try Data(contentsOf: URL(fileURLWithPath: folder + "/out/report.bin"))), FaultServer.expectedBytes(count: 250_000, seed: 2))
        XCTAssertTrue(run.stdout.contains(#""bodyOmitted":"saved to \#(folder)/out/report.bin""#), run.stdout)

        for (saveTo, message) in [("missing/report.bin", "the folder \(folder)/missing does not exist"), ("out", "\(folder)/out is a folder")] {
            try #"{"requests": [{"url": "{{fault}}/echo", "saveTo": "\#(saveTo)"}]}"#.write(toFile: plan, atomically: true, encoding: .utf8)
            let bad = try reqtop(["run", plan, "--no-tui"])
            XCTAssertEqual(bad.status, 2, bad.stderr)
            XCTAssertTrue(bad.stderr.contains("requests[0].saveTo") && bad.stderr.contains(message), bad.stderr)
        }

        // A limit on the file: an answer over it fails by name and leaves nothing.
        try #"{"requests": [{"id": "capped", "url": "{{fault}}/bytes/250000", "saveTo": "out/capped.bin", "maxFileBytes": 100000}]}"#
            .write(toFile: plan, atomically: true, encoding: .utf8)
        let capped = try reqtop(["run", plan, "--no-tui"])
        XCTAssertNotEqual(capped.status, 0, capped.stderr)
        XCTAssertTrue((capped.stdout + capped.stderr).contains("100000-byte limit for its file"), capped.stdout.suffix(800) + capped.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: folder + "/out/capped.bin"))
        for (member, message) in [(#""maxFileBytes": 10"#, "a limit for the file \"saveTo\" names"),
                                  (#""saveTo": "out/x.bin", "maxFileBytes": 0"#, "maxFileBytes")] {
            try #"{"requests": [{"url": "{{fault}}/echo", \#(member)}]}"#.write(toFile: plan, atomically: true, encoding: .utf8)
            let bad = try reqtop(["run", plan, "--no-tui"])
            XCTAssertEqual(bad.status, 2, bad.stderr)
            XCTAssertTrue(bad.stderr.contains("requests[0].maxFileBytes") && bad.stderr.contains(message), bad.stderr)
        }
    }

    func testAPlanUploadsAFileAndRefusesOneItCannotSend() throws {
        let folder = NSTemporaryDirectory() + "bodyfile-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder + "/in", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let bytes = FaultServer.expectedBytes(count: 400_000, seed: 4)
        try Data(bytes).write(to: URL(fileURLWithPath: folder + "/in/upload.bin"))
        var digest = BodyDigest()
        digest.add(bytes)
        let plan = folder + "/plan.json"
        for transport in ["nio", "urlsession"] {
            try #"{"requests": [{"id": "up", "method": "PUT", "url": "{{fault}}/sink", "bodyFile": "in/upload.bin"}]}"#
                .write(toFile: plan, atomically: true, encoding: .utf8)
            let run = try reqtop(["run", plan, "--no-tui", "--transport", transport])
            XCTAssertEqual(run.status, 0, run.stderr)
            XCTAssertTrue(run.stdout.contains(#"\"bodyBytes\":400000,\"fnv1a\":\"\#(digest.hex)\""#), "\(transport): \(run.stdout.suffix(800))")
        }
        let cases = [(#""bodyFile": "in/missing.bin""#, "the body file \(folder)/in/missing.bin does not exist"),
                     (#""bodyFile": "in""#, "the body file \(folder)/in is a folder"),
                     (#""bodyFile": "/dev/zero""#, "the body file /dev/zero is not a regular file"),
                     (#""bodyFile": "in/upload.bin", "body": "x""#, "a request has \"body\" or \"bodyFile\", not both")]
        for (member, message) in cases {
            try #"{"requests": [{"url": "{{fault}}/sink", "method": "PUT", \#(member)}]}"#.write(toFile: plan, atomically: true, encoding: .utf8)
            let bad = try reqtop(["run", plan, "--no-tui"])
            XCTAssertEqual(bad.status, 2, bad.stderr)
            XCTAssertTrue(bad.stderr.contains("requests[0].bodyFile") && bad.stderr.contains(message), bad.stderr)
        }
    }

    /// Before: `saveTo` was a `rename()` over whatever was there: a device (as root it made
    /// /dev/null a regular 0600 file), `/proc/self/fd/1`, the plan itself, the recording the
    /// same command writes. Each is refused with the plan's place, exit 2, nothing sent.
    func testSaveToRefusesWhatItMustNotReplace() throws {
        let folder = NSTemporaryDirectory() + "saveto-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let plan = folder + "/plan.json"
        try Data("keep".utf8).write(to: URL(fileURLWithPath: folder + "/kept.txt"))
        XCTAssertEqual(symlink(folder + "/kept.txt", folder + "/link.txt"), 0)
        for (saveTo, message) in [("/dev/null", "it is a device"), ("/proc/self/fd/1", "it is a symbolic link"),
                                  ("link.txt", "it is a symbolic link"), ("plan.json", "is this plan's own file")] {
            let text = #"{"requests": [{"url": "{{fault}}/echo", "saveTo": "\#(saveTo)"}]}"#
            try text.write(toFile: plan, atomically: true, encoding: .utf8)
            let run = try reqtop(["run", plan, "--no-tui"])
            XCTAssertEqual(run.status, 2, "\(saveTo): \(run.stderr)")
            XCTAssert(run.stderr.contains("requests[0].saveTo") && run.stderr.contains(message), "\(saveTo): \(run.stderr)")
            XCTAssertEqual(try String(contentsOfFile: plan, encoding: .utf8), text, "the plan is as it was")
        }
        var info = stat()
        XCTAssertEqual(stat("/dev/null", &info), 0)
        XCTAssertEqual(info.st_mode & S_IFMT, S_IFCHR, "/dev/null is still a device")
        XCTAssertEqual(try String(contentsOfFile: folder + "/kept.txt", encoding: .utf8), "keep")

        try #"{"requests": [{"url": "{{fault}}/echo", "saveTo": "run.jsonl"}]}"#.write(toFile: plan, atomically: true, encoding: .utf8)
        let clash = try reqtop(["run", plan, "--no-tui", "--record", folder + "/run.jsonl"])
        XCTAssertEqual(clash.status, 2, clash.stderr)
        XCTAssert(clash.stderr.contains("requests[0].saveTo") && clash.stderr.contains("is also --record's file"), clash.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: folder + "/run.jsonl"), "nothing recorded, nothing sent")
    }
}
