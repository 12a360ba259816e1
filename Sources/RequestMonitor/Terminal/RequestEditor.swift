import Foundation
import RequestArchive
import RequestEventFormat

/// `e`: the person's own editor on a request, as git and crontab do it. The monitor gives
/// the terminal back (leaves the alternate screen), runs `$VISUAL`, else `$EDITOR`, else
/// `vi`, on a plan entry in a file of its own, and takes the terminal again.
enum RequestEditor {
    enum Outcome {
        case edited(RequestEntry)
        /// Saved as it was, or not saved: nothing is sent.
        case unchanged(String)
        case failed(String)
    }

    static func edit(_ entry: RequestEntry, terminal: Terminal) -> Outcome {
        // A folder nobody else can have made or enter (mkdtemp, 0700): another user could
        // otherwise make it first and swap the entry between the editor and the send.
        let folder: String, path: String
        do {
            folder = try PrivateFolder.makeUnique(in: NSTemporaryDirectory(), prefix: "reqtop-edit-")
            path = folder + "/" + CopiedRequest.path(for: entry.id, suffix: ".json").split(separator: "/").last!
            try PrivateFolder.writeNew(Data(entry.json.utf8), to: path)
        } catch {
            return .failed("could not write the request to edit: \(error)")
        }
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let environment = ProcessInfo.processInfo.environment
        let editor = [environment["VISUAL"], environment["EDITOR"]].compactMap { $0 }.first { !$0.isEmpty } ?? "vi"
        terminal.suspend()
        let status = run(editor, path)
        terminal.resume()
        guard let status else { return .failed("could not start the editor \"\(editor)\" (set VISUAL or EDITOR)") }
        guard status == 0 else { return .unchanged("the editor \"\(editor)\" exited with status \(status): nothing sent") }
        guard let data = try? PrivateFolder.read(path), let text = String(data: data, encoding: .utf8) else {
            return .failed("\(path) could not be read back")
        }
        guard text != entry.json else { return .unchanged("\(entry.id) was not changed: nothing sent") }
        do {
            return .edited(try RequestEntry.parse(text, file: "the edit of \(entry.id)"))
        } catch {
            return .failed("\(error): nothing sent (e opens it again)")
        }
    }

    /// Runs `editor FILE` through the shell (an editor setting may carry its own flags, as
    /// `code --wait` does), on the person's terminal; its exit status, or nil if it did not start.
    private static func run(_ editor: String, _ path: String) -> Int32? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "\(editor) \"$1\"", "sh", path]
        process.standardInput = FileHandle.standardInput
        process.standardOutput = FileHandle.standardOutput
        process.standardError = FileHandle.standardError
        do {
            try process.run()
        } catch {
            return nil
        }
        process.waitUntilExit()
        return process.terminationStatus
    }
}
