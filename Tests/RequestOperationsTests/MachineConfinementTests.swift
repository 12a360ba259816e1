import Foundation
import XCTest

/// The attempt's stage, number and id, and the attempt in flight, are the machine's: only
/// AttemptStateMachine.swift and its `+` extensions assign or change them (they are split by concept, so Swift's `private(set)`,
/// which is per file, cannot say it). Anything else that assigns one fails here by name.
final class MachineConfinementTests: XCTestCase {
    func testOnlyTheMachinesFilesAssignItsStageNumberAndID() throws {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../Sources").standardizedFileURL
        let assignment = try NSRegularExpression(pattern: #"machine\.(stage|attempt|requeues|id|forcedFault|deadline|storedLeadRecord|flightBox)\s*(=[^=]|\+=|-=)"#)
        // The attempt in flight is a value in the stage: changed in place by the machine's
        // named inputs (AttemptStateMachine+InFlight.swift). A file that binds it out of the
        // stage to change it, or names one of its fields, reaches past the machine.
        let reachIn = try NSRegularExpression(pattern: #"case \.inFlight\((var|let) |\bflight\.(stop|racers|timers|file|streaming|invalid|lastProgress|unannouncedBytes|uploadAnnounced|redirects)\b"#)
        var offenders: [String] = []
        let files = FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil)
        var read = 0
        while let file = files?.nextObject() as? URL {
            guard file.pathExtension == "swift", !file.lastPathComponent.hasPrefix("AttemptStateMachine") else { continue }
            // The stage and the flight's own file define and tear down the value.
            let definesFlight = ["AttemptStage.swift", "AttemptInFlight.swift"].contains(file.lastPathComponent)
            let text = try String(contentsOf: file, encoding: .utf8)
            read += 1
            for line in text.split(separator: "\n") {
                let line = String(line)
                let range = NSRange(line.startIndex..., in: line)
                if assignment.firstMatch(in: line, range: range) != nil || (!definesFlight && reachIn.firstMatch(in: line, range: range) != nil) {
                    offenders.append("\(file.lastPathComponent): \(line.trimmingCharacters(in: .whitespaces))")
                }
            }
        }
        XCTAssertGreaterThan(read, 100, "the sources were found at \(sources.path)")
        XCTAssertEqual(offenders, [], "assigned outside the machine")
        // The check itself finds what it looks for.
        let sample = "        state.machine.stage = .pending"
        XCTAssertNotNil(assignment.firstMatch(in: sample, range: NSRange(sample.startIndex..., in: sample)))
        for reach in ["guard case .inFlight(var flight) = state.machine.stage", "state.machine.change { flight.streaming = true }"] {
            XCTAssertNotNil(reachIn.firstMatch(in: reach, range: NSRange(reach.startIndex..., in: reach)), reach)
        }
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
