import ArgumentParser
import Foundation
import ReqtopApplication
import RequestEventFormat
import RequestOperations
import RequestTransportNIO
import Synchronization

extension TransportChoice: ExpressibleByArgument {}

struct TransportOption: ParsableArguments {
    /// Transports made for `--proxy`, never freed (see ``make(_:)``).
    private static let kept = Mutex<[NIOTransport]>([])

    @Option(help: "What carries the requests: nio (AsyncHTTPClient on SwiftNIO, the default on Linux) or urlsession (FoundationNetworking; the default where Foundation is Apple's). A plan's \"transport\" field is used when this is not given.")
    var transport: TransportChoice?

    @Option(name: .customLong("proxy"), help: ArgumentHelp(
        "Send every request through this HTTP proxy (http://[user:password@]host:port), on either transport; NO_PROXY still applies.",
        valueName: "url"))
    var proxy: String?

    @Option(name: .customLong("cacert"), help: ArgumentHelp("Also trust the certificate authorities in this PEM file (SSL_CERT_FILE is read the same way). --transport nio.", valueName: "file"))
    var caFile: String?

    @Option(name: .customLong("cert"), help: ArgumentHelp("Present this client certificate (PEM) for mutual TLS, with --key. --transport nio.", valueName: "file"))
    var certificateFile: String?

    @Option(name: .customLong("key"), help: ArgumentHelp("The private key (PEM) of --cert. --transport nio.", valueName: "file"))
    var keyFile: String?

    @Flag(name: .customLong("insecure"), help: "Do not verify TLS certificates at all (development only: said loudly at start). --transport nio.")
    var insecure = false

    /// The transport as the monitor's header names it: `nio`, and `INSECURE TLS` when
    /// certificates are not verified, so a shared screen says so too.
    func label(_ choice: TransportChoice) -> String {
        choice.rawValue + (insecure ? " · INSECURE TLS" : "") + (proxy != nil ? " · via proxy" : "")
    }

    /// The TLS options asked for, `SSL_CERT_FILE` standing in for `--cacert` when not given;
    /// each named as it was given (`names`: a plan's fields, where they came from a plan).
    func tls(names: TLSOptions.Names = TLSOptions.Names()) -> TLSOptions {
        let fromEnvironment = caFile == nil ? ProcessInfo.processInfo.environment["SSL_CERT_FILE"].flatMap { $0.isEmpty || insecure ? nil : $0 } : nil
        var options = TLSOptions(caFile: caFile ?? fromEnvironment, certificateFile: certificateFile, keyFile: keyFile, insecure: insecure)
        options.names = names
        if fromEnvironment != nil { options.names.caFile = "SSL_CERT_FILE" }
        return options
    }

    /// `reqtop proxy`'s upstream leg: the NIO transport with these TLS options, no proxy of
    /// the environment's (an http_proxy naming the proxy itself would loop) but `--proxy`'s
    /// (`chain`, with `NO_PROXY`), and bodies passed as they came. Kept for the life of the
    /// process, as ``make(_:names:)``'s are.
    func proxyUpstream(chain: ProxySettings = ProxySettings()) throws -> NIOTransport {
        let transport: NIOTransport
        do {
            transport = try NIOTransport(tls: tls(), proxies: chain, decodesBodies: false)
        } catch let error as TLSOptionError {
            throw InputError(message: error.description)
        }
        Self.kept.withLock { $0.append(transport) }
        return transport
    }

    /// The transport to use: `choice`, with `--proxy` (or the environment's proxies, read
    /// with curl's rules on both transports) applied. Throws an ``InputError`` for a proxy
    /// that is not an http:// URL; warns on stderr about one in the environment.
    /// - Parameter names: where each TLS setting came from (the flags unless a plan's).
    func make(_ choice: TransportChoice, names: TLSOptions.Names = TLSOptions.Names()) throws -> RequestTransport {
        for problem in ProxySettings.problems() { ReqtopMain.printError("reqtop: \(problem)") }
        let tls = self.tls(names: names)
        let asked = caFile != nil || certificateFile != nil || keyFile != nil || insecure
        if choice == .urlsession, asked {
            throw InputError(message: "--cacert, --cert, --key and --insecure need --transport nio: FoundationNetworking on Linux has no API for them")
        }
        if insecure {
            ReqtopMain.printError("reqtop: WARNING: --insecure: TLS certificates are not verified; anyone on the path can read and change this traffic")
        }
        guard proxy != nil || (choice == .nio && !tls.isDefault) else { return choice.transport }
        var proxies = ProxySettings.fromEnvironment()
        var proxyURL: URL?
        if let proxy {
            guard let url = ProxySettings.proxyURL(proxy) else {
                throw InputError(message: "--proxy \(Redactor().redact(url: proxy)): expected an http:// proxy URL (http://host:port)")
            }
            proxyURL = url
            proxies = .single(url, noProxy: proxies.noProxy)
            ReqtopMain.printError("reqtop: requests go through the proxy \(Redactor().redact(url: url.absoluteString))"
                                  + (proxies.noProxy.isEmpty ? "" : " (not for \(proxies.noProxy.joined(separator: ", ")): NO_PROXY)"))
        }
        switch choice {
        case .nio:
            // Kept for the life of the process, as NIOTransport.shared is (a client must be shut
            // down before it is freed; the process ends first).
            let transport: NIOTransport
            do {
                transport = try NIOTransport(tls: tls, proxies: proxies)
            } catch let error as TLSOptionError {
                throw InputError(message: error.description)
            }
            Self.kept.withLock { $0.append(transport) }
            return transport
        case .urlsession:
            guard let url = proxyURL else { return choice.transport }
            // libcurl reads these for each transfer, as it reads them from the shell: the same
            // rules as the NIO transport's, set before the first request.
            setenv("http_proxy", url.absoluteString, 1)
            setenv("https_proxy", url.absoluteString, 1)
            return SharedSession.shared
        }
    }
}
