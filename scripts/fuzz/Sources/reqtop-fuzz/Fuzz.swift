import Foundation
import ParserFuzzing

// libFuzzer's entry points. The target is chosen by REQTOP_FUZZ_TARGET (one of
// FuzzTarget's raw values), set by run.sh.
//
// SwiftPM links an executable target with its entry point renamed to `<module>_main` and
// aliased to `main`, so that is where libFuzzer's driver is started from.

@_silgen_name("LLVMFuzzerRunDriver")
private func runDriver(_ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
                       _ test: @convention(c) (UnsafeRawPointer?, Int) -> CInt) -> CInt

@_cdecl("reqtop_fuzz_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var count = argc
    var arguments = argv
    return runDriver(&count, &arguments) { start, length in testOneInput(start, length) }
}

nonisolated(unsafe) private var target: FuzzTarget = .plan

@_cdecl("LLVMFuzzerInitialize")
public func initialize(_ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> CInt {
    let name = ProcessInfo.processInfo.environment["REQTOP_FUZZ_TARGET"] ?? ""
    guard let chosen = FuzzTarget(rawValue: name) else {
        let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")
        FileHandle.standardError.write(Data("reqtop-fuzz: REQTOP_FUZZ_TARGET=\(name) is not a target; one of: \(names)\n".utf8))
        exit(2)
    }
    target = chosen
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let data = start.map { Data(bytes: $0, count: count) } ?? Data()
    target.run(data)
    return 0
}
