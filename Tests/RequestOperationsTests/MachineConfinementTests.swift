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

    /// The operation's lock is taken in one place to change its state (`transition(_:)`) and
    /// one to read it (`look(_:)`), both in RequestOperation+Transition.swift (#43): a
    /// `withLock` anywhere else in `Core/Operation/` is a lock section outside the funnel.
    func testTheOperationsLockIsTakenOnlyInItsTransitionFunnel() throws {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../Sources/RequestOperations/Core/Operation").standardizedFileURL
        let files = try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil).filter { $0.pathExtension == "swift" }
        XCTAssertGreaterThan(files.count, 15, "the operation's files were found at \(folder.path)")
        var sections: [String: Int] = [:]
        for file in files {
            let count = try String(contentsOf: file, encoding: .utf8).components(separatedBy: "withLock").count - 1
            if count > 0 { sections[file.lastPathComponent] = count }
        }
        XCTAssertEqual(sections, ["RequestOperation+Transition.swift": 2], "lock sections outside the funnel")
    }
}
