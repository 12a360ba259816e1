import Foundation
import RequestEventFormat
import RequestOperations

/// A queue's settings in a plan's top-level terms: what a recording's header says the run
/// had (`settings`), so `reqtop whatif` starts from them rather than from the defaults.
package struct QueueSettings {
    package var maxConcurrent: Int
    package var maxConcurrentPerHost: Int?
    package var retryBudgetPerHost: RatioRetryBudget.Options?
    package var circuitBreaker: HostCircuitBreaker.Options?
    package var rateLimitPushback: Bool

    package init(plan: Plan) {
        self.init(maxConcurrent: plan.maxConcurrent, maxConcurrentPerHost: plan.maxConcurrentPerHost,
                  retryBudgetPerHost: plan.retryBudgetPerHost, circuitBreaker: plan.circuitBreaker, rateLimitPushback: plan.rateLimitPushback)
    }

    package init(maxConcurrent: Int, maxConcurrentPerHost: Int? = nil, retryBudgetPerHost: RatioRetryBudget.Options? = .init(),
         circuitBreaker: HostCircuitBreaker.Options? = .init(), rateLimitPushback: Bool = true) {
        (self.maxConcurrent, self.maxConcurrentPerHost, self.retryBudgetPerHost, self.circuitBreaker, self.rateLimitPushback)
            = (maxConcurrent, maxConcurrentPerHost, retryBudgetPerHost, circuitBreaker, rateLimitPushback)
    }

    /// As a plan's top-level members.
    package var object: [String: Any] {
        var object: [String: Any] = ["maxConcurrent": maxConcurrent, "rateLimitPushback": rateLimitPushback]
        if let maxConcurrentPerHost { object["maxConcurrentPerHost"] = maxConcurrentPerHost }
        object["retryBudgetPerHost"] = PlanParser.retryBudgetObject(retryBudgetPerHost)
        object["circuitBreaker"] = PlanParser.circuitBreakerObject(circuitBreaker)
        return object
    }

    /// The object as JSON text, for a recording's header.
    package var json: String {
        String(decoding: (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8), as: UTF8.self)
    }
}
