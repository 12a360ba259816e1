import Foundation
import XCTest

/// The maps of the tree say what is in it: every module in `Sources/` is in ARCHITECTURE.md's
/// module table and in docs/layout.md, and every folder of the command line and of the application library is named in both.
/// (docs/layout.md called the endpoint a Unix socket server and left out four modules.)
final class DocsMatchTheTreeTests: XCTestCase {
    private let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    private func read(_ path: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    }

    private func folders(_ path: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent(path).path).filter { name in
            var folder: ObjCBool = false
            return FileManager.default.fileExists(atPath: root.appendingPathComponent(path + "/" + name).path, isDirectory: &folder) && folder.boolValue
        }.sorted()
    }

    func testEveryModuleIsInTheArchitectureAndTheLayout() throws {
        let architecture = try read("ARCHITECTURE.md"), layout = try read("docs/layout.md")
        let modules = try folders("Sources")
        XCTAssertGreaterThan(modules.count, 10, "\(modules)")
        for module in modules {
            let rows = architecture.split(separator: "\n").filter { $0.hasPrefix("| `") }.map { $0.split(separator: "|").first ?? "" }
            XCTAssertTrue(rows.contains { $0.contains("`\(module)`") }, "ARCHITECTURE.md's module table names \(module)")
            XCTAssertTrue(layout.contains("Sources/\(module)"), "docs/layout.md names Sources/\(module)")
        }
        for module in ["ReqtopCLI", "ReqtopApplication"] {
            for folder in try folders("Sources/" + module) {
                XCTAssertTrue(architecture.contains("`\(folder)/`"), "ARCHITECTURE.md names \(module)/\(folder)/")
                XCTAssertTrue(layout.contains("\(folder)/"), "docs/layout.md names \(module)'s \(folder)/")
            }
        }
    }

    /// Each module's imports are in its row of ARCHITECTURE.md (by the package or product that
    /// provides them), checked for the modules whose rows name products.
    func testTheFaultServersImportsAreNamed() throws {
        let architecture = try read("ARCHITECTURE.md")
        let row = architecture.split(separator: "\n").first { $0.hasPrefix("| `FaultServer`") }.map(String.init) ?? ""
        let sources = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("Sources/FaultServer").path)
        var imports = Set<String>()
        for file in sources where file.hasSuffix(".swift") {
            for line in try read("Sources/FaultServer/" + file).split(separator: "\n") where line.hasPrefix("import ") {
                imports.insert(String(line.dropFirst("import ".count)))
            }
        }
        for module in imports.subtracting(["Foundation", "Dispatch", "Synchronization", "Glibc"]) {
            XCTAssertTrue(row.contains(module), "FaultServer imports \(module): its row says so (\(row))")
        }
    }
}
