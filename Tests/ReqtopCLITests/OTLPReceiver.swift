import Foundation
import XCTest

/// The OTLP/HTTP receiver of scripts/otlp/receiver.py: a Python process that decodes what it
/// is sent with the OpenTelemetry project's own protobuf schema (`opentelemetry-proto` from
/// PyPI, in .build/otlp-venv, made by scripts/otlp/venv.sh) and writes one JSON line per span
/// and metric point. Not a reader of ours.
final class OTLPReceiver {
    let port: Int
    private let process: Process
    private let output: URL

    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Starts a receiver; throws XCTSkip (saying why) when its Python environment cannot be
    /// made here (no python3, no PyPI). `.ci/run` makes it first, so CI always runs these.
    init() throws {
        let venv = Process()
        venv.executableURL = URL(fileURLWithPath: "/bin/bash")
        venv.arguments = [Self.root.appendingPathComponent("scripts/otlp/venv.sh").path]
        let path = Pipe(), problems = Pipe()
        venv.standardOutput = path
        venv.standardError = problems
        try venv.run()
        let python = String(decoding: path.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        venv.waitUntilExit()
        guard venv.terminationStatus == 0, !python.isEmpty else {
            let why = String(decoding: problems.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            if ProcessInfo.processInfo.environment["CI"] == "true" {
                throw NSError(domain: "OTLPReceiver", code: 2, userInfo: [NSLocalizedDescriptionKey: "scripts/otlp/venv.sh failed in CI: \(why.suffix(300))"])
            }
            throw XCTSkip("no OTLP receiver: scripts/otlp/venv.sh could not install opentelemetry-proto (\(why.suffix(300)))")
        }
        output = FileManager.default.temporaryDirectory.appendingPathComponent("otlp-\(UUID().uuidString).jsonl")
        process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [Self.root.appendingPathComponent("scripts/otlp/receiver.py").path, output.path]
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let line = String(decoding: out.fileHandleForReading.availableData, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard let port = Int(line) else {
            process.terminate()
            throw NSError(domain: "OTLPReceiver", code: 1, userInfo: [NSLocalizedDescriptionKey: "the receiver printed \(line) instead of its port"])
        }
        self.port = port
    }

    var url: String { "http://127.0.0.1:\(port)" }

    /// Everything received so far, one object per span or metric point.
    var records: [[String: Any]] {
        let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    var spans: [[String: Any]] { records.filter { $0["type"] as? String == "span" } }
    var metrics: [[String: Any]] { records.filter { $0["type"] as? String == "metric" } }

    func stop() {
        process.terminate()
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: output)
    }
}
