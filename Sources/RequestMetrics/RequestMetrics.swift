import CoreMetrics
import Foundation
import RequestOperations
import Synchronization

/// A request queue's metrics on swift-metrics, from its events: the OpenTelemetry HTTP client
/// conventions' `http.client.request.duration` (seconds, per attempt) and
/// `http.client.active_requests`, and reqtop's own: operations by outcome, retries by reason,
/// the waits chosen before retries, refused retries, hedges, and each host's circuit breaker
/// state (0 closed, 1 half-open, 2 open).
///
/// Dimensions are the method, `server.address` and `server.port` (and the status or error
/// type where the conventions ask) — never a URL or an operation id, which would make a
/// series per request.
///
/// ```swift
/// let queue = RequestQueue(instruments: [RequestMetrics()])   // MetricsSystem.factory
/// ```
///
/// Nothing is counted until a program bootstraps a metrics backend (the default factory
/// drops everything). Give each queue one of its own (operation ids are the queue's); they
/// may share a factory.
public final class RequestMetrics: RequestInstrument {
    let factory: MetricsFactory
    let state = Mutex(State())
    private let subscriptions = Mutex<[EventSubscription]>([])

    struct State {
        /// Method, address and port of each live operation (from its request).
        var targets: [String: Target] = [:]
        /// Attempts with a task in flight: when it was created (`t`) and its status.
        var inFlight: [String: [Int: InFlight]] = [:]
        /// The failure of each operation's last attempt, for the next retry's reason.
        var lastFailure: [String: String] = [:]
    }

    struct Target {
        var method: String
        var address: String
        var port: String
    }

    struct InFlight {
        var since: TimeInterval
        var status: Int?
    }

    /// - Parameter factory: where the metrics go; the bootstrapped `MetricsSystem.factory` by default.
    public init(factory: MetricsFactory = MetricsSystem.factory) {
        self.factory = factory
    }

    public func attach(to events: EventHub) {
        // No backend bootstrapped (the default factory drops everything): no subscription,
        // nothing done per event.
        guard !(factory is NOOPMetricsHandler) else { return }
        let subscription = events.subscribe(label: "reqtop.metrics") { [self] batch in
            batch.forEach(record)
        }
        subscriptions.withLock { $0.append(subscription) }
    }
}
