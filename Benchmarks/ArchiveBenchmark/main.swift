// reqtop-archive-bench FILE.har FILE.jsonl: seconds to load each, as `reqtop replay` does.
// Run by scripts/archive-bench.sh, which makes the files and times the Python reference.
import Foundation
import RequestArchive

func seconds(_ body: () throws -> Void) rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

let arguments = CommandLine.arguments
guard arguments.count == 3 else {
    FileHandle.standardError.write(Data("usage: reqtop-archive-bench FILE.har FILE.jsonl\n".utf8))
    exit(2)
}
var entries = 0, events = 0
let har = try seconds { entries = try HARImport.read(path: arguments[1]).entryCount }
// The same HAR decoded whole on one core, for the figure before it was split.
let harBytes = try Data(contentsOf: URL(fileURLWithPath: arguments[1]))
let harWhole = try seconds { _ = try HARImport.parse(harBytes, file: arguments[1], split: false) }
let lines = try seconds { events = try EventLogFile.read(path: arguments[2]).events.count }
print(String(format: "har %.3f s (%d entries); decoded whole on one core %.3f s (the file already read)", har, entries, harWhole))
print(String(format: "jsonl %.3f s (%d events)", lines, events))
