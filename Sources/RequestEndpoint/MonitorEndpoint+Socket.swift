#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import RequestOperations
import RequestEventFormat

/// The endpoint's I/O thread: a non-blocking line-socket server on `poll` (the listener, a
/// wake pipe, every connection). It accepts only peers of the same user, writes what each
/// connection's buffer holds as the socket takes it, and hands complete command lines to
/// MonitorEndpoint+Commands.swift.
extension MonitorEndpoint {
    // MARK: - The I/O thread

    func serve() {
        defer {
            let connections = state.withLock { state -> [(Int32, EndpointPeer)] in
                defer { state.connections = [:] }
                return state.connections.map { ($0.key, $0.value.peer) }
            }
            for (fd, peer) in connections {
                releaseFaults(of: fd, peer: peer)
                close(fd)
            }
            close(listener)
            unlink(path)
            SocketCleanup.remove(path)
            close(wakeRead)
            close(wakeWrite)
            done.signal()
        }
        var closingBy: Date?
        while true {
            // A remote monitor that takes nothing of what waits for it is behind a cut network
            // (a local one is only stopped: Ctrl-Z): dropped after the limit, its faults with it.
            // While one has bytes waiting, the loop looks each second.
            let limit = options.tls?.deadPeerTimeout ?? .infinity
            // Only an endpoint on TCP has remote peers: a Unix one skips the look.
            let (remoteWaiting, stalled): (Bool, [Int32: EndpointConnection]) = options.tls == nil ? (false, [:]) : state.withLock { state in
                let remote = state.connections.filter { $0.value.peer != .local && ($0.value.pending > 0 || $0.value.behind) }
                return (!remote.isEmpty, remote.filter { $0.value.isStalled(for: limit) })
            }
            for (fd, connection) in stalled {
                if case .remote(let subject, let address) = connection.peer {
                    options.notice("dropped remote monitor \(subject) (\(address)): it took nothing for \(limit.formatted()) s (a cut network?)")
                }
                drop(fd)
            }
            let (draining, watched) = state.withLock { state in
                // A connection that is behind is watched for room too: the missed notice and
                // the fresh snapshot go out as soon as it has caught up.
                (state.draining, state.connections.map { ($0.key, $0.value.pending > 0 || $0.value.behind) })
            }
            var timeout: Int32 = -1
            if remoteWaiting { timeout = 1000 }
            if draining {
                // The program ended: no new monitors; write out what each one has not read,
                // so it sees every event before the end of the stream.
                let by = closingBy ?? Date().addingTimeInterval(options.closingGrace)
                closingBy = by
                let left = by.timeIntervalSinceNow
                if !watched.contains(where: { $0.1 }) || left <= 0 { return }
                timeout = Int32(min(left * 1000, 1000)) + 1
            }
            var polls = [pollfd(fd: draining ? -1 : listener, events: Int16(POLLIN), revents: 0), pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
            for (fd, writing) in watched {
                polls.append(pollfd(fd: fd, events: Int16(POLLIN) | (writing ? Int16(POLLOUT) : 0), revents: 0))
            }
            guard poll(&polls, nfds_t(polls.count), timeout) >= 0 else {
                if errno == EINTR { continue }
                return
            }
            if polls[1].revents != 0 {
                var sink = [UInt8](repeating: 0, count: 256)
                while read(wakeRead, &sink, sink.count) > 0 {}
            }
            if polls[0].revents & Int16(POLLIN) != 0 { acceptAll() }
            for poll in polls.dropFirst(2) where poll.revents != 0 {
                if poll.revents & Int16(POLLIN | POLLHUP | POLLERR) != 0, !readCommands(poll.fd) {
                    drop(poll.fd)
                    continue
                }
                if !flush(poll.fd) { drop(poll.fd) }
            }
        }
    }

    func acceptAll() {
        while true {
            let fd = accept(listener, nil, nil)
            guard fd >= 0 else { return }
            UnixSocket.setNonBlocking(fd)
            guard UnixSocket.peerUserID(fd) == getuid() else {
                let refusal = Array((EndpointProtocol.error("refused: this endpoint accepts only its own user (uid \(getuid()))") + "\n").utf8)
                refusal.withUnsafeBytes { _ = UnixSocket.writeSome(fd, $0) }
                close(fd)
                continue
            }
            state.withLock { state in
                var connection = EndpointConnection()
                connection.append(greeting(state, peer: .local))
                state.connections[fd] = connection
            }
            _ = flush(fd)
        }
    }

    /// The hello line and a snapshot of the journal: what this peer may do is its own (a
    /// remote monitor only watches unless the program accepts its commands).
    func greeting(_ state: State, peer: EndpointPeer) -> [UInt8] {
        let readOnly = !accepts(commandsFrom: peer)
        let hello = EndpointProtocol.line([
            "event": "hello", "version": EndpointProtocol.version, "pid": Int(getpid()), "name": options.name,
            "startedAt": EventLog.iso8601(startedAt), "t": queue.events.elapsed(), "live": state.journal.liveCount,
            "readOnly": readOnly, "suspended": queue.isSuspended, "redacted": options.redactor != nil,
            "acceptsFaults": options.acceptsFaults && !readOnly, "faults": queue.faults.list.count,
        ])
        return Array((hello + "\n").utf8) + snapshot(state)
    }

    func snapshot(_ state: State) -> [UInt8] {
        let (operations, events) = state.journal.snapshot
        var bytes = Array((EndpointProtocol.line(["event": "snapshot", "operations": operations]) + "\n").utf8)
        for event in events {
            EventLog.append(event, to: &bytes)
            bytes.append(UInt8(ascii: "\n"))
        }
        bytes += Array((EndpointProtocol.line(["event": "snapshotEnd"]) + "\n").utf8)
        return bytes
    }

    /// Writes what the socket takes. False when the peer is gone.
    func flush(_ fd: Int32) -> Bool {
        state.withLock { state in
            let drained = state.update(fd) { connection -> Bool? in
                while connection.pending > 0 {
                    let written = connection.outbound.withUnsafeBytes { raw in
                        UnixSocket.writeSome(fd, UnsafeRawBufferPointer(rebasing: raw[connection.sent...]))
                    }
                    guard let written else { return nil }
                    if written == 0 { return false }
                    connection.lastProgress = Date()
                    connection.sent += written
                }
                connection.outbound.removeAll(keepingCapacity: true)
                connection.sent = 0
                return true
            }
            guard let drained else { return true }
            guard let drained else { return false }
            if drained, let missed = state.connections[fd].flatMap({ $0.behind ? $0.missed : nil }) {
                // Caught up: say what was lost and start again from a fresh snapshot.
                let resync = Array((EndpointProtocol.line(["event": "missed", "count": missed]) + "\n").utf8) + snapshot(state)
                state.update(fd) { connection in
                    connection.append(resync)
                    connection.behind = false
                    connection.missed = 0
                }
            }
            return true
        }
    }

    func drop(_ fd: Int32) {
        let peer = state.withLock { $0.connections.removeValue(forKey: fd)?.peer } ?? .local
        releaseFaults(of: fd, peer: peer)
        close(fd)
    }

    /// Reads and answers command lines. False when the peer closed, or sends commands and
    /// reads none of the replies (it is let go: see the check at the end).
    func readCommands(_ fd: Int32) -> Bool {
        /// What was read, in order: a whole line, or a line that was too long.
        enum Input {
            case line(String)
            case tooLong
        }
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        var inputs: [Input] = []
        // At most 64 KiB a turn (the poll comes back for the rest): a peer that writes as fast
        // as it is read must not make one turn's replies unbounded.
        for _ in 0..<4 {
            let count = read(fd, &buffer, buffer.count)
            if count == 0 { return false }
            if count < 0 {
                if errno == EAGAIN || errno == EWOULDBLOCK { break }
                if errno == EINTR { continue }
                return false
            }
            state.withLock { state in
                state.update(fd) { connection in
                    for byte in buffer[0..<count] {
                        if byte == UInt8(ascii: "\n") {
                            if !connection.discarding, !connection.inbound.isEmpty {
                                inputs.append(.line(String(decoding: connection.inbound, as: UTF8.self)))
                            }
                            connection.inbound.removeAll(keepingCapacity: true)
                            connection.discarding = false
                        } else if !connection.discarding {
                            connection.inbound.append(byte)
                            if connection.inbound.count > EndpointProtocol.maxCommandLine {
                                connection.inbound = []
                                connection.discarding = true
                                inputs.append(.tooLong)
                            }
                        }
                    }
                }
            }
        }
        // Answered in the order they came, outside the lock (commands take the queue's locks).
        let replies = inputs.map { input in
            switch input {
            case .line(let line): answer(line, from: fd)
            case .tooLong: EndpointProtocol.error("line too long: a command is at most \(EndpointProtocol.maxCommandLine) bytes")
            }
        }
        guard !replies.isEmpty else { return true }
        let bytes = Array((replies.joined(separator: "\n") + "\n").utf8)
        let (kept, firstDrop) = state.withLock { state -> (Bool, Bool) in
            guard let pending = state.connections[fd]?.pending else { return (true, false) }
            // Replies are never dropped the way events are (a command must get its answer),
            // so a peer that sends commands and reads nothing is let go instead of held in memory.
            guard pending == 0 || pending + bytes.count <= options.bufferLimit else {
                defer { state.droppedForNotReading = true }
                return (false, !state.droppedForNotReading)
            }
            state.connections[fd]?.append(bytes)
            return (true, false)
        }
        if firstDrop {
            options.notice("disconnected a monitor that sent commands and read none of \(options.bufferLimit) bytes of replies (said once)")
        }
        return kept
    }
}
