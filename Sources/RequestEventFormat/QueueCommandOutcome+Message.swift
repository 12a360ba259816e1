import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RequestOperations

/// The words for a command's outcome, made where a person reads them: the live monitor's
/// bottom line, an attached monitor's (which gets the outcome typed over the endpoint), and
/// the endpoint's `message` field for scripts.
extension QueueCommandOutcome {
    public var message: String {
        switch self {
        case .retryingNow(let id): "retrying \(id) now"
        case .runningAgain(let id, let again): "running \(id) again as \(again)"
        case .sentEdited(let id, let edited): "sent the edited \(id) as \(edited)"
        case .faultSet(let host, let what): "FAULTS ON: injecting \(what) into every request to \(host) (! again removes it, Z clears all)"
        case .faultRemoved(let host): "no more faults injected into \(host)"
        case .faultsCleared(let count): count == 0 ? "no faults were injected" : "cleared \(count) injected fault\(count == 1 ? "" : "s")"
        case .faultsNotAccepted: "refused: this program takes no faults from an attached monitor (MonitorEndpoint.Options.acceptsFaults)"
        case .readOnly: "refused: this endpoint is read-only"
        case .breakpointSet(let id, let match):
            Self.breakpointSetWords(id: id, match: match)
        case .badMatch(let reason): "not a breakpoint: \(reason)"
        case .breakpointsCleared(let count): count == 0 ? "no breakpoints of yours were set" : "removed \(count) breakpoint\(count == 1 ? "" : "s"): what they stopped goes on"
        case .breakpointResolved(let id, let how): "\(id): \(how)"
        case .notStopped(let id): "\(id) is not stopped at a breakpoint"
        case .breakpointEnabled(let id, let enabled): enabled ? "breakpoint \(id) is on again" : "breakpoint \(id) is off: what it stopped goes on"
        case .breakpointRemoved(let id): "removed breakpoint \(id): what it stopped goes on"
        case .unknownBreakpoint(let id): "no breakpoint \(id)"
        case .notCarriedOut(let reason): "refused: \(reason)"
        case .notWaitingToRetry(let id): "\(id) is not waiting to retry"
        case .cancelled(let id): "cancelled \(id)"
        case .alreadyEnded(let id): "\(id) has already ended"
        case .cancelledAll(let count): "cancelled \(count) operation\(count == 1 ? "" : "s")"
        case .paused: "paused: no new attempt starts"
        case .resumed: "resumed"
        case .released(let batches) where batches.isEmpty: "no batch holds a request"
        case .released(let batches): "released " + batches.map { "\($0.count) from \($0.name)" }.joined(separator: ", ")
        case .unknownOperation(let id): "no operation \(id) in this program"
        case .isolated(let host): "isolated \(host): nothing is sent to it until its circuit is closed (c)"
        case .circuitClosed(let host): "closed the circuit of \(host): what it held goes out"
        case .circuitAlreadyClosed(let host): "the circuit of \(host) is closed already"
        case .noCircuitBreaker: "this queue has no circuit breakers"
        }
    }

    /// "stops … before sending", or for an `after …` match "… after the answer": the stage
    /// said once, in its own words.
    private static func breakpointSetWords(id: Int, match: String) -> String {
        let words = match.split(separator: " ", maxSplits: 1).map(String.init)
        if let first = words.first?.lowercased(), first == "after" {
            let rest = words.count > 1 ? words[1] : "every request"
            return "BREAK: breakpoint \(id) stops \(rest) after the answer, before the retry decision (on one: s go on, a answer instead, f fail, X cancel)"
        }
        let rest = first(words) == "before" ? (words.count > 1 ? words[1] : "") : match
        return "BREAK: breakpoint \(id) stops \(rest.isEmpty ? "every request" : rest) before sending (on one: s send, e edit, a answer, f fail, X cancel)"
    }

    private static func first(_ words: [String]) -> String? { words.first?.lowercased() }
}
