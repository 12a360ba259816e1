import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization

/// One `URLSession` for every operation, with one delegate that routes each callback to
/// the operation owning the task, by task identifier.
///
/// A handler is registered after the task is created and before it is resumed (setting
/// `URLSessionTask.delegate` is ignored on Linux), and removed when the task completes, so
/// the routing table holds only tasks in flight.
public final class SharedSession: RequestTransport, Sendable {
    /// The process-wide default, created on first use.
    public static let shared = SharedSession()

    /// The session requests go through (made on first use: see ``init(configuration:)``).
    public var session: URLSession { sessions().main }
    private let router: SessionDelegateRouter

    /// The configuration until the sessions are made, then the two sessions: `main`, and
    /// `fresh`, whose connections close after each answer (`Connection: close`), for requests
    /// libcurl must never re-send on its own (``needsFreshConnection(_:)``).
    private enum Sessions {
        case pending(URLSessionConfiguration)
        case made(main: URLSession, fresh: URLSession)
    }
    private let made: Mutex<Sessions>

    /// URLSession's own limit of connections to one host, which it enforces (6 by default).
    /// The queues' limits (`maxConcurrentRequests`, `maxConcurrentRequestsPerHost`) are the
    /// ones that count, so the session allows this many: before, a queue allowed 100 at once
    /// to one host ran 6 at a time (100 one-second requests took 17 s).
    public static let connectionsPerHost = 512

    /// - Parameter configuration: copied. Its `httpMaximumConnectionsPerHost` is raised to
    ///   ``connectionsPerHost`` when lower, so the queue's limits decide. Its cache is not
    ///   used (see below).
    ///
    /// The sessions themselves are made when the first request is sent through them: a
    /// queue given another transport (`reqtop proxy`, NIO) still has a `SharedSession`
    /// (a `RequestQueue`'s `session`), and making a `URLSession` starts libcurl, which loads and
    /// initialises OpenSSL — about 5 MiB resident at start for nothing (#58).
    public init(configuration: URLSessionConfiguration = .default) {
        // No URLCache. A request engine that retries and measures must reach the network
        // every time; and on Linux a cancel that lands while FoundationNetworking reads the
        // cache (before the task's URLProtocol exists) reports its failure after the task
        // left the session's registry, and `URLSession.behaviour(for:)` traps the process
        // ("Trying to access a behaviour for a task that in not in the registry"): seen
        // once in about ten full test runs, in a test that cancels a request just sent.
        let configuration = configuration.copy() as! URLSessionConfiguration
        configuration.httpMaximumConnectionsPerHost = max(configuration.httpMaximumConnectionsPerHost, Self.connectionsPerHost)
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        // Cookies are the queue's (CookieJar, in memory), never FoundationNetworking's
        // process-wide storage, which persists them to disk and mixes every queue's.
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.httpCookieAcceptPolicy = .never
        // Each request carries its operation's timeout (RequestOperation.transportTimeout); the
        // session's own (60 s by default) must not cut an attempt the operation allows.
        configuration.timeoutIntervalForRequest = RequestOperation.unlimitedTransportTimeout
        self.router = SessionDelegateRouter()
        self.made = Mutex(.pending(configuration))
    }

    /// The two sessions, made the first time they are asked for.
    private func sessions() -> (main: URLSession, fresh: URLSession) {
        made.withLock { state in
            switch state {
            case .made(let main, let fresh):
                return (main, fresh)
            case .pending(let configuration):
                let delegateQueue = OperationQueue()
                delegateQueue.name = "reqtop.session-delegate"
                // Serial: one operation's callbacks must not overtake each other.
                delegateQueue.maxConcurrentOperationCount = 1
                let main = URLSession(configuration: configuration, delegate: router, delegateQueue: delegateQueue)
                let freshConfiguration = configuration.copy() as! URLSessionConfiguration
                freshConfiguration.httpAdditionalHeaders = (freshConfiguration.httpAdditionalHeaders ?? [:]).merging(["Connection": "close"]) { _, new in new }
                let fresh = URLSession(configuration: freshConfiguration, delegate: router, delegateQueue: delegateQueue)
                fresh.sessionDescription = SessionDelegateRouter.freshDescription
                state = .made(main: main, fresh: fresh)
                return (main, fresh)
            }
        }
    }

    /// A request with no body and a method that is not idempotent (POST, PATCH, any other
    /// not defined as idempotent) and no `Idempotency-Key`. When a kept-alive connection dies
    /// as such a request arrives, libcurl sends it again on a fresh connection and no
    /// callback tells (for a request with a body it asks for the body again, and we stop it
    /// there): the server may act twice. So these go on connections that are never reused.
    /// GET, HEAD, PUT, DELETE, OPTIONS and TRACE may be re-sent so (RFC 9110 §9.2.2).
    static func needsFreshConnection(_ request: RequestMessage) -> Bool {
        guard !ExponentialBackoffRetryPolicy.defaultRetryableMethods.contains(request.method.uppercased()) else { return false }
        guard request.body.knownLength == 0 else { return false }
        return request.value(forField: "Idempotency-Key") == nil
    }

    /// Tasks currently registered with the router. Zero when nothing is in flight.
    public var routedTaskCount: Int {
        router.count
    }

    // MARK: - RequestTransport

    public var name: String { "urlsession" }

    /// FoundationNetworking cuts a request at its `timeoutInterval` (60 s unless set).

    public var usesRequestTimeoutInterval: Bool { true }
    #if canImport(FoundationNetworking)
    /// FoundationNetworking follows a 307 with the method kept and the body left out (seen:
    /// the target received 0 bytes, whatever the delegate returned).
    public var resendsBodyOnRedirect: Bool { false }
    /// FoundationNetworking sends every stream chunked and adds `Transfer-Encoding: chunked`
    /// beside a `Content-Length` the request has (seen on the wire: both headers, and 400).
    public var sendsLengthWithStreams: Bool { false }
    #endif

    /// URLSession takes a `URLRequest`: the message's fields one value per name, its stream
    /// (taken: read once) as `httpBodyStream`.
    public func makeTask(for request: RequestMessage, handler: TransportCallbacks) -> TransportTask {
        let fresh = Self.needsFreshConnection(request)
        let sessions = sessions()
        let task = (fresh ? sessions.fresh : sessions.main).dataTask(with: request.urlRequest)
        // Each session numbers its tasks from 1: the fresh one's are negated in the table.
        let identifier = fresh ? -task.taskIdentifier : task.taskIdentifier
        router.register(handler, for: identifier)
        return TransportTask(identifier: identifier, handle: task)
    }

    public func resume(_ task: TransportTask) {
        (task.handle as? URLSessionDataTask)?.resume()
    }

    public func discard(_ task: TransportTask) {
        _ = router.remove(task.identifier)
    }

    /// Cancels a task safely.
    ///
    /// On Linux, `cancel()` that lands while a redirect's completion handler is pending
    /// crashes the process (swift-corelibs-foundation `HTTPURLProtocol`: "Received callback
    /// for HTTP redirection, but we're not waiting for it"). So the cancel runs on the
    /// session's serial delegate queue, and the router never answers a redirect callback
    /// for a task it was asked to cancel: a redirect answered before runs its completion on
    /// the task's work queue ahead of the cancel, and one not answered never runs it.
    public func cancel(_ task: TransportTask) {
        guard let dataTask = task.handle as? URLSessionDataTask else { return }
        router.markCancelled(task.identifier)
        session.delegateQueue.addOperation { dataTask.cancel() }
    }
}

/// The session delegate. Its only state is the routing table, behind a lock; it is
/// `@unchecked Sendable` because `NSObject` (which a URLSession delegate must be) is not
/// `Sendable` on Linux.
final class SessionDelegateRouter: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    private struct Route {
        var handler: TransportCallbacks
        var cancelled = false
        /// libcurl began to send the request again on a fresh connection and we stopped it:
        /// see `urlSession(_:task:needNewBodyStream:)`.
        var resendStopped = false
    }

    private let routes = Mutex<[Int: Route]>([:])

    var count: Int {
        routes.withLock { $0.count }
    }

    func register(_ handler: TransportCallbacks, for identifier: Int) {
        routes.withLock { $0[identifier] = Route(handler: handler) }
    }

    func remove(_ identifier: Int) -> TransportCallbacks? {
        routes.withLock { $0.removeValue(forKey: identifier)?.handler }
    }

    func markCancelled(_ identifier: Int) {
        routes.withLock { $0[identifier]?.cancelled = true }
    }

    /// The fresh-connection session's description; its tasks are keyed by negated identifiers.
    static let freshDescription = "reqtop.fresh-connections"

    private func key(_ session: URLSession, _ task: URLSessionTask) -> Int {
        session.sessionDescription == Self.freshDescription ? -task.taskIdentifier : task.taskIdentifier
    }

    private func handler(for task: URLSessionTask, in session: URLSession) -> TransportCallbacks? {
        routes.withLock { $0[key(session, task)]?.handler }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void) {
        let id = key(session, task)
        let route = routes.withLock { $0[id] }
        // A cancelled task must not get an answer: see `SharedSession.cancel(_:)`.
        if route?.cancelled == true { return }
        guard let handler = route?.handler else { return completionHandler(request) }
        // nil is the engine's "do not follow": the 3xx becomes the answer (a refused redirect's
        // task is cancelled too). Following `request` then would send what was refused.
        completionHandler(handler.task(id, willRedirect: response, to: RequestMessage(request))?.urlRequest)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void) {
        completionHandler(handler(for: dataTask, in: session)?.task(key(session, dataTask), didReceive: response) ?? .allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        handler(for: dataTask, in: session)?.task(key(session, dataTask), didReceive: data)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
                    completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void) {
        let (disposition, credential) = handler(for: task, in: session)?.task(key(session, task), didReceive: challenge) ?? (.performDefaultHandling, nil)
        completionHandler(disposition, credential)
    }

    /// libcurl asks for the body again only to send the request again: when a kept-alive
    /// connection closes before any answer, it re-sends on a fresh connection without a
    /// word, and (with a body given as `Data`, as ours always is) it would send the headers
    /// with no body and wait for an answer until the timeout. So the re-send is stopped
    /// here: the task is cancelled and completes as a lost connection, an attempt of its
    /// own that the retry policy judges like any other (a POST is not retried unless it is
    /// safe to). Runs on the session's work queue, which waits for the answer.
    func urlSession(_ session: URLSession, task: URLSessionTask, needNewBodyStream completionHandler: @escaping @Sendable (InputStream?) -> Void) {
        let id = key(session, task)
        routes.withLock { $0[id]?.resendStopped = true }
        // `cancel()` waits on the work queue we are on, so it runs from the delegate queue.
        let dataTask = UncheckedTask(task)
        session.delegateQueue.addOperation { dataTask.task.cancel() }
        completionHandler(nil)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64,
                    totalBytesExpectedToSend: Int64) {
        handler(for: task, in: session)?.task(task.taskIdentifier, didSendBodyBytes: Int(totalBytesSent))
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        let id = key(session, task)
        guard let route = routes.withLock({ $0.removeValue(forKey: id) }) else { return }
        let reported: Error? = route.resendStopped && !route.cancelled ? Self.connectionLostBeforeAnswer : error
        route.handler.task(id, didCompleteWithError: reported)
    }

    /// A task carried to the delegate queue: `URLSessionTask` is thread-safe but not marked
    /// `Sendable` on Linux.
    private struct UncheckedTask: @unchecked Sendable {
        let task: URLSessionTask
        init(_ task: URLSessionTask) { self.task = task }
    }

    /// What a stopped re-send reports: the connection was lost before an answer came.
    static let connectionLostBeforeAnswer = URLError(.networkConnectionLost, userInfo: [
        NSLocalizedDescriptionKey: "the server closed a reused connection before answering; the request was not sent again"
    ])
}
