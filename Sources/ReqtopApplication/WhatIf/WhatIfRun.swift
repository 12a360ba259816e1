import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RequestArchive
import RequestEventFormat
import RequestOperations

/// One what-if run: the recorded requests sent again, each at its recorded start time, each
/// to a fault server of its own host's that answers as that upstream did
/// (``RecordedUpstreamServers``), through a queue with other settings; recorded to a file
/// like any run.
package struct WhatIfRun {
    /// What the recording says of each operation: when it was queued, where it went, and
    /// the options it ran with.
    package struct Recorded {
        package var start: TimeInterval
        package var host: String
        package var options: RecordedOptions?
        /// When it was cancelled, and who (a person at the monitor, the program's own code, a
        /// parent that failed): done again at the same moment, but for a parent's cancel where
        /// the parent is in the re-run (it follows from the parent's end).
        package var cancelled: (at: TimeInterval, by: String)?
    }

    package let events: [RequestEvent]
    package let settings: WhatIfSettings

    /// The recorded run's 0: when its first request was queued.
    package var origin: TimeInterval {
        events.first { if case .queued = $0.payload { true } else { false } }?.time ?? 0
    }

    /// Per operation, in the order they were queued.
    package var recorded: [String: Recorded] {
        var found: [String: Recorded] = [:]
        let first = origin
        for event in events {
            if case .cancelled(let by) = event.payload, found[event.operationID]?.cancelled == nil {
                found[event.operationID]?.cancelled = (event.time - first, by)
            }
            guard case .queued(_, let url, _, _, _, let options) = event.payload, found[event.operationID] == nil else { continue }
            let parsed = URL(string: url)
            found[event.operationID] = Recorded(start: event.time - first,
                                                host: "\(parsed?.host ?? "")\(parsed?.port.map { ":\($0)" } ?? "")", options: options)
        }
        return found
    }

    /// Runs it against `upstream` on `transport`, recording to `output`; returns the new
    /// run's events and the requests that could not be sent again.
    /// `input`: the recording, which `output` must not overwrite.
    /// `recordedOrigins`: where the recording is itself a what-if run's, the upstreams its
    /// servers stood for (so the new run's header names the first upstream, not a server).
    package func run(upstream: RecordedUpstream.Built, transport: RequestTransport, output: String, input: String, recordedOrigins: [String: String] = [:]) throws
        -> (events: [RequestEvent], skipped: [Resend.Skipped], origins: [String: String]) {
        let recorded = self.recorded
        // Only ever to the recording's own servers (below): a redacted value goes as its placeholder.
        let resend = Resend(events: events, target: nil, sendingPlaceholders: true)
        let decisions = RecordedDecisions(events: events, origin: origin)
        let reactors = decisions.reactors()
        let begun = RunStart()
        let replaysBackoff = !settings.assignments.contains { $0.path.first == "retry" }
        let replaysBudget = replaysBackoff && !settings.assignments.contains { ["retryBudgetPerHost", "budget"].contains($0.path.first ?? "") }
        let servers: RecordedUpstreamServers
        do {
            servers = try RecordedUpstreamServers(upstream.hosts)
        } catch {
            throw InputError(message: "cannot start the recording's servers: \(error)")
        }
        defer { servers.stop() }
        let base = try settings.plan(recorded: recorded.values.first?.options)
        // Which recorded upstream each server stands for, in the new recording's header.
        let origins = Dictionary(uniqueKeysWithValues: servers.ports.map { ("127.0.0.1:\($0.value)", recordedOrigins[$0.key] ?? $0.key) })
        // With the recorded refusals replayed, the host's budget is not asked again: which
        // member of a burst met it first was a race between simultaneous failures, and a live
        // budget let a clean-clone run refuse w1-burst-1 a retry the recording had allowed.
        let queue = RequestQueue(maxConcurrentRequests: base.maxConcurrent, maxConcurrentRequestsPerHost: base.maxConcurrentPerHost,
                                 transport: transport, retryBudget: replaysBudget ? nil : base.retryBudgetPerHost, circuitBreaker: base.circuitBreaker,
                                 rateLimits: base.rateLimitPushback, instruments: [AttemptTagging(hosts: recorded.mapValues(\.host))])
        let writer: EventLogWriter
        do {
            writer = try EventLogWriter(path: output, hub: queue.events, redact: true, inputs: [input], settings: QueueSettings(plan: base).json,
                                        origins: origins)
        } catch let error as ArchiveError {
            throw InputError(message: error.description)
        }
        // The same recorded options give the same plan: parsed once each.
        var plans: [(options: RecordedOptions?, plan: Plan)] = []
        // What to make at each moment: an operation is made (its `queued` event) when the
        // recording made it, so the two runs line up on one time axis.
        var planned: [(id: String, at: TimeInterval, request: RequestMessage, options: RequestOptions)] = []
        var skipped = resend.skipped
        for request in resend.requests {
            let options = recorded[request.id]?.options
            let plan = try plans.first { $0.options == options }?.plan ?? settings.plan(recorded: options)
            if !plans.contains(where: { $0.options == options }) { plans.append((options, plan)) }
            var item = PlanFlow(plan: plan, faultServer: nil, queue: queue).item(plan.requests[0])
            item.options.responseBodyCap = RequestOptions.defaultResponseBodyCap
            // A transparent proxy's request passed every answer on as it came (not settable by
            // `--set`: it is what the recording's client got, not a policy to try).
            item.options.relaysEveryAnswer = options?.relaysEveryAnswer ?? false
            // Only ever to the recording's own server for its host: a host the recording has no
            // answer from is not sent to at all (it could be a real upstream).
            var sent = request.request
            guard let host = recorded[request.id]?.host, let port = servers.ports[host],
                  var components = URLComponents(url: sent.url, resolvingAgainstBaseURL: false) else {
                skipped.append(Resend.Skipped(id: request.id, reason: "the recording has no answer from its host to serve"))
                continue
            }
            (components.scheme, components.host, components.port) = ("http", "127.0.0.1", port)
            guard let local = components.url else {
                skipped.append(Resend.Skipped(id: request.id, reason: "its URL cannot be sent to the recording's server"))
                continue
            }
            sent.url = local
            item.options.reactors = decisions.reactors(of: request.id, in: reactors)
            if replaysBackoff {
                // Early retries are replayed as recorded (below): the engine's own would race
                // them (another request's success a few ms sooner cut a wait the recording kept).
                item.options.earlyRetryOnHostSuccess = false
                item.options.earlyRetryOnProbe = false
                item.options.retryPolicy = RecordedBackoff(policy: item.options.retryPolicy, retries: decisions.backoff[request.id] ?? [:],
                                                           denials: replaysBudget ? decisions.denials[request.id] ?? [:] : [:])
            }
            if let holds = decisions.holds[request.id], let by = holds.values.first?.by {
                item.options.interceptors.append(RecordedHold(name: by + RecordedDecisions.suffix, until: holds.mapValues(\.until), begun: begun))
            }
            planned.append((request.id, recorded[request.id]?.start ?? 0, sent, item.options))
        }
        // Said now, not found out at the deadline: a request whose first attempt has no
        // recorded answer (its events out of order, a mangled attempt) gets whatever its host
        // said at that moment, or nothing.
        let neverSent = Set(events.compactMap { event -> String? in
            if case .finished(_, _, 0, _, _) = event.payload { event.operationID } else { nil }
        })
        let unmatched = planned.filter { !neverSent.contains($0.id) && upstream.answers.recorded(operation: $0.id, attempt: 1) == nil }.map(\.id)
        if !unmatched.isEmpty {
            ErrorOutput.print("reqtop: \(unmatched.count) request\(unmatched.count == 1 ? " has" : "s have") no recorded answer for the first attempt "
                                  + "(\(unmatched.prefix(5).joined(separator: ", "))\(unmatched.count > 5 ? ", …" : "")): "
                                  + "they get what their host answered at that moment of the recording, or no answer until their timeout")
        }
        let plannedIDs = Set(planned.map(\.id))
        Self.sayReplayed(decisions, placeholders: resend.withPlaceholders.filter(plannedIDs.contains), backoff: replaysBackoff, budget: replaysBudget)
        // An early retry came from another request's success a moment before or after a
        // failure: a race the re-run may run the other way. Made again as long after the
        // retry was scheduled as it came then (the engine's own still come too: the sooner wins).
        let early = replaysBackoff ? queue.events.subscribe(label: "reqtop.whatif.early") { batch in
            for event in batch {
                guard case .retryScheduled = event.payload, let retry = decisions.earlyRetries[event.operationID]?[event.attempt + 1],
                      let operation = queue.operation(withID: event.operationID) else { continue }
                DispatchQueue.global().asyncAfter(deadline: .now() + retry.after) {
                    operation.retrySooner(delay: retry.delay, trigger: retry.trigger + RecordedDecisions.suffix)
                }
            }
        } : nil
        defer { early?.cancel() }
        servers.start(upstream.hosts)
        // Each at its recorded moment of the run, after the operations it waited for, and
        // cancelled at it where the program (not a parent) did.
        var made: [String: RequestOperation] = [:]
        var timeline: [(at: TimeInterval, act: () -> Void)] = planned.map { item in
            (item.at, {
                let parents = (decisions.parents[item.id] ?? []).compactMap { made[$0] }
                let operation = RequestOperation(message: item.request, id: item.id, options: item.options, environment: queue.environment, after: parents)
                made[item.id] = operation
                queue.add(operation)
            })
        }
        for item in planned {
            guard let cancel = recorded[item.id]?.cancelled else { continue }
            // A parent's failure cancels it again by itself; without the parent, at the recorded moment.
            if cancel.by == "dependency", decisions.parents[item.id]?.contains(where: plannedIDs.contains) == true { continue }
            timeline.append((cancel.at, { made[item.id]?.cancel(by: cancel.by) }))
        }

        // A recording's times are input: a HAR entry dated 1970 beside the rest made a re-run
        // wait 57 years. A quiet span longer than `longestGap` is closed to it, and said.
        // Stable: a parent made at the same moment as its child comes first, as recorded.
        let sorted = timeline.enumerated().sorted { ($0.element.at, $0.offset) < ($1.element.at, $1.offset) }.map(\.element)
        let gaps = Self.gapsToClose(in: sorted.map(\.at), longest: Self.longestGap)
        for gap in gaps.prefix(5) {
            ErrorOutput.print("reqtop: nothing was sent for \(Self.describe(seconds: gap.length)) from \(String(format: "%.1f", gap.from)) s into the recording; "
                                  + "the re-run waits \(Int(Self.longestGap)) s there instead")
        }
        if gaps.count > 5 { ErrorOutput.print("reqtop: … and \(gaps.count - 5) more such gaps, each closed the same way") }
        begun.mark()
        for (at, act) in sorted.map({ (Self.closing(gaps, at: $0.at), $0.act) }) {
            let wait = at - begun.elapsed
            if wait > 0 { Thread.sleep(forTimeInterval: wait) }
            act()
        }
        queue.waitUntilAllOperationsAreFinished()
        do {
            try writer.finish(hub: queue.events)
            let file = try EventLogFile.read(path: output)
            return (file.events, skipped, file.origins)
        } catch let error as ArchiveError {
            throw InputError(message: error.description)
        }
    }

    /// Says, once, what the re-run does as the recording did rather than by itself: the
    /// reactors' runs, re-sends and backoff delays it replays, and the requests that go to
    /// the recording's servers with a redacted value's placeholder in them.
    /// - Parameters: backoff, budget: whether the recorded backoff delays (and early retries)
    ///   and the budget's refusals are replayed, or decided afresh under `--set`.
    package static func sayReplayed(_ decisions: RecordedDecisions, placeholders: [String], backoff: Bool = true, budget: Bool = true) {
        var count = decisions.count
        // What `--set` decides afresh is not replayed, and not said to be.
        if !backoff { (count.backoffs, count.earlyRetries) = (0, 0) }
        if !budget { count.denials = 0 }
        if !backoff || !budget {
            ErrorOutput.print("reqtop: decided afresh under --set: " + [!backoff ? "backoff delays and early retries (retry.…)" : nil,
                                                                          !budget ? "the retry budget's refusals" : nil].compactMap { $0 }.joined(separator: ", "))
        }
        if count.reactorRuns + count.requeues + count.backoffs + count.holds + count.earlyRetries + count.denials > 0 {
            let reactors = decisions.runs.keys.sorted().map { "\($0)\(RecordedDecisions.suffix)" }
            ErrorOutput.print("reqtop: replaying the recorded decisions of the program's code: \(count.reactorRuns) reactor run\(count.reactorRuns == 1 ? "" : "s")"
                                  + "\(reactors.isEmpty ? "" : " (\(reactors.joined(separator: ", ")))"), \(count.requeues) re-send\(count.requeues == 1 ? "" : "s") after one, "
                                  + "\(count.holds) hold\(count.holds == 1 ? "" : "s") (a batch, a wait for a reactor), "
                                  + "\(count.backoffs) backoff dela\(count.backoffs == 1 ? "y" : "ys"), \(count.earlyRetries) early retr\(count.earlyRetries == 1 ? "y" : "ies") "
                                  + "and \(count.denials) budget refusal\(count.denials == 1 ? "" : "s") as recorded")
        }
        guard !placeholders.isEmpty else { return }
        ErrorOutput.print("reqtop: \(placeholders.count) request\(placeholders.count == 1 ? "" : "s") (\(placeholders.prefix(5).joined(separator: ", "))\(placeholders.count > 5 ? ", …" : "")) "
                              + "carry the placeholder \(Redactor.placeholder) where the recording redacted a secret: they go only to this re-run's own servers "
                              + "on 127.0.0.1, which answer as recorded whatever the value, and never to the real upstream")
    }

    /// The longest the re-run waits with nothing to send: a longer gap in the recording is
    /// closed to this.
    package static let longestGap: TimeInterval = 60

    /// The spans longer than `longest` between consecutive `times` (sorted): where each
    /// begins and how long it is.
    package static func gapsToClose(in times: [TimeInterval], longest: TimeInterval) -> [(from: TimeInterval, length: TimeInterval)] {
        zip(times, times.dropFirst()).compactMap { earlier, later in
            later - earlier > longest ? (earlier, later - earlier) : nil
        }
    }

    /// `time` with every closed gap before it taken out but `longestGap` of each.
    package static func closing(_ gaps: [(from: TimeInterval, length: TimeInterval)], at time: TimeInterval) -> TimeInterval {
        time - gaps.filter { $0.from < time }.reduce(0) { $0 + ($1.length - longestGap) }
    }

    package static func describe(seconds: TimeInterval) -> String {
        switch seconds {
        case ..<3600: String(format: "%.0f s", seconds)
        case ..<(86_400 * 2): String(format: "%.1f hours", seconds / 3600)
        case ..<(86_400 * 730): String(format: "%.0f days", seconds / 86_400)
        default: String(format: "%.0f years", seconds / (86_400 * 365.25))
        }
    }
    package init(events: [RequestEvent], settings: WhatIfSettings) {
        self.events = events
        self.settings = settings
    }
}
