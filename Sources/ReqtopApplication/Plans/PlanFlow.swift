import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RequestOperations

/// A plan's flow control made real on one queue: its batches, its bearer-token
/// authenticator, and for each request the options and the builder that fills
/// `{{parent.field}}` templates from its parents' JSON results.
package struct PlanFlow {
    package let batches: [String: RequestBatch]
    package let auth: BearerTokenAuthenticator?
    package let faultServer: URL?
    /// Bytes of each answer's body the events carry.
    package let bodyCap: Int

    package init(plan: Plan, faultServer: URL?, queue: RequestQueue, bodyCap: Int? = nil) {
        self.faultServer = faultServer
        self.bodyCap = bodyCap ?? plan.bodyCap ?? RequestOptions.defaultResponseBodyCap
        batches = plan.batches.reduce(into: [:]) { batches, entry in
            batches[entry.key] = RequestBatch(name: entry.key, size: entry.value.size, timeLimit: entry.value.timeLimit)
        }
        auth = plan.auth.map { settings in
            let url = faultServer.map { settings.tokenURL.replacingOccurrences(of: Plan.faultServerPlaceholder, with: $0.absoluteString) }
                ?? settings.tokenURL
            return BearerTokenAuthenticator(refresher: TokenEndpoint(url: URL(string: url)!, credentials: settings.credentials,
                                                                     tokenField: settings.tokenField, queue: queue))
        }
    }

    /// The request list `run` hands to the queue, parents first.
    package func requestList(_ plan: Plan) -> RequestList {
        RequestList(items: plan.requests.map(item))
    }

    package func item(_ planned: PlannedRequest) -> RequestList.Item {
        var options = RequestOptions(retryPolicy: planned.retry.policy, attemptTimeout: planned.attemptTimeout, deadline: planned.deadline,
                                     earlyRetryOnHostSuccess: planned.retry.earlyRetry, earlyRetryOnProbe: planned.retry.earlyRetry,
                                     hedge: planned.hedge)
        options.redirects = .follow(max: planned.maxRedirects)
        options.responseBodyCap = bodyCap
        options.destination = planned.saveTo.map { URL(fileURLWithPath: $0) }
        options.maxFileBytes = planned.maxFileBytes
        options.bodyFile = planned.bodyFile.map { URL(fileURLWithPath: $0) }
        options.readTimeout = planned.readTimeout
        // Batch first, then the token: a request held for a while goes out with the token
        // that is current when its batch is released.
        if let name = planned.batch, let batch = batches[name] { options.interceptors.append(BatchingInterceptor(batch: batch)) }
        if planned.auth, let auth { auth.install(on: &options) }
        return RequestList.Item(id: planned.id, request: RequestMessage(planned.urlRequest(faultServer: faultServer)), options: options,
                                dependsOn: planned.dependsOn, build: planned.dependsOn.isEmpty ? nil : builder(planned),
                                priority: planned.priority)
    }

    /// Fills the templates of a dependent request from its parents' bodies.
    private func builder(_ planned: PlannedRequest) -> RequestBuilder {
        let urlText = planned.urlText(faultServer: faultServer)
        return { request, parents in
            var bodies: [String: Data] = [:]
            for parent in parents.parents { bodies[parent.id] = parent.result?.data }
            let ids = planned.dependsOn
            var built = request
            let filled = try PlanTemplate.fill(urlText, parents: bodies, parentIDs: ids, encode: PlanTemplate.percentEncode)
            guard let url = URL(string: filled) else { throw PlanTemplateError("the URL \"\(filled)\" is not valid") }
            built.url = url
            for (name, value) in planned.headers {
                let filled = try PlanTemplate.fill(value, parents: bodies, parentIDs: ids)
                // setValue would drop such a value without a word.
                if let problem = HTTPFieldCheck.valueProblem(filled) { throw PlanTemplateError("header \(name) from \(value): \(problem)") }
                built.setValue(filled, forHTTPHeaderField: name)
            }
            if let body = planned.body {
                let isJSON = planned.headers.contains { $0.key.lowercased() == "content-type" && $0.value.contains("json") }
                let text = try PlanTemplate.fill(String(decoding: body, as: UTF8.self), parents: bodies, parentIDs: ids,
                                                 encode: isJSON ? PlanTemplate.jsonEscape : { $0 })
                built.httpBody = Data(text.utf8)
            }
            return built
        }
    }
}
