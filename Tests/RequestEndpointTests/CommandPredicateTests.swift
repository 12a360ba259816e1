import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import RequestEndpoint
import RequestOperations
import XCTest

/// The command predicates a safety check reads are exhaustive (#43): every command says
/// whether it touches faults or breakpoints, one of each wire name is checked, and the
/// endpoint refuses every one that does where the program took no faults.
final class CommandPredicateTests: XCTestCase {
    /// One of each command. The switch below has no `default:`: a new case does not build
    /// until it is given here and says what it is.
    private let commands: [QueueCommand] = [
        .retry(operation: "a"), .cancel(operation: "a"), .cancelAll, .setSuspended(true), .setSuspended(false), .releaseBatches,
        .isolate(host: "h:1"), .closeCircuit(host: "h:1"), .resend(operation: "a", edited: EditedRequest(request: URLRequest(url: URL(string: "http://h:1/")!))),
        .toggleFault(host: "h:1"), .clearFaults, .addBreakpoint(match: "path:/x"), .clearBreakpoints,
        .setBreakpointEnabled(id: 1, enabled: false), .removeBreakpoint(id: 1), .resolveBreakpoint(operation: "a", resolution: .proceed),
    ]

    private func expectedToTouchFaults(_ command: QueueCommand) -> Bool {
        switch command {
        case .toggleFault, .clearFaults, .addBreakpoint, .clearBreakpoints, .setBreakpointEnabled, .removeBreakpoint, .resolveBreakpoint: true
        case .retry, .cancel, .cancelAll, .setSuspended, .releaseBatches, .isolate, .closeCircuit, .resend: false
        }
    }

    func testEveryCommandSaysWhetherItTouchesFaults() {
        XCTAssertEqual(Set(commands.map { EndpointProtocol.CommandName($0) }), Set(EndpointProtocol.CommandName.allCases),
                       "one command of each wire name is checked")
        for command in commands {
            XCTAssertEqual(command.touchesFaults, expectedToTouchFaults(command), "\(command)")
        }
    }

    func testAProgramThatTookNoFaultsRefusesEveryOneThatTouchesThem() throws {
        let folder = NSTemporaryDirectory() + "predicates-\(UUID().uuidString.prefix(6))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let queue = RequestQueue(maxConcurrentRequests: 1)
        let endpoint = try MonitorEndpoint.start(queue: queue, options: MonitorEndpoint.Options(acceptsFaults: false, directory: folder))
        defer { endpoint.stop() }
        for command in commands where command.touchesFaults {
            XCTAssertEqual(endpoint.carryOut(command, from: -1), .faultsNotAccepted, "\(command)")
        }
    }
}
