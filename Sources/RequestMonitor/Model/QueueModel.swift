import Foundation
import RequestOperations

/// The queue as the monitor knows it: a pure function of the events.
///
/// Live monitoring, a replayed recording and (later) an attached process all feed events
/// through ``apply(_:)``; the same events give the same model, whatever their source.
public struct QueueModel: Sendable {
    /// Where the events come from, for the header ("live demo", "plan.json", ...).
    public var source: String
    public private(set) var rows: [OperationRow] = []
    private var index: [String: Int] = [:]
    /// Rows per state, kept as events arrive so the header costs nothing per frame.
    public private(set) var counts: [OperationRow.State: Int] = [:]
    /// Per host, kept as events arrive (the Hosts screen reads these: summing 100,000 rows
    /// each frame took 80 ms). Like ``counts``, they stay the session's when rows are let go.
    public private(set) var hosts: [String: HostTally] = [:]
    /// Each host's circuit breaker, from the host-level events (`op` empty).
    public private(set) var circuits: [String: CircuitMark] = [:]
    /// The breakpoints set now, by number (`breakpointSet`, `breakpointRemoved`): the `L` screen.
    public private(set) var breakpoints: [Int: BreakpointMark] = [:]
    /// Until when (session time) each host asked every client to pause (`rateLimited`).
    public private(set) var rateLimitedUntil: [String: TimeInterval] = [:]
    /// Retries each host's retry budget allowed at its latest retry (`retryBudget`).
    public private(set) var retryBudgetLeft: [String: Int] = [:]
    /// The latest event time seen.
    public private(set) var latest: TimeInterval = 0
    public private(set) var eventCount = 0
    /// Bumped on every change, so views can cache what they derive.
    public private(set) var version = 0
    /// Bumped when rows move (finished ones let go): what a view keeps per position is stale.
    public private(set) var layout = 0
    /// Positions of rows whose search text (id, host, path, method) changed after the row was
    /// made (a dependent operation's `built` request), since the last ``layout`` change: a
    /// view that keeps a text match per row looks again at these, and at new rows, only.
    public private(set) var searchKeyEdits: [Int] = []
    /// Every row's search text in one buffer, for filters.
    private(set) var searchText = SearchText()
    /// Every row's headers and bodies, lower-cased, for `header:` and `body:` words.
    public struct Content: Sendable {
        /// `\nname: value` for each request and response header, then a newline.
        var headers = SearchText()
        /// The request's body and the answer's (text only, up to ``bodyLimit`` bytes each).
        var bodies = SearchText()
        /// Bytes of each body searched: the rest of a larger one is not.
        static let bodyLimit = 16 * 1024
    }
    private(set) var content = Content()
    /// Injected attempts per host (`injected` events), for the Hosts view.
    public private(set) var injectedPerHost: [String: Int] = [:]
    /// The same per host and program, in a merged view of several programs (`attach --all`).
    public private(set) var programHosts = ProgramHosts()
    /// Finish times of the last few seconds, for requests per second.
    private var recentFinishes: [TimeInterval] = []
    /// Finished operations kept as rows. Past it (by a tenth, so the sweep is rare) the
    /// oldest finished rows are let go: a monitor left attached for days stays in bounds.
    /// ``counts`` stay those of the whole session.
    public let finishedLimit: Int
    /// Finished rows let go so far.
    public private(set) var forgotten = 0
    public static let defaultFinishedLimit = 100_000
    /// Whether finished rows are packed (``OperationRow/pack()``); off only in tests that
    /// compare packed rows with the rows they were.
    var packsFinishedRows = true

    /// Every operation seen: the rows and the finished ones let go.
    public var totalOperations: Int { rows.count + forgotten }

    public init(source: String, finishedLimit: Int = QueueModel.defaultFinishedLimit) {
        self.source = source
        self.finishedLimit = max(1, finishedLimit)
        // Room for every row the limit keeps, made once: grown by doubling, the array copied
        // itself at each step and left the old buffers as holes in the heap (a third of the
        // memory at 100,000 rows). Pages are only used as rows fill them.
        rows.reserveCapacity(self.finishedLimit + self.finishedLimit / 10 + 1_024)
    }

    /// The position of the row with `id` in ``rows``.
    public func index(of id: String) -> Int? {
        index[id]
    }

    public func row(_ id: String) -> OperationRow? {
        index[id].map { rows[$0] }
    }

    public mutating func apply(_ events: [RequestEvent]) {
        for event in events { apply(event) }
    }

    public mutating func apply(_ event: RequestEvent) {
        // A stream's notice that it fell behind belongs to no operation.
        if case .missed = event.payload { return }
        // Host-level events (a breaker's changes) belong to no operation either.
        if event.operationID.isEmpty {
            if case .rateLimited(let host, let until, _) = event.payload {
                rateLimitedUntil[host] = until
            }
            if case .retryBudget(let host, let left) = event.payload {
                retryBudgetLeft[host] = left
            }
            if let (host, mark) = CircuitMark.from(event) {
                circuits[host] = mark
            }
            if let program = event.program { programHosts.applyHostLevel(event, program: program) }
            switch event.payload {
            case .breakpointSet(let id, let rule, let by, let enabled, let afterResponse):
                breakpoints[id] = BreakpointMark(id: id, rule: rule, by: by, enabled: enabled, afterResponse: afterResponse, program: event.program)
                version += 1
            case .breakpointRemoved(let id):
                breakpoints[id] = nil
                version += 1
            case .queued, .built, .started, .sent, .connection, .preparationFailed, .taskCreated, .redirect, .response, .data,
                 .uploaded, .responseBody, .requestBody, .headerFields, .messages, .trailers, .taskCompleted, .validationFailed, .retryScheduled, .retryDenied, .hedged, .injected,
                 .breakpoint, .breakpointResolved, .circuitWaiting, .circuitOpened, .circuitHalfOpen, .circuitClosed,
                 .rateLimitWaiting, .rateLimited, .retryBudget, .earlyRetry, .intercepted, .held, .released, .reactorStarted,
                 .reactorWaiting, .reactorFinished, .requeued, .cancelled, .finished, .missed, .other:
                break
            }
            if event.payload.host != nil {
                eventCount += 1
                version += 1
                latest = max(latest, event.time)
            }
            return
        }
        eventCount += 1
        version += 1
        latest = max(latest, event.time)
        let position: Int
        let isNew = index[event.operationID] == nil
        if let existing = index[event.operationID] {
            position = existing
        } else {
            position = rows.count
            index[event.operationID] = position
            rows.append(OperationRow(id: event.operationID, sequence: position, queuedAt: event.time))
            counts[.queued, default: 0] += 1
        }
        let before = rows[position].state
        let old = HostTally.Mark(rows[position])
        let textVersion = rows[position].searchTextVersion
        rows[position].apply(event)
        if isNew || rows[position].searchTextVersion != textVersion {
            searchText.set(position, to: rows[position].searchText)
        }
        if case .injected = event.payload {
            let host = rows[position].host.isEmpty ? "(no host)" : rows[position].host
            injectedPerHost[host, default: 0] += 1
            if let program = event.program { programHosts.injected[ProgramHosts.prefix(of: program) + host, default: 0] += 1 }
        }
        // Written once a row has finished (its headers and bodies are final then; a running
        // row is read in place): written at every change, three copies of each row's
        // headers piled up in the buffer (0.87 → 1.03 KiB per operation in the bench).
        if case .finished = event.payload {
            setContent(position)
        } else if isNew {
            content.headers.set(position, to: "")
            content.bodies.set(position, to: "")
        }
        if !isNew, rows[position].searchTextVersion != textVersion {
            searchKeyEdits.append(position)
            // Rare; past a bound, a layout change makes views start over instead.
            if searchKeyEdits.count > 10_000 {
                searchKeyEdits = []
                layout += 1
            }
        }
        let after = rows[position].state
        if before != after {
            counts[before, default: 0] -= 1
            counts[after, default: 0] += 1
        }
        let new = HostTally.Mark(rows[position])
        if new != old || isNew {
            if !isNew { hosts[old.host, default: HostTally()].remove(old) }
            hosts[new.host, default: HostTally()].add(new, finishedIn: after != before ? rows[position].duration : nil)
            if hosts[new.host]?.key == nil { hosts[new.host]?.key = CircuitMark.breakerKey(url: rows[position].url) }
            if let program = event.program {
                programHosts.move(isNew ? nil : old, to: new, finishedIn: after != before ? rows[position].duration : nil, url: rows[position].url, program: program)
            }
        }
        if case .finished = event.payload {
            // Kept for hours from here on: a row's events and detail in a few hundred bytes.
            if packsFinishedRows { rows[position].pack() }
            recentFinishes.append(event.time)
            if recentFinishes.count > 4096 { recentFinishes.removeFirst(2048) }
            let finishedRows = (counts[.succeeded] ?? 0) + (counts[.failed] ?? 0) + (counts[.cancelled] ?? 0) - forgotten
            if finishedRows > finishedLimit + max(1, finishedLimit / 10) { forgetOldestFinished(finishedRows - finishedLimit) }
        }
    }

    /// Lets the `count` oldest finished rows go and renumbers the rest (O(rows), once per
    /// tenth of the limit).
    private mutating func forgetOldestFinished(_ count: Int) {
        var left = count
        var kept: [OperationRow] = []
        kept.reserveCapacity(rows.capacity)
        var keptPositions: [Int] = []
        keptPositions.reserveCapacity(rows.count - count)
        for (position, row) in rows.enumerated() {
            if left > 0, row.state.isFinished {
                left -= 1
                continue
            }
            kept.append(row)
            keptPositions.append(position)
        }
        forgotten += count - left
        rows = kept
        searchText.keep(keptPositions)
        content.headers.keep(keptPositions)
        content.bodies.keep(keptPositions)
        layout += 1
        searchKeyEdits = []
        index = Dictionary(uniqueKeysWithValues: rows.indices.map { (rows[$0].id, $0) })
    }

    /// Operations finished per second over the last `window` seconds before `now`.
    public func requestsPerSecond(at now: TimeInterval, window: TimeInterval = 5) -> Double {
        var count = 0
        for time in recentFinishes.reversed() {
            if time < now - window { break }
            count += 1
        }
        return Double(count) / window
    }
}

extension QueueModel {
    /// Makes the headers and bodies text of the row at `position` again (its request was
    /// queued or built, or an answer came): a few times per row, so rebuilt whole.
    fileprivate mutating func setContent(_ position: Int) {
        content.headers.set(position, to: Content.headers(of: rows[position]))
        content.bodies.set(position, to: Content.bodies(of: rows[position]))
    }
}

extension QueueModel.Content {
    /// `\nname: value` per request and response header, lower-cased, then a newline.
    static func headers(of row: OperationRow) -> String {
        var headers = ""
        for (name, value) in row.requestHeaders { headers += "\n\(name): \(value)" }
        for (name, value) in row.responseHeaders { headers += "\n\(name): \(value)" }
        return headers.isEmpty ? "" : headers.lowercased() + "\n"
    }

    /// The request's and the answer's body as text, lower-cased, up to ``bodyLimit`` each.
    static func bodies(of row: OperationRow) -> String {
        func text(_ body: RecordedBody?) -> String {
            guard case .bytes(let data)? = body else { return "" }
            return String(decoding: data.prefix(bodyLimit), as: UTF8.self)
        }
        let request = text(row.requestBody), response = text(row.responseBody?.body)
        return request.isEmpty && response.isEmpty ? "" : (request + "\u{0}" + response).lowercased()
    }
}
