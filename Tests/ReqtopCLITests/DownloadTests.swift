import FaultServer
import Foundation
import XCTest

/// A plan's `saveTo`: `reqtop run` writes the answer to the file as it arrives; a file that
/// cannot be written is named before anything is sent.
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
    }
}
