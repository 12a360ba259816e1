/// Why a row is held (the WAIT column, the detail's flow): a kind, not words to search.
public enum HoldReason: Sendable, Equatable {
    /// An interceptor holds it in this batch until the batch is released.
    case batch(String)
    /// Its host's circuit breaker is open (or half-open with its probe out).
    case circuit
    /// Its host asked every client to slow down.
    case rateLimit
    /// This reactor runs (it started the run, or the reactor holds new requests meanwhile).
    case reactor(String)
    /// Stopped at this breakpoint (before its attempt was sent, or after its answer), until
    /// a person resolves it.
    case breakpoint(id: Int, rule: String, afterResponse: Bool = false)

    /// What the detail view says: "held: waiting for …".
    public var description: String {
        switch self {
        case .batch(let name): "batch \(name)"
        case .circuit: "circuit"
        case .rateLimit: "rate limit"
        case .reactor(let name): name
        case .breakpoint(let id, let rule, false): "you: breakpoint \(id) (\(rule.isEmpty ? "every request" : rule)) — s send, e edit, a answer, f fail, X cancel"
        case .breakpoint(let id, let rule, true):
            "you: breakpoint \(id) (after the answer, \(rule.isEmpty ? "every request" : rule)) — s on to the retry decision, a answer instead, f fail it, X cancel"
        }
    }

    /// In a word, for the table's WAIT column.
    public var short: String {
        switch self {
        case .batch: "batch"
        case .breakpoint: "break"
        default: description
        }
    }
}
