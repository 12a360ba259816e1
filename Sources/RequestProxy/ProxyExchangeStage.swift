import Foundation
import RequestOperations

/// Where a ``ProxyExchange`` is, on its client's event loop: one value whose cases hold what
/// each uses (in the style of AsyncHTTPClient's `RequestBag` state), so a stage cannot hold
/// what another needs, and "answered early" or "still streaming" has one truth.
///
/// ```
/// collecting ─startPrepared─▶ answering ─end─▶ answered
///     │ startStreaming            ▲
///     ▼                           │ requestEnded, or the answer ended early
/// receivingRequest ───────────────┘
/// any stage but answered ─client gone, request broken─▶ abandoned
/// ```
enum ProxyExchangeStage {
    /// The head came; its body is read whole before the operation starts.
    case collecting(RequestMessage)
    /// The operation runs (or waits for the client's program) while the request's body still
    /// streams: what the answer did meanwhile is held, to be written once the request is
    /// whole (HTTP/1.1 allows an early answer, but NIO's server pipeline and many clients do
    /// not expect one, and an upstream that answered early let go of the body). Bounded: the
    /// upstream waits once ``ProxyOptions/downloadBuffer`` is held.
    case receivingRequest(held: [ProxyAnswerStep])
    /// The request came whole (or an answer that ended early let go of the rest): the answer
    /// is written as it comes.
    case answering(ProxyAnswerWriting)
    /// The answer ended: written, refused, or cut.
    case answered
    /// Nothing more is written: the client went away (`clientGone`: its operation is not
    /// started if it has not been), or sent what could not be read (answered 400 by NIO).
    case abandoned(clientGone: Bool)

    /// The request is still being answered (the connection is not idle).
    var isUnderWay: Bool {
        switch self {
        case .collecting, .receivingRequest, .answering: true
        case .answered, .abandoned: false
        }
    }
}

/// A step of the upstream's answer, as the transport gave it.
enum ProxyAnswerStep {
    case head(status: Int, headers: [(String, String)])
    case part(Data)
    case end(RequestResult)
}

/// How the answer is being written to the client.
struct ProxyAnswerWriting {
    /// The answer ended before the request did (the upstream answered early, a 413, and took
    /// no more of the body): it is written at once, marked `Connection: close`, and the
    /// connection closed soon after, whatever the client still sends.
    var early = false
    /// Its head was written.
    var began = false
    /// The answer's end is the connection's: an HTTP/1.0 client's answer of no known length
    /// (1.0 has no chunks: the close is its end).
    var endsWithClose = false
}
