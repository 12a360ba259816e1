import Dispatch
import Foundation
import Synchronization

/// Publishes every ``RequestEvent`` of one session to any number of subscribers.
///
/// - Publishing never blocks on a subscriber: an event is stamped and appended to each
///   subscriber's pending list under a short lock, and each subscriber drains its list on
///   its own serial queue, in batches: the first event of a batch schedules delivery
///   ``deliveryDelay`` later (2 ms by default), so a request's half-dozen events cost one
///   thread wake-up, not six. 2 ms is far below what a person or a 10 fps screen notices.
/// - Nothing is lost and nothing is reordered: events are stamped and appended in one
///   critical section, so every subscriber sees the same total order, and `t` never
///   decreases along it. An operation appends its events from inside its own state lock,
///   so they are in the order its state changed, and schedules their delivery after it.
public final class EventHub: Sendable {
    /// The wall-clock time the session started, for the log's header line.
    public let startedAt: Date
    public let clock: RequestClock
    private let origin: TimeInterval
    /// How long the first event of a batch waits for company before delivery.
    public let deliveryDelay: TimeInterval
    /// Request bodies up to this many bytes ride whole in `queued` and `built` events (so
    /// recordings can show and re-send them); larger ones are named by size. 64 KiB by
    /// default; 0 carries none.
    public let bodyLimit: Int
    private let subscribers = Mutex<[EventSubscriber]>([])
    private let nextOperationNumber = Mutex(0)

    /// ``bodyLimit``'s default; HAR import reads `postData` up to the same size.
    public static let defaultBodyLimit = 65_536

    public init(clock: RequestClock = SystemClock(), deliveryDelay: TimeInterval = 0.002, bodyLimit: Int = EventHub.defaultBodyLimit) {
        self.clock = clock
        self.bodyLimit = max(0, bodyLimit)
        self.origin = clock.now()
        self.startedAt = Date()
        self.deliveryDelay = deliveryDelay
    }

    /// Seconds since the session started: the `t` of an event published now.
    public func elapsed() -> TimeInterval {
        clock.now() - origin
    }

    /// A new operation id, `op-1`, `op-2`, ... unique within this session; with a prefix,
    /// `token-refresh-3` (the number is the session's, so ids never collide).
    public func makeOperationID(prefix: String = "op") -> String {
        prefix + "-" + String(nextOperationNumber.withLock { number in
            number += 1
            return number
        })
    }

    /// Stamps and publishes one event, and returns it.
    @discardableResult
    public func publish(operation: String, attempt: Int, _ payload: RequestEvent.Payload) -> RequestEvent {
        var starting = Deliveries()
        let event = stamp(operation: operation, attempt: attempt, payload, starting: &starting, keep: true)!
        // Outside the lock: scheduling a delivery wakes Dispatch's manager thread (a write to
        // its eventfd), and a publisher on the other event loop would wait for it.
        starting.schedule()
        return event
    }

    /// The same without handing the event back: a copy of it fewer, for a publisher that
    /// does not read it (an operation's `queued` event, once a request).
    func post(operation: String, attempt: Int, _ payload: consuming RequestEvent.Payload) {
        var starting = Deliveries()
        stamp(operation: operation, attempt: attempt, payload, starting: &starting, keep: false)
        starting.schedule()
    }

    /// Stamps one event and appends it to every subscriber's list, without scheduling any
    /// delivery: the subscribers whose batch it begins are added to `starting`, whose
    /// ``Deliveries/schedule()`` the caller runs once it holds no lock. An operation appends
    /// from inside its own state lock (so its events are in the order its state changed) and
    /// schedules after it.
    func append(operation: String, attempt: Int, _ payload: consuming RequestEvent.Payload, starting: inout Deliveries) {
        stamp(operation: operation, attempt: attempt, payload, starting: &starting, keep: false)
    }

    /// Stamps the event and appends it to every subscriber's list; returns it when `keep`
    /// (the operations' own events are not wanted back). The payload and the event are
    /// moved, not copied, into the last subscriber's list: a copy and a release of an event
    /// with its strings and tables, a dozen times a request (#58).
    @discardableResult
    private func stamp(operation: String, attempt: Int, _ payload: consuming RequestEvent.Payload, starting: inout Deliveries,
                       keep: Bool) -> RequestEvent? {
        // Made before the lock and stamped under it (the time, in the order of appending).
        var event: RequestEvent? = RequestEvent(time: 0, operationID: operation, attempt: attempt, payload: payload)
        return subscribers.withLock { subscribers -> RequestEvent? in
            event!.time = clock.now() - origin
            var kept: RequestEvent?
            if keep { kept = event }
            let count = subscribers.count
            for index in 0..<count {
                // Taken out of `event` by the last subscriber, copied by any before it.
                let begins = index == count - 1 ? subscribers[index].append(taking: &event) : subscribers[index].append(event!)
                if begins { starting.subscribers.append(subscribers[index]) }
            }
            return kept
        }
    }

    /// Subscribers whose next batch was begun by events appended under a lock: their delivery
    /// is scheduled after it.
    struct Deliveries: Sendable {
        fileprivate(set) var subscribers: [EventSubscriber] = []

        /// Schedules each begun batch's delivery, once, and forgets them.
        mutating func schedule() {
            guard !subscribers.isEmpty else { return }
            for subscriber in subscribers { subscriber.scheduleDrain() }
            subscribers = []
        }
    }

    /// Delivers events in batches, in order, on a serial queue of the subscription's own.
    /// Keep the returned subscription: cancelling it (or dropping every reference and
    /// calling ``EventSubscription/cancel()``) stops delivery.
    ///
    /// - Parameter delay: how long this subscriber's batches gather events (default: the
    ///   hub's ``deliveryDelay``). A subscriber that only forwards events elsewhere (the
    ///   monitor endpoint) takes fewer, larger batches and costs fewer thread wake-ups.
    public func subscribe(label: String = "reqtop.events", delay: TimeInterval? = nil,
                          _ handler: @escaping @Sendable ([RequestEvent]) -> Void) -> EventSubscription {
        let subscriber = EventSubscriber(queue: DispatchQueue(label: label), delay: delay ?? deliveryDelay, handler: handler)
        subscribers.withLock { $0.append(subscriber) }
        return EventSubscription(hub: self, subscriber: subscriber)
    }

    /// Delivers events one at a time, in order.
    public func subscribe(label: String = "reqtop.events", each handler: @escaping @Sendable (RequestEvent) -> Void) -> EventSubscription {
        subscribe(label: label) { batch in batch.forEach(handler) }
    }

    /// The number of active subscriptions.
    public var subscriberCount: Int {
        subscribers.withLock { $0.count }
    }

    /// Waits until every event published before this call has been handed to every subscriber.
    public func waitUntilDelivered() {
        let current = subscribers.withLock { $0 }
        for subscriber in current {
            subscriber.deliverNow()
        }
    }

    fileprivate func remove(_ subscriber: EventSubscriber) {
        subscribers.withLock { $0.removeAll { $0 === subscriber } }
    }
}

/// A subscription to an ``EventHub``: cancel it to stop delivery.
public final class EventSubscription: Sendable {
    private let hub: EventHub
    fileprivate let subscriber: EventSubscriber

    fileprivate init(hub: EventHub, subscriber: EventSubscriber) {
        self.hub = hub
        self.subscriber = subscriber
    }

    /// Stops delivery. Events already queued for this subscriber are dropped.
    public func cancel() {
        hub.remove(subscriber)
        subscriber.close()
    }

    /// Stops taking new events, hands over every event already queued for this subscriber
    /// (on its queue, before this returns), then stops: for a subscriber that must see the
    /// end of the story, such as a recording or an attached monitor when the program ends.
    public func finish() {
        hub.remove(subscriber)
        subscriber.deliverNow()
        subscriber.close()
    }
}

/// One subscriber's pending events and the serial queue that hands them over.
final class EventSubscriber: Sendable {
    private struct Pending {
        var events: [RequestEvent] = []
        var drainScheduled = false
        var closed = false
        /// The last batch's size: the next is given room for as many at its first event, so a
        /// busy queue's batch is one array, not one regrown at each doubling.
        var lastBatch = 0
    }

    let queue: DispatchQueue
    private let delay: TimeInterval
    private let handler: @Sendable ([RequestEvent]) -> Void
    private let pending = Mutex(Pending())

    init(queue: DispatchQueue, delay: TimeInterval, handler: @escaping @Sendable ([RequestEvent]) -> Void) {
        self.queue = queue
        self.delay = delay
        self.handler = handler
    }

    /// Delivers what is pending now, on the subscriber's queue, and returns when done.
    /// A drain scheduled earlier then finds nothing left, which is harmless.
    func deliverNow() {
        queue.sync { drain() }
    }

    /// Appends `event`; true when it starts a batch, whose delivery the caller then schedules
    /// (``scheduleDrain()``) once it no longer holds the hub's lock.
    func append(_ event: RequestEvent) -> Bool {
        var event = Optional(event)
        return append(taking: &event)
    }

    /// The same, the event moved out of `event` into the list (nil after).
    func append(taking event: inout RequestEvent?) -> Bool {
        pending.withLock { pending -> Bool in
            guard !pending.closed else { return false }
            if pending.events.isEmpty, pending.lastBatch > 1 { pending.events.reserveCapacity(min(pending.lastBatch, 1024)) }
            pending.events.append(event.take()!)
            guard !pending.drainScheduled else { return false }
            pending.drainScheduled = true
            return true
        }
    }

    func scheduleDrain() {
        #if DEBUG
        // Never from inside an operation's transition: its lock would be held over a wake-up.
        precondition(TransitionDepth.current == 0, "an event's delivery was scheduled inside an operation's transition")
        #endif
        if delay > 0 {
            queue.asyncAfter(deadline: .now() + delay) { self.drain() }
        } else {
            queue.async { self.drain() }
        }
    }

    func close() {
        pending.withLock { pending in
            pending.closed = true
            pending.events = []
        }
    }

    private func drain() {
        while true {
            let batch = pending.withLock { pending -> [RequestEvent] in
                let batch = pending.events
                pending.events = []
                if batch.isEmpty { pending.drainScheduled = false } else { pending.lastBatch = batch.count }
                return batch
            }
            if batch.isEmpty { return }
            handler(batch)
        }
    }
}
