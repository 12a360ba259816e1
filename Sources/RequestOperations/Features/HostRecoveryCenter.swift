import Foundation
import Synchronization

/// Early retry: tells operations waiting out a backoff that their host is back, so they
/// need not wait the whole delay.
///
/// Two signals count:
/// - another operation to the same host succeeded (``reportSuccess(_:by:)``);
/// - for operations that failed to connect at all, a light probe (``HostProbe``, a TCP
///   connect by default) run with its own backoff, one probe loop per host shared by all
///   its waiters, found the host listening again.
///
/// Each waiter is told once, with a short random delay so that a crowd of waiters does
/// not retry in the same millisecond. Observations end when their operation leaves its
/// backoff; a probe loop ends when no waiter of its host wants it.
public final class HostRecoveryCenter: Sendable {
    public struct Options: Sendable {
        /// The random spread before an early retry.
        public var earlyRetryDelay: ClosedRange<TimeInterval>
        /// The probe's first delay, doubling up to ``probeMaxInterval``.
        public var probeInitialInterval: TimeInterval
        public var probeMaxInterval: TimeInterval
        public var probeTimeout: TimeInterval

        public init(earlyRetryDelay: ClosedRange<TimeInterval> = 0.05...0.25, probeInitialInterval: TimeInterval = 0.25,
                    probeMaxInterval: TimeInterval = 2, probeTimeout: TimeInterval = 1) {
            self.earlyRetryDelay = earlyRetryDelay
            self.probeInitialInterval = probeInitialInterval
            self.probeMaxInterval = probeMaxInterval
            self.probeTimeout = probeTimeout
        }
    }

    /// What a waiter is told: why, and how long to wait from now before retrying.
    public typealias Notify = @Sendable (_ trigger: String, _ delay: TimeInterval) -> Void

    private struct Observer {
        let host: HostKey
        let wantsSuccess: Bool
        let wantsProbe: Bool
        let notify: Notify
    }

    private struct ProbeLoop {
        var timer: ScheduledTimer?
        var interval: TimeInterval
    }

    private struct State {
        var nextID: UInt64 = 0
        var observers: [UInt64: Observer] = [:]
        var probes: [HostKey: ProbeLoop] = [:]
        var probesSent = 0
    }

    private let clock: RequestClock
    private let random: RandomSource
    private let prober: HostProbe
    public let options: Options
    private let state = Mutex(State())

    public init(clock: RequestClock = SystemClock(), random: RandomSource = SystemRandomSource(),
                probe: HostProbe = TCPConnectProbe(), options: Options = Options()) {
        self.clock = clock
        self.random = random
        self.prober = probe
        self.options = options
    }

    /// Waits for `host` to recover: on another operation's success (`onSuccess`), on a
    /// probe that reaches it (`probe`), or both. `notify` runs at most once; cancel the
    /// observation when the waiter stops waiting for any other reason.
    public func observe(_ host: HostKey, onSuccess: Bool, probe: Bool, notify: @escaping Notify) -> RecoveryObservation {
        let (id, startProbe) = state.withLock { state -> (UInt64, Bool) in
            state.nextID += 1
            state.observers[state.nextID] = Observer(host: host, wantsSuccess: onSuccess, wantsProbe: probe, notify: notify)
            let start = probe && state.probes[host] == nil
            if start { state.probes[host] = ProbeLoop(timer: nil, interval: options.probeInitialInterval) }
            return (state.nextID, start)
        }
        if startProbe { scheduleProbe(host) }
        return RecoveryObservation(center: self, id: id)
    }

    /// An operation to `host` succeeded: everyone waiting for it may retry.
    public func reportSuccess(_ host: HostKey, by operationID: String) {
        notifyAll(host, trigger: "host-success:\(operationID)", fromProbe: false)
    }

    /// Waiters currently registered.
    public var observerCount: Int { state.withLock { $0.observers.count } }
    /// Hosts with a probe loop running.
    public var activeProbeCount: Int { state.withLock { $0.probes.count } }
    /// Probes sent since this center was made.
    public var probesSent: Int { state.withLock { $0.probesSent } }

    fileprivate func remove(_ id: UInt64) {
        let timer = state.withLock { state -> ScheduledTimer? in
            guard let observer = state.observers.removeValue(forKey: id) else { return nil }
            return stopProbeIfUnwanted(observer.host, &state)
        }
        timer?.cancel()
    }

    private func stopProbeIfUnwanted(_ host: HostKey, _ state: inout State) -> ScheduledTimer? {
        guard state.probes[host] != nil,
              !state.observers.values.contains(where: { $0.host == host && $0.wantsProbe })
        else { return nil }
        return state.probes.removeValue(forKey: host)?.timer
    }

    private func notifyAll(_ host: HostKey, trigger: String, fromProbe: Bool) {
        let (notified, timer) = state.withLock { state -> ([Notify], ScheduledTimer?) in
            let ids = state.observers.filter { $0.value.host == host && (fromProbe || $0.value.wantsSuccess) }.map(\.key)
            let notified = ids.compactMap { state.observers.removeValue(forKey: $0)?.notify }
            return (notified, stopProbeIfUnwanted(host, &state))
        }
        timer?.cancel()
        for notify in notified {
            notify(trigger, random.uniform(options.earlyRetryDelay.lowerBound, options.earlyRetryDelay.upperBound))
        }
    }

    private func scheduleProbe(_ host: HostKey) {
        let interval = state.withLock { $0.probes[host]?.interval }
        guard let interval else { return }
        let timer = clock.schedule(at: clock.now() + interval) { [weak self] in self?.runProbe(host) }
        let stale = state.withLock { state -> Bool in
            guard state.probes[host] != nil else { return true }
            state.probes[host]?.timer = timer
            return false
        }
        if stale { timer.cancel() }
    }

    private func runProbe(_ host: HostKey) {
        let wanted = state.withLock { state -> Bool in
            guard state.probes[host] != nil else { return false }
            state.probesSent += 1
            return true
        }
        guard wanted else { return }
        prober.probe(host, timeout: options.probeTimeout) { [weak self] reachable in
            guard let self else { return }
            if reachable {
                self.notifyAll(host, trigger: "probe", fromProbe: true)
            } else {
                self.state.withLock { state in
                    if let loop = state.probes[host] {
                        state.probes[host]?.interval = min(self.options.probeMaxInterval, loop.interval * 2)
                    }
                }
                self.scheduleProbe(host)
            }
        }
    }
}

/// A waiter's registration with a ``HostRecoveryCenter``.
public final class RecoveryObservation: Sendable {
    private let center: HostRecoveryCenter
    private let id: UInt64

    fileprivate init(center: HostRecoveryCenter, id: UInt64) {
        self.center = center
        self.id = id
    }

    /// Stops waiting. Safe to call more than once, and after the waiter was notified.
    public func cancel() {
        center.remove(id)
    }
}
