import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import RequestOperations
import Synchronization
import Testing

/// A streamed answer handed to a ``ResponseStreamReceiver`` on the transport's thread (the
/// proxy's way), on each transport: the calls come in order and once, failures before the
/// answer are retried and reach the receiver only as the end, a receiver that says "full"
/// holds the NIO connection back until it resumes, and one that cancels from inside a call
/// ends the operation without a deadlock.
@Suite("Streamed answers to a receiver, on each transport", .serialized)
struct ResponseStreamReceiverTests {
    /// Records every call; ends `ended` once the operation did.
    final class Recorder: ResponseStreamReceiver {
        enum Call: Equatable {
            case began(Int)
            case part(Int)
            case ended(RequestOutcome, status: Int?)
        }

        private struct Seen {
            var calls: [Call] = []
            var body = Data()
            var resume: (@Sendable () -> Void)?
            var saidFull = false
            var waiting: CheckedContinuation<RequestResult, Never>?
            var result: RequestResult?
        }
        private let seen = Mutex(Seen())
        /// Bytes after which `answerPart` says "full" once (and keeps `resume`); nil: never.
        let fullAfter: Int?
        /// Called with each part (from the transport's thread).
        let onPart: (@Sendable () -> Void)?

        init(fullAfter: Int? = nil, onPart: (@Sendable () -> Void)? = nil) {
            self.fullAfter = fullAfter
            self.onPart = onPart
        }

        var calls: [Call] { seen.withLock { $0.calls } }
        var body: Data { seen.withLock { $0.body } }

        func answerBegan(status: Int, headers: [String: String], repeatedHeaders: [String: [String]]) {
            seen.withLock { $0.calls.append(.began(status)) }
        }

        func answerPart(_ part: Data, resume: @escaping @Sendable () -> Void) -> Bool {
            let full = seen.withLock { seen -> Bool in
                seen.calls.append(.part(part.count))
                seen.body.append(part)
                guard let fullAfter, seen.body.count >= fullAfter, !seen.saidFull else { return false }
                seen.saidFull = true
                seen.resume = resume
                return true
            }
            onPart?()
            return !full
        }

        func answerEnded(_ result: RequestResult) {
            let waiting = seen.withLock { seen -> CheckedContinuation<RequestResult, Never>? in
                seen.calls.append(.ended(result.outcome, status: result.status))
                seen.result = result
                defer { seen.waiting = nil }
                return seen.waiting
            }
            waiting?.resume(returning: result)
        }

        /// Lets the transport read on (once).
        func resume() {
            let resume = seen.withLock { seen in
                defer { seen.resume = nil }
                return seen.resume
            }
            resume?()
        }

        var ended: RequestResult {
            get async {
                await withCheckedContinuation { continuation in
                    let now = seen.withLock { seen -> RequestResult? in
                        if let result = seen.result { return result }
                        seen.waiting = continuation
                        return nil
                    }
                    if let now { continuation.resume(returning: now) }
                }
            }
        }
    }

    @Test(arguments: TransportKind.allCases)
    func theCallsComeInOrderOnceAndTheBodyWhole(_ kind: TransportKind) async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let queue = RequestQueue(transport: kind.make(), earlyRetry: nil)
        let recorder = Recorder()
        let operation = queue.stream(for: URLRequest(url: server.url("/bytes/3000000?seed=2")), id: "r", to: recorder)
        let result = await recorder.ended
        #expect(result.outcome == .success && result.data.isEmpty, "the body went to the receiver, not the result")
        #expect(operation.result?.outcome == .success)
        #expect(recorder.body == Data(FaultServer.expectedBytes(count: 3_000_000, seed: 2)))
        let calls = recorder.calls
        #expect(calls.first == .began(200))
        #expect(calls.last == .ended(.success, status: 200))
        #expect(calls.dropFirst().dropLast().allSatisfy { if case .part = $0 { true } else { false } }, "parts only between: \(calls.prefix(4))")
        #expect(calls.count > 3, "in parts, not whole")
    }

    /// A finished operation stays in its queue's recent ones, and lets go of its receiver (a
    /// proxy's holds its client's connection and the buffers it read an upload into).
    @Test(arguments: TransportKind.allCases)
    func aFinishedOperationLetsGoOfItsReceiver(_ kind: TransportKind) async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let queue = RequestQueue(transport: kind.make(), earlyRetry: nil)
        weak var released: Recorder?
        let operation: RequestOperation
        do {
            let recorder = Recorder()
            released = recorder
            operation = queue.stream(for: URLRequest(url: server.url("/bytes/100000?seed=1")), id: "held", to: recorder)
            _ = await recorder.ended
        }
        // Told the end on the transport's thread, it is let go of as that call returns.
        for _ in 0..<200 where released != nil { try await Task.sleep(for: .milliseconds(10)) }
        #expect(operation.result?.outcome == .success)
        #expect(released == nil, "\(kind): the finished operation still holds its receiver")
    }

    @Test(arguments: TransportKind.allCases)
    func failuresBeforeTheAnswerAreRetriedAndReachTheReceiverOnlyAsTheEnd(_ kind: TransportKind) async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let queue = RequestQueue(transport: kind.make(), earlyRetry: nil)
        let policy = ExponentialBackoffRetryPolicy(maxAttempts: 3, baseDelay: 0.01, jitter: .none)
        let flaky = Recorder()
        queue.stream(for: URLRequest(url: server.url("/flaky/receiver-\(kind)?failures=1&status=503")), options: RequestOptions(retryPolicy: policy), to: flaky)
        let answered = await flaky.ended
        #expect(answered.outcome == .success && answered.attempts.count == 2, "the 503 before the answer was retried")
        #expect(flaky.calls.first == .began(200), "the 503 was never handed on: \(flaky.calls.prefix(2))")

        let missing = Recorder()
        queue.stream(for: URLRequest(url: server.url("/status/404")), options: RequestOptions(retryPolicy: .never), to: missing)
        let failed = await missing.ended
        #expect(missing.calls == [.ended(.failure, status: 404)], "\(missing.calls)")
        #expect(failed.status == 404)
    }

    /// A receiver that says "full" holds the NIO connection's reads back until it resumes.
    @Test func aFullReceiverHoldsTheNIOConnectionBackUntilItResumes() async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let queue = RequestQueue(transport: TransportKind.nio.make(), earlyRetry: nil)
        let size = 24 << 20
        let recorder = Recorder(fullAfter: 1 << 20)
        let operation = queue.stream(for: URLRequest(url: server.url("/bytes/\(size)?seed=1")), id: "held", to: recorder)
        let deadline = Date().addingTimeInterval(10)
        while recorder.body.count < 1 << 20, Date() < deadline { try await Task.sleep(for: .milliseconds(10)) }
        try await Task.sleep(for: .milliseconds(600))
        let readMeanwhile = operation.attempts.last?.bytes ?? 0
        #expect(readMeanwhile < 8 << 20, "read \(readMeanwhile) bytes of \(size) while the receiver was full")
        #expect(operation.result == nil)
        recorder.resume()
        let result = await recorder.ended
        #expect(result.outcome == .success)
        #expect(recorder.body.count == size)
    }

    /// A receiver may cancel the operation from inside a call: it ends, cancelled, once.
    @Test(arguments: TransportKind.allCases)
    func aReceiverThatCancelsFromACallEndsTheOperation(_ kind: TransportKind) async throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let queue = RequestQueue(transport: kind.make(), earlyRetry: nil)
        let operation = Mutex<RequestOperation?>(nil)
        let recorder = Recorder(onPart: { operation.withLock { $0 }?.cancel(by: "receiver") })
        let started = queue.stream(for: URLRequest(url: server.url("/drip?bytes=100000&duration=4000&chunks=40")), id: "stop", to: recorder)
        operation.withLock { $0 = started }
        let result = await recorder.ended
        #expect(result.outcome == .cancelled, "\(result.outcome)")
        #expect(result.duration < 3, "ended when the receiver cancelled, not with the drip: \(result.duration)")
        #expect(recorder.calls.filter { if case .ended = $0 { true } else { false } }.count == 1)
    }
}
