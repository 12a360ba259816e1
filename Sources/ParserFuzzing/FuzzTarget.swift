import Foundation
import ReqtopApplication
import RequestArchive
import RequestEndpoint
import RequestEventFormat
import RequestMonitor
import RequestOperations

/// Each way bytes from outside enter reqtop, as a function a fuzzer can call with any input.
/// A target parses as the program does and then uses what it read the way the program would
/// (a recording is shown in the monitor and exported as HAR), so a number that parses but
/// traps later is found too. Bad input must come back as a thrown error or a message;
/// anything else — a trap, a hang — is a bug.
///
/// The same targets run in two ways: briefly in `swift test` (``FuzzCampaign``, seeded and
/// bounded) and for as long as a person likes under libFuzzer (`scripts/fuzz`).
public enum FuzzTarget: String, CaseIterable, Sendable {
    /// `reqtop run PLAN`: the plan parser, `dependsOn` ordering and building each request.
    case plan
    /// `reqtop replay REC.jsonl`: the JSON-lines reader, then the monitor's model and view.
    case jsonLines = "jsonl"
    /// Every line of the input through both JSON-lines readers, the fast one and
    /// `JSONSerialization`: a line the fast one reads must give the same event (a difference
    /// stops the process, as a crash would, so a fuzzer keeps the input).
    case jsonLineReaders = "jsonl-fast"
    /// `reqtop replay FILE.har`: the HAR reader, then the monitor and HAR export.
    case har
    /// A line a monitor sends to a program's endpoint socket.
    case endpointCommand = "endpoint-command"
    /// A line a program's endpoint sends to `reqtop attach`.
    case endpointMessage = "endpoint-message"
    /// A server's `Retry-After` header, through the retry policy's decision and its words.
    case retryAfter = "retry-after"

    /// Runs one input and says whether it was accepted (read without an error): the short
    /// campaign keeps accepted inputs to mutate further, as they reach deeper code. Returns
    /// normally for every input, good or bad.
    @discardableResult
    public func run(_ data: Data) -> Bool {
        switch self {
        case .plan:
            return PlanValidation.problem(in: data, file: "fuzz.json") == nil
        case .jsonLines:
            guard let file = try? EventLogFile.parse(data, file: "fuzz.jsonl") else { return false }
            Self.show(file.events)
            return true
        case .jsonLineReaders:
            var read = false
            for line in data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true) {
                if let difference = EventLog.fastReaderDisagreement(Data(line)) {
                    fatalError("jsonl-fast: \(difference) for the line \(String(decoding: line.prefix(500), as: UTF8.self))")
                }
                read = read || (try? EventLog.parse(lineData: Data(line), lineNumber: 1)) != nil
            }
            return read
        case .har:
            guard let result = try? HARImport.parse(data, file: "fuzz.har") else { return false }
            Self.show(result.events)
            return true
        case .endpointCommand:
            return (try? EndpointProtocol.parse(String(decoding: data, as: UTF8.self))) != nil
        case .endpointMessage:
            switch EndpointClient.parse(String(decoding: data, as: UTF8.self)) {
            case .event(let event):
                Self.show([event])
                return true
            case .unreadable, .error: return false
            default: return true
            }
        case .retryAfter:
            let value = String(decoding: data, as: UTF8.self)
            for maxDelay in [30, TimeInterval.greatestFiniteMagnitude] {
                let policy = ExponentialBackoffRetryPolicy(maxDelay: maxDelay, retryBudget: nil)
                for status in [429, 503] {
                    _ = policy.decide(RetryContext(method: "GET", attempt: 1, failure: .status(status, headers: ["Retry-After": value])))
                }
            }
            return RetryAfter.delay(from: value) != nil
        }
    }

    /// What the program does with events it read: the monitor's model, its table and each
    /// detail tab of the first rows, and an export to HAR.
    private static func show(_ events: [RequestEvent]) {
        var model = QueueModel(source: "fuzz")
        model.apply(events)
        let theme = Theme(color: true, unicode: true)
        var state = MonitorState()
        let now = model.latest
        let visible = VisibleRows.compute(model, filter: "", sort: .duration, now: now)
        _ = MonitorView(model: model, state: state, visible: visible, theme: theme, now: now).render(width: 120, height: 30)
        for index in visible.prefix(3) {
            for tab in MonitorState.DetailTab.allCases {
                state.screen = .detail(id: model.rows[index].id, tab: tab)
                _ = MonitorView(model: model, state: state, visible: visible, theme: theme, now: now).render(width: 100, height: 30)
            }
        }
        _ = try? HARExport.data(events: events, startedAt: Date(timeIntervalSince1970: 0))
    }
}
