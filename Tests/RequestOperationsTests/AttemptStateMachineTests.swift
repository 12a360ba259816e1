import Foundation
@testable import RequestOperations
import XCTest

/// The attempt's state machine alone, without an operation or a transport: every phase ×
/// every input, against a table of the moves the engine makes (written out here, not read
/// from the machine), and whole cycles as an operation lives them.
final class AttemptStateMachineTests: XCTestCase {
    typealias Machine = AttemptStateMachine
    typealias Input = AttemptStateMachine.Input

    /// Each phase an attempt can be in, and the inputs that lead there from a new machine.
    private static let starts: [(name: String, path: [Input])] = [
        ("pending", []),
        ("intercepting", [.begin(needsAdmission: true)]),
        ("waitingForSlot", [.begin(needsAdmission: false)]),
        ("held", [.begin(needsAdmission: true), .hold(batch: "b")]),
        ("waitingForReactor", [.begin(needsAdmission: true), .waitForReactor("refresh")]),
        ("waitingForCircuit", [.begin(needsAdmission: false), .circuitWait(host: "api:443")]),
        ("waitingForRateLimit", [.begin(needsAdmission: false), .rateLimitPause(host: "api:443", until: 5)]),
        ("preparing", [.begin(needsAdmission: false), .slotGranted(prepares: true)]),
        ("stoppedBeforeSending", [.begin(needsAdmission: false), .stopAtBreakpoint(1, afterAnswer: false)]),
        ("inFlight", [.begin(needsAdmission: false), .slotGranted(prepares: false), .sent]),
        ("stoppedAfterAnswer", [.begin(needsAdmission: false), .slotGranted(prepares: false), .sent, .stopAtBreakpoint(2, afterAnswer: true)]),
        ("waitingToRetry", [.begin(needsAdmission: false), .slotGranted(prepares: false), .sent, .retryScheduled(until: 10)]),
        ("finished", [.finish(.failure)]),
    ]

    /// One of every input (a retry sooner than the sample's wait of 10).
    private static let inputs: [(name: String, input: Input)] = [
        ("begin", .begin(needsAdmission: true)),
        ("intercepted", .intercepted),
        ("hold", .hold(batch: "b2")),
        ("released", .released),
        ("waitForReactor", .waitForReactor("other")),
        ("reactorFinished", .reactorFinished(beforeSending: true)),
        ("rateLimitPause", .rateLimitPause(host: "api:443", until: 7)),
        ("circuitWait", .circuitWait(host: "other:443")),
        ("circuitWaitExpired", .circuitWaitExpired),
        ("slotReturned", .slotReturned),
        ("slotGranted", .slotGranted(prepares: false)),
        ("sent", .sent),
        ("stopBefore", .stopAtBreakpoint(3, afterAnswer: false)),
        ("stopAfter", .stopAtBreakpoint(3, afterAnswer: true)),
        ("resolveBreakpoint", .resolveBreakpoint(needsAdmission: false)),
        ("retryScheduled", .retryScheduled(until: 20)),
        ("retrySooner", .retrySooner(until: 4)),
        ("retryNow", .retryNow),
        ("finish", .finish(.cancelled)),
    ]

    /// What the engine does with an input in each phase: the phase after it and the action.
    /// Every pair not here must be refused with nothing changed.
    private static let moves: [String: [String: (RequestPhase?, Machine.Action)]] = [
        "pending": ["begin": (.intercepting, .admit)],
        "intercepting": ["intercepted": (.waitingForSlot, .acquireSlot), "hold": (.held(batch: "b2"), .announce),
                         "waitForReactor": (.waitingForReactor("other"), .announce),
                         "stopBefore": (.stoppedAtBreakpoint(3), .announce)],
        "waitingForSlot": ["rateLimitPause": (.waitingForRateLimit(host: "api:443", until: 7), .announce),
                           "circuitWait": (.waitingForCircuit(host: "other:443"), .announce),
                           "slotReturned": (.waitingForSlot, .acquireSlot), "slotGranted": (.preparing, .send),
                           "stopBefore": (.stoppedAtBreakpoint(3), .announce)],
        "held": ["released": (.intercepting, .announce)],
        "waitingForReactor": ["begin": (.intercepting, .admit), "waitForReactor": (.waitingForReactor("other"), .announce),
                              "reactorFinished": (.intercepting, .announce),
                              "retryScheduled": (.waitingToRetry(until: 20), .announce)],
        "waitingForCircuit": ["rateLimitPause": (.waitingForRateLimit(host: "api:443", until: 7), .announce),
                              "circuitWait": (.waitingForCircuit(host: "other:443"), .announce),
                              "circuitWaitExpired": (nil, .failWaitingForCircuit),
                              "slotReturned": (.waitingForSlot, .acquireSlot), "slotGranted": (.preparing, .send)],
        "waitingForRateLimit": ["rateLimitPause": (.waitingForRateLimit(host: "api:443", until: 7), .announce),
                                "circuitWait": (.waitingForCircuit(host: "other:443"), .announce),
                                "slotReturned": (.waitingForSlot, .acquireSlot), "slotGranted": (.preparing, .send)],
        "preparing": ["slotReturned": (.waitingForSlot, .acquireSlot), "sent": (.inFlight, .announce),
                      "retryScheduled": (.waitingToRetry(until: 20), .announce)],
        "stoppedBeforeSending": ["resolveBreakpoint": (.waitingForSlot, .acquireSlot)],
        "inFlight": ["begin": (.intercepting, .admit), "waitForReactor": (.waitingForReactor("other"), .announce),
                     "stopAfter": (.stoppedAtBreakpoint(3), .announce),
                     "retryScheduled": (.waitingToRetry(until: 20), .announce)],
        "stoppedAfterAnswer": ["resolveBreakpoint": (.inFlight, .decide)],
        "waitingToRetry": ["begin": (.intercepting, .admit), "retrySooner": (.waitingToRetry(until: 4), .announce),
                           "retryNow": (nil, .beginNext)],
        "finished": [:],
    ]

    private func started(at start: (name: String, path: [Input])) -> Machine {
        var machine = Machine()
        for input in start.path {
            XCTAssertNotEqual(machine.apply(input), .refuse, "the path to \(start.name) is refused at \(input)")
        }
        return machine
    }

    func testEveryPhaseTakesExactlyTheInputsTheEngineGivesIt() {
        XCTAssertEqual(Self.starts.count, 13, "a new phase needs a start here")
        for start in Self.starts {
            for (name, input) in Self.inputs {
                var machine = started(at: start)
                let before = machine
                let action = machine.apply(input)
                let context = "\(name) in \(start.name)"
                if case .finish(let outcome) = input, start.name != "finished" {
                    XCTAssertEqual(action, .announce, context)
                    XCTAssertEqual(machine.phase, .finished(outcome), context)
                    continue
                }
                guard let (phase, expected) = Self.moves[start.name]?[name] else {
                    XCTAssertEqual(action, .refuse, context)
                    XCTAssertEqual(machine, before, "\(context): a refused input changed the machine")
                    continue
                }
                XCTAssertEqual(action, expected, context)
                XCTAssertEqual(machine.phase, phase ?? before.phase, context)
            }
        }
    }

    func testTheSamePauseOrBreakerWaitAgainIsNotAnnouncedAgain() {
        var machine = started(at: Self.starts[5])
        XCTAssertEqual(machine.apply(.circuitWait(host: "api:443")), .stay)
        var paused = started(at: Self.starts[6])
        XCTAssertEqual(paused.apply(.rateLimitPause(host: "api:443", until: 5)), .stay)
        XCTAssertEqual(paused.apply(.rateLimitPause(host: "api:443", until: 6)), .announce, "a longer pause is news")
    }

    func testARetryIsBroughtForwardNeverPushedBack() {
        var machine = started(at: Self.starts[11])
        XCTAssertEqual(machine.apply(.retrySooner(until: 12)), .refuse)
        XCTAssertEqual(machine.apply(.retrySooner(until: 10)), .refuse, "the same moment is not sooner")
        XCTAssertEqual(machine.apply(.retrySooner(until: 3)), .announce)
        XCTAssertEqual(machine.phase, .waitingToRetry(until: 3))
    }

    func testAReactorRunAfterTheAnswerKeepsTheAttemptWaitingUntilTheDecision() {
        var machine = started(at: Self.starts[9])
        XCTAssertEqual(machine.apply(.waitForReactor("refresh")), .announce)
        XCTAssertEqual(machine.apply(.reactorFinished(beforeSending: false)), .stay)
        XCTAssertEqual(machine.phase, .waitingForReactor("refresh"))
        XCTAssertEqual(machine.apply(.begin(needsAdmission: false)), .acquireSlot, "requeued")
    }

    func testTheBreakpointStageIsKnownUntilTheStopIsResolved() {
        var before = started(at: Self.starts[8])
        XCTAssertEqual(before.breakpointStage, .beforeSend)
        XCTAssertEqual(before.apply(.resolveBreakpoint(needsAdmission: true)), .admit)
        XCTAssertEqual(before.phase, .intercepting)
        XCTAssertNil(before.breakpointStage)

        var after = started(at: Self.starts[10])
        XCTAssertEqual(after.breakpointStage, .afterResponse)
        XCTAssertEqual(after.apply(.resolveBreakpoint(needsAdmission: true)), .decide)
        XCTAssertNil(after.breakpointStage)
        XCTAssertEqual(after.apply(.retryScheduled(until: 3)), .announce, "the answer let go of fails into a retry")
        XCTAssertEqual(after.apply(.begin(needsAdmission: false)), .acquireSlot)
        XCTAssertEqual(after.apply(.stopAtBreakpoint(4, afterAnswer: false)), .announce)
        XCTAssertEqual(after.breakpointStage, .beforeSend, "the next stop is judged on its own")
    }

    func testAWholeOperationAsTheEngineLivesIt() {
        var machine = Machine()
        let lived: [(Input, Machine.Action, RequestPhase)] = [
            (.begin(needsAdmission: true), .admit, .intercepting),
            (.waitForReactor("refresh"), .announce, .waitingForReactor("refresh")),
            (.reactorFinished(beforeSending: true), .announce, .intercepting),
            (.hold(batch: "b"), .announce, .held(batch: "b")),
            (.released, .announce, .intercepting),
            (.intercepted, .acquireSlot, .waitingForSlot),
            (.rateLimitPause(host: "h", until: 2), .announce, .waitingForRateLimit(host: "h", until: 2)),
            (.circuitWait(host: "h"), .announce, .waitingForCircuit(host: "h")),
            (.slotGranted(prepares: true), .prepare, .preparing),
            (.slotReturned, .acquireSlot, .waitingForSlot),
            (.slotGranted(prepares: true), .prepare, .preparing),
            (.sent, .announce, .inFlight),
            (.retryScheduled(until: 9), .announce, .waitingToRetry(until: 9)),
            (.retryNow, .beginNext, .waitingToRetry(until: 9)),
            (.begin(needsAdmission: false), .acquireSlot, .waitingForSlot),
            (.slotGranted(prepares: false), .send, .preparing),
            (.sent, .announce, .inFlight),
            (.finish(.success), .announce, .finished(.success)),
        ]
        for (step, (input, action, phase)) in lived.enumerated() {
            XCTAssertEqual(machine.apply(input), action, "step \(step + 1): \(input)")
            XCTAssertEqual(machine.phase, phase, "step \(step + 1): \(input)")
        }
        XCTAssertEqual(machine.apply(.begin(needsAdmission: false)), .refuse, "nothing after the end")
        XCTAssertEqual(machine.apply(.finish(.failure)), .refuse, "an operation ends once")
    }
}
