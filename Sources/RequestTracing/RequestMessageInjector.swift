import Foundation
import RequestOperations
import Instrumentation

/// Writes a trace's context (W3C `traceparent`, `tracestate`) into a request's fields: one
/// field per key, where an earlier one of that name stood, else after the rest.
struct RequestMessageInjector: Injector {
    func inject(_ value: String, forKey key: String, into request: inout RequestMessage) {
        request.setValue(value, forField: key)
    }
}
