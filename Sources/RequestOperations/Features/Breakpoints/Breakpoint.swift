import Foundation

/// Stops the operations a match picks before an attempt is sent, or after its answer and
/// before the retry decision, so a person can look, edit, answer it themselves, fail it, or
/// let it go (``BreakpointResolution``). A stopped operation holds no slot; the others keep
/// flowing. Set on ``RequestQueue/breakpoints``.
public struct Breakpoint: Sendable, Equatable {
    /// Where an operation stops.
    public enum Stage: String, Sendable, Equatable {
        /// Before the attempt takes a slot and is sent: send, edit, answer, fail or cancel it.
        case beforeSend
        /// After the attempt's answer (or failure), before reactors and the retry policy see
        /// it: let it go on to the decision, answer it yourself instead, fail it, or cancel.
        case afterResponse
    }

    /// Which requests (the monitor's filter language: `host:`, `path:`, `method:`, `header:`).
    public var match: RequestMatch
    public var stage: Stage
    /// Who set it (`library`, `monitor`, `attached monitor N`), for the events.
    public var setBy: String

    public init(match: RequestMatch, stage: Stage = .beforeSend, setBy: String = "library") {
        self.match = match
        self.stage = stage
        self.setBy = setBy
    }

    /// Reads what a person types: a match, after `after` for a stop after the answer
    /// (`after path:/flaky`); `before` may be said too.
    public init(parsing text: String, setBy: String) throws {
        var words = text.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        var stage = Stage.beforeSend
        if let first = words.first?.lowercased(), first == "after" || first == "before" {
            stage = first == "after" ? .afterResponse : .beforeSend
            words.removeFirst()
        }
        self.init(match: try RequestMatch(words.joined(separator: " ")), stage: stage, setBy: setBy)
    }
}

/// What a person does with an operation stopped at a breakpoint.
public enum BreakpointResolution: Sendable, Equatable {
    /// Send the attempt as it is.
    case proceed
    /// Send this request instead (and on later attempts).
    case edit(EditedRequest)
    /// Do not send it: answer the attempt with this status, headers and body, as a server
    /// would (marked `injected`, like every answer reqtop makes up).
    case respond(status: Int, headers: [String: String], body: Data)
    /// Do not send it: fail the attempt with this transport error (`-1005`, `-1001`, …),
    /// so the retry policy meets it as a real one.
    case fail(URLError.Code)
    /// Cancel the operation.
    case cancel

    /// In words, for the `breakpointResolved` event.
    public var summary: String {
        switch self {
        case .proceed: "continued"
        case .edit: "edited and continued"
        case .respond(let status, _, let body): "answered \(status) by hand (\(body.count) bytes)"
        case .fail(let code): "failed with \(code.rawValue) (\(TransportError.describe(code))) by hand"
        case .cancel: "cancelled"
        }
    }

    /// An edit changes what is sent: it applies only to a stop before sending.
    public var appliesOnlyBeforeSending: Bool {
        if case .edit = self { return true }
        return false
    }

    /// The fault that answers the attempt in the server's place, for `respond` and `fail`.
    func fault(by actor: String) -> FaultRule? {
        let match = RequestMatch.everything
        switch self {
        case .respond(let status, let headers, let body):
            return FaultRule(match: match, effect: .respond(status: status, headers: headers, body: body), setBy: "breakpoint (\(actor))")
        case .fail(let code):
            return FaultRule(match: match, effect: .fail(code), setBy: "breakpoint (\(actor))")
        case .proceed, .edit, .cancel:
            return nil
        }
    }
}
