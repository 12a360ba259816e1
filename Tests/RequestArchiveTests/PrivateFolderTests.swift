import Foundation
@testable import RequestArchive
import XCTest

/// Files reqtop keeps in a shared place (`/tmp`): another user on the machine can neither
/// read them nor steer a write. Before: `y` wrote `$TMPDIR/reqtop-curl/ID.sh` through a link
/// another user planted there, and `e` used a `reqtop-edit-PID` folder someone else made
/// first, where they could swap the edited request before it was sent. As root the tests
/// plant as `nobody` (uid 65534) with `chown`; CI runs as root.
final class PrivateFolderTests: XCTestCase {
    private var base = ""

    override func setUpWithError() throws {
        base = NSTemporaryDirectory() + "private-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        chmod(base, 0o755)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: base)
    }

    private func mode(_ path: String) -> mode_t {
        var info = stat()
        lstat(path, &info)
        return info.st_mode & 0o777
    }

    func testAFolderIsMadeForThisUserAlone() throws {
        let folder = try PrivateFolder.make(base + "/copies")
        XCTAssertEqual(mode(folder), 0o700)
        XCTAssertNoThrow(try PrivateFolder.make(folder), "ours, closed: taken again")
        let unique = try PrivateFolder.makeUnique(in: base, prefix: "edit-")
        XCTAssert(URL(fileURLWithPath: unique).lastPathComponent.hasPrefix("edit-") && unique != base + "/edit-")
        XCTAssertEqual(mode(unique), 0o700)
    }

    func testAFolderAnotherUserMadeIsRefusedByName() throws {
        guard geteuid() == 0 else { throw XCTSkip("needs root to plant a folder as another user (CI runs as root)") }
        let planted = base + "/reqtop-curl"
        XCTAssertEqual(mkdir(planted, 0o777), 0)
        chmod(planted, 0o777)
        XCTAssertEqual(lchown(planted, 65534, 65534), 0)
        XCTAssertThrowsError(try PrivateFolder.make(planted)) { error in
            XCTAssert("\(error)".contains("belongs to another user (uid 65534)"), "\(error)")
        }
    }

    func testALinkOrAnOpenFolderIsRefused() throws {
        let real = try PrivateFolder.make(base + "/real")
        XCTAssertEqual(symlink(real, base + "/link"), 0)
        XCTAssertThrowsError(try PrivateFolder.make(base + "/link")) { error in
            XCTAssert("\(error)".contains("is a symbolic link"), "\(error)")
        }
        XCTAssertEqual(mkdir(base + "/open", 0o700), 0)
        chmod(base + "/open", 0o777)
        XCTAssertThrowsError(try PrivateFolder.make(base + "/open")) { error in
            XCTAssert("\(error)".contains("is open to other users (mode 777)"), "\(error)")
        }
    }

    func testANewFileReplacesALinkUnderItsNameAndNeverFollowsIt() throws {
        let folder = try PrivateFolder.make(base + "/copies")
        let target = base + "/precious"
        try Data("keep me".utf8).write(to: URL(fileURLWithPath: target))
        XCTAssertEqual(symlink(target, folder + "/op.sh"), 0)
        try PrivateFolder.writeNew(Data("curl …".utf8), to: folder + "/op.sh")
        XCTAssertEqual(try String(contentsOfFile: target, encoding: .utf8), "keep me", "the link's target is untouched")
        var info = stat()
        lstat(folder + "/op.sh", &info)
        XCTAssertEqual(info.st_mode & S_IFMT, S_IFREG)
        XCTAssertEqual(info.st_mode & 0o777, 0o600)
        XCTAssertEqual(try PrivateFolder.read(folder + "/op.sh"), Data("curl …".utf8))
        XCTAssertEqual(symlink(target, folder + "/link.json"), 0)
        XCTAssertThrowsError(try PrivateFolder.read(folder + "/link.json"), "read back without following a link")
    }

    /// Before: recordings and HAR followed the umask (0644), even with `--no-redact`.
    func testAnOutputFileIsReadableByItsOwnerOnly() throws {
        let old = umask(0o022)
        defer { umask(old) }
        let fresh = base + "/run.jsonl"
        close(try OutputFile.create(fresh))
        XCTAssertEqual(mode(fresh), 0o600)
        let existing = base + "/old.har"
        _ = FileManager.default.createFile(atPath: existing, contents: Data("x".utf8), attributes: [.posixPermissions: 0o644])
        close(try OutputFile.create(existing))
        XCTAssertEqual(mode(existing), 0o600, "a file that was there is closed too")
    }
}
