import Foundation
import ReqtopApplication
import ArgumentParser
import FaultServer
import ProcessSignals
import RequestMonitor

/// `reqtop serve`: the fault server on its own, to point other tools (or plans) at.
struct ServeCommand: ParsableCommand, RunsASession {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the fault server on 127.0.0.1 until interrupted, or serve a recording's answers (--from).",
        discussion: """
        Prints the URL it listens on, then its routes. Stop it with Ctrl-C. With --from, every \
        request is answered the way its upstream answered it in the recording (status, headers, \
        body as recorded, latency, closed and reset connections, timeouts), matched by method, \
        path and query, in attempt order; see docs/whatif.md.
        """
    )

    @Option(name: .customLong("from"), help: ArgumentHelp("A recording (JSON lines or HAR) whose answers to serve.", valueName: "recording"))
    var from: String?

    @Option(parsing: .unconditional, help: "The port to listen on (0 picks a free one).")
    var port = 0

    @Flag(help: "Serve HTTPS (HTTP/2 or HTTP/1.1, as the client chooses by ALPN) with a certificate made now for 127.0.0.1 and localhost; the authority that signed it is printed (for --cacert).")
    var tls = false

    func validate() throws {
        guard (0...65535).contains(port) else {
            throw ValidationError("--port must be between 0 and 65535, not \(port)")
        }
    }

    func run() throws {
        var script: ScriptedAnswers?
        if let from {
            let built = RecordedUpstream.build(try DiffCommand.events(from))
            guard built.attempts > 0 else {
                throw InputError(message: "\(from): no recorded answers to serve (no attempt that reached an upstream was recorded)")
            }
            script = built.answers
            RecordedUpstream.sayUnservable(built.answers, what: "a client")
            ReqtopMain.printError("reqtop: serving \(built.attempts) recorded answers from \(from)"
                                  + (built.skipped > 0 ? " (\(built.skipped) attempts left out: injected, cancelled or never answered)" : ""))
        }
        let server: FaultServer
        let certificates = tls ? try TestCertificates.make() : nil
        defer { certificates?.remove() }
        do {
            // With TLS, HTTP/2 by ALPN too: a recorded gRPC call is answered over what it needs.
            server = try FaultServer.start(port: port, tls: certificates, http2: certificates != nil, script: script)
        } catch {
            throw InputError(message: "cannot listen on 127.0.0.1:\(port) (\(error))")
        }
        let stop = DispatchSemaphore(value: 0)
        let sources = [SIGINT, SIGTERM, SIGHUP].map { SignalCenter.handle($0) { stop.signal() } }
        // Announced only once the signal handlers are in place, so a script that stops
        // the server as soon as it reads this line gets a clean exit. Written straight to the file handle: a script waiting for this line must not wait
        // for a block-buffered stdout to fill.
        let listing = (certificates.map { "certificate authority (for --cacert): \($0.caFile)\n" } ?? "")
            + (script == nil ? FaultRoute.routeList : "answering as recorded in \(from ?? "")\n")
        FileHandle.standardOutput.write(Data("reqtop fault server listening on \(server.baseURL.absoluteString)\n\(listing)".utf8))
        stop.wait()
        sources.forEach { $0.cancel() }
        server.stop()
    }
}
