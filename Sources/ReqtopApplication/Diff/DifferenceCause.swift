import Foundation

/// Why an operation differs between two runs, where the difference is one reqtop can
/// explain (docs/whatif.md, "Reading the comparison"). A difference with no cause is
/// unexplained: the summary counts those, and the exit status is 1 when there is one.
package enum DifferenceCause: String, CaseIterable {
    /// It ended alike, in a time that differs by more than ``noise`` but within
    /// ``tolerance(of:)``: the re-run's clocks, threads and sockets are not the incident's.
    case timing
    /// Its request held a redacted value, sent to the what-if's own server as the
    /// placeholder: a server that reads the value could have answered otherwise.
    case redacted
    /// Operations to one host with the same outcomes and statuses, and as many attempts in
    /// all, in both runs, shared out differently among them: requests that met a limit
    /// together (a retry budget, a breaker's one probe) and were let through in another order;
    /// or the same wait moved from one operation to another (which of the requests made at one
    /// moment got the last free slot); or an operation that ended alike whose whole change in
    /// time was a longer or shorter wait for a free slot (its neighbours took them first).
    case order
    /// Operations to one host that met its circuit breaker as it opened or probed, with the
    /// same outcomes and statuses in both runs but a few attempts more or fewer: which of the
    /// requests failing at one moment got through before the breaker opened, or which waiting
    /// one carried its probe, was a race between simultaneous requests (no more of them than
    /// there are such operations).
    case breakerRace
    /// The recording's answer was reqtop's own (an injected fault, or a person's answer at a
    /// breakpoint), which a what-if re-run does not carry over: it asked the upstream instead.
    case injected
    /// A what-if re-run did not send it again, and said why on stderr (its body was not
    /// recorded, a value it needs was redacted): there is nothing to compare.
    case notResent
    /// The recording ends before it did (cut off, or the program stopped with it under way):
    /// there is no recorded end to compare the re-run's with.
    case unfinished

    /// A duration closer than this is the same.
    package static let noise: TimeInterval = 0.05

    /// How far a duration may be from the recorded one and still count as the same run:
    /// a quarter of a second, or a fifth of the recorded time where that is more.
    package static func tolerance(of recorded: TimeInterval) -> TimeInterval {
        max(0.25, recorded * 0.2)
    }

    /// What it means, for the report.
    package var meaning: String {
        switch self {
        case .timing: "the same end, in a time within the tolerance (0.25 s, or 20 %)"
        case .redacted: "its request held a redacted value, sent to the what-if's server as the placeholder"
        case .order: "the same outcomes and attempts for this host's operations, shared out in another order (or the same wait for a slot, taken by another)"
        case .breakerRace: "the same outcomes for this host's operations, which met its breaker as it opened: a few attempts more or fewer got in before it did, or another carried its probe"
        case .injected: "the recording's answer was reqtop's own, an injected fault or a person's at a breakpoint; the re-run asked the upstream"
        case .notResent: "not sent again in the re-run, for the reason said above"
        case .unfinished: "the recording ends before it did, so it has no end to compare"
        }
    }
}
