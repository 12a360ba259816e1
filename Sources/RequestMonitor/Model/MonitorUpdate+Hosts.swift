import Foundation
import RequestOperations

/// The update on the Hosts screen (`H`): moving between hosts, isolating one or closing its breaker.
extension MonitorUpdate {
    /// What `action` does on the Hosts screen, or nil when it is not the Hosts screen's.
    static func hosts(_ state: inout MonitorState, _ action: MonitorAction, _ context: Context) -> [MonitorEffect]? {
        let model = context.model
        if state.screen == .hosts, let step = hostStep(action, pageSize: context.pageSize) {
            let hosts = HostSummary.compute(model, byProgram: state.hostsByProgram)
            guard !hosts.isEmpty else { return [] }
            let current = hosts.firstIndex { $0.host == state.selectedHost } ?? 0
            state.selectedHost = hosts[max(0, min(hosts.count - 1, step(current)))].host
            return []
        }
        if state.screen == .hosts, action == .retry || action == .cancel {
            state.flash = "r and X act on an operation: Esc goes back to the table"
            return []
        }
        switch action {
        case .splitHostsByProgram:
            guard state.screen == .hosts else {
                state.flash = "P splits the Hosts screen (H) by program"
                return []
            }
            guard !model.programHosts.isEmpty else {
                state.flash = "only a merged view of several programs (reqtop attach --all) splits hosts by program"
                return []
            }
            state.hostsByProgram.toggle()
            state.selectedHost = nil
            state.flash = state.hostsByProgram ? "one line per host and program: i, c and ! act on that program alone" : "one line per host, every program's together"
            return []
        case .clearFaults:
            guard context.canCommand else {
                state.flash = "nothing is injected into a replay"
                return []
            }
            return [.command(.queue(.clearFaults))]
        case .toggleFault, .isolateHost, .closeCircuit:
            guard state.screen == .hosts else {
                state.flash = "open the Hosts screen (H) and choose a host first"
                return []
            }
            let hosts = HostSummary.compute(model, byProgram: state.hostsByProgram)
            guard let key = (hosts.first { $0.host == state.selectedHost } ?? hosts.first)?.circuitHost else {
                state.flash = "no host selected"
                return []
            }
            guard context.canCommand, action != .toggleFault || context.canCancel else {
                state.flash = action == .toggleFault ? "nothing is injected into a replay" : "nothing to change in a replay"
                return []
            }
            let command: QueueCommand = switch action {
            case .toggleFault: .toggleFault(host: key)
            case .isolateHost: .isolate(host: key)
            default: .closeCircuit(host: key)
            }
            return [.command(.queue(command))]
        default:
            return nil
        }
    }

    /// How a movement key moves the Body tab's first line (nil: not a movement key).
    static func scrollStep(_ action: MonitorAction, pageSize: Int) -> ((Int) -> Int)? {
        // No "to the end": the update does not know how long the body is.
        action == .bottom ? nil : hostStep(action, pageSize: pageSize)
    }

    /// How a movement key moves the Hosts screen's selection (nil: not a movement key).
    private static func hostStep(_ action: MonitorAction, pageSize: Int) -> ((Int) -> Int)? {
        switch action {
        case .down: { $0 + 1 }
        case .up: { $0 - 1 }
        case .pageDown: { $0 + max(1, pageSize - 1) }
        case .pageUp: { $0 - max(1, pageSize - 1) }
        case .top: { _ in 0 }
        case .bottom: { _ in Int.max / 2 }
        default: nil
        }
    }
}
