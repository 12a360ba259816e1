import Foundation
import ReqtopApplication
import ArgumentParser
import RequestArchive
import RequestEndpoint
import RequestEventFormat
import RequestMonitor
import RequestOperations
import Synchronization

/// `reqtop attach [PID|SOCKET]`: the monitor on another program's queue.
struct AttachCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "attach",
        abstract: "Watch and steer the request queue of a running program.",
        discussion: """
        Programs open a monitor endpoint with `reqtop demo --listen`, `reqtop run --listen`, or \
        MonitorEndpoint in the library; their sockets are in $XDG_RUNTIME_DIR/reqtop (else a \
        per-user folder under the temporary directory), named by pid.

        Without an argument, attaches when exactly one program can be attached to, and lists \
        them otherwise. The monitor works as it does live: the same view, keys and commands. \
        When the program ends, the monitor says so and keeps the last screen until q.
        Without a terminal (or with --no-tui), prints the program's events as JSON lines.
        """
    )

    @Argument(help: "Pids, socket paths, or tls://HOST:PORT for a program elsewhere; several are shown in one monitor.")
    var targets: [String] = []

    @Flag(help: "Watch every program of this user on this machine that has an endpoint, in one monitor; programs that start later join.")
    var all = false

    @Option(help: ArgumentHelp("For tls:// targets: the authority that signed the program's certificate (PEM).", valueName: "file"))
    var cacert: String?

    @Option(help: ArgumentHelp("For tls:// targets: this monitor's certificate (PEM), from the authority the program names.", valueName: "file"))
    var cert: String?

    @Option(help: ArgumentHelp("For tls:// targets: this monitor's private key (PEM).", valueName: "file"))
    var key: String?

    @Option(help: ArgumentHelp("Record what the monitor is shown to FILE (JSON lines; with several programs each event names its program).", valueName: "file"))
    var record: String?

    @Flag(help: "List the programs that can be attached to, and stop.")
    var list = false

    @OptionGroup var display: DisplayOptions

    struct Program {
        var path: String
        var hello: EndpointClient.Hello
    }

    /// The programs whose endpoints answer; sockets of processes that are gone are removed.
    static func programs(in directory: String = EndpointDirectory.path) -> [Program] {
        EndpointDirectory.sockets(in: directory).compactMap { socket in
            guard let hello = EndpointClient.hello(path: socket.path) else {
                if !EndpointDirectory.isAlive(socket.pid) { unlink(socket.path) }
                return nil
            }
            return Program(path: socket.path, hello: hello)
        }
    }

    static func table(_ programs: [Program]) -> String {
        let rows = programs.map { program in
            "\(String(program.hello.pid).padding(toLength: 8, withPad: " ", startingAt: 0))"
                + "\(program.hello.name.padding(toLength: 20, withPad: " ", startingAt: 0)) "
                + "\(program.hello.startedAt.padding(toLength: 25, withPad: " ", startingAt: 0))"
                + "\(program.hello.live)\(program.hello.readOnly ? "  (read-only)" : "")"
        }
        return (["PID     NAME                 STARTED                  LIVE"] + rows).joined(separator: "\n")
    }

    func run() throws {
        if all || targets.count > 1 {
            return try runMany()
        }
        let (client, hello) = try targets.first.map(open(target:)) ?? Self.open(try resolve())
        if case .monitor(let color) = display.mode {
            // A program elsewhere is connected to again when the network drops it.
            var again: AttachedMonitor.Reconnect?
            if let target = targets.first, target.hasPrefix("tls://") {
                let command = self
                again = { try command.open(target: target) }
            }
            let recorder = try startRecording(startedAt: Date().addingTimeInterval(-hello.time))
            defer { finishRecording(recorder) }
            try AttachedMonitor(client: client, color: color, reconnect: again, recorder: recorder, readOnly: hello.readOnly).run(hello)
        } else {
            let recorder = try startRecording(startedAt: Date().addingTimeInterval(-hello.time))
            defer { finishRecording(recorder) }
            try Self.printEvents(client, hello: hello, recorder: recorder)
        }
    }

    /// Connects to what `target` names: a program elsewhere (`tls://HOST:PORT`, with
    /// `--cacert`, `--cert` and `--key`), or a pid's or a path's socket here.
    func open(target: String) throws -> (EndpointClient, EndpointClient.Hello) {
        guard target.hasPrefix("tls://") else { return try Self.open(Self.socketPath(of: target)) }
        let address: (host: String, port: Int)
        do {
            address = try ListenOption.parseTLSAddress(target, option: "attach")
        } catch let error as ValidationError {
            // Said as bad input (exit 2), not with the top command's usage line.
            throw InputError(message: error.message)
        }
        guard let cacert, let cert, let key else {
            let missing = [("--cacert", cacert), ("--cert", cert), ("--key", key)].filter { $0.1 == nil }.map(\.0)
            throw InputError(message: "attaching to \(target) needs \(missing.joined(separator: ", ")): a program elsewhere is reached only with mutual TLS")
        }
        let client: EndpointClient
        do {
            client = try EndpointClient.connect(host: address.host, port: address.port,
                                                identity: .init(caFile: cacert, certificateFile: cert, keyFile: key))
        } catch {
            throw InputError(message: "cannot attach to \(target): \(error)")
        }
        return try EndpointAttach.greet(client, at: target)
    }

    static func open(_ path: String) throws -> (EndpointClient, EndpointClient.Hello) {
        try EndpointAttach.open(path)
    }

    static func open(socket: (pid: Int32, path: String)) throws -> (EndpointClient, EndpointClient.Hello) {
        try EndpointAttach.open(socket: socket)
    }

    /// The endpoint folder, checked before a socket in it is listed or used (owner, mode, not
    /// a link); the socket's peer is checked when it is connected to (``EndpointClient``: the
    /// same user). No folder is no error: no program has listened yet, said by the caller.
    static func checkFolder() throws {
        guard FileManager.default.fileExists(atPath: EndpointDirectory.path) || (try? FileManager.default.destinationOfSymbolicLink(atPath: EndpointDirectory.path)) != nil else { return }
        do {
            try EndpointDirectory.checkForAttaching()
        } catch {
            throw InputError(message: "\(error)")
        }
    }

    /// The socket a target names: a pid's in the endpoint folder, or a socket's path.
    static func socketPath(of target: String) throws -> String {
        if let pid = Int32(target) {
            try checkFolder()
            let path = EndpointDirectory.socketPath(pid: pid)
            guard FileManager.default.fileExists(atPath: path) else {
                throw InputError(message: "no monitor endpoint for pid \(pid) (looked for \(path)); is it running with --listen?")
            }
            return path
        }
        guard FileManager.default.fileExists(atPath: target) else { throw InputError(message: "\(target): no such socket") }
        var info = stat()
        guard stat(target, &info) == 0, info.st_mode & S_IFMT == S_IFSOCK else {
            throw InputError(message: "\(target) is not a socket; give a pid, or a socket from `reqtop attach --list`")
        }
        return target
    }

    /// The socket to attach to, from the argument or the list.
    private func resolve() throws -> String {
        if let target = targets.first { return try Self.socketPath(of: target) }
        try Self.checkFolder()
        let programs = Self.programs()
        if list {
            print(TerminalText.clean(programs.isEmpty ? "no program to attach to (in \(EndpointDirectory.path))" : Self.table(programs)))
            throw ExitCode.success
        }
        switch programs.count {
        case 0:
            throw InputError(message: "no program to attach to: no endpoint answers in \(EndpointDirectory.path); "
                                + "start one with `reqtop demo --listen`")
        case 1:
            return programs[0].path
        default:
            print(TerminalText.clean(Self.table(programs)))
            throw InputError(message: "\(programs.count) programs can be attached to; pick one (reqtop attach PID), several (reqtop attach PID PID), or all (reqtop attach --all)")
        }
    }

    /// Headless: events as JSON lines on stdout, the rest on stderr.
    static func printEvents(_ client: EndpointClient, hello: EndpointClient.Hello, recorder: EventLogWriter? = nil) throws {
        let name = "\(hello.name) (pid \(hello.pid))"
        ReqtopMain.printError("reqtop: attached to \(name): \(hello.live) live operations")
        var snapshots = SnapshotRepeat()
        client.run { message in
            snapshots.note(message)
            switch message {
            case .event(let event):
                // Unbuffered, line by line: a pipe reader sees each event as it happens.
                StandardOutput.write(EventLog.line(for: event) + "\n")
                if snapshots.recordsEvents { recorder?.append([event]) }
            case .snapshotEnd:
                break
            case .missed(let count):
                ReqtopMain.printError("reqtop: fell behind and missed \(count) events; a fresh snapshot follows")
            case .error(let text):
                ReqtopMain.printError("reqtop: the program says: \(text)")
            case .hello, .snapshot, .reply, .suspended, .faults, .unreadable:
                break
            }
        }
        ReqtopMain.printError("reqtop: \(name) ended")
    }
}
