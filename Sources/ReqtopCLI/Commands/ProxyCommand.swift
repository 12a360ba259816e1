import ArgumentParser
import Foundation
import ReqtopApplication
import Synchronization
import RequestArchive
import RequestEventFormat
import RequestOperations
import RequestProxy
import RequestTransportNIO

/// `reqtop proxy`: an HTTP forward proxy (HTTP/1.1; HTTP/2 to clients that choose it) whose every request is an operation on the
/// monitor — any program, in any language, seen, held, answered and recorded.
struct ProxyCommand: ParsableCommand, RunsASession {
    static let configuration = CommandConfiguration(
        commandName: "proxy",
        abstract: "Watch, hold and answer the requests of any program through an HTTP proxy.",
        discussion: """
        Point a program at it (http_proxy=http://127.0.0.1:8080 https_proxy=http://127.0.0.1:8080) \
        and each request it sends is one operation in the monitor: body, filters, copy as curl, \
        breakpoints, faults, recordings. By default the proxy is transparent: one attempt, no \
        redirect followed, no cookie jar, bodies passed as they came. HTTPS is decrypted with a \
        certificate authority of this machine's own, made on first use (see --ca for where it is \
        and how to trust it); --tunnel passes hosts through undecrypted, --no-intercept all of \
        them. A client that offers HTTP/2 (browsers, curl, gRPC) gets it, each stream an \
        operation; --http1-only offers HTTP/1.1 alone. \
        It listens on 127.0.0.1 only unless --allow-remote, which needs --auth. With \
        --proxy, everything it sends upstream goes through that proxy (NO_PROXY hosts direct). \
        Ctrl-C or SIGTERM (with --no-tui), or q in the monitor, stops listening and lets requests \
        in flight end for up to 2 s before cancelling them (a second Ctrl-C cancels at once). \
        See docs/proxy.md.
        """
    )

    @Option(help: "The port to listen on (0 picks a free one).")
    var port = 8080

    @Option(name: .customLong("bind"), help: ArgumentHelp("The address to listen on; anything but loopback needs --allow-remote and --auth.", valueName: "address"))
    var bind = "127.0.0.1"

    @Flag(name: .customLong("allow-remote"), help: "Allow --bind to an address other machines can reach (with --auth).")
    var allowRemote = false

    @Option(name: .customLong("auth"), help: ArgumentHelp("Clients must send these proxy credentials (Basic).", valueName: "user:password"))
    var auth: String?

    @Flag(name: .customLong("ca"), help: "Print where the proxy's certificate authority is and how to make clients trust it, then exit.")
    var showCA = false

    @Option(name: .customLong("ca-dir"), help: ArgumentHelp("The certificate authority's folder (default $XDG_CONFIG_HOME/reqtop/ca).", valueName: "folder"))
    var caFolder: String?

    @Option(name: .customLong("tunnel"), help: ArgumentHelp("Pass this host through undecrypted (repeatable; *.example.com for its subdomains): for clients that pin certificates.", valueName: "host"))
    var tunnel: [String] = []

    @Flag(name: .customLong("no-intercept"), help: "Pass all HTTPS through undecrypted (no certificate authority is made or needed).")
    var noIntercept = false

    @Flag(name: .customLong("http1-only"), help: "Speak HTTP/1.1 only to clients: offer no h2 by ALPN on decrypted HTTPS, and relay a plain-text HTTP/2 preface after CONNECT as bytes. By default clients that offer HTTP/2 get it, each stream an operation.")
    var http1Only = false

    @Option(name: .customLong("config"), help: ArgumentHelp("Resilience for every proxied request, in a plan's words: retry, timeout, deadline, readTimeout, hedge, redirects, retryBudgetPerHost, circuitBreaker, rateLimitPushback, maxConcurrentPerHost, faults (see docs/proxy.md). Without it the proxy is transparent.", valueName: "file"))
    var config: String?

    @Option(name: .customLong("faults"), help: ArgumentHelp("Inject the faults of this file ({\"faults\": [...]}, a plan's fault rules) into the proxied requests.", valueName: "file"))
    var faults: String?

    @OptionGroup var display: DisplayOptions

    @OptionGroup var bodyCapOption: BodyCapOption

    @OptionGroup var recording: RecordingOptions

    @OptionGroup var endpoint: ListenOption

    @OptionGroup var transport: TransportOption

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be between 0 and 65535, not \(port)") }
        var probe = ProxyOptions()
        probe.host = bind
        if !probe.isLoopback {
            guard allowRemote else {
                throw ValidationError("--bind \(bind) is reachable from other machines: say --allow-remote (and give --auth) if that is meant")
            }
            guard auth != nil else {
                throw ValidationError("--allow-remote needs --auth user:password: the proxy is never an open relay")
            }
        }
        if let auth, ProxyCredentials(auth) == nil { throw ValidationError("--auth expects user:password") }
        if !tunnel.isEmpty, noIntercept { throw ValidationError("--tunnel and --no-intercept together: --no-intercept already tunnels every host") }
        if transport.transport == .urlsession { throw ValidationError("--transport urlsession: the proxy's upstream leg is the NIO transport (it streams bodies both ways)") }
        if let proxy = transport.proxy {
            guard let url = ProxySettings.proxyURL(proxy) else {
                throw ValidationError("--proxy \(Redactor().redact(url: proxy)): expected an http:// proxy URL (http://[user:password@]host:port)")
            }
            if let chain = ProxyChain(url: url), chain.port == port, [bind, "localhost", "127.0.0.1", "::1"].contains(chain.host.lowercased()) {
                throw ValidationError("--proxy \(chain.name) is this proxy itself: every request would come back to it")
            }
        }
    }

    func run() throws {
        let folder = caFolder ?? LocalCertificateAuthority.defaultFolder
        if showCA { return try printAuthority(folder: folder) }
        ProxyMemory.keepFreedMemoryForReuse()
        let settings = try config.map(ProxyConfig.load)
        var faultRules = settings?.faults ?? []
        if let faults {
            let only = try ProxyConfig.load(path: faults)
            if let other = only.fields.first(where: { $0 != "faults" }) {
                throw InputError(message: "\(faults): \(other): --faults takes only \"faults\"; put the rest in --config")
            }
            faultRules += only.faults
        }
        var options = ProxyOptions()
        if let settings { (options.operation, options.operationByHost) = (settings.options, settings.optionsByHost) }
        options.host = bind
        options.port = port
        options.credentials = auth.flatMap(ProxyCredentials.init)
        options.tunnelHosts = tunnel
        options.offersHTTP2 = !http1Only
        // A client that refuses the authority's certificate is told of once per host: at once
        // without the monitor, after it with one (the screen is the monitor's meanwhile; the
        // row is there).
        let output = display.mode
        let refusals = LaterLines()
        options.onClientRefusal = { _, program, reason in
            let line = "reqtop: \(program.map { $0 + ": " } ?? "")\(reason)"
            if case .monitor = output { refusals.add(line) } else { ReqtopMain.printError(line) }
        }
        // As many clients as the descriptors carry: past the limit a connection would fail
        // somewhere in the middle instead of being closed at once as it comes.
        options.maxConnections = min(options.maxConnections, DescriptorLimit.connectionCap(descriptors: DescriptorLimit.raiseToHard()))
        do {
            options.upstreamTLS = try transport.tls().clientConfiguration()
        } catch let error as TLSOptionError {
            throw InputError(message: error.description)
        }
        if let bodyCap = bodyCapOption.bodyCap { options.operation.responseBodyCap = bodyCap }
        var made = false
        if !noIntercept {
            do {
                let (authority, new) = try LocalCertificateAuthority.loadOrMake(in: folder)
                (options.authority, made) = (authority, new)
            } catch let problem as LocalCertificateAuthority.Problem {
                throw InputError(message: problem.description)
            }
        }
        if transport.insecure {
            ReqtopMain.printError("reqtop: WARNING: --insecure: upstream TLS certificates are not verified; clients of this proxy are told nothing of it")
        }
        var chainSettings = ProxySettings()
        if let proxy = transport.proxy, let url = ProxySettings.proxyURL(proxy) {
            // Its requests go through the chained proxy as the transport's do; its tunnels and
            // upgrades with a CONNECT to it; NO_PROXY's hosts direct, for both.
            chainSettings = .single(url, noProxy: ProxySettings.fromEnvironment().noProxy)
            let settings = chainSettings
            options.chain = ProxyChain(url: url) { host in
                settings.proxy(for: URL(string: "https://\(HostAddress.bracketed(host))/") ?? url) == nil
            }
            ReqtopMain.printError("reqtop: everything this proxy sends upstream goes through \(Redactor().redact(url: url.absoluteString))"
                                  + (chainSettings.noProxy.isEmpty ? "" : " (not for \(chainSettings.noProxy.joined(separator: ", ")): NO_PROXY)"))
        }
        let upstream = try transport.proxyUpstream(chain: chainSettings)
        // A proxy's client retries if it wants to: no budget, breaker or pushback of the
        // proxy's own holds a request back by default; no cookie jar sends cookies it did not.
        // With --config, the plan's: budget, breaker and pushback by default, as for `reqtop run`.
        let queue = RequestQueue(maxConcurrentRequests: options.maxConnections, maxConcurrentRequestsPerHost: settings?.maxConcurrentPerHost,
                                 transport: upstream, earlyRetry: settings.map { _ in .init() }, retryBudget: settings?.retryBudgetPerHost,
                                 circuitBreaker: settings?.circuitBreaker, rateLimits: settings?.rateLimitPushback ?? false, cookies: nil)
        for rule in faultRules { queue.faults.add(rule) }
        if !faultRules.isEmpty {
            ReqtopMain.printError("reqtop: FAULTS ON: \(faultRules.count) rule\(faultRules.count == 1 ? "" : "s") inject failures into proxied requests; every injected answer says so (X-Reqtop-Injected) and in its events")
        }
        let server: ProxyServer
        do {
            // Bound now, taking connections once the recording and the session listen: a
            // client that connects at once (a program retrying) must not be served unrecorded.
            server = try ProxyServer.start(queue: queue, options: options, accepting: false)
        } catch {
            throw InputError(message: "cannot listen on \(bind):\(port) (\(error))")
        }
        defer { server.stop() }
        let address = "http://" + HostAddress.authority(bind, port: server.port)
        if !options.isLoopback {
            ReqtopMain.printError("reqtop: WARNING: the proxy listens on \(bind), reachable from the network; clients must send the --auth credentials")
        }
        if options.credentials == nil, !server.tellsClientOwners {
            ReqtopMain.printError("reqtop: WARNING: this machine does not say which user a connection comes from (no sock_diag), so any user of it "
                                  + "can send through this proxy, with your certificates and to your loopback services; --auth requires credentials")
        }
        if made, let authority = options.authority {
            ReqtopMain.printError("reqtop: made a certificate authority for this machine in \(authority.folder); trust \(authority.certificateFile) in clients (reqtop proxy --ca says how)")
        }
        ReqtopMain.printError("reqtop: proxy listening on \(address)"
                              + (options.authority == nil ? " (HTTPS tunnelled, not decrypted)" : " (HTTPS decrypted with \(options.authority!.certificateFile))"))
        ReqtopMain.printError("reqtop: use it with: export http_proxy=\(address) https_proxy=\(address)")
        let recorder = try recording.start(queue.events, inputs: [config, faults].compactMap { $0 },
                                           settings: QueueSettings(maxConcurrent: options.maxConnections, maxConcurrentPerHost: settings?.maxConcurrentPerHost,
                                                                   retryBudgetPerHost: settings?.retryBudgetPerHost, circuitBreaker: settings?.circuitBreaker,
                                                                   rateLimitPushback: settings?.rateLimitPushback ?? false),
                                           insecure: transport.insecure)
        let listening = try endpoint.start(queue, name: "reqtop proxy \(address)", redactor: recording.redactor)
        defer { listening?.stop() }
        let summary: RunSummary
        let source = "proxy \(address) · " + (options.authority == nil ? "HTTPS tunnelled" : "HTTPS decrypted")
            + (config.map { " · " + URL(fileURLWithPath: $0).lastPathComponent } ?? " · transparent") + (transport.insecure ? " · INSECURE TLS" : "")
        // At a signal, what is in flight is relayed to its end (a client that has its answer
        // whole must not find it recorded as cancelled), for a moment; then it is cancelled.
        let session = try QueueSession.open(queue, mode: output, source: source, redactor: recording.redactor,
                                            onSignal: .drain(within: Self.stopGrace, begin: { server.drain() }))
        summary = session.run {
            server.accept()
            session.waitUntilStopping()
        }
        // Held while the monitor had the screen; said as it came without one.
        refusals.taken().forEach(ReqtopMain.printError)
        // A proxy that was stopped did its job: its clients' failures are not its exit status.
        try RecordingOptions.end(recorder, hub: queue.events, summary: summary, status: 0)
    }

    /// How long requests in flight may go on after Ctrl-C or SIGTERM.
    static let stopGrace: TimeInterval = 2

    private func printAuthority(folder: String) throws {
        let authority: LocalCertificateAuthority
        let made: Bool
        do {
            (authority, made) = try LocalCertificateAuthority.loadOrMake(in: folder)
        } catch let problem as LocalCertificateAuthority.Problem {
            throw InputError(message: problem.description)
        }
        let file = authority.certificateFile
        print(ProxyTrustGuide.text(certificateFile: file, folder: authority.folder, made: made))
    }
}

/// Lines to print once the monitor has given the terminal back.
private final class LaterLines: Sendable {
    private let lines = Mutex<[String]>([])

    func add(_ line: String) {
        lines.withLock { $0.append(line) }
    }

    func taken() -> [String] {
        lines.withLock { lines in defer { lines = [] }; return lines }
    }
}
