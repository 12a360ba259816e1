import Foundation
import XCTest

extension XCTestCase {
    /// A new folder under the temporary directory, `prefix-XXXXXXXX`, removed when the test ends.
    func makeTemporaryFolder(_ prefix: String) throws -> String {
        let folder = NSTemporaryDirectory() + "\(prefix)-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: folder) }
        return folder
    }
}
