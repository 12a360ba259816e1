import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Instrumentation

/// Writes a tracer's context (W3C `traceparent`, `tracestate`, or whatever the bootstrapped
/// tracer propagates) into a request's headers, replacing any value a copy already carried.
struct URLRequestInjector: Injector {
    func inject(_ value: String, forKey key: String, into request: inout URLRequest) {
        request.setValue(value, forHTTPHeaderField: key)
    }
}
