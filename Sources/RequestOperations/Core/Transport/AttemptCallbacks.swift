import Foundation
import HTTPTypes
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The engine's side of the ``TransportCallbacks`` seam: what a transport is handed with each
/// task it makes for an operation, and the only way in to that operation's handlers. Those
/// stay internal to the engine, so nothing that holds a ``RequestOperation`` (an open class)
/// can drive its transport's callbacks; AsyncHTTPClient's `RequestBag` keeps its delegate
/// calls internal in the same way. One is made per task: it holds the operation as long as
/// the transport holds it, as the transport held the operation itself before.
final class AttemptCallbacks: TransportCallbacks {
    private let operation: RequestOperation

    init(_ operation: RequestOperation) {
        self.operation = operation
    }

    func task(_ task: Int, willRedirect response: HTTPURLResponse, to request: RequestMessage) -> RequestMessage? {
        operation.task(task, willRedirect: response, to: request)
    }

    func task(_ task: Int, didReceive response: URLResponse) -> URLSession.ResponseDisposition {
        operation.task(task, didReceive: response)
    }

    var wantsFieldsAsWritten: Bool { operation.options.relaysFieldsAsWritten }

    /// A proxy's request relays them; a request whose every answer is relayed as it came (a
    /// proxy's, or its re-run in `whatif`) judges a gRPC call by the status among them.
    var wantsTrailers: Bool { operation.options.relaysFieldsAsWritten || operation.options.relaysEveryAnswer }

    func task(_ task: Int, didReceiveTrailers trailers: HTTPFields) {
        operation.task(task, didReceiveTrailers: trailers)
    }

    func task(_ task: Int, didReceive response: TransportResponse) -> URLSession.ResponseDisposition {
        operation.task(task, didReceive: response)
    }

    func task(_ task: Int, didReceive data: Data) {
        operation.task(task, didReceive: data)
    }

    func task(_ task: Int, didReceivePaced data: Data) -> Bool {
        operation.task(task, didReceivePaced: data)
    }

    func task(_ task: Int, didReceive challenge: URLAuthenticationChallenge) -> (URLSession.AuthChallengeDisposition, URLCredential?) {
        operation.task(task, didReceive: challenge)
    }

    func task(_ task: Int, didCompleteWithError error: Error?) {
        operation.task(task, didCompleteWithError: error)
    }

    func taskDidSendRequest(_ task: Int) {
        operation.taskDidSendRequest(task)
    }

    func task(_ task: Int, didSendBodyBytes sent: Int) {
        operation.task(task, didSendBodyBytes: sent)
    }

    func task(_ task: Int, didUseConnection connection: Int, reused: Bool) {
        operation.task(task, didUseConnection: connection, reused: reused)
    }

    func task(_ task: Int, didUseConnection connection: Int, reused: Bool, via proxy: String?) {
        operation.task(task, didUseConnection: connection, reused: reused, via: proxy)
    }

    func task(_ task: Int, wasInjected rule: FaultRule) {
        operation.task(task, wasInjected: rule)
    }
}
