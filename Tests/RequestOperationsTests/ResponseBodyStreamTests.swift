import Foundation
@testable import RequestOperations
import Synchronization
import Testing

/// The stream's buffer by itself, with the transport's side played by the test: parts in
/// order, a reader woken later taking what came meanwhile in one step, the end reaching a
/// reader whose wake had not run yet, and room told to the transport once the reader took
/// what a full buffer held.
@Suite("A streamed body's buffer", .timeLimit(.minutes(1)))
struct ResponseBodyStreamTests {
    /// Holds the work a `wakeLater` is given until the test runs it (the event loop's turn).
    final class HeldWakes: Sendable {
        private let held = Mutex<[@Sendable () -> Void]>([])
        var scheduler: ResponseBodyStream.WakeScheduler { { work in self.held.withLock { $0.append(work) } } }
        var count: Int { held.withLock { $0.count } }
        func runAll() {
            for work in held.withLock({ list -> [@Sendable () -> Void] in defer { list = [] }; return list }) { work() }
        }
    }

    private func part(_ byte: UInt8, _ count: Int = 4) -> Data { Data(repeating: byte, count: count) }

    /// Waits (bounded) until the reader task is suspended for parts.
    private func untilWaiting(_ stream: ResponseBodyStream) async {
        for _ in 0..<200 where !stream.readerIsWaiting { try? await Task.sleep(for: .milliseconds(5)) }
    }

    /// A task reading the whole stream, once it waits for parts.
    private func waitingReader(_ stream: ResponseBodyStream) async -> Task<[Data], Error> {
        let reader = Task { () -> [Data] in
            var read: [Data] = []
            for try await part in stream { read.append(part) }
            return read
        }
        await untilWaiting(stream)
        return reader
    }

    @Test func partsPushedWhileAWakeIsPendingReachTheReaderTogetherAndInOrder() async throws {
        let stream = ResponseBodyStream(capacity: 1 << 20)
        let wakes = HeldWakes()
        let reader = await waitingReader(stream)
        let pushed = [part(1), part(2), part(3)].map { stream.push($0, wakeLater: wakes.scheduler) }
        #expect(pushed == [true, true, true])
        #expect(wakes.count == 1, "one wake for the three parts, not one each")
        wakes.runAll()
        await untilWaiting(stream)
        stream.finish(.whole)
        #expect(try await reader.value == [part(1), part(2), part(3)])
    }

    @Test func theEndReachesAReaderWhoseWakeHadNotRunYet() async throws {
        let stream = ResponseBodyStream(capacity: 1 << 20)
        let wakes = HeldWakes()
        let reader = await waitingReader(stream)
        _ = stream.push(part(7), wakeLater: wakes.scheduler)
        stream.finish(.failed(URLError(.networkConnectionLost)))
        wakes.runAll()  // late: it finds nobody waiting and does nothing
        do {
            let read = try await reader.value
            Issue.record("the failure must reach the reader, after its part; read \(read)")
        } catch let error as URLError {
            #expect(error.code == .networkConnectionLost)
        }
    }

    @Test func aFullBufferTellsTheTransportOnceTheReaderTookIt() async throws {
        let stream = ResponseBodyStream(capacity: 8)
        let rooms = Mutex(0)
        let room: @Sendable () -> Void = { rooms.withLock { $0 += 1 } }
        let first = stream.push(part(1), whenRoom: room)
        let second = stream.push(part(2), whenRoom: room)
        #expect(first)
        #expect(!second, "8 bytes held: full")
        #expect(rooms.withLock { $0 } == 0)
        var iterator = stream.makeAsyncIterator()
        #expect(try await iterator.next() == part(1))
        #expect(rooms.withLock { $0 } == 1, "the reader took both parts at once: room")
        #expect(stream.buffered == 0)
        #expect(try await iterator.next() == part(2), "the second part from what the reader took")
        stream.finish(.whole)
        #expect(try await iterator.next() == nil)
    }
}
