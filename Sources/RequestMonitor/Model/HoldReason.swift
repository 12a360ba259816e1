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

    /// What the detail view says: "held: waiting for …".
    public var description: String {
        switch self {
        case .batch(let name): "batch \(name)"
        case .circuit: "circuit"
        case .rateLimit: "rate limit"
        case .reactor(let name): name
        }
    }

    /// In a word, for the table's WAIT column.
    public var short: String {
        switch self {
        case .batch: "batch"
        default: description
        }
    }
}
