import Foundation
@testable import RequestMonitor
import RequestOperations
import XCTest

/// `!` on a host in the Hosts view injects a 503 into its requests (or stops), `Z` clears
/// every fault; the header says FAULTS ON and the Hosts view counts injected attempts.
final class FaultKeysTests: XCTestCase {
    private func model() -> QueueModel {
        var model = QueueModel(source: "test")
        model.apply([
            RequestEvent(time: 0, operationID: "a", attempt: 1, payload: .queued(method: "GET", url: "http://api.test:8080/x", headers: [:], maxAttempts: 2)),
            RequestEvent(time: 0, operationID: "a", attempt: 1, payload: .started),
            RequestEvent(time: 0, operationID: "a", attempt: 1, payload: .injected(fault: "status 503", rule: "host:api.test:8080", by: "monitor")),
            RequestEvent(time: 0.1, operationID: "a", attempt: 1, payload: .response(status: 503, headers: [:], expectedBytes: nil)),
        ])
        return model
    }

    func testTheKeysAskForTheCommandsAndAReplayRefuses() {
        let model = model()
        var state = MonitorState()
        let context = MonitorUpdate.Context(visible: ["a"], pageSize: 20, model: model, canCommand: true, canCancel: true)
        XCTAssertEqual(MonitorUpdate.update(&state, .toggleFault, context), [])
        XCTAssertEqual(state.flash, "open the Hosts screen (H) and choose a host first")
        state.screen = .hosts
        XCTAssertEqual(MonitorUpdate.update(&state, .toggleFault, context), [.command(.queue(.toggleFault(host: "api.test:8080")))])
        XCTAssertEqual(MonitorUpdate.update(&state, .clearFaults, context), [.command(.queue(.clearFaults))])
        let replay = MonitorUpdate.Context(visible: ["a"], pageSize: 20, model: model, canCommand: true, canCancel: false)
        XCTAssertEqual(MonitorUpdate.update(&state, .toggleFault, replay), [])
        XCTAssertEqual(state.flash, "nothing is injected into a replay")
        XCTAssertEqual(KeyMap.action(for: .character("!"), in: state), .toggleFault)
    }

    func testTheHeaderAndTheHostsViewSayWhatIsInjected() {
        let model = model()
        var state = MonitorState()
        state.faultsOn = true
        state.screen = .hosts
        let text = MonitorView(model: model, state: state, visible: [0], theme: Theme(color: false), now: 1).render(width: 160, height: 20).text
        XCTAssertTrue(text.split(separator: "\n")[0].contains("FAULTS ON"), text)
        let hostLine = text.split(separator: "\n").first { $0.contains("api.test") } ?? ""
        XCTAssertTrue(hostLine.hasSuffix("1"), "INJECTED 1: \(hostLine)")
        XCTAssertEqual(HostSummary.compute(model).first?.injected, 1)
    }
}
