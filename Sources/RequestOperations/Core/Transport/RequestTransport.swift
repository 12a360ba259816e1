import Foundation
import HTTPTypes
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The seam between an attempt and the network: the attempt hands a prepared request to a
/// transport and hears back through ``TransportCallbacks``. Everything above it (retries,
/// interceptors, reactors, events) is the same whatever carries the bytes.
///
/// ``SharedSession`` (one `URLSession` with a routing delegate) is the default; the
/// `RequestTransportNIO` module has one on AsyncHTTPClient. A transport must:
///
/// - call back serially per task, in this order: redirect(s), response, data × N, completion;
/// - ask ``TransportCallbacks/task(_:willRedirect:to:)`` before following a redirect;
/// - report failures as `URLError`s with the codes URLSession would use (the retry policy
///   judges those), and a cancelled task as `URLError.cancelled`.
///
/// The engine calls ``resume(_:)`` and ``cancel(_:)`` outside its operation's lock, and never
/// cancels a task before its resume returned: a transport may call back from inside either.
public protocol RequestTransport: Sendable {
    /// Makes a task for `request` whose callbacks go to `handler`. Nothing is sent until
    /// ``resume(_:)``. A transport that writes its own heads sends the fields in their order,
    /// each repeat apart, spelled as they are.
    func makeTask(for request: RequestMessage, handler: TransportCallbacks) -> TransportTask
    /// Sends the request. May call back before it returns (the engine holds no lock here).
    func resume(_ task: TransportTask)
    /// Stops a task in any phase; its completion reports a cancellation.
    func cancel(_ task: TransportTask)
    /// Forgets a task that was made but never resumed.
    func discard(_ task: TransportTask)
    /// Its name in the monitor's header and in `--transport` (`urlsession`, `nio`).
    var name: String { get }
    /// Whether a slot freed in one of its callbacks may start the next request right there.
    /// URLSession's callbacks share one serial queue, so the next start goes elsewhere
    /// (false); an event loop can start it at once and save a thread hop (true).
    var startsNextRequestInCallbacks: Bool { get }
    /// Where a ``RequestQueue`` runs the `start()` of an operation it starts itself, without
    /// its `OperationQueue`, asked at each add (it may depend on the thread adding); nil (the
    /// default): the `OperationQueue` starts it.
    /// (Measured on Linux: AsyncHTTPClient's GETs each started by an `OperationQueue` run at
    /// 0.52–0.79 of its own rate; started by hand, 0.88–0.94.)
    var operationStarter: OperationStarter? { get }

    /// False when the transport does not verify TLS certificates (`--insecure`): every
    /// attempt's `taskCreated` then says `insecure`, so recordings and monitors show it.
    var verifiesCertificates: Bool { get }

    /// True when the transport cuts a request by its ``RequestMessage/timeoutInterval`` (URLSession:
    /// 60 s by default): the engine then sets it past the operation's own limits. False
    /// spares every request that copy.
    var usesRequestTimeoutInterval: Bool { get }
    /// True when the transport sends a followed 307/308 with the request's body again, as
    /// the redirect requires. False: the engine refuses such a redirect, with that reason,
    /// rather than let an empty body go in its place.
    var resendsBodyOnRedirect: Bool { get }
    /// True when a streamed body may carry its length (`Content-Length`, from a body file's
    /// size). False: the transport chunks every stream and would send both headers, which a
    /// server must refuse (FoundationNetworking did: 400 from every strict server).
    var sendsLengthWithStreams: Bool { get }

    /// Reading of `task`'s answer may go on, after a `false` from
    /// ``TransportCallbacks/task(_:didReceivePaced:)``: a transport that can hold its reading
    /// back (NIO: the connection's reads wait) delivers parts that way; one that cannot
    /// (URLSession) uses ``TransportCallbacks/task(_:didReceive:)`` and ignores this.
    func resumeReading(_ task: TransportTask)
    /// Runs `work` once the transport delivered the parts of `task`'s answer it has read now
    /// (NIO: at the end of the event loop's turn), so a reader woken for them takes them
    /// together rather than one thread hop each. By default, at once.
    func afterReads(_ task: TransportTask, _ work: @escaping @Sendable () -> Void)
}

/// Runs an operation's start somewhere of the transport's choosing, later, never inline.
public typealias OperationStarter = @Sendable (_ start: @escaping @Sendable () -> Void) -> Void

extension RequestTransport {
    public var startsNextRequestInCallbacks: Bool { false }
    public var operationStarter: OperationStarter? { nil }
    public var verifiesCertificates: Bool { true }
    public var usesRequestTimeoutInterval: Bool { false }
    public var resendsBodyOnRedirect: Bool { true }
    public var sendsLengthWithStreams: Bool { true }
    public func resumeReading(_ task: TransportTask) {}
    public func afterReads(_ task: TransportTask, _ work: @escaping @Sendable () -> Void) { work() }
}

/// One request handed to a transport. `identifier` names it in every callback, so a handler
/// that ran several tasks in turn (one per attempt) can ignore a late callback of an earlier one.
public struct TransportTask: Sendable {
    public let identifier: Int
    /// The transport's own handle (a `URLSessionDataTask` for ``SharedSession``).
    public let handle: any Sendable

    public init(identifier: Int, handle: any Sendable) {
        self.identifier = identifier
        self.handle = handle
    }
}

/// What a transport tells the owner of one task.
///
/// Callbacks arrive serially, in URLSession's order: redirect(s), response, data × N,
/// completion. On Linux an authentication challenge delivers the 401 response first, then
/// the challenge, then the real response.
public protocol TransportCallbacks: AnyObject, Sendable {
    /// Return the request to follow the redirect, nil to stop at it.
    func task(_ task: Int, willRedirect response: HTTPURLResponse, to request: RequestMessage) -> RequestMessage?
    func task(_ task: Int, didReceive response: URLResponse) -> URLSession.ResponseDisposition
    /// The same from a transport that reports a ``TransportResponse`` rather than making an
    /// `HTTPURLResponse` (the NIO one). Optional: the default makes one and passes it on.
    func task(_ task: Int, didReceive response: TransportResponse) -> URLSession.ResponseDisposition
    func task(_ task: Int, didReceive data: Data)
    /// The same from a transport that can hold its reading back: false asks it to read no
    /// more of this answer until ``RequestTransport/resumeReading(_:)``. Optional: the default
    /// takes the part and returns true.
    func task(_ task: Int, didReceivePaced data: Data) -> Bool
    func task(_ task: Int, didReceive challenge: URLAuthenticationChallenge) -> (URLSession.AuthChallengeDisposition, URLCredential?)
    /// The last callback of a task: `error` is nil when the exchange completed.
    func task(_ task: Int, didCompleteWithError error: Error?)
    /// The request was written whole (head and body), before its response; for transports
    /// that can tell. Optional: the default does nothing.
    func taskDidSendRequest(_ task: Int)
    /// `sent` bytes of the request's body are on their way (counted from the start of the
    /// task's request). Optional: the default does nothing.
    func task(_ task: Int, didSendBodyBytes sent: Int)
    /// The request was given a connection: `connection` names it (unique in the process),
    /// `reused` says whether an earlier request had it. Before the request is sent, again
    /// for each redirect followed; for transports that can tell. Optional: the default does nothing.
    func task(_ task: Int, didUseConnection connection: Int, reused: Bool)
    /// The same, with the proxy the connection goes through (`host:port`, never its
    /// credentials), nil when direct. The default calls the one without.
    func task(_ task: Int, didUseConnection connection: Int, reused: Bool, via proxy: String?)
    /// What follows on this task is a fault `rule` injected (``FaultRules``), not the
    /// server's: told before its first callback. Optional: the default does nothing.
    func task(_ task: Int, wasInjected rule: FaultRule)
    /// Whether the answer's fields are wanted as they came — order, repeats, spelling — to be
    /// passed on so (``RequestOptions/relaysFieldsAsWritten``, a proxy's): a transport that
    /// reads them so says them in ``TransportResponse``'s fields. False by default.
    var wantsFieldsAsWritten: Bool { get }
    /// The fields that came after the answer's body (HTTP/1.1 chunked trailers, HTTP/2's
    /// trailing HEADERS: gRPC's `grpc-status`), before the task's completion, from a transport
    /// that reads them. Optional: the default drops them.
    func task(_ task: Int, didReceiveTrailers trailers: HTTPFields)
    /// Whether the answer's trailers are wanted (``RequestOptions/relaysFieldsAsWritten``'s requests,
    /// a proxy's: it relays them). A transport may skip reading them otherwise. False by default.
    var wantsTrailers: Bool { get }
}

extension TransportCallbacks {
    public func task(_ task: Int, didReceive response: TransportResponse) -> URLSession.ResponseDisposition {
        self.task(task, didReceive: response.httpURLResponse() as URLResponse)
    }
    public func taskDidSendRequest(_ task: Int) {}
    public func task(_ task: Int, didReceivePaced data: Data) -> Bool {
        self.task(task, didReceive: data)
        return true
    }
    public func task(_ task: Int, didSendBodyBytes sent: Int) {}
    public func task(_ task: Int, didUseConnection connection: Int, reused: Bool) {}
    public func task(_ task: Int, didUseConnection connection: Int, reused: Bool, via proxy: String?) {
        self.task(task, didUseConnection: connection, reused: reused)
    }
    public func task(_ task: Int, wasInjected rule: FaultRule) {}
    public var wantsFieldsAsWritten: Bool { false }
    public func task(_ task: Int, didReceiveTrailers trailers: HTTPFields) {}
    public var wantsTrailers: Bool { false }
}
