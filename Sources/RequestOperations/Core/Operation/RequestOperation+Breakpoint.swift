import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Breakpoints: an attempt that a breakpoint's match picks stops before it takes a slot
/// (phase ``RequestPhase/stoppedAtBreakpoint(_:)``, event `breakpoint`) and waits for a
/// person's ``BreakpointResolution`` (event `breakpointResolved`).
extension RequestOperation {
    /// Stops the attempt `token` if a breakpoint picks its request; true when it stopped.
    func stopsAtBreakpoint(_ token: UInt64) -> Bool {
        let points = environment.breakpoints
        guard points.isActive else { return false }
        let request = state.withLock { $0.outgoing ?? $0.request }
        guard let entry = points.pick(for: request) else { return false }
        return withCurrent(token) { state in
            state.phase = .stoppedAtBreakpoint(entry.id)
            publish(&state, .breakpoint(id: entry.id, rule: entry.breakpoint.match.description, by: entry.breakpoint.setBy))
        }
    }

    /// Resolves the stop at a breakpoint: the attempt goes on (as it is, edited, or answered
    /// or failed in the server's place), or the operation is cancelled. False when the
    /// operation is not stopped at one.
    @discardableResult
    public func resolveBreakpoint(_ resolution: BreakpointResolution, by actor: String = "library") -> Bool {
        let needsAdmission = !options.interceptors.isEmpty || options.reactors.contains { $0.options.holdNewRequests }
        let token = state.withLock { state -> UInt64? in
            guard state.result == nil, case .stoppedAtBreakpoint = state.phase else { return nil }
            publish(&state, .breakpointResolved(how: resolution.summary, by: actor))
            if case .cancel = resolution { return state.token }
            if case .edit(let edited) = resolution {
                state.request = edited.request
                state.outgoing = nil
            }
            state.current.forcedFault = resolution.fault(by: actor)
            state.phase = needsAdmission ? .intercepting : .waitingForSlot
            return state.token
        }
        guard let token else { return false }
        if case .cancel = resolution {
            cancel(by: actor)
        } else {
            proceed(token, needsAdmission: needsAdmission)
        }
        return true
    }
}
