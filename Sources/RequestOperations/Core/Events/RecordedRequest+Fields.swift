import Foundation

/// The fields of a recorded body and recorded options, shared by `queued` and `built`.
///
/// - body: `bodyBytes` (its size), then `body` (the text, when it is UTF-8) or `bodyBase64`;
///   or, when it was left out, `bodyOmitted` (why) and `bodyBytes` when known.
/// - options: `timeout`, `deadline`, `earlyRetry` (only when false), and the retry settings
///   `retryBaseDelay`, `retryMultiplier`, `retryMaxDelay`, `retryJitter`,
///   `retryNonIdempotent`, `retryBudget` (absent: no budget) beside `maxAttempts`; hedged
///   reads `hedgeAfter` (seconds), `hedgeMax` (copies), absent when off; `saveTo` and
///   `bodyFile` (added), the files an answer goes to and a body comes from; `parents` (added),
///   the ids of the operations it ran after, each percent-encoded, joined by `,`; `origin`
///   (added), who asked for the request when it was not the program itself (a proxy's client);
///   `maxRedirects` (added, when not 10) and `relaysEveryAnswer` (added, only when true), a
///   transparent proxy's settings; `clientHTTPVersion` (added), the version a proxy's client
///   spoke (`HTTP/1.1`, `HTTP/2.0`); `refusedByProxy` (added, only when true), a request a
///   proxy answered itself and never sent on.
extension RequestEvent.Payload {
    static func write<W: EventFieldWriter>(body: RecordedBody?, to w: inout W) {
        switch body {
        case .bytes(let data)?:
            w.int("bodyBytes", data.count)
            if let text = String(data: data, encoding: .utf8) {
                w.string("body", text)
            } else {
                w.string("bodyBase64", data.base64EncodedString())
            }
        case .omitted(let bytes, let reason)?:
            if let bytes { w.int("bodyBytes", bytes) }
            w.string("bodyOmitted", reason)
        case nil:
            break
        }
    }

    static func write<W: EventFieldWriter>(options: RecordedOptions, to w: inout W) {
        if let timeout = options.attemptTimeout { w.double("timeout", timeout) }
        if let deadline = options.deadline { w.double("deadline", deadline) }
        if !options.earlyRetry { w.bool("earlyRetry", false) }
        if let hedge = options.hedge {
            w.double("hedgeAfter", hedge.after)
            w.int("hedgeMax", hedge.max)
        }
        if let saveTo = options.saveTo { w.string("saveTo", saveTo) }
        if let bodyFile = options.bodyFile { w.string("bodyFile", bodyFile) }
        if !options.parents.isEmpty { w.string("parents", options.parents.map(encodedID).joined(separator: ",")) }
        if let origin = options.origin { w.string("origin", origin) }
        if let maxRedirects = options.maxRedirects { w.int("maxRedirects", maxRedirects) }
        if options.relaysEveryAnswer { w.bool("relaysEveryAnswer", true) }
        if let version = options.clientHTTPVersion { w.string("clientHTTPVersion", version) }
        if options.refusedByProxy { w.bool("refusedByProxy", true) }
        if let retry = options.retry {
            w.double("retryBaseDelay", retry.baseDelay)
            w.double("retryMultiplier", retry.multiplier)
            w.double("retryMaxDelay", retry.maxDelay)
            w.string("retryJitter", retry.jitter.rawValue)
            w.bool("retryNonIdempotent", retry.retryNonIdempotent)
            if let budget = retry.retryBudget { w.double("retryBudget", budget) }
        }
    }

    static func readBody<R: EventFieldReader>(_ r: R) throws -> RecordedBody? {
        if r.has("body") { return .bytes(Data(try r.string("body").utf8)) }
        if let base64 = r.optionalString("bodyBase64") {
            guard let data = Data(base64Encoded: base64) else {
                throw r.invalid("bodyBase64", expected: "base64", found: "\"\(base64.prefix(20))…\"")
            }
            return .bytes(data)
        }
        if let reason = r.optionalString("bodyOmitted") {
            let bytes = r.optionalInt("bodyBytes")
            if let bytes, bytes < 0 { throw r.invalid("bodyBytes", expected: "a size of 0 or more", found: "\(bytes)") }
            return .omitted(bytes: bytes, reason: reason)
        }
        return nil
    }

    static func readOptions<R: EventFieldReader>(_ r: R) throws -> RecordedOptions? {
        // Present and wrong is an error, not a default: a re-send must not run without the
        // timeout a recording asked for.
        func seconds(_ key: String) throws -> Double? { r.has(key) ? try r.double(key) : nil }
        let timeout = try seconds("timeout")
        let deadline = try seconds("deadline")
        let earlyRetry = try r.optionalBool("earlyRetry")
        var retry: RetrySettings?
        if let baseDelay = try seconds("retryBaseDelay") {
            let jitterName = try r.string("retryJitter")
            guard let jitter = Jitter(rawValue: jitterName) else {
                throw r.invalid("retryJitter", expected: Jitter.allCases.map(\.rawValue).joined(separator: ", "), found: "\"\(jitterName)\"")
            }
            retry = RetrySettings(maxAttempts: try r.int("maxAttempts"), baseDelay: baseDelay, multiplier: try r.double("retryMultiplier"),
                                  maxDelay: try r.double("retryMaxDelay"), jitter: jitter,
                                  retryNonIdempotent: try r.optionalBool("retryNonIdempotent") ?? false,
                                  retryBudget: try seconds("retryBudget"))
        }
        var hedge: HedgePolicy?
        if let after = try seconds("hedgeAfter") {
            guard after > 0, after <= 86_400 else { throw r.invalid("hedgeAfter", expected: "seconds above 0, at most a day", found: "\(after)") }
            let max = try r.int("hedgeMax")
            guard (0...100).contains(max) else { throw r.invalid("hedgeMax", expected: "a number of copies from 0 to 100", found: "\(max)") }
            hedge = HedgePolicy(after: after, max: max)
        }
        let saveTo = r.optionalString("saveTo"), bodyFile = r.optionalString("bodyFile")
        let parents = r.optionalString("parents").map { $0.split(separator: ",").map { $0.removingPercentEncoding ?? String($0) } } ?? []
        let origin = r.optionalString("origin")
        let maxRedirects = r.optionalInt("maxRedirects")
        if let maxRedirects, !(0...100).contains(maxRedirects) {
            throw r.invalid("maxRedirects", expected: "a number of redirects from 0 to 100", found: "\(maxRedirects)")
        }
        let relays = try r.optionalBool("relaysEveryAnswer") ?? false
        let clientVersion = r.optionalString("clientHTTPVersion")
        let refused = try r.optionalBool("refusedByProxy") ?? false
        guard timeout != nil || deadline != nil || earlyRetry != nil || retry != nil || hedge != nil || saveTo != nil || bodyFile != nil
                || !parents.isEmpty || origin != nil || maxRedirects != nil || relays || clientVersion != nil || refused else { return nil }
        var options = RecordedOptions(attemptTimeout: timeout, deadline: deadline, retry: retry, earlyRetry: earlyRetry ?? true, hedge: hedge)
        (options.saveTo, options.bodyFile, options.parents, options.origin) = (saveTo, bodyFile, parents, origin)
        (options.maxRedirects, options.relaysEveryAnswer, options.clientHTTPVersion) = (maxRedirects, relays, clientVersion)
        options.refusedByProxy = refused
        return options
    }

    /// An id as `parents` holds it: `,` and `%` (and anything past ASCII letters, digits and
    /// `-._~`) percent-encoded.
    private static func encodedID(_ id: String) -> String {
        id.addingPercentEncoding(withAllowedCharacters: idCharacters) ?? id
    }

    private static let idCharacters = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")
}
