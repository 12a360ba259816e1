import NIOCore

extension ChannelHandlerContext {
    /// Calls `fired` with this context at `deadline`, on the channel's loop: a handler's own
    /// timer. The handler and its context belong to the loop; the task carries `fired` (and
    /// what it holds) loop-bound, as `scheduleTask` wants what it carries to be `Sendable`.
    func schedule(at deadline: NIODeadline, _ fired: @escaping (ChannelHandlerContext) -> Void) -> Scheduled<Void> {
        let bound = NIOLoopBound((self, fired), eventLoop: eventLoop)
        return eventLoop.scheduleTask(deadline: deadline) {
            let (context, fired) = bound.value
            fired(context)
        }
    }
}
