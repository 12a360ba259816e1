import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RequestOperations

/// `reqtop whatif`'s `--set KEY=VALUE`: any plan option (`retry.maxAttempts=6`,
/// `retryBudgetPerHost.percent=0.1`, `circuitBreaker=false`, `timeout=2`), applied over what the
/// recording ran with and read by the plan's own parser, so a wrong key or value gets the
/// plan's message (`--set: retry.maxAtempts: unknown key …`, exit 2). `budget.` and `breaker.`
/// stand for `retryBudgetPerHost.` and `circuitBreaker.`.
package struct WhatIfSettings {
    package struct Assignment {
        package var path: [String]
        package var value: Any
    }

    package var assignments: [Assignment] = []
    /// The recorded run's queue settings (its header's `settings`), in plan terms; the
    /// defaults when the recording does not say.
    package var recordedQueue: [String: Any] = [:]

    package static let aliases = ["budget": "retryBudgetPerHost", "breaker": "circuitBreaker"]

    package init(_ sets: [String]) throws {
        for text in sets {
            guard let equals = text.firstIndex(of: "="), equals != text.startIndex else {
                throw InputError(message: "--set \(text): expected KEY=VALUE, such as retry.maxAttempts=6")
            }
            var path = text[..<equals].split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            guard !path.contains(where: \.isEmpty), path.first != "requests" else {
                throw InputError(message: "--set \(text): expected a plan option such as retry.maxAttempts or circuitBreaker.consecutiveFailures")
            }
            path[0] = Self.aliases[path[0]] ?? path[0]
            let raw = String(text[text.index(after: equals)...])
            // A JSON value where it is one (6, 0.1, false, {"after": 0.2}), else the text.
            let value = (try? JSONSerialization.jsonObject(with: Data(raw.utf8), options: [.fragmentsAllowed])) ?? raw
            assignments.append(Assignment(path: path, value: value))
        }
    }

    /// The plan, with one request, that holds what `recorded` ran with and the assignments
    /// over it; parsed by the plan's parser (errors name `--set`).
    package func plan(recorded: RecordedOptions?) throws -> Plan {
        var object = recordedQueue
        object["requests"] = [["id": "whatif", "url": "http://127.0.0.1/"]]
        if let retry = recorded?.retry {
            var settings: [String: Any] = ["maxAttempts": retry.maxAttempts, "baseDelay": retry.baseDelay, "multiplier": retry.multiplier,
                                           "maxDelay": retry.maxDelay, "jitter": retry.jitter.rawValue,
                                           "retryNonIdempotent": retry.retryNonIdempotent, "earlyRetry": recorded?.earlyRetry ?? true]
            if let budget = retry.retryBudget { settings["retryBudget"] = budget }
            object["retry"] = settings
        }
        if let timeout = recorded?.attemptTimeout { object["timeout"] = timeout }
        if let deadline = recorded?.deadline { object["deadline"] = deadline }
        if let hedge = recorded?.hedge { object["hedge"] = ["after": hedge.after, "max": hedge.max] }
        if let redirects = recorded?.maxRedirects { object["redirects"] = redirects }
        for assignment in assignments { Self.set(&object, assignment.path, assignment.value) }
        let data = try JSONSerialization.data(withJSONObject: object)
        return try PlanParser(file: "--set").parse(data)
    }

    private static func set(_ object: inout [String: Any], _ path: [String], _ value: Any) {
        guard let key = path.first else { return }
        if path.count == 1 {
            object[key] = value
            return
        }
        var inner = object[key] as? [String: Any] ?? [:]
        set(&inner, Array(path.dropFirst()), value)
        object[key] = inner
    }
}

/// Names each attempt's operation and number on the request (`X-Reqtop-Operation`,
/// `X-Reqtop-Attempt`) and the recorded host (`X-Reqtop-Host`), so the recording's server
/// answers it as that attempt was answered.
package struct AttemptTagging: RequestInstrument {
    /// Operation id → the `host:port` it went to in the recording.
    package let hosts: [String: String]

    package func willSend(_ request: RequestMessage, operation id: String, attempt: Int) -> RequestMessage {
        var tagged = request
        // Percent-encoded: an id is the recording's, and may hold what a header cannot (a
        // control character failed every attempt with -1011). The server decodes it.
        tagged.setValue(ScriptedAnswers.headerValue(operation: id), forField: "X-Reqtop-Operation")
        tagged.setValue(String(attempt), forField: "X-Reqtop-Attempt")
        if let host = hosts[id] { tagged.setValue(host, forField: "X-Reqtop-Host") }
        return tagged
    }
}
