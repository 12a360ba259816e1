import ArgumentParser
import RequestOperations
import RequestTransportNIO

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
    @Option(help: "What carries the requests: urlsession (FoundationNetworking, the default) or nio (AsyncHTTPClient on SwiftNIO). A plan's \"transport\" field is used when this is not given.")
    var transport: TransportChoice?
}
