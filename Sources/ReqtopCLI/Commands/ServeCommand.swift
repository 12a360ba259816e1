import Foundation
import ArgumentParser
import FaultServer
import ProcessSignals
import RequestMonitor

/// `reqtop serve`: the fault server on its own, to point other tools (or plans) at.
struct ServeCommand: ParsableCommand, RunsASession {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the fault server on 127.0.0.1 until interrupted.",
        discussion: "Prints the URL it listens on, then its routes. Stop it with Ctrl-C."
    )

    @Option(parsing: .unconditional, help: "The port to listen on (0 picks a free one).")
    var port = 0

    func validate() throws {
        guard (0...65535).contains(port) else {
            throw ValidationError("--port must be between 0 and 65535, not \(port)")
        }
    }

    func run() throws {
        let server: FaultServer
        do {
            server = try FaultServer.start(port: port)
        } catch {
            throw InputError(message: "cannot listen on 127.0.0.1:\(port) (\(error))")
        }
        let stop = DispatchSemaphore(value: 0)
        let sources = [SIGINT, SIGTERM, SIGHUP].map { SignalCenter.handle($0) { stop.signal() } }
        // Announced only once the signal handlers are in place, so a script that stops
        // the server as soon as it reads this line gets a clean exit. Written straight to the file handle: a script waiting for this line must not wait
        // for a block-buffered stdout to fill.
        FileHandle.standardOutput.write(Data("reqtop fault server listening on \(server.baseURL.absoluteString)\n\(FaultRoute.routeList)".utf8))
        stop.wait()
        sources.forEach { $0.cancel() }
        server.stop()
    }
}
