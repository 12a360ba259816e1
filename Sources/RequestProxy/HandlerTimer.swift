import NIOCore

/// A handler's own timer: see ``NIOCore/ChannelHandlerContext/schedule(at:_:)``.
struct HandlerTimer {
    fileprivate let callback: NIOScheduledCallback

    /// It will not fire (nothing happens if it already has).
    func cancel() { callback.cancel() }
}

/// What the loop holds until the timer fires or is cancelled: the handler's context and what
/// to do with it.
private struct HandlerTimerCallback: NIOScheduledCallbackHandler {
    let context: ChannelHandlerContext
    let fired: (ChannelHandlerContext) -> Void

    func handleScheduledCallback(eventLoop: some EventLoop) { fired(context) }
}

extension ChannelHandlerContext {
    /// Calls `fired` with this context at `deadline`, on the channel's loop: a handler's own
    /// timer, set and cancelled on the loop. Through NIO's scheduled callbacks, which the loop
    /// keeps as they are: `scheduleTask` made a promise, a future and a closure for each timer,
    /// and every connection the proxy accepts sets two (the head's deadline, the idle watch; #58).
    /// nil when the loop is shutting down (the process is ending: nothing to time).
    func schedule(at deadline: NIODeadline, _ fired: @escaping (ChannelHandlerContext) -> Void) -> HandlerTimer? {
        let handler = HandlerTimerCallback(context: self, fired: fired)
        return (try? eventLoop.assumeIsolated().scheduleCallback(at: deadline, handler: handler)).map(HandlerTimer.init)
    }
}
