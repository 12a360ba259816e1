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
                let ended = state.withLock { state -> RequestResult? in
                    if let result = state.result { return result }
                    state.finishWaiters.append(continuation)
                    return nil
                }
                if let ended { continuation.resume(returning: ended) }
            }
        }
    }
}
