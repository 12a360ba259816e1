import Foundation
import XCTest

/// The attempt's stage, number and id are the machine's: only AttemptStateMachine.swift and
/// its `+` extensions assign them (they are split by concept, so Swift's `private(set)`,
/// which is per file, cannot say it). Anything else that assigns one fails here by name.
final class MachineConfinementTests: XCTestCase {
    func testOnlyTheMachinesFilesAssignItsStageNumberAndID() throws {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../Sources").standardizedFileURL
        let assignment = try NSRegularExpression(pattern: #"machine\.(stage|attempt|requeues|id|forcedFault)\s*(=[^=]|\+=|-=)"#)
        var offenders: [String] = []
        let files = FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil)
        var read = 0
        while let file = files?.nextObject() as? URL {
            guard file.pathExtension == "swift", !file.lastPathComponent.hasPrefix("AttemptStateMachine") else { continue }
            let text = try String(contentsOf: file, encoding: .utf8)
            read += 1
            for line in text.split(separator: "\n") {
                let line = String(line)
                if assignment.firstMatch(in: line, range: NSRange(line.startIndex..., in: line)) != nil {
                    offenders.append("\(file.lastPathComponent): \(line.trimmingCharacters(in: .whitespaces))")
                }
            }
        }
        XCTAssertGreaterThan(read, 100, "the sources were found at \(sources.path)")
        XCTAssertEqual(offenders, [], "assigned outside the machine")
        // The check itself finds what it looks for.
        let sample = "        state.machine.stage = .pending"
        XCTAssertNotNil(assignment.firstMatch(in: sample, range: NSRange(sample.startIndex..., in: sample)))
    }
}
