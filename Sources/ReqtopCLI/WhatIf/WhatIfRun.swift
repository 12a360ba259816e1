import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RequestArchive
import RequestOperations

/// One what-if run: the recorded requests sent again, each at its recorded start time, each
/// to a fault server of its own host's that answers as that upstream did
/// (``RecordedUpstreamServers``), through a queue with other settings; recorded to a file
/// like any run.
struct WhatIfRun {
    /// What the recording says of each operation: when it was queued, where it went, and
    /// the options it ran with.
    struct Recorded {
        var start: TimeInterval
        var host: String
        var options: RecordedOptions?
        /// When the program cancelled it, and who (a person at the monitor, the program's own
        /// code): done again at the same moment. A dependency's cancel is not: it follows.
        var cancelled: (at: TimeInterval, by: String)?
    }

    let events: [RequestEvent]
    let settings: WhatIfSettings

    /// The recorded run's 0: when its first request was queued.
    var origin: TimeInterval {
        events.first { if case .queued = $0.payload { true } else { false } }?.time ?? 0
    }

    /// Per operation, in the order they were queued.
    var recorded: [String: Recorded] {
        var found: [String: Recorded] = [:]
        let first = origin
        for event in events {
            if case .cancelled(let by) = event.payload, by != "dependency", found[event.operationID]?.cancelled == nil {
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
    func run(upstream: RecordedUpstream.Built, transport: RequestTransport, output: String, input: String) throws -> (events: [RequestEvent], skipped: [Resend.Skipped]) {
        let recorded = self.recorded
        let resend = Resend(events: events, target: nil)
        let servers: RecordedUpstreamServers
        do {
            servers = try RecordedUpstreamServers(upstream.hosts)
        } catch {
            throw InputError(message: "cannot start the recording's servers: \(error)")
        }
        defer { servers.stop() }
        let base = try settings.plan(recorded: recorded.values.first?.options)
        let queue = RequestQueue(maxConcurrentRequests: base.maxConcurrent, maxConcurrentRequestsPerHost: base.maxConcurrentPerHost,
                                 transport: transport, retryBudget: base.retryBudgetPerHost, circuitBreaker: base.circuitBreaker,
                                 rateLimits: base.rateLimitPushback, instruments: [AttemptTagging(hosts: recorded.mapValues(\.host))])
        let writer: EventLogWriter
        do {
            writer = try EventLogWriter(path: output, hub: queue.events, redact: true, inputs: [input], settings: QueueSettings(plan: base).json)
        } catch let error as ArchiveError {
            throw InputError(message: error.description)
        }
        // The same recorded options give the same plan: parsed once each.
        var plans: [(options: RecordedOptions?, plan: Plan)] = []
        // What to make at each moment: an operation is made (its `queued` event) when the
        // recording made it, so the two runs line up on one time axis.
        var planned: [(id: String, at: TimeInterval, request: URLRequest, options: RequestOptions)] = []
        var skipped = resend.skipped
        for request in resend.requests {
            let options = recorded[request.id]?.options
            let plan = try plans.first { $0.options == options }?.plan ?? settings.plan(recorded: options)
            if !plans.contains(where: { $0.options == options }) { plans.append((options, plan)) }
            var item = PlanFlow(plan: plan, faultServer: nil, queue: queue).item(plan.requests[0])
            item.options.responseBodyCap = RequestOptions.defaultResponseBodyCap
            // Only ever to the recording's own server for its host: a host the recording has no
            // answer from is not sent to at all (it could be a real upstream).
            var sent = request.request
            guard let host = recorded[request.id]?.host, let port = servers.ports[host], let url = sent.url,
                  var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else {
                skipped.append(Resend.Skipped(id: request.id, reason: "the recording has no answer from its host to serve"))
                continue
            }
            (components.scheme, components.host, components.port) = ("http", "127.0.0.1", port)
            sent.url = components.url
            planned.append((request.id, recorded[request.id]?.start ?? 0, sent, item.options))
        }
        servers.start(upstream.hosts)
        // Each at its recorded moment of the run, and cancelled at it where the program did.
        var made: [String: RequestOperation] = [:]
        var timeline: [(at: TimeInterval, act: () -> Void)] = planned.map { item in
            (item.at, { made[item.id] = queue.add(item.request, id: item.id, options: item.options) })
        }
        for item in planned {
            guard let cancel = recorded[item.id]?.cancelled else { continue }
            timeline.append((cancel.at, { made[item.id]?.cancel(by: cancel.by) }))
        }
        let begun = Date()
        for (at, act) in timeline.sorted(by: { $0.at < $1.at }) {
            let wait = at - Date().timeIntervalSince(begun)
            if wait > 0 { Thread.sleep(forTimeInterval: wait) }
            act()
        }
        queue.waitUntilAllOperationsAreFinished()
        do {
            try writer.finish(hub: queue.events)
            return (try EventLogFile.read(path: output).events, skipped)
        } catch let error as ArchiveError {
            throw InputError(message: error.description)
        }
    }
}
