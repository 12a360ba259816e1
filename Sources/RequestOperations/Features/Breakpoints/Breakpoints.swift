import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization

/// A queue's breakpoints (`queue.breakpoints`): add, list, turn off and on, remove, while it
/// runs. Asked once per attempt before it takes a slot; with none set it costs one atomic read.
///
/// ```swift
/// let id = queue.breakpoints.add(Breakpoint(match: try RequestMatch("path:/v1/orders method:POST")))
/// // … an operation stops (phase .stoppedAtBreakpoint); look at it, then:
/// queue.operation(withID: "w1-order")?.resolveBreakpoint(.respond(status: 503, headers: [:], body: Data()))
/// queue.breakpoints.remove(id)   // operations stopped at it go on
/// ```
public final class Breakpoints: Sendable {
    public struct Entry: Sendable, Equatable {
        public let id: Int
        public let breakpoint: Breakpoint
        public var enabled: Bool
    }

    private let entries = Mutex<(next: Int, list: [Entry])>((1, []))
    private let active = Atomic<Int>(0)
    /// Told when a breakpoint is removed or turned off, so operations stopped at it go on.
    private let released = Mutex<[@Sendable (Int) -> Void]>([])
    /// Where each change is said (`breakpointSet`, `breakpointRemoved`): the monitor's list.
    private let events: EventHub?

    public init(events: EventHub? = nil) {
        self.events = events
    }

    private func announce(_ entry: Entry) {
        events?.publish(operation: "", attempt: 0, .breakpointSet(id: entry.id, rule: entry.breakpoint.match.description, by: entry.breakpoint.setBy,
                                                                   enabled: entry.enabled, afterResponse: entry.breakpoint.stage == .afterResponse))
    }

    @discardableResult
    public func add(_ breakpoint: Breakpoint) -> Int {
        let entry = entries.withLock { entries in
            let id = entries.next
            entries.next += 1
            entries.list.append(Entry(id: id, breakpoint: breakpoint, enabled: true))
            count(entries.list)
            return entries.list[entries.list.count - 1]
        }
        announce(entry)
        return entry.id
    }

    /// Turns breakpoint `id` off or on; false when there is none. Turning it off lets the
    /// operations stopped at it go on, as they are.
    @discardableResult
    public func setEnabled(_ id: Int, _ enabled: Bool) -> Bool {
        let found = entries.withLock { entries -> Entry? in
            guard let index = entries.list.firstIndex(where: { $0.id == id }) else { return nil }
            entries.list[index].enabled = enabled
            count(entries.list)
            return entries.list[index]
        }
        if let found { announce(found) }
        if found != nil, !enabled { release(id) }
        return found != nil
    }

    /// Removes breakpoint `id`; the operations stopped at it go on. False when there is none.
    @discardableResult
    public func remove(_ id: Int) -> Bool {
        let removed = entries.withLock { entries -> Bool in
            let before = entries.list.count
            entries.list.removeAll { $0.id == id }
            count(entries.list)
            return entries.list.count < before
        }
        if removed {
            events?.publish(operation: "", attempt: 0, .breakpointRemoved(id: id))
            release(id)
        }
        return removed
    }

    /// Removes every breakpoint `setBy` set (nil: every one); returns how many.
    @discardableResult
    public func removeAll(setBy owner: String? = nil) -> Int {
        let removed = entries.withLock { entries -> [Int] in
            let gone = entries.list.filter { owner == nil || $0.breakpoint.setBy == owner }.map(\.id)
            entries.list.removeAll { gone.contains($0.id) }
            count(entries.list)
            return gone
        }
        for id in removed {
            events?.publish(operation: "", attempt: 0, .breakpointRemoved(id: id))
            release(id)
        }
        return removed.count
    }

    public var list: [Entry] { entries.withLock { $0.list } }

    /// Whether any breakpoint is on (the monitor's `BREAK` in the header).
    public var isActive: Bool { active.load(ordering: .acquiring) > 0 }

    /// The first enabled breakpoint at `stage` whose match holds for `request`.
    func pick(for request: RequestMessage, at stage: Breakpoint.Stage = .beforeSend) -> Entry? {
        guard isActive else { return nil }
        return entries.withLock { $0.list }.first { $0.enabled && $0.breakpoint.stage == stage && $0.breakpoint.match.matches(request) }
    }

    /// Whether breakpoint `id` is still there and on.
    func holds(_ id: Int) -> Bool {
        entries.withLock { $0.list.contains { $0.id == id && $0.enabled } }
    }

    func onRelease(_ handler: @escaping @Sendable (Int) -> Void) {
        released.withLock { $0.append(handler) }
    }

    private func release(_ id: Int) {
        released.withLock { $0 }.forEach { $0(id) }
    }

    private func count(_ list: [Entry]) {
        active.store(list.filter(\.enabled).count, ordering: .releasing)
    }
}
