import ArgumentParser
import Foundation
import RequestEventFormat
import RequestOperations
import RequestTransportNIO
import Synchronization

/// `--transport urlsession|nio`: what carries the requests' bytes. URLSession
/// (FoundationNetworking) is the default; `nio` is AsyncHTTPClient on SwiftNIO.
enum TransportChoice: String, ExpressibleByArgument, CaseIterable, Sendable {
    case urlsession, nio

    var transport: RequestTransport {
        switch self {
        case .urlsession: SharedSession.shared
        case .nio: NIOTransport.shared
        }
    }
}

struct TransportOption: ParsableArguments {
    /// Transports made for `--proxy`, never freed (see ``make(_:)``).
    private static let kept = Mutex<[NIOTransport]>([])

    @Option(help: "What carries the requests: urlsession (FoundationNetworking, the default) or nio (AsyncHTTPClient on SwiftNIO). A plan's \"transport\" field is used when this is not given.")
    var transport: TransportChoice?

    @Option(name: .customLong("proxy"), help: ArgumentHelp(
        "Send every request through this HTTP proxy (http://[user:password@]host:port), on either transport; NO_PROXY still applies.",
        valueName: "url"))
    var proxy: String?

    /// The transport to use: `choice`, with `--proxy` (or the environment's proxies, read
    /// with curl's rules on both transports) applied. Throws an ``InputError`` for a proxy
    /// that is not an http:// URL; warns on stderr about one in the environment.
    func make(_ choice: TransportChoice) throws -> RequestTransport {
        for problem in ProxySettings.problems() { ReqtopMain.printError("reqtop: \(problem)") }
        guard let proxy else { return choice.transport }
        guard let url = ProxySettings.proxyURL(proxy) else {
            throw InputError(message: "--proxy \(Redactor().redact(url: proxy)): expected an http:// proxy URL (http://host:port)")
        }
        let noProxy = ProxySettings.noProxyList(ProcessInfo.processInfo.environment["NO_PROXY"] ?? ProcessInfo.processInfo.environment["no_proxy"] ?? "")
        ReqtopMain.printError("reqtop: requests go through the proxy \(Redactor().redact(url: url.absoluteString))"
                              + (noProxy.isEmpty ? "" : " (not for \(noProxy.joined(separator: ", ")): NO_PROXY)"))
        switch choice {
        case .nio:
            // Kept for the life of the process, as NIOTransport.shared is (a client must be shut
            // down before it is freed; the process ends first).
            let transport = NIOTransport(proxies: .single(url, noProxy: noProxy))
            Self.kept.withLock { $0.append(transport) }
            return transport
        case .urlsession:
            // libcurl reads these for each transfer, as it reads them from the shell: the same
            // rules as the NIO transport's, set before the first request.
            setenv("http_proxy", url.absoluteString, 1)
            setenv("https_proxy", url.absoluteString, 1)
            return SharedSession.shared
        }
    }
}
