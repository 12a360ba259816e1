import Foundation
import RequestOperations
import RequestTransportNIO

/// `--transport urlsession|nio`: what carries the requests' bytes. On Linux the default is
/// `nio` (AsyncHTTPClient on SwiftNIO): FoundationNetworking there burns 80–180 % of a core
/// while requests wait and runs 6 per host. Where Foundation is Apple's, `urlsession`.
package enum TransportChoice: String, CaseIterable, Sendable {
    case urlsession, nio

    /// The transport when neither `--transport` nor a plan names one.
    package static var platformDefault: TransportChoice {
        #if canImport(FoundationNetworking)
        .nio
        #else
        .urlsession
        #endif
    }

    package var transport: RequestTransport {
        switch self {
        case .urlsession: SharedSession.shared
        case .nio: NIOTransport.shared
        }
    }
}
