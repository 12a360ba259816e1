import ArgumentParser
import Foundation
import ReqtopApplication
import RequestEndpoint
import RequestEventFormat
import RequestOperations

/// `--listen`, `--read-only` and `--accept-faults`: open a monitor endpoint so `reqtop attach` can watch (and,
/// unless read-only, steer) this run from another terminal.
struct ListenOption: ParsableArguments {
    @Flag(help: "Open a monitor endpoint (a Unix socket) for `reqtop attach`; its path is printed on stderr.")
    var listen = false

    @Flag(name: .customLong("read-only"), help: "With --listen: attached monitors may watch but not send commands.")
    var readOnly = false

    @Flag(name: .customLong("accept-faults"),
          help: "With --listen: attached monitors may inject faults (! and Z on the Hosts screen); each monitor's are removed when it detaches.")
    var acceptFaults = false

    @Option(name: .customLong("listen-on"),
            help: ArgumentHelp("Also listen on TCP, with mutual TLS only, for a monitor on another machine (implies --listen).", valueName: "tls://ADDR:PORT"))
    var listenOn: String?

    @Option(name: .customLong("listen-cert"), help: ArgumentHelp("With --listen-on: this program's certificate (PEM).", valueName: "file"))
    var listenCert: String?

    @Option(name: .customLong("listen-key"), help: ArgumentHelp("With --listen-on: its private key (PEM).", valueName: "file"))
    var listenKey: String?

    @Option(name: .customLong("listen-client-ca"),
            help: ArgumentHelp("With --listen-on: the authority whose certificates monitors must present (PEM).", valueName: "file"))
    var listenClientCA: String?

    @Flag(name: .customLong("accept-commands"),
          help: "With --listen-on: remote monitors may send commands (cancel, retry, pause...); without it they only watch. Faults also need --accept-faults.")
    var acceptCommands = false

    /// `--listen-on`'s address, read.
    var tlsAddress: (host: String, port: Int)? {
        get throws {
            guard let listenOn else { return nil }
            return try Self.parseTLSAddress(listenOn, option: "--listen-on")
        }
    }

    /// `tls://HOST:PORT` (`[::1]:PORT` for IPv6) as host and port; the words name what is wrong.
    static func parseTLSAddress(_ text: String, option: String) throws -> (host: String, port: Int) {
        guard text.hasPrefix("tls://") else {
            throw ValidationError("\(option) \(text): must start with tls:// (the endpoint listens on TCP only with TLS)")
        }
        let rest = text.dropFirst(6)
        guard let colon = rest.lastIndex(of: ":"), let port = Int(rest[rest.index(after: colon)...]), (0...65535).contains(port) else {
            throw ValidationError("\(option) \(text): expected tls://ADDR:PORT with a port from 0 to 65535")
        }
        var host = String(rest[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else { throw ValidationError("\(option) \(text): no address before the port") }
        return (host, port)
    }

    func validate() throws {
        if listenOn != nil {
            _ = try tlsAddress
            let missing = [("--listen-cert", listenCert), ("--listen-key", listenKey), ("--listen-client-ca", listenClientCA)].filter { $0.1 == nil }.map(\.0)
            if !missing.isEmpty {
                throw ValidationError("--listen-on needs \(missing.joined(separator: ", ")): the endpoint on TCP speaks only mutual TLS")
            }
        } else {
            for (name, value) in [("--listen-cert", listenCert), ("--listen-key", listenKey), ("--listen-client-ca", listenClientCA)] where value != nil {
                throw ValidationError("\(name) needs --listen-on tls://ADDR:PORT")
            }
            if acceptCommands { throw ValidationError("--accept-commands needs --listen-on (local monitors may always send commands, unless --read-only)") }
        }
        if acceptCommands, readOnly {
            throw ValidationError("--accept-commands and --read-only disagree")
        }
        if readOnly, !listening {
            throw ValidationError("--read-only needs --listen (it says what attached monitors may do)")
        }
        if acceptFaults, !listening {
            throw ValidationError("--accept-faults needs --listen (it says what attached monitors may do)")
        }
        if acceptFaults, readOnly {
            throw ValidationError("--accept-faults and --read-only disagree: a read-only endpoint takes no faults")
        }
    }

    /// `--listen`, or `--listen-on`, which implies it.
    var listening: Bool { listen || listenOn != nil }

    /// Opens the endpoint when asked, and says where.
    func start(_ queue: RequestQueue, name: String, redactor: Redactor?) throws -> MonitorEndpoint? {
        guard listening else { return nil }
        do {
            var options = MonitorEndpoint.Options(readOnly: readOnly, acceptsFaults: acceptFaults, name: name)
            options.redactor = redactor
            if let address = try tlsAddress, let listenCert, let listenKey, let listenClientCA {
                var tls = EndpointTLS(host: address.host, port: address.port, certificateFile: listenCert, keyFile: listenKey, clientCAFile: listenClientCA)
                tls.acceptsCommands = acceptCommands
                options.tls = tls
            }
            let endpoint = try queue.startMonitorEndpoint(options: options)
            ReqtopMain.printError("reqtop: monitor endpoint at \(endpoint.path)\(readOnly ? " (read-only)" : acceptFaults ? " (takes faults)" : ""); attach with: reqtop attach \(getpid())")
            if let tls = options.tls, let port = endpoint.tlsPort {
                let shown = HostAddress.bracketed(tls.host)
                ReqtopMain.printError("reqtop: monitor endpoint on tls://\(shown):\(port) (mutual TLS; remote monitors "
                                      + (readOnly || !acceptCommands ? "only watch" : acceptFaults ? "may send commands and faults" : "may send commands, no faults")
                                      + "); attach with: reqtop attach tls://HOST:\(port) --cacert CA --cert CERT --key KEY")
            }
            return endpoint
        } catch {
            throw InputError(message: "cannot open the monitor endpoint: \(error)")
        }
    }
}
