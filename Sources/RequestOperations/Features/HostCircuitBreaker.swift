import Foundation
import Synchronization

/// The default ``CircuitBreaker``: one breaker per host (`host:port`).
///
/// - **Closed → open** when, over the last `window` seconds (10), at least `minimumRequests`
///   (20) attempts were judged and at least `failureRatio` (50 %) of them failed, or after
///   `consecutiveConnectionFailures` (5) attempts in a row got no answer. Failures are
///   transport errors and 5xx, 408 and 429 answers — never other 4xx (the host answered).
/// - **Open** for `openFor` (5 s), doubling each time a probe fails, up to `maxOpenFor` (60 s).
///   Attempts wait without a slot (or are refused at once with `failFast`).
/// - **Half-open**: exactly one attempt goes through as the probe. Its success closes the
///   breaker and every waiting attempt goes out; its failure opens it again.
///
/// Polly's and Resilience4j's breakers work this way (a failure ratio over a sliding window
/// with a minimum throughput, a break duration, one trial call). Transitions are events on
/// the queue's hub with an empty `op`: `circuitOpened` (`host`, `reason`, `until`),
/// `circuitHalfOpen` (`host`), `circuitClosed` (`host`, `reason`). The clock is injectable.
public final class HostCircuitBreaker: CircuitBreaker {
    public struct Options: Sendable, Equatable {
        /// Seconds over which attempts and failures are counted.
        public var window: TimeInterval
        /// Attempts the window must hold before the failure ratio can open the breaker.
        public var minimumRequests: Int
        /// Share of failed attempts (0.5: 50 %) that opens the breaker.
        public var failureRatio: Double
        /// Attempts in a row without an answer that open the breaker (0: never for this).
        public var consecutiveConnectionFailures: Int
        /// Seconds the breaker first stays open; doubled on each failed probe.
        public var openFor: TimeInterval
        /// The longest it stays open.
        public var maxOpenFor: TimeInterval
        /// Refuse attempts while open instead of holding them.
        public var failFast: Bool
        /// The longest an attempt is held before its operation fails (60 s, the default
        /// retry policy's time budget); nil: until the operation's deadline, if any.
        public var maxWait: TimeInterval?

        public init(window: TimeInterval = 10, minimumRequests: Int = 20, failureRatio: Double = 0.5,
                    consecutiveConnectionFailures: Int = 5, openFor: TimeInterval = 5, maxOpenFor: TimeInterval = 60,
                    failFast: Bool = false, maxWait: TimeInterval? = 60) {
            self.window = window.isFinite && window > 0 ? window : 10
            self.minimumRequests = max(1, minimumRequests)
            self.failureRatio = min(1, max(0, failureRatio))
            self.consecutiveConnectionFailures = max(0, consecutiveConnectionFailures)
            self.openFor = openFor.isFinite && openFor > 0 ? openFor : 5
            self.maxOpenFor = max(self.openFor, maxOpenFor.isFinite ? maxOpenFor : 60)
            self.failFast = failFast
            self.maxWait = maxWait.flatMap { $0.isFinite && $0 >= 0 ? $0 : nil }
        }
    }

    public let options: Options
    public var maxWait: TimeInterval? { options.maxWait }
    private let clock: RequestClock
    private let events: EventHub?
    private let hosts = Mutex<[String: Breaker]>([:])
    private let nextWaiter = Atomic<UInt64>(0)
    /// The host count that starts the next pass over quiet breakers (changed under `hosts`'s lock).
    private let forgetAt = Atomic<Int>(HostCircuitBreaker.forgetAbove)
    /// How many breakers are open or half-open (changed under `hosts`'s lock, in
    /// ``changing(_:_:)``): none, and ``isClosed(_:)`` needs no look-up.
    private let notClosed = Atomic<Int>(0)

    /// - Parameter events: where transitions are published (the queue's hub); nil: nowhere.
    public init(options: Options = Options(), clock: RequestClock = SystemClock(), events: EventHub? = nil) {
        self.options = options
        self.clock = clock
        self.events = events
    }

    public func admit(_ host: String, whenReady: @escaping @Sendable () -> Void) -> CircuitAdmission {
        let now = clock.now()
        var effects = Effects()
        let admission = hosts.withLock { hosts -> CircuitAdmission in
            if hosts.count >= forgetAt.load(ordering: .relaxed), hosts[host] == nil { forgetQuiet(&hosts, now: now) }
            // Changed in place under one look-up: asked before every attempt (#58).
            return changing(&hosts[host, default: Breaker(openFor: options.openFor)]) { breaker in
                admit(host, &breaker, now: now, whenReady: whenReady, effects: &effects)
            }
        }
        effects.perform(on: self)
        return admission
    }

    private func admit(_ host: String, _ breaker: inout Breaker, now: TimeInterval, whenReady: @escaping @Sendable () -> Void,
                       effects: inout Effects) -> CircuitAdmission {
        if case .open(let until?, _) = breaker.state, now >= until {
            halfOpen(&breaker, host: host, effects: &effects)
        }
        switch breaker.state {
        case .closed:
            return .send(pass(host, epoch: breaker.epoch, probe: false))
        case .halfOpen where !breaker.probeOut:
            breaker.probeOut = true
            return .send(pass(host, epoch: breaker.epoch, probe: true))
        case .open(let until, let reason) where options.failFast:
            let when = until.map { " for \(DurationText.format(max(0, $0 - now)))" } ?? ""
            return .refuse(reason: "circuit for \(host) is open\(when): \(reason)")
        case .halfOpen where options.failFast:
            return .refuse(reason: "circuit for \(host) is half-open and its probe is out")
        case .open(let until, _):
            return .wait(wait(host, &breaker, whenReady), until: until)
        case .halfOpen:
            return .wait(wait(host, &breaker, whenReady), until: nil)
        }
    }

    /// Runs `change` on `breaker` and keeps ``notClosed`` in step with it: every change of a
    /// breaker's state goes through here.
    private func changing<Result>(_ breaker: inout Breaker, _ change: (inout Breaker) -> Result) -> Result {
        let wasClosed = breaker.state == .closed
        let result = change(&breaker)
        let isClosed = breaker.state == .closed
        if wasClosed != isClosed { notClosed.add(isClosed ? -1 : 1, ordering: .relaxed) }
        return result
    }

    public func isolate(_ host: String, by who: String) {
        var effects = Effects()
        hosts.withLock { hosts in
            changing(&hosts[host, default: Breaker(openFor: options.openFor)]) { breaker in
                effects.timers.append(breaker.timer)
                breaker.timer = nil
                breaker.epoch += 1
                breaker.probeOut = false
                breaker.state = .open(until: nil, reason: "isolated by \(who)")
                effects.events.append(.circuitOpened(host: host, reason: "isolated by \(who)", until: nil))
            }
        }
        effects.perform(on: self)
    }

    @discardableResult
    public func close(_ host: String, by who: String) -> Bool {
        var effects = Effects()
        let closed = hosts.withLock { hosts -> Bool in
            guard let index = hosts.index(forKey: host), hosts.values[index].state != .closed else { return false }
            changing(&hosts.values[index]) { close(&$0, host: host, reason: "closed by \(who)", effects: &effects) }
            return true
        }
        effects.perform(on: self)
        return closed
    }

    public func states() -> [String: CircuitState] {
        hosts.withLock { $0.mapValues(\.state) }
    }

    public func isClosed(_ host: String) -> Bool {
        // Asked again as every attempt takes its slot: with every breaker closed, no lock.
        guard notClosed.load(ordering: .relaxed) > 0 else { return true }
        return hosts.withLock { ($0[host]?.state ?? .closed) == .closed }
    }

    /// Past this many hosts, closed breakers with nothing in their window and no one waiting
    /// are let go (a process that talks to many hosts over days keeps the recent ones).
    static let forgetAbove = 4_096

    private func forgetQuiet(_ hosts: inout [String: Breaker], now: TimeInterval) {
        hosts = hosts.filter { _, breaker in
            breaker.state != .closed || !breaker.waiters.isEmpty || breaker.consecutive > 0
                || breaker.window.totals(at: now, width: options.window).attempts > 0
        }
        // The next pass when twice as many are kept: each pass is paid for by the hosts added
        // since (a pass that frees nothing is not repeated for every new host).
        forgetAt.store(max(Self.forgetAbove, hosts.count * 2), ordering: .relaxed)
    }

    // MARK: - Verdicts

    private func pass(_ host: String, epoch: UInt64, probe: Bool) -> CircuitPass {
        CircuitPass(isProbe: probe) { [weak self] verdict in
            self?.judged(host, verdict, epoch: epoch, probe: probe)
        }
    }

    private func judged(_ host: String, _ verdict: CircuitVerdict?, epoch: UInt64, probe: Bool) {
        let now = clock.now()
        var effects = Effects()
        hosts.withLock { hosts in
            // Changed in place under one look-up (its window's slots are not copied).
            guard let index = hosts.index(forKey: host), hosts.values[index].epoch == epoch else { return }
            changing(&hosts.values[index]) { judge(&$0, host: host, verdict, probe: probe, now: now, effects: &effects) }
        }
        effects.perform(on: self)
    }

    private func judge(_ breaker: inout Breaker, host: String, _ verdict: CircuitVerdict?, probe: Bool, now: TimeInterval,
                       effects: inout Effects) {
        if probe {
            guard case .halfOpen = breaker.state else { return }
            switch verdict {
            case nil:
                // The probe never got an answer (cancelled): the next attempt probes.
                breaker.probeOut = false
                wakeFirst(&breaker, effects: &effects)
            case .success?:
                close(&breaker, host: host, reason: "the probe succeeded", effects: &effects)
            case .failedStatus(let status)?:
                breaker.openFor = min(options.maxOpenFor, breaker.openFor * 2)
                open(&breaker, host: host, reason: "the probe failed: status \(status)", now: now, effects: &effects)
            case .failedConnection(let what)?:
                breaker.openFor = min(options.maxOpenFor, breaker.openFor * 2)
                open(&breaker, host: host, reason: "the probe failed: \(what)", now: now, effects: &effects)
            }
            return
        }
        guard case .closed = breaker.state, let verdict else { return }
        let failed = verdict != .success
        breaker.window.add(at: now, width: options.window, failed: failed)
        if case .failedConnection = verdict { breaker.consecutive += 1 } else { breaker.consecutive = 0 }
        let (attempts, failures) = breaker.window.totals(at: now, width: options.window)
        if options.consecutiveConnectionFailures > 0, breaker.consecutive >= options.consecutiveConnectionFailures {
            open(&breaker, host: host, reason: "\(breaker.consecutive) attempts in a row got no answer", now: now, effects: &effects)
        } else if failed, attempts >= options.minimumRequests, Double(failures) >= options.failureRatio * Double(attempts) {
            let percent = Int((Double(failures) * 100 / Double(attempts)).rounded())
            open(&breaker, host: host, reason: "\(failures) of \(attempts) attempts failed in \(DurationText.format(options.window)) (\(percent) %)",
                 now: now, effects: &effects)
        }
    }

    // MARK: - Transitions (under the lock; effects run after it)

    private func open(_ breaker: inout Breaker, host: String, reason: String, now: TimeInterval, effects: inout Effects) {
        let until = now + breaker.openFor
        breaker.epoch += 1
        breaker.probeOut = false
        breaker.state = .open(until: until, reason: reason)
        effects.timers.append(breaker.timer)
        let epoch = breaker.epoch
        breaker.timer = clock.schedule(at: until) { [weak self] in self?.openTimeIsUp(host, epoch: epoch) }
        effects.events.append(.circuitOpened(host: host, reason: reason, until: events.map { $0.elapsed() + (until - now) }))
    }

    private func openTimeIsUp(_ host: String, epoch: UInt64) {
        var effects = Effects()
        hosts.withLock { hosts in
            guard let index = hosts.index(forKey: host), hosts.values[index].epoch == epoch,
                  case .open = hosts.values[index].state else { return }
            changing(&hosts.values[index]) { halfOpen(&$0, host: host, effects: &effects) }
        }
        effects.perform(on: self)
    }

    private func halfOpen(_ breaker: inout Breaker, host: String, effects: inout Effects) {
        breaker.state = .halfOpen
        breaker.probeOut = false
        breaker.timer = nil
        effects.events.append(.circuitHalfOpen(host: host))
        // One waiter asks again and becomes the probe; the others wait on.
        wakeFirst(&breaker, effects: &effects)
    }

    private func close(_ breaker: inout Breaker, host: String, reason: String, effects: inout Effects) {
        effects.timers.append(breaker.timer)
        effects.wakes += breakerWaiters(&breaker, all: true)
        breaker = Breaker(openFor: options.openFor, epoch: breaker.epoch + 1)
        effects.events.append(.circuitClosed(host: host, reason: reason))
    }

    private func wakeFirst(_ breaker: inout Breaker, effects: inout Effects) {
        effects.wakes += breakerWaiters(&breaker, all: false)
    }

    private func breakerWaiters(_ breaker: inout Breaker, all: Bool) -> [@Sendable () -> Void] {
        let taken = all ? breaker.waiters : Array(breaker.waiters.prefix(1))
        breaker.waiters.removeFirst(taken.count)
        return taken.map(\.wake)
    }

    private func wait(_ host: String, _ breaker: inout Breaker, _ wake: @escaping @Sendable () -> Void) -> CircuitWait {
        let id = nextWaiter.add(1, ordering: .relaxed).newValue
        breaker.waiters.append((id, wake))
        return CircuitWait { [weak self] in
            self?.hosts.withLock { $0[host]?.waiters.removeAll { $0.id == id } }
        }
    }

    fileprivate func publish(_ payload: RequestEvent.Payload) {
        events?.publish(operation: "", attempt: 0, payload)
    }
}

/// One host's breaker.
private struct Breaker {
    var state = CircuitState.closed
    var openFor: TimeInterval
    /// Bumped on every change of state, so verdicts and timers of an earlier state are ignored.
    var epoch: UInt64 = 0
    var probeOut = false
    var consecutive = 0
    var window = FailureWindow()
    var timer: ScheduledTimer?
    var waiters: [(id: UInt64, wake: @Sendable () -> Void)] = []

    init(openFor: TimeInterval, epoch: UInt64 = 0) {
        self.openFor = openFor
        self.epoch = epoch
    }
}

/// Attempts and failures in ten buckets per window, so they leave it within a tenth of it.
struct FailureWindow {
    private static let buckets = 10
    private var slots = [(index: Int64, attempts: Int, failures: Int)](repeating: (Int64.min, 0, 0), count: FailureWindow.buckets)

    private static func index(_ now: TimeInterval, _ width: TimeInterval) -> Int64 {
        let index = (now / (width / Double(buckets))).rounded(.down)
        return index.isFinite ? Int64(max(-4e18, min(4e18, index))) : 0
    }

    mutating func add(at now: TimeInterval, width: TimeInterval, failed: Bool) {
        let index = Self.index(now, width)
        let slot = Int(((index % Int64(Self.buckets)) + Int64(Self.buckets)) % Int64(Self.buckets))
        if slots[slot].index != index { slots[slot] = (index, 0, 0) }
        slots[slot].attempts += 1
        if failed { slots[slot].failures += 1 }
    }

    func totals(at now: TimeInterval, width: TimeInterval) -> (attempts: Int, failures: Int) {
        let index = Self.index(now, width)
        // A loop, not filter and reduce: asked on every answer, it makes no array.
        var totals = (attempts: 0, failures: 0)
        for slot in slots where slot.index > index - Int64(Self.buckets) && slot.index <= index {
            totals.attempts += slot.attempts
            totals.failures += slot.failures
        }
        return totals
    }
}

/// What a transition does once the lock is let go: publish, wake waiters, cancel timers.
private struct Effects {
    var events: [RequestEvent.Payload] = []
    var wakes: [@Sendable () -> Void] = []
    var timers: [ScheduledTimer?] = []

    func perform(on breaker: HostCircuitBreaker) {
        timers.forEach { $0?.cancel() }
        events.forEach { breaker.publish($0) }
        wakes.forEach { $0() }
    }
}
