import Foundation

/// A self-pipe: other threads write a byte to wake the loop out of `poll()`.
final class WakePipe: Sendable {
    private let readEnd: Int32
    private let writeEnd: Int32

    init() throws {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw POSIXError(.EMFILE) }
        readEnd = fds[0]
        writeEnd = fds[1]
        for fd in fds { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
    }

    deinit {
        close(readEnd)
        close(writeEnd)
    }

    func signal() {
        var byte: UInt8 = 1
        _ = write(writeEnd, &byte, 1)
    }

    /// Sleeps until a wake, a key on stdin, a signal or the timeout; then empties the pipe.
    /// Waits for a wake-up or a key (`stdinToo`), or only for a key (`wakeToo` false: what
    /// came in meanwhile waits for the next frame), at most `timeoutMilliseconds`.
    func wait(stdinToo: Bool, wakeToo: Bool = true, timeoutMilliseconds: Int32) {
        var fds = [pollfd(fd: wakeToo ? readEnd : -1, events: Int16(POLLIN), revents: 0)]
        if stdinToo { fds.append(pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0)) }
        _ = poll(&fds, nfds_t(fds.count), timeoutMilliseconds)
        var buffer = [UInt8](repeating: 0, count: 256)
        while read(readEnd, &buffer, buffer.count) > 0 {}
    }
}
