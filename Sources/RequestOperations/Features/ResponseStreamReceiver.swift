import Foundation
import Synchronization
import HTTPTypes

/// Takes a streamed answer as the transport reads it, on the transport's own thread, with no
/// Task in between — for a server that writes what it reads to a socket of its own (reqtop's
/// proxy): ``RequestQueue/stream(for:id:options:bufferSize:)``'s async sequence costs a hop to
/// a Task and back for every answer, which on a small request is most of its time.
///
/// The calls come one at a time and in order: ``answerBegan(status:headers:repeatedHeaders:)``
/// at most once (a valid answer began: retries are over), then ``answerPart(_:resume:)`` for
/// each part of its body, then ``answerEnded(_:)`` exactly once. They are never made under the
/// operation's lock (a receiver may cancel the operation from one), and must not block: they
/// run on the transport's event loop.
///
/// ```swift
/// final class Forwarder: ResponseStreamReceiver {
///     func answerBegan(status: Int, headers: [String: String], repeatedHeaders: [String: [String]]) { … write the head … }
///     func answerPart(_ part: Data, resume: @escaping @Sendable () -> Void) -> Bool { … write it; false (and call resume later) when the socket is full … }
///     func answerEnded(_ result: RequestResult) { … the end, or the failure … }
/// }
/// let operation = queue.stream(for: request, to: Forwarder())
/// ```
public protocol ResponseStreamReceiver: Sendable {
    /// A valid answer began: its status and headers (each value of a header sent more than
    /// once in `repeatedHeaders`, where the transport tells).
    func answerBegan(status: Int, headers: [String: String], repeatedHeaders: [String: [String]])
    /// A valid answer began, with its fields as received — in order, each repeat apart, names
    /// as the server spelled them — from a transport that keeps them (NIO's; nil from
    /// URLSession's). By default, ``answerBegan(status:headers:repeatedHeaders:)``.
    func answerBegan(status: Int, headers: [String: String], repeatedHeaders: [String: [String]], fields: HTTPFields?)
    /// A part of the body. Return false to have a transport that can wait (NIO) read no more
    /// until `resume` is called (once, from any thread); true to go on. The URLSession transport
    /// cannot wait and goes on either way.
    func answerPart(_ part: Data, resume: @escaping @Sendable () -> Void) -> Bool
    /// The operation ended: with ``RequestOutcome/success`` once the whole body was given,
    /// else how it failed or who cancelled it — before ``answerBegan(status:headers:repeatedHeaders:)``
    /// (no valid answer came: the result holds the last one, if any) or after (cut mid-body).
    func answerEnded(_ result: RequestResult)
}

/// Where a streamed answer goes inside the engine: the async sequence
/// (``ResponseBodyStream``) or a program's ``ResponseStreamReceiver``.
protocol StreamedAnswerSink: Sendable {
    func deliverHead(status: Int, headers: [String: String], repeated: [String: [String]], fields: HTTPFields?)
    /// A part; false when the sink is full (a transport that can wait then waits for `whenRoom`).
    func push(_ data: Data, whenRoom: (@Sendable () -> Void)?, wakeLater: ResponseBodyStream.WakeScheduler?) -> Bool
    /// Bytes given and not yet taken (checked for a transport that cannot wait).
    var buffered: Int { get }
    /// The operation ended with `result`. Never called under the operation's lock.
    func finish(after result: RequestResult)
}

extension ResponseBodyStream: StreamedAnswerSink {
    func finish(after result: RequestResult) {
        switch (result.outcome, result.error) {
        case (.success, _): finish(.whole)
        case (_, .cancelled(by: RequestQueue.taskCanceller)?): finish(.failed(CancellationError()))
        case (_, let error): finish(.failed(RequestError(reason: error ?? .cancelled(by: "unknown"), result: result)))
        }
    }
}

extension ResponseStreamReceiver {
    public func answerBegan(status: Int, headers: [String: String], repeatedHeaders: [String: [String]], fields: HTTPFields?) {
        answerBegan(status: status, headers: headers, repeatedHeaders: repeatedHeaders)
    }
}

/// A ``ResponseStreamReceiver`` as the operation's sink, let go of once it is told the end.
///
/// A finished operation stays in its queue's recent ones (2,000, for commands that find one
/// by id) with its options, and this sink is one of them; a receiver may hold much — a
/// proxy's holds its client's connection, and so the buffers that connection read an upload
/// into (up to 4 MiB): 1 GiB uploads through the proxy grew it by ~5 MiB each.
final class ReceiverSink: StreamedAnswerSink {
    private let held: Mutex<(any ResponseStreamReceiver)?>

    init(receiver: any ResponseStreamReceiver) {
        held = Mutex(receiver)
    }

    private var receiver: (any ResponseStreamReceiver)? { held.withLock { $0 } }

    func deliverHead(status: Int, headers: [String: String], repeated: [String: [String]], fields: HTTPFields?) {
        receiver?.answerBegan(status: status, headers: headers, repeatedHeaders: repeated, fields: fields)
    }

    func push(_ data: Data, whenRoom: (@Sendable () -> Void)?, wakeLater: ResponseBodyStream.WakeScheduler?) -> Bool {
        receiver?.answerPart(data, resume: whenRoom ?? {}) ?? true
    }

    /// The receiver holds what it was given, and says so by its answers.
    var buffered: Int { 0 }

    func finish(after result: RequestResult) {
        let receiver = held.withLock { held -> (any ResponseStreamReceiver)? in
            defer { held = nil }
            return held
        }
        receiver?.answerEnded(result)
    }
}
