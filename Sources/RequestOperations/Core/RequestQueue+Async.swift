import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The async API: each call is one ``RequestOperation`` on the queue (so the monitor,
/// recordings and attached monitors see it like any other), awaited without blocking a
/// thread, and cancelled with the Task that awaits it.
///
/// ```swift
/// let result = try await queue.response(for: request)              // RequestResult
/// let item = try await queue.value(Item.self, for: request)        // decoded JSON
/// ```
///
/// - It returns when the operation ends: the ``RequestResult`` when it succeeded.
/// - It throws ``RequestError`` (``RequestError/stage``, the whole ``RequestError/result``)
///   when the operation failed or was cancelled by anything but the calling Task.
/// - Cancelling the calling Task cancels the operation at once, in whatever stage it is
///   (queued, held in a batch, waiting for a reactor, in flight, waiting to retry): its
///   events say `cancelled` `by: "task"`, and the call throws `CancellationError`.
extension RequestQueue {
    /// Runs `request` as one operation and returns its result when it succeeded.
    /// - Parameters: `id` and `options` as in ``add(_:id:options:dependencies:completion:)``.
    public func response(for request: URLRequest, id: String? = nil, options: RequestOptions = RequestOptions()) async throws -> RequestResult {
        try await run(RequestOperation(request: request, id: id, options: options, environment: environment))
    }

    /// The same for a request given as its fields in order (``RequestMessage``).
    public func response(for request: RequestMessage, id: String? = nil, options: RequestOptions = RequestOptions()) async throws -> RequestResult {
        try await run(RequestOperation(message: request, id: id, options: options, environment: environment))
    }

    /// Runs `request` and decodes the body of its final success as JSON into `type`. A body
    /// that does not fit throws ``RequestError`` with stage `.decoding` and the JSON path.
    public func value<Value: Decodable & Sendable>(_ type: Value.Type, for request: URLRequest, id: String? = nil,
                                                   options: RequestOptions = RequestOptions()) async throws -> Value {
        let operation = TypedRequestOperation(request: request, parser: JSONResultParser<Value>(), id: id, options: options,
                                              environment: environment)
        _ = try await run(operation)
        switch operation.typedResult {
        case .success(let value)?: return value
        case .failure(let error)?: throw error
        case nil: throw CancellationError()  // not reached: run returns once the operation ended
        }
    }

    /// Runs `request` and returns as soon as a valid answer began, its body to be read part
    /// by part as it arrives — for a program that processes as it reads, in flat memory
    /// (see ``ResponseBodyStream`` for how a slow reader holds the connection back).
    ///
    /// ```swift
    /// let answer = try await queue.stream(for: request)
    /// for try await part in answer.body { try sink.write(part) }
    /// ```
    ///
    /// Retries happen as for ``response(for:id:options:)`` until a valid answer began; from
    /// then on a failure (the connection lost mid-body) is not retried — the reader had part
    /// of it — and the body's iteration throws ``RequestError``. It throws like
    /// ``response(for:id:options:)`` when no valid answer came. Breaking out of the loop, or
    /// cancelling the Task that reads, cancels the request. ``RequestOptions/destination`` is
    /// not used here.
    /// - Parameter bufferSize: bytes read ahead of the reader before the connection waits
    ///   (``ResponseBodyStream/defaultCapacity``, 4 MiB).
    public func stream(for request: URLRequest, id: String? = nil, options: RequestOptions = RequestOptions(),
                       bufferSize: Int = ResponseBodyStream.defaultCapacity) async throws -> StreamedResponse {
        let body = ResponseBodyStream(capacity: bufferSize)
        var options = options
        options.destination = nil
        options.bodyStream = body
        let operation = RequestOperation(request: request, id: id, options: options, environment: environment)
        body.onCancel { [weak operation] in operation?.cancel(by: Self.taskCanceller) }
        let head = try await withTaskCancellationHandler {
            add(operation)
            return try await body.head()
        } onCancel: {
            operation.cancel(by: Self.taskCanceller)
        }
        return StreamedResponse(status: head.status, headers: head.headers, repeatedHeaders: head.repeated, body: body, operation: operation)
    }

    /// Runs `request` and hands its answer to `receiver` as the transport reads it, on the
    /// transport's thread (see ``ResponseStreamReceiver``): the same operation as
    /// ``stream(for:id:options:bufferSize:)``, without a Task between the transport and the
    /// reader. Retries happen until a valid answer began; ``RequestOptions/destination`` is not
    /// used. Called on an event loop of the NIO transport, the operation starts there, and its
    /// request goes out on a connection of that loop when one is free: a server that answers
    /// its clients this way (reqtop's proxy) moves a small request without a thread switch.
    @discardableResult
    public func stream(for request: URLRequest, id: String? = nil, options: RequestOptions = RequestOptions(),
                       to receiver: some ResponseStreamReceiver) -> RequestOperation {
        stream(for: RequestMessage(request), id: id, options: options, to: receiver)
    }

    /// The same for a request given as its fields in order (``RequestMessage``): a proxy's.
    @discardableResult
    public func stream(for request: RequestMessage, id: String? = nil, options: RequestOptions = RequestOptions(),
                       to receiver: some ResponseStreamReceiver) -> RequestOperation {
        var options = options
        options.destination = nil
        options.bodyStream = ReceiverSink(receiver: receiver)
        let operation = RequestOperation(message: request, id: id, options: options, environment: environment)
        add(operation)
        return operation
    }

    /// Adds `operation`, awaits its end, and turns the end into a return or a throw.
    func run(_ operation: RequestOperation) async throws -> RequestResult {
        // A Task cancelled before the call sends nothing; the operation still shows, cancelled.
        let result = await withTaskCancellationHandler {
            add(operation)
            return await operation.finished
        } onCancel: {
            operation.cancel(by: Self.taskCanceller)
        }
        if result.outcome == .success { return result }
        if case .cancelled(by: Self.taskCanceller)? = result.error { throw CancellationError() }
        throw RequestError(reason: result.error ?? .cancelled(by: "unknown"), result: result)
    }

    /// The `by` of an operation cancelled because the Task awaiting it was.
    public static let taskCanceller = "task"
}

extension RequestOperation {
    /// The result, once the operation ended (at once if it has). For an operation added with
    /// ``RequestQueue/add(_:id:options:dependencies:completion:)``: awaiting it does not run
    /// or cancel it.
    public var finished: RequestResult {
        get async {
            await withCheckedContinuation { continuation in
                if let ended = transition(AwaitResult(waiter: continuation)) { continuation.resume(returning: ended) }
            }
        }
    }

    /// A task awaits the result: it has it now, or waits for the end (``TakeFinishWaiters``).
    struct AwaitResult: OperationTransition {
        let waiter: CheckedContinuation<RequestResult, Never>

        func apply(to state: inout State, of operation: RequestOperation) -> RequestResult? {
            if let result = state.result { return result }
            state.finishWaiters.append(waiter)
            return nil
        }
    }
}
