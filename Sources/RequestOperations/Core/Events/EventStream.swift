import Foundation
import Synchronization

extension EventHub {
    /// Every event from now on, as an `AsyncSequence`:
    ///
    /// ```swift
    /// for await event in queue.events.stream() { ... }
    /// ```
    ///
    /// - Events come in the hub's order (each operation's in the order they happened).
    /// - The engine never waits for the consumer. Up to `bufferLimit` events wait for it;
    ///   past that, new events are dropped and counted, and the consumer gets one
    ///   ``RequestEvent/Payload/missed(count:)`` event where they would have been (its `op`
    ///   is empty), then the events that came after, as the monitor endpoint does.
    /// - The subscription is made when iteration begins and removed when it ends: when the
    ///   consumer leaves the loop, or its Task is cancelled (the loop then ends).
    public func stream(bufferLimit: Int = 10_000) -> EventStream {
        EventStream(hub: self, bufferLimit: max(1, bufferLimit))
    }
}

/// See ``EventHub/stream(bufferLimit:)``.
public struct EventStream: AsyncSequence, Sendable {
    public typealias Element = RequestEvent
    let hub: EventHub
    let bufferLimit: Int

    public func makeAsyncIterator() -> Iterator {
        Iterator(channel: EventChannel(hub: hub, limit: bufferLimit))
    }

    public struct Iterator: AsyncIteratorProtocol {
        let channel: EventChannel

        public mutating func next() async -> RequestEvent? {
            await channel.next()
        }
    }
}

/// One consumer's events, between the hub's delivery queue and the consumer's `next()`.
/// Its subscription lives as long as the iterator that owns it.
final class EventChannel: Sendable {
    private enum Item {
        case event(RequestEvent)
        /// Events dropped here; `time` is the first one's.
        case missed(count: Int, time: TimeInterval)
    }

    private struct State {
        var items: [Item] = []
        /// Index of the next item to hand out (items before it are spent).
        var head = 0
        var waiter: CheckedContinuation<RequestEvent?, Never>?
        var ended = false

        var buffered: Int { items.count - head }

        mutating func pop() -> RequestEvent? {
            guard head < items.count else { return nil }
            let item = items[head]
            head += 1
            if head > 1024, head * 2 > items.count {
                items.removeFirst(head)
                head = 0
            }
            switch item {
            case .event(let event): return event
            case .missed(let count, let time): return RequestEvent(time: time, operationID: "", attempt: 0, payload: .missed(count: count))
            }
        }
    }

    private let limit: Int
    private let state = Mutex(State())
    private let subscription = Mutex<EventSubscription?>(nil)

    init(hub: EventHub, limit: Int) {
        self.limit = limit
        let subscription = hub.subscribe(label: "reqtop.events.stream") { [weak self] batch in self?.receive(batch) }
        self.subscription.withLock { $0 = subscription }
    }

    deinit {
        subscription.withLock { $0 }?.cancel()
    }

    private func receive(_ batch: [RequestEvent]) {
        let handOver = state.withLock { state -> (CheckedContinuation<RequestEvent?, Never>, RequestEvent)? in
            guard !state.ended else { return nil }
            for event in batch {
                if state.buffered < limit {
                    state.items.append(.event(event))
                } else if case .missed(let count, let time)? = state.items.last {
                    state.items[state.items.count - 1] = .missed(count: count + 1, time: time)
                } else {
                    state.items.append(.missed(count: 1, time: event.time))
                }
            }
            guard let waiter = state.waiter, let first = state.pop() else { return nil }
            state.waiter = nil
            return (waiter, first)
        }
        if let (waiter, event) = handOver { waiter.resume(returning: event) }
    }

    func next() async -> RequestEvent? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let now = state.withLock { state -> RequestEvent?? in
                    if let event = state.pop() { return .some(event) }
                    if state.ended { return .some(nil) }
                    state.waiter = continuation
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            end()
        }
    }

    /// Ends the stream: a waiting `next()` returns nil, and so does every later one.
    func end() {
        let waiter = state.withLock { state in
            state.ended = true
            state.items = []
            state.head = 0
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
        subscription.withLock { $0 }?.cancel()
    }
}
