import Foundation

/// Stops the operations a match picks before an attempt is sent, so a person can look,
/// edit, answer it themselves, fail it, or let it go (``BreakpointResolution``). A stopped
/// operation holds no slot; the others keep flowing. Set on ``RequestQueue/breakpoints``.
public struct Breakpoint: Sendable, Equatable {
    /// Which requests (the monitor's filter language: `host:`, `path:`, `method:`, `header:`).
    public var match: RequestMatch
    /// Who set it (`library`, `monitor`, `attached monitor N`), for the events.
    public var setBy: String

    public init(match: RequestMatch, setBy: String = "library") {
        self.match = match
        self.setBy = setBy
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
        case .respond(let status, _, let body): "answered \(status) without sending (\(body.count) bytes)"
        case .fail(let code): "failed with \(code.rawValue) (\(TransportError.describe(code))) without sending"
        case .cancel: "cancelled"
        }
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
