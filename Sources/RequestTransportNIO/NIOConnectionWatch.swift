import Logging
import Synchronization

/// Which connection AsyncHTTPClient gave a request, and whether it had carried one before.
///
/// AsyncHTTPClient says which connection a request runs on only in the metadata of the
/// request's logger (`ahc-connection-id`, set when the request is scheduled on an HTTP/1.1
/// connection; its HTTP/2 streams do not say). Each hop of an exchange therefore gets a
/// logger whose handler hears that id as the client sets it and passes it on. It logs
/// nothing and keeps no metadata, and its level is `.critical` so the client builds none of
/// its debug messages: listening at `.debug` for "Request was scheduled on connection" cost
/// 9–10 % of the CPU of a chain of small GETs.
struct ConnectionReportingLogHandler: LogHandler {
    var metadata: Logger.Metadata {
        get { [:] }
        set {}
    }
    var logLevel: Logger.Level {
        get { .critical }
        set {}
    }
    let report: @Sendable (Int) -> Void

    init(report: @escaping @Sendable (Int) -> Void) {
        self.report = report
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { nil }
        set {
            guard key == "ahc-connection-id", case .string(let text)? = newValue, let id = Int(text) else { return }
            report(id)
        }
    }

    func log(event: LogEvent) {}
}

/// The connections a transport's requests have used. AsyncHTTPClient numbers connections in
/// the order it opens them, with one counter for the whole process (other clients' connections
/// take numbers too), so a number above the highest seen is new; a lower one is new only if
/// it was skipped over and not seen since. Skipped numbers are kept up to a limit, the oldest
/// forgotten first (they are other clients' connections, or ones that never carried a request).
final class ConnectionLedger: Sendable {
    static let skippedLimit = 4096
    private let state = Mutex<(highest: Int, skipped: Set<Int>)>((-1, []))

    /// Whether this is the first request `connection` carries (and from now on it is not).
    func firstUse(of connection: Int) -> Bool {
        state.withLock { state in
            guard connection > state.highest else { return state.skipped.remove(connection) != nil }
            let lowest = max(state.highest + 1, connection - Self.skippedLimit)
            for skipped in lowest..<connection { state.skipped.insert(skipped) }
            state.highest = connection
            if state.skipped.count > Self.skippedLimit {
                let floor = connection - Self.skippedLimit
                state.skipped = state.skipped.filter { $0 >= floor }
            }
            return true
        }
    }
}
