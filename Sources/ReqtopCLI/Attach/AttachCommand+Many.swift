import Foundation
import RequestEndpoint
import RequestEventFormat
import RequestMonitor
import RequestOperations

/// `reqtop attach --all` and `reqtop attach A B …`: several programs in one monitor.
extension AttachCommand {
    func runMany() throws {
        guard !list else { throw InputError(message: "--list lists every program already; it takes no pids and no --all") }
        // Every named target must be there: a typo is said, not skipped.
        var opened: [(EndpointClient, EndpointClient.Hello)] = []
        if all {
            guard targets.isEmpty else { throw InputError(message: "--all watches every program; give it no pids (or give pids without --all)") }
            try Self.checkFolder()
            for path in EndpointDirectory.sockets().map(\.path) {
                do {
                    opened.append(try Self.open(path))
                } catch let error as InputError {
                    // A socket that does not answer (a program that died, one still
                    // starting) is passed over; it is tried again if it comes back.
                    ReqtopMain.printError("reqtop: skipped \(path): \(error.message)")
                }
            }
        } else {
            opened = try targets.map(open(target:))
            // Ids are told apart by pid: two programs with one pid (here and elsewhere) cannot be.
            let pids = opened.map(\.1.pid)
            if let twice = pids.first(where: { pid in pids.filter { $0 == pid }.count > 1 }) {
                opened.forEach { $0.0.close() }
                throw InputError(message: "two of the targets are pid \(twice) (one here, one elsewhere?); attach to them one at a time")
            }
        }
        guard !opened.isEmpty || all else { throw InputError(message: "no program to attach to") }
        if opened.isEmpty {
            ReqtopMain.printError("reqtop: no program answers in \(EndpointDirectory.path) yet; waiting for one (q quits)")
        }
        // The monitor's clock starts where the earliest program's did.
        let now = Date()
        let start = opened.map { now.addingTimeInterval(-$0.1.time) }.min() ?? now
        let programs = AttachedPrograms(watchesFolder: all, start: start)
        if case .monitor(let color) = OutputMode.choose(noTUI: noTUI, noColor: noColor) {
            let screen = try MonitorScreen(
                options: .init(source: "attach", color: color, clock: { programs.now },
                               playbackStatus: { PlaybackStatus(programs.status) }, faultsActive: { programs.faultsActive }),
                commands: MergedQueueCommands(programs: programs))
            programs.start(.screen(screen))
            screen.showPaused(opened.contains { $0.1.suspended })
            opened.forEach { programs.adopt($0.0, hello: $0.1) }
            screen.run()
            programs.stop()
            ReqtopMain.printError("reqtop: detached from \(programs.status.replacingOccurrences(of: "ATTACHED ", with: ""))")
        } else {
            programs.start(.lines)
            for (_, hello) in opened {
                ReqtopMain.printError("reqtop: attached to \(hello.name) (pid \(hello.pid)): \(hello.live) live operations")
            }
            opened.forEach { programs.adopt($0.0, hello: $0.1) }
            if all {
                // Programs come and go: runs until interrupted.
                while true { Thread.sleep(forTimeInterval: 3600) }
            }
            programs.waitForAll()
            ReqtopMain.printError("reqtop: every program ended")
        }
    }
}
