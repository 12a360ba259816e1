import Foundation
import RequestArchive
import RequestEventFormat
import RequestOperations

/// `reqtop proxy --config FILE`: the proxy's resilience in the plan's own vocabulary — the
/// plan-wide `retry`, `timeout`, `deadline`, `readTimeout`, `hedge`, `redirects`,
/// `retryBudgetPerHost`, `circuitBreaker`, `rateLimitPushback`, `maxConcurrentPerHost` and
/// `faults` — for every request the proxy sends. A field left out keeps the plan's default,
/// except `redirects`, which stays off (the client follows them) unless the file names it.
/// `"hosts"` gives a host (or `*.example.com`) request settings of its own over those.
/// Retries go only to requests the engine judges safe to repeat (GET, HEAD, PUT, DELETE,
/// OPTIONS, or one with an `Idempotency-Key`), as for any plan.
package struct ProxyConfig {
    /// Each request's options before the proxy's own changes.
    package var options: RequestOptions
    /// A host's own (`"hosts": {"api.example.com": {...}}`, `*.example.com` for its
    /// subdomains): the file's top-level request settings with the host's over them.
    package var optionsByHost: [String: RequestOptions] = [:]
    package var retryBudgetPerHost: RatioRetryBudget.Options?
    package var circuitBreaker: HostCircuitBreaker.Options?
    package var rateLimitPushback: Bool
    package var maxConcurrentPerHost: Int?
    package var faults: [FaultRule]
    /// Whether `redirects` was named (followed then, up to its count).
    package var followsRedirects: Bool
    /// The top-level fields the file names (`--faults` takes only "faults").
    package var fields: [String] = []

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

    /// Reads `path`; a `PlanError` names the file, the field and what was expected.
    package static func load(path: String) throws -> ProxyConfig {
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
        let fields = object.keys.sorted()
        let hosts = object.removeValue(forKey: "hosts")
        let (plan, options) = try read(object, path: path)
        var config = ProxyConfig(options: options, retryBudgetPerHost: plan.retryBudgetPerHost, circuitBreaker: plan.circuitBreaker,
                                 rateLimitPushback: plan.rateLimitPushback, maxConcurrentPerHost: plan.maxConcurrentPerHost,
                                 faults: plan.faults, followsRedirects: object["redirects"] != nil, fields: fields)
        guard let hosts else { return config }
        guard let byHost = hosts as? [String: Any] else {
            throw PlanError(file: path, path: "hosts", message: "expected an object of host names, each with its request settings, found \(StrictJSONReader.kind(hosts))")
        }
        for (host, raw) in byHost.sorted(by: { $0.key < $1.key }) {
            guard let settings = raw as? [String: Any] else {
                throw PlanError(file: path, path: "hosts.\(host)", message: "expected an object of request settings, found \(StrictJSONReader.kind(raw))")
            }
            if let key = settings.keys.sorted().first(where: { !perHost.contains($0) }) {
                throw PlanError(file: path, path: "hosts.\(host).\(key)",
                                message: "not a per-host setting; a host may set \(perHost.sorted().joined(separator: ", "))")
            }
            // The host's settings over the file's own, read as one plan, errors named under the host.
            var merged = object
            for (key, value) in settings { merged[key] = value }
            do {
                config.optionsByHost[host.lowercased()] = try read(merged, path: path).1
            } catch var error as PlanError where settings[String(error.path.split(separator: ".").first ?? "")] != nil {
                error.path = "hosts.\(host).\(error.path)"
                throw error
            }
        }
        return config
    }

    /// What a host may set for itself: how its requests are sent. The budget, the breaker and
    /// the pushback are each host's own already (one per host, with the file's options).
    private static let perHost: Set<String> = ["retry", "timeout", "deadline", "readTimeout", "hedge", "redirects"]

    /// `object` read as a plan, and the options of a request it would send.
    private static func read(_ object: [String: Any], path: String) throws -> (Plan, RequestOptions) {
        var object = object
        // The plan parser reads the plan-wide settings into each request: one stands in for
        // every request the proxy will send.
        object["requests"] = [["id": "proxied", "url": "http://proxied.invalid/"]]
        let plan = try PlanParser(file: path).parse(try JSONSerialization.data(withJSONObject: object))
        let planned = plan.requests[0]
        var options = RequestOptions(retryPolicy: planned.retry.policy, attemptTimeout: planned.attemptTimeout, deadline: planned.deadline,
                                     earlyRetryOnHostSuccess: planned.retry.earlyRetry, earlyRetryOnProbe: planned.retry.earlyRetry,
                                     hedge: planned.hedge)
        options.readTimeout = planned.readTimeout
        options.redirects = object["redirects"] != nil ? .follow(max: planned.maxRedirects) : .none
        return (plan, options)
    }
}
