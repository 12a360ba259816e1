import Foundation
import XCTest

/// `reqtop attach` shows what a program tells it, so it must be the person's own program.
/// Before: the program refused a folder another user owned, but `attach --list` listed, and
/// `attach` showed, a fake endpoint served from a folder another user had made at the path
/// reqtop looks in. Now the folder is checked (owner, mode, not a link) before a socket in it
/// is listed, and every socket's peer (SO_PEERCRED) before a byte is read from it.
final class AttachTrustTests: XCTestCase {
    private var base = ""
    private var fake: Process?

    override func setUpWithError() throws {
        try UnprivilegedUser.requireRoot()
        base = NSTemporaryDirectory() + "attach-trust-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
    }

    override func tearDown() {
        fake?.terminate()
        fake?.waitUntilExit()
        try? FileManager.default.removeItem(atPath: base)
    }

    /// A fake endpoint at `socket`, served by `nobody`: it greets every connection as a
    /// reqtop program would.
    private func serveFakeEndpoint(at socket: String) throws {
        let script = """
        import os, socket
        s = socket.socket(socket.AF_UNIX)
        s.bind(\(String(reflecting: socket)))
        s.listen(4)
        while True:
            c, _ = s.accept()
            c.sendall(b'{"event":"hello","version":1,"pid":4242,"name":"totally-your-service","startedAt":"2026-11-27T00:00:00Z","t":0,"live":true,"readOnly":false,"acceptsFaults":true,"faults":0}\\n')
            c.close()
        """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        process.arguments = UnprivilegedUser.setprivArguments + ["/usr/bin/env", "python3", "-c", script]
        try process.run()
        fake = process
        AttachTests.waitFor("the fake endpoint") { FileManager.default.fileExists(atPath: socket) }
    }

    func testAFolderAnotherUserMadeIsRefusedBeforeAnythingInItIsRead() throws {
        let folder = base + "/reqtop"
        XCTAssertEqual(mkdir(folder, 0o700), 0)
        XCTAssertEqual(chown(folder, UnprivilegedUser.uid, UnprivilegedUser.gid), 0)
        try serveFakeEndpoint(at: folder + "/4242.sock")
        for arguments in [["attach", "--list"], ["attach", "4242"], ["attach", "--no-tui"]] {
            let run = try reqtop(arguments, timeout: 30, environment: ["XDG_RUNTIME_DIR": base])
            XCTAssertEqual(run.status, 2, "\(arguments): \(run.stdout) \(run.stderr)")
            XCTAssert(run.stderr.contains("\(folder) belongs to another user (uid 65534)"), "\(arguments): \(run.stderr)")
            XCTAssertFalse(run.stdout.contains("totally-your-service"), "\(arguments): \(run.stdout)")
        }
    }

    func testASocketAnotherUserServesIsRefusedByItsPeer() throws {
        let open = base + "/open"
        XCTAssertEqual(mkdir(open, 0o777), 0)
        chmod(open, 0o777)
        try serveFakeEndpoint(at: open + "/fake.sock")
        let run = try reqtop(["attach", open + "/fake.sock", "--no-tui"], timeout: 30)
        XCTAssertEqual(run.status, 2, run.stdout + run.stderr)
        XCTAssert(run.stderr.contains("is served by another user's process (uid 65534)"), run.stderr)
        XCTAssertFalse(run.stdout.contains("totally-your-service"), run.stdout)
    }

    func testAFolderOpenToOthersOrALinkIsRefused() throws {
        let real = base + "/real"
        XCTAssertEqual(mkdir(real, 0o700), 0)
        XCTAssertEqual(symlink(real, base + "/reqtop"), 0)
        let linked = try reqtop(["attach", "--list"], timeout: 30, environment: ["XDG_RUNTIME_DIR": base])
        XCTAssertEqual(linked.status, 2)
        XCTAssert(linked.stderr.contains("is a symbolic link"), linked.stderr)
        unlink(base + "/reqtop")
        XCTAssertEqual(mkdir(base + "/reqtop", 0o700), 0)
        chmod(base + "/reqtop", 0o733)
        let open = try reqtop(["attach", "--list"], timeout: 30, environment: ["XDG_RUNTIME_DIR": base])
        XCTAssertEqual(open.status, 2)
        XCTAssert(open.stderr.contains("is open to other users (mode 733)"), open.stderr)
    }
}
