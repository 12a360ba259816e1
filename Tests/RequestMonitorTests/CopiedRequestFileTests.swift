import Foundation
@testable import RequestMonitor
import XCTest

/// `y` writes its copy only into a folder of this user's. Before: it wrote
/// `$TMPDIR/reqtop-curl/ID.sh` through a link another user had planted in a folder they made,
/// and clobbered the link's target.
final class CopiedRequestFileTests: XCTestCase {
    func testACopyIsNotWrittenIntoAFolderAnotherUserPlanted() throws {
        guard geteuid() == 0 else { throw XCTSkip("needs root to plant a folder as another user (CI runs as root)") }
        let base = NSTemporaryDirectory() + "copies-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: base) }
        let target = base + "/victim"
        try Data("keep me".utf8).write(to: URL(fileURLWithPath: target))
        let planted = base + "/reqtop-curl"
        XCTAssertEqual(mkdir(planted, 0o777), 0)
        chmod(planted, 0o777)
        XCTAssertEqual(symlink(target, planted + "/order.sh"), 0)
        XCTAssertEqual(lchown(planted + "/order.sh", 65534, 65534), 0)
        XCTAssertEqual(lchown(planted, 65534, 65534), 0)
        XCTAssertThrowsError(try CopiedRequest.write("curl 'http://x'", name: "order", body: nil, in: planted)) { error in
            XCTAssert("\(error)".contains("belongs to another user"), "\(error)")
        }
        XCTAssertEqual(try String(contentsOfFile: target, encoding: .utf8), "keep me")
    }

    func testACopyIsWrittenNewInAFolderOfOurOwn() throws {
        let folder = NSTemporaryDirectory() + "copies-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = try CopiedRequest.write("curl 'http://x'", name: "a/../b", body: Data([0, 1]), in: folder)
        XCTAssertEqual(path, folder + "/a_.._b.sh")
        XCTAssertEqual(try String(contentsOfFile: path, encoding: .utf8), "#!/bin/sh\ncurl 'http://x'\n", "a script sh runs")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: folder + "/a_.._b.body")), Data([0, 1]))
        var info = stat()
        stat(folder, &info)
        XCTAssertEqual(info.st_mode & 0o777, 0o700)
        stat(path, &info)
        XCTAssertEqual(info.st_mode & 0o777, 0o700, "its owner alone can run it")
        stat(folder + "/a_.._b.body", &info)
        XCTAssertEqual(info.st_mode & 0o777, 0o600, "the body is data")
    }
}
