import Foundation
import RequestArchive
import RequestEventFormat
import RequestOperations

/// `reqtop proxy --config FILE`: the proxy's resilience in the plan's own vocabulary — the
/// plan-wide `retry`, `timeout`, `deadline`, `readTimeout`, `hedge`, `redirects`,
/// `retryBudgetPerHost`, `circuitBreaker`, `rateLimitPushback`, `maxConcurrentPerHost` and
/// `faults` — for every request the proxy sends. A field left out keeps the plan's default,
/// except `redirects`, which stays off (the client follows them) unless the file names it.
/// Retries go only to requests the engine judges safe to repeat (GET, HEAD, PUT, DELETE,
/// OPTIONS, or one with an `Idempotency-Key`), as for any plan.
struct ProxyConfig {
    /// Each request's options before the proxy's own changes.
    var options: RequestOptions
    var retryBudgetPerHost: RatioRetryBudget.Options?
    var circuitBreaker: HostCircuitBreaker.Options?
    var rateLimitPushback: Bool
    var maxConcurrentPerHost: Int?
    var faults: [FaultRule]
    /// Whether `redirects` was named (followed then, up to its count).
    var followsRedirects: Bool

    /// Fields of a plan that say nothing about a proxied request: refused by name.
    private static let notForAProxy: [String: String] = [
        "requests": "a proxy's requests come from its clients",
        "auth": "the client sends its own credentials",
        "batches": "a proxy does not hold its clients' requests in batches",
        "transport": "the proxy's upstream leg is the NIO transport",
        "tls": "use --cacert, --cert, --key or --insecure",
        "proxy": "a chain of proxies is not supported yet",
        "maxConcurrent": "the proxy runs as many requests as its clients send (up to 1,024 connections)",
        "bodyCap": "use --body-cap",
    ]

    /// The top-level fields `path` names (read again: `--faults` takes only "faults").
    static func namedFields(path: String) throws -> [String] {
        let object = (try? JSONSerialization.jsonObject(with: try InputFile.read(path))) as? [String: Any]
        return object.map { Array($0.keys).sorted() } ?? []
    }

    /// Reads `path`; a `PlanError` names the file, the field and what was expected.
    static func load(path: String) throws -> ProxyConfig {
        let data: Data
        do {
            data = try InputFile.read(path)
        } catch let error as ArchiveError {
            throw PlanError(file: error.file, path: "", message: error.message)
        }
        let root: Any
        do {
            root = try JSONSerialization.jsonObject(with: data)
        } catch {
            throw PlanError(file: path, path: "", message: "not valid JSON (\(StrictJSONReader.describe(jsonError: error, in: data)))")
        }
        guard var object = root as? [String: Any] else {
            throw PlanError(file: path, path: "", message: "expected a JSON object of plan settings (retry, timeout, circuitBreaker, faults, ...), found \(StrictJSONReader.kind(root))")
        }
        for key in object.keys.sorted() {
            if let why = notForAProxy[key] { throw PlanError(file: path, path: key, message: "not a proxy setting: \(why)") }
        }
        let followsRedirects = object["redirects"] != nil
        // The plan parser reads the plan-wide settings into each request: one stands in for
        // every request the proxy will send.
        object["requests"] = [["id": "proxied", "url": "http://proxied.invalid/"]]
        let plan = try PlanParser(file: path).parse(try JSONSerialization.data(withJSONObject: object))
        let planned = plan.requests[0]
        var options = RequestOptions(retryPolicy: planned.retry.policy, attemptTimeout: planned.attemptTimeout, deadline: planned.deadline,
                                     earlyRetryOnHostSuccess: planned.retry.earlyRetry, earlyRetryOnProbe: planned.retry.earlyRetry,
                                     hedge: planned.hedge)
        options.readTimeout = planned.readTimeout
        options.redirects = followsRedirects ? .follow(max: planned.maxRedirects) : .none
        return ProxyConfig(options: options, retryBudgetPerHost: plan.retryBudgetPerHost, circuitBreaker: plan.circuitBreaker,
                           rateLimitPushback: plan.rateLimitPushback, maxConcurrentPerHost: plan.maxConcurrentPerHost,
                           faults: plan.faults, followsRedirects: followsRedirects)
    }
}
