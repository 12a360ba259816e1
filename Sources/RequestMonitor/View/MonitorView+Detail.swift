import Foundation
import HTTPTypes
import RequestOperations

/// The detail view of one operation: its tabs (events, request, response, retries,
/// timing) as lines, and the words and styles of each event.
extension MonitorView {
    // MARK: - Detail

    func drawDetail(_ grid: inout CellGrid, row: OperationRow, tab: MonitorState.DetailTab) {
        var x = grid.put(" \(row.id) ", x: 0, y: 2, style: CellGrid.Style(bold: true))
        x = grid.put("\(theme.glyph(row.state)) \(theme.word(row.state))", x: x, y: 2, style: theme.style(row.state))
        let attempts = row.maxAttempts.map { "\(row.attempt)/\($0)" } ?? "\(row.attempt)"
        let transfer = row.transfer(at: now).map { "  \($0.text)" } ?? ""
        let tail = "  status \(row.status.map(String.init) ?? "-")\(transfer)  attempt \(attempts)  \(Format.duration(row.elapsed(at: now)))"
        // The URL gives way, not what follows it: at 120 columns a long URL cut a running
        // download's `↓ 225K of 977K` to `↓ 225K of 9`.
        let urlRoom = max(12, grid.width - x - row.method.count - 3 - tail.count)
        let url = row.url.count <= urlRoom ? row.url : String(row.url.prefix(urlRoom - 1)) + theme.ellipsis
        grid.put("  \(row.method) \(url)\(tail)", x: x, y: 2)
        x = 1
        for candidate in MonitorState.DetailTab.allCases {
            let selected = candidate == tab
            x = grid.put(" \(candidate.rawValue) ", x: x, y: 3, style: CellGrid.Style(bold: selected, reverse: selected))
            x += 1
        }
        if tab == .body { return drawBody(&grid, row: row, from: state.bodyScroll) }
        let lines = detailLines(row: row, tab: tab)
        let room = grid.height - 5
        let shown = lines.count > room ? Array(lines.suffix(room - 1)) : lines
        var y = 4
        if lines.count > room {
            grid.put("  \(theme.ellipsis) \(lines.count - shown.count) earlier lines", x: 0, y: y, style: CellGrid.Style(dim: true))
            y += 1
        }
        for (text, style) in shown {
            grid.put(text, x: 1, y: y, style: style)
            y += 1
        }
    }

    private func detailLines(row: OperationRow, tab: MonitorState.DetailTab) -> [(String, CellGrid.Style)] {
        switch tab {
        case .events:
            let merged: [(String, CellGrid.Style)] = row.mergedDataEvents == 0 ? [] : [
                ("(\(row.mergedDataEvents) data events merged: one line per run of them, its bytes summed)", CellGrid.Style(dim: true)),
            ]
            return merged + row.events.map { event in
                let time = String(format: "%8.3f", event.time - row.queuedAt)
                return ("\(time)  #\(event.attempt)  \(fit(event.payload.name, 17))\(Self.describe(event.payload, theme))", Self.style(event.payload, theme))
            }
        case .request:
            var lines: [(String, CellGrid.Style)] = [("\(row.method) \(row.url)", CellGrid.Style(bold: true))]
            // A proxy's client's request: the version each side spoke.
            if let client = row.requestOptions?.clientHTTPVersion {
                lines.append(("client spoke \(client)" + (row.httpVersion.map { " · upstream answered in \($0)" } ?? ""), .plain))
            }
            if let fields = row.requestFields {
                // As the client sent them: in order, each repeat apart, names as spelled.
                lines += fields.map { ("\($0.name.rawName): \($0.value)", .plain) }
            } else {
                lines += row.requestHeaders.sorted { $0.key < $1.key }.map { ("\($0.key): \($0.value)", .plain) }
            }
            if row.requestHeaders.isEmpty { lines.append(("(no headers set by the caller)", CellGrid.Style(dim: true))) }
            if let trailers = row.requestTrailers { lines += Self.trailerLines(trailers) }
            if let options = row.requestOptions { lines.append((Self.describe(options, maxAttempts: row.maxAttempts), CellGrid.Style(dim: true))) }
            if let upload = row.transfer(at: now), upload.direction == .up { lines.append((upload.text, .plain)) }
            return lines + Self.bodyLines(row.requestBody)
        case .response:
            guard let status = row.status else { return [("no response yet", CellGrid.Style(dim: true))] }
            let versions = row.httpVersion.map { upstream in row.requestOptions?.clientHTTPVersion.map { " · \(upstream) (to the client: \($0))" } ?? " · \(upstream)" } ?? ""
            var lines: [(String, CellGrid.Style)] = [("status \(status)" + versions + "   \(Format.bytes(row.bytes)) received" + (row.expectedBytes.map { " of \(Format.bytes($0))" } ?? ""), CellGrid.Style(bold: true))]
            if let transfer = row.transfer(at: now) { lines.append((transfer.text, .plain)) }
            if let code = row.grpcStatus {
                let message = row.responseTrailers?.first { $0.name.rawName.lowercased() == "grpc-message" }?.value
                    ?? row.responseHeaders.first { $0.key.lowercased() == "grpc-message" }?.value
                lines.append(("gRPC call \(row.path) · status " + GRPCBodyText.status(code, message: message), code == 0 ? .plain : theme.style(.failed)))
            }
            if let messages = row.messages {
                lines.append(("WebSocket: \(messages.fromClient) message\(messages.fromClient == 1 ? "" : "s") from the client, \(messages.toClient) to it (once it closes, their first bytes: the Request tab from the client, the Body tab to it)", .plain))
            }
            if let replaced = row.replacedAnswer {
                lines.append(("answered at a breakpoint in place of the server's \(replaced.status) (attempt \(replaced.attempt)); the server's answer is in the Events tab",
                              CellGrid.Style(color: theme.color ? .yellow : .normal, bold: true)))
            }
            if let file = row.requestOptions?.saveTo { lines.append(("saved to \(file) (written under a temporary name until the answer is whole)", CellGrid.Style(dim: true))) }
            if let fields = row.responseFields {
                lines += fields.map { ("\($0.name.rawName): \($0.value)", .plain) }
            } else {
                lines += row.responseHeaders.sorted { $0.key < $1.key }.map { ("\($0.key): \($0.value)", .plain) }
            }
            if let trailers = row.responseTrailers { lines += Self.trailerLines(trailers) }
            if let error = row.lastError { lines.append(("last error: \(error)", theme.style(.failed))) }
            return lines
        case .retries:
            var flow: [(String, CellGrid.Style)] = []
            if let heldBy = row.heldBy { flow.append(("held: waiting for \(heldBy.description)", theme.style(.held))) }
            // A person's thinking time is not the upstream's: the engine stops the clock.
            if case .breakpoint? = row.heldBy, let deadline = row.requestOptions?.deadline {
                flow.append(("its deadline (\(Format.seconds(deadline))) stands still while it is stopped, and runs on when it goes on", theme.style(.held)))
            }
            if !row.interceptedBy.isEmpty { flow.append(("interceptors: \(row.interceptedBy.joined(separator: " \(theme.arrow) "))", .plain)) }
            var lines: [(String, CellGrid.Style)] = row.attempts.map { attempt in
                let span = "\(String(format: "%7.3f", attempt.start - row.queuedAt))\(theme.dash)\(attempt.end.map { String(format: "%.3f", $0 - row.queuedAt) } ?? theme.ellipsis)"
                let outcome = (attempt.status.map { "status \($0)" } ?? attempt.error ?? (attempt.end == nil ? "running" : "-"))
                    + (attempt.injected.map { " [injected: \($0)]" } ?? "")
                let next = attempt.delay.map { " \(theme.arrow) wait \(String(format: "%.2f", $0))s" } ?? ""
                return ("#\(attempt.number)  \(span)  \(outcome)\(next)  \(attempt.decision ?? "")", attempt.delay != nil ? theme.style(.backoff) : .plain)
            }
            if let reason = row.reason, row.state.isFinished { lines.append(("end: \(reason)", theme.style(row.state))) }
            if lines.isEmpty { lines.append(("not started yet", CellGrid.Style(dim: true))) }
            return flow + lines
        case .body:
            return [] // drawn by drawBody
        case .timing:
            let start = row.queuedAt
            let end = max(row.finishedAt ?? now, start + 0.001)
            let barWidth = 40
            var lines: [(String, CellGrid.Style)] = row.segments.map { segment in
                let from = min(barWidth - 1, Int(Double(barWidth) * Self.fraction(segment.start, from: start, span: end - start)))
                let to = max(from + 1, Int(Double(barWidth) * Self.fraction(segment.end ?? now, from: start, span: end - start)))
                let bar = String(repeating: " ", count: min(barWidth, from))
                    + String(repeating: segment.kind == .wait ? theme.waitBar : theme.attemptBar, count: max(1, min(barWidth, to) - from))
                let label = switch segment.kind {
                case .attempt(let number): "attempt \(number)"
                case .wait: "backoff"
                }
                let duration = Format.duration((segment.end ?? now) - segment.start)
                return ("\(fit(label, 10)) \(fit(bar, barWidth))  \(String(format: "%.3f", segment.start - start))  \(duration)",
                        segment.kind == .wait ? theme.style(.backoff) : .plain)
            }
            let phases = row.attempts.compactMap { attempt in Self.phases(attempt, end: attempt.end ?? now) }
            if !phases.isEmpty { lines += [("", .plain)] + phases.map { ($0, CellGrid.Style(dim: true)) } }
            return lines
        }
    }

    /// "attempt 2 (new connection #4): connect 0.8ms · send 0.4ms · wait 12.1ms · receive
    /// 3.0ms", for an attempt whose transport said when the request was written. Before the
    /// connection: connecting when it was new, waiting for a free one (`pool`) when reused.
    static func phases(_ attempt: OperationRow.Attempt, end: TimeInterval) -> String? {
        guard let task = attempt.taskAt, let sent = attempt.sentAt else { return nil }
        func ms(_ seconds: TimeInterval) -> String { String(format: "%.1fms", max(0, seconds) * 1000) }
        var parts: [String] = []
        var title = "attempt \(attempt.number)"
        var written = task
        if let connection = attempt.connection, connection.at <= sent {
            title += connection.reused ? " (connection #\(connection.id), reused)" : " (new connection #\(connection.id))"
            parts.append("\(connection.reused ? "pool" : "connect") \(ms(connection.at - task))")
            written = connection.at
        }
        parts.append("send \(ms(sent - written))")
        if let response = attempt.responseAt {
            parts += ["wait \(ms(response - sent))", "receive \(ms(end - response))"]
        } else {
            parts.append("waiting \(ms(end - sent))")
        }
        return "\(title): " + parts.joined(separator: " · ")
    }

    static func describe(_ payload: RequestEvent.Payload, _ theme: Theme) -> String {
        switch payload {
        case .queued(let method, let url, _, _, let body, _), .built(let method, let url, _, let body):
            "\(method) \(url)" + (body.map { " (" + Self.bodySize($0) + ")" } ?? "")
        case .started, .other: ""
        case .sent: "request written"
        case .injected(let fault, let rule, let by): "INJECTED \(fault) (" + (rule.isEmpty ? "" : "rule \"\(rule)\", ") + "set by \(by)): not the server's"
        case .breakpoint(let id, let rule, let by, let afterResponse):
            "STOPPED at breakpoint \(id) (\"\(rule)\", set by \(by)) " + (afterResponse ? "after the answer, before the retry decision" : "before sending")
        case .breakpointResolved(let how, let by): "breakpoint: \(how) by \(by)"
        case .breakpointSet(let id, let rule, let by, let enabled, _): "breakpoint \(id) \(enabled ? "on" : "off"): \(rule) (\(by))"
        case .breakpointRemoved(let id): "breakpoint \(id) removed"
        case .connection(let id, let reused, let proxy):
            (reused ? "connection #\(id), reused" : "new connection #\(id)") + (proxy.map { " via proxy \($0)" } ?? "")
        case .missed(let count): "\(count) events missed"
        case .preparationFailed(let reason), .validationFailed(let reason), .retryDenied(let reason): reason
        case .taskCreated(let task, _, let insecure): "task \(task)" + (insecure ? " · TLS NOT VERIFIED (--insecure)" : "")
        case .redirect(let status, let location, let dropped, let refused):
            "\(status) \(theme.arrow) \(location)" + (dropped.isEmpty ? "" : " (another origin: dropped \(dropped.joined(separator: ", ")))")
                + (refused.map { $0 == RedirectPolicy.notFollowed ? " · the answer, passed on (\($0))" : " refused: \($0)" } ?? "")
        case .response(let status, _, let expected, let version):
            "status \(status)" + (version.map { " over \($0)" } ?? "")
                + (expected.map { $0 < 1000 ? ", \($0) bytes expected" : ", \(Format.bytes($0)) (\($0) bytes) expected" } ?? "")
        case .data(let bytes): bytes < 1000 ? "\(bytes) bytes" : "\(Format.bytes(bytes)) (\(bytes) bytes)"
        case .uploaded(let bytes, let total): "\(Format.bytes(bytes))" + (total.map { " of \(Format.bytes($0))" } ?? "") + " sent"
        case .responseBody(let body, let total, let truncated, let type):
            "\(Format.bytes(total))" + (type.map { " \($0)" } ?? "") + (truncated ? ", first \(Self.bodySize(body)) kept" : "")
                + (body.isOmitted ? " (\(Self.bodySize(body)))" : "")
        case .requestBody(let body, let total, let truncated, let type):
            "request body \(Format.bytes(total))" + (type.map { " \($0)" } ?? "") + (truncated ? ", first \(Self.bodySize(body)) kept" : "")
        case .messages(let fromClient, let toClient): "WebSocket messages: \(fromClient) from the client, \(toClient) to it"
        case .headerFields(let side, let fields):
            "\(fields.count) field\(fields.count == 1 ? "" : "s") as the \(side == .request ? "client" : "server") sent them, in order"
        case .trailers(let side, let fields):
            "\(fields.count) trailer\(fields.count == 1 ? "" : "s") from the \(side == .request ? "client" : "server"): "
                + fields.prefix(3).map { "\($0.name.rawName): \($0.value)" }.joined(separator: ", ")
        case .taskCompleted(let error): error.map { "error \($0.code) \($0.message)" } ?? "ok"
        case .retryScheduled(let delay, let reason): String(format: "in %.2fs: ", delay) + reason
        case .earlyRetry(let trigger, let delay): String(format: "%@ in %.2fs", trigger, delay)
        case .hedged(let racing, let after): String(format: "copy sent: attempt %d had no response after %.2fs", racing, after)
        case .intercepted(let by, let command): "\(by): \(command)"
        case .held(let batch): "in batch \(batch)"
        case .circuitWaiting(let host): "waits for the circuit breaker of \(host)"
        case .rateLimitWaiting(let host, let until): String(format: "waits until t=%.1fs: %@ asked to slow down", until, host)
        case .rateLimited(let host, let until, let reason): String(format: "%@ paused until t=%.1fs: %@", host, until, reason)
        case .retryBudget(let host, let left): "retry budget of \(host): \(left) left"
        case .circuitOpened(let host, let reason, _): "circuit of \(host) opened: \(reason)"
        case .circuitHalfOpen(let host): "circuit of \(host) half-open: one probe may go through"
        case .circuitClosed(let host, let reason): "circuit of \(host) closed: \(reason)"
        case .released(let batch, let size): "batch \(batch) released, \(size) together"
        case .reactorStarted(let name, let trigger): "\(name) runs (\(trigger))"
        case .reactorWaiting(let name): "waits for \(name)"
        case .reactorFinished(let name, let outcome): "\(name): \(outcome)"
        case .requeued(let by, let reason): "by \(by): \(reason)"
        case .cancelled(let by): "by \(by)"
        case .finished(let outcome, let status, let attempts, let duration, let reason):
            "\(outcome.rawValue), status \(status.map(String.init) ?? "-"), \(attempts) attempt\(attempts == 1 ? "" : "s"), \(Format.duration(duration))"
                + (reason.map { ": \($0)" } ?? "")
        }
    }

    static func style(_ payload: RequestEvent.Payload, _ theme: Theme) -> CellGrid.Style {
        switch payload {
        case .retryScheduled, .earlyRetry, .held, .reactorStarted, .reactorWaiting, .requeued: theme.style(.backoff)
        case .reactorFinished(_, .failure): theme.style(.failed)
        case .validationFailed, .preparationFailed, .retryDenied: theme.style(.failed)
        case .taskCompleted(let error?) where error.isHedgeCancellation: theme.style(.cancelled)
        case .taskCompleted(let error) where error != nil: theme.style(.failed)
        case .hedged: theme.style(.backoff)
        case .cancelled: theme.style(.cancelled)
        case .finished(let outcome, _, _, _, _): theme.style(OperationRow.State(outcome))
        default: .plain
        }
    }

    static func bodySize(_ body: RecordedBody) -> String {
        switch body {
        case .bytes(let data): "body \(Format.bytes(data.count))"
        case .omitted(let bytes, let reason): "body \(bytes.map(Format.bytes) ?? "of unknown size") not recorded: \(reason)"
        }
    }

    /// The body as text lines (the first 200), or what is known of it.
    /// The fields after a body, under a line that says they came after it.
    static func trailerLines(_ trailers: HTTPFields) -> [(String, CellGrid.Style)] {
        [("trailers (after the body):", CellGrid.Style(dim: true))] + trailers.map { ("\($0.name.rawName): \($0.value)", .plain) }
    }

    static func bodyLines(_ body: RecordedBody?) -> [(String, CellGrid.Style)] {
        guard let body else { return [] }
        var lines: [(String, CellGrid.Style)] = [("", .plain), (bodySize(body), CellGrid.Style(bold: true))]
        if case .bytes(let data) = body {
            if let text = String(data: data, encoding: .utf8) {
                let all = text.split(separator: "\n", omittingEmptySubsequences: false)
                lines += all.prefix(200).map { (String($0), .plain) }
                if all.count > 200 { lines.append(("\(all.count - 200) more lines", CellGrid.Style(dim: true))) }
            } else {
                lines.append(("(binary)", CellGrid.Style(dim: true)))
            }
        }
        return lines
    }

    /// "timeout 5s · deadline 5m00s · retry 3 attempts, 0.5s×2 up to 30s, equal jitter, budget 60s"
    static func describe(_ options: RecordedOptions, maxAttempts: Int?) -> String {
        // Settings are exact numbers a person typed: 0.05 s stays 0.05 s.
        func exact(_ seconds: TimeInterval) -> String {
            guard seconds < 60 else { return Format.seconds(seconds) }
            var text = String(format: "%.3f", seconds)
            while text.hasSuffix("0") { text.removeLast() }
            if text.hasSuffix(".") { text.removeLast() }
            return text + "s"
        }
        // A request the proxy answered itself: no setting of a request's applied to it.
        if options.refusedByProxy { return "refused by the proxy: answered by it, never sent" }
        var parts: [String] = []
        let once = (options.retry?.maxAttempts ?? maxAttempts) == 1
        if options.relaysEveryAnswer, once, options.maxRedirects == 0, options.hedge == nil {
            // A transparent proxy's request: no retry policy, budget or backoff applies to it.
            parts.append("transparent: one attempt, no redirect followed, every answer relayed as it came")
            if let timeout = options.attemptTimeout { parts.append("timeout \(exact(timeout))") }
            if let deadline = options.deadline { parts.append("deadline \(exact(deadline))") }
            return parts.joined(separator: " · ")
        }
        if let timeout = options.attemptTimeout { parts.append("timeout \(exact(timeout))") }
        if let deadline = options.deadline { parts.append("deadline \(exact(deadline))") }
        if let file = options.bodyFile { parts.append("body from \(file)") }
        if let file = options.saveTo { parts.append("answer to \(file)") }
        if let retry = options.retry {
            var text = "retry \(retry.maxAttempts) attempt\(retry.maxAttempts == 1 ? "" : "s"), "
                + "\(exact(retry.baseDelay))×\(retry.multiplier.formatted()) up to \(exact(retry.maxDelay)), "
                + (retry.jitter == .none ? "no jitter" : "\(retry.jitter.rawValue) jitter")
            if retry.retryNonIdempotent { text += ", any method" }
            text += retry.retryBudget.map { ", budget \(exact($0))" } ?? ", no budget"
            parts.append(text)
        } else {
            parts.append("retry: a policy of the program's own" + (maxAttempts.map { " (\($0) attempts)" } ?? ""))
        }
        if !options.earlyRetry { parts.append("no early retry") }
        if let redirects = options.maxRedirects { parts.append(redirects == 0 ? "no redirect followed" : "up to \(redirects) redirects") }
        if options.relaysEveryAnswer { parts.append("every answer relayed as it came") }
        if let hedge = options.hedge { parts.append("hedge after \(exact(hedge.after))" + (hedge.max == 1 ? "" : ", up to \(hedge.max) copies")) }
        return parts.joined(separator: " · ")
    }
}
