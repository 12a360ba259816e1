import Foundation
import NIOCore
import Synchronization

/// Which local program opened a client connection, as `ss -p` finds it: the kernel's socket
/// diagnostics (netlink `SOCK_DIAG_BY_FAMILY`, one exact query by the connection's addresses)
/// give the client socket's inode and owner; the process holding that inode is found among
/// `/proc/*/fd` (the programs found lately first). Linux only; nil elsewhere, for a client on
/// another machine, or a process this user may not look into (then its owner's uid is named).
enum ClientProgram {
    /// A program found lately, and the descriptors its client sockets were at: most clients
    /// open many connections, and Linux gives a new socket the lowest free descriptor, so the
    /// next one is most often where one of the last few was.
    private struct Recent {
        var pid: Int32
        var descriptors: [Int32]
        /// Those held by a connection still open here: not where a new socket is.
        var open: Set<Int32> = []
    }

    /// The programs found lately, the latest first.
    private static let recent = Mutex<[Recent]>([])
    /// Client sockets read on the way to another (inode → where, when): lookups run at once
    /// for connections opened at once, each reading the descriptors its client freed, so one
    /// lookup's read is often another's answer. Taken once; kept 2 s, at most 256 (a scan of
    /// every process reads all their sockets).
    private static let seen = ShortMemory<UInt32, Place>(lifetime: .seconds(2), capacity: 256)

    /// Descriptors looked at (`readlink`s) and lookups made, since the process started: what
    /// the lookup costs, for the tests (ClientProgramLookupTests).
    static let descriptorsRead = Atomic<Int>(0)
    static let lookups = Atomic<Int>(0)
    /// Of those, found by ``findQuickly(_:)`` on the connection's event loop.
    static let quickLookups = Atomic<Int>(0)
    /// Program names read from `/proc` (``label(_:)``).
    static let namesRead = Atomic<Int>(0)

    /// A client's socket as the kernel knows it: its inode and its owner.
    struct Socket: Sendable {
        let inode: UInt32
        let uid: uid_t
    }

    /// The socket at the other end of `channel` (one `sock_diag` query, no `/proc`); nil when
    /// it cannot be told (not Linux, not this machine's, the query refused).
    static func clientSocket(of channel: Channel) -> Socket? {
        #if os(Linux)
        guard let client = endpoint(channel.remoteAddress), let server = endpoint(channel.localAddress),
              client.address.count == server.address.count,
              let (inode, uid) = socketInode(client: client, server: server) else { return nil }
        return Socket(inode: inode, uid: uid_t(uid))
        #else
        return nil
        #endif
    }

    /// Whether this machine says who owns a socket: asked of the listening socket at
    /// `address` (its own, so the answer is known). False where `sock_diag` is missing or
    /// refused (a container without it), and off Linux: then a client's owner cannot be told.
    static func tellsOwners(listeningAt address: SocketAddress?) -> Bool {
        #if os(Linux)
        guard let listener = endpoint(address) else { return false }
        // A listener's far side is nothing: the kernel finds it by its own address and port.
        let nowhere = (address: [UInt8](repeating: 0, count: listener.address.count), port: 0)
        return socketInode(client: listener, server: nowhere)?.1 == UInt32(getuid())
        #else
        return false
        #endif
    }

    /// Where a client's socket was found: the program and the descriptor it had there.
    struct Place: Sendable {
        let pid: Int32
        let descriptor: Int32
    }

    /// `curl 4242`: the program holding `socket` (under `/proc`), or its owner's uid when this
    /// user may not look into it; and where it was found, for ``closed(_:)``.
    static func find(_ socket: Socket) -> (name: String?, place: Place?) {
        #if os(Linux)
        if let place = owner(of: socket.inode) { return (label(place), place) }
        return (socket.uid == getuid() ? nil : "uid \(socket.uid)", nil)
        #else
        return (nil, nil)
        #endif
    }

    /// The same where it is quick: the socket read lately on the way to another, or at one
    /// of the few descriptors where the programs found lately had their last sockets — a few
    /// `readlink`s of `/proc` (memory, not a disk or the network), so the connection's event
    /// loop asks it itself. Nil: not there; ``find(_:)`` (off the loop) looks everywhere.
    static func findQuickly(_ socket: Socket) -> (name: String, place: Place)? {
        #if os(Linux)
        // Counted only when found: a miss is counted by the lookup that follows.
        guard let place = recentOwner(of: socket.inode, budget: quickBudget) else { return nil }
        lookups.add(1, ordering: .relaxed)
        quickLookups.add(1, ordering: .relaxed)
        return (label(place), place)
        #else
        return nil
        #endif
    }

    /// The descriptors a quick lookup reads at most.
    static let quickBudget = 8

    /// The connection from `place` closed: its descriptor is tried first for the program's
    /// next connection. A client that opens a connection a request (`ab`, scripts) gets the
    /// descriptor it just freed (the lowest free one) for its next socket; tried in the order
    /// they were found, the freed one was the last of eight under `ab -c 8` (3.9 `readlink`s a
    /// request, 2 % of the proxy's CPU, #58).
    static func closed(_ place: Place) {
        recent.withLock { list in
            guard let index = list.firstIndex(where: { $0.pid == place.pid }) else { return }
            list[index].descriptors.removeAll { $0 == place.descriptor }
            list[index].descriptors.insert(place.descriptor, at: 0)
            list[index].open.remove(place.descriptor)
        }
    }

    /// An address's bytes and port, read from the socket address as it is (parsing its text
    /// form back was a sixtieth of the proxy's CPU under a connection a request).
    private static func endpoint(_ address: SocketAddress?) -> (address: [UInt8], port: Int)? {
        switch address {
        case .v4(let v4)?:
            var raw = v4.address.sin_addr
            return (withUnsafeBytes(of: &raw) { Array($0) }, Int(UInt16(bigEndian: v4.address.sin_port)))
        case .v6(let v6)?:
            var raw = v6.address.sin6_addr
            return (withUnsafeBytes(of: &raw) { Array($0) }, Int(UInt16(bigEndian: v6.address.sin6_port)))
        default:
            return nil
        }
    }

    #if os(Linux)
    /// The client socket's inode and owner's uid, from one exact `sock_diag` query.
    private static func socketInode(client: (address: [UInt8], port: Int), server: (address: [UInt8], port: Int)) -> (UInt32, UInt32)? {
        guard let fd = DiagnosticSockets.take() else { return nil }
        var clean = false
        defer { clean ? DiagnosticSockets.giveBack(fd) : DiagnosticSockets.discard(fd) }
        let sequence = DiagnosticSockets.nextSequence()
        // The 72-byte request written in place (appended piece by piece it was a dozen small
        // arrays, and an 8 KiB answer buffer was zeroed for an answer of ~100 bytes: a
        // quarter of the lookup's instructions, once a connection, #58).
        var message = [UInt8](repeating: 0, count: 72)
        var at = 0
        func u8(_ value: UInt8) { message[at] = value; at += 1 }
        func u16(_ value: UInt16) { u8(UInt8(value & 0xff)); u8(UInt8(value >> 8)) }
        func u32(_ value: UInt32) { u16(UInt16(value & 0xffff)); u16(UInt16(value >> 16)) }
        func port(_ value: Int) { u8(UInt8(value >> 8 & 0xff)); u8(UInt8(value & 0xff)) }  // network order
        func address(_ bytes: [UInt8]) { for index in 0..<16 { u8(index < bytes.count ? bytes[index] : 0) } }
        // nlmsghdr: length, SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST, sequence, port id.
        u32(72); u16(20); u16(1); u32(sequence); u32(0)
        // inet_diag_req_v2: family, TCP, no extensions, pad, every state.
        u8(UInt8(client.address.count == 4 ? AF_INET : AF_INET6)); u8(UInt8(IPPROTO_TCP)); u8(0); u8(0)
        u32(0xffff_ffff)
        // inet_diag_sockid: the client's side is the socket's source.
        port(client.port); port(server.port); address(client.address); address(server.address)
        u32(0); u32(0xffff_ffff); u32(0xffff_ffff)  // any interface; no cookie
        assert(at == message.count)
        // No address: a netlink socket sends to the kernel by default.
        let sent = send(fd, message, message.count, 0)
        guard sent == message.count else { return nil }
        // One inet_diag_msg (72 bytes after the header) and its attributes; a longer answer
        // is cut, which loses nothing read below.
        var answer = [UInt8](repeating: 0, count: 512)
        // The kernel answers a sock_diag query inside `send` (the netlink input runs in the
        // sender's call), so the answer is there already and this runs on the event loop
        // without waiting. Should it ever not be, wait at most 200 ms for it.
        var count = recv(fd, &answer, answer.count, Int32(MSG_DONTWAIT))
        var waited = false
        if count < 0, errno == EAGAIN || errno == EWOULDBLOCK {
            var timeout = timeval(tv_sec: 0, tv_usec: 200_000)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            count = recv(fd, &answer, answer.count, 0)
            waited = true
        }
        func read32(_ offset: Int) -> UInt32 {
            UInt32(answer[offset]) | UInt32(answer[offset + 1]) << 8 | UInt32(answer[offset + 2]) << 16 | UInt32(answer[offset + 3]) << 24
        }
        // The answer to this query (an exact query has one), read at once: the socket is
        // clean for the next. One that made us wait is not kept (it has a receive timeout).
        guard count >= 16, read32(8) == sequence else { return nil }
        clean = !waited
        // nlmsghdr (16), then inet_diag_msg: family, state, timer, retrans (4), the sockid
        // (48), expires, rqueue, wqueue (12), uid at 80, inode at 84. NLMSG_ERROR (2): none.
        guard count >= 88, answer[4] == 20 else { return nil }
        let inode = read32(84)
        return inode == 0 ? nil : (inode, read32(80))
    }

    /// The process that holds socket `inode`: where the programs found lately had their
    /// sockets, then the rest of their descriptors, then every process, the newest first. Read with `readdir`
    /// and `readlink` alone: through FileManager the lookup was a twentieth of the proxy's
    /// CPU under a client that opens a connection a request.
    private static func owner(of inode: UInt32) -> Place? {
        lookups.add(1, ordering: .relaxed)
        if let place = recentOwner(of: inode, budget: .max) { return place }
        let link = socketLink(inode)
        let lately = recent.withLock { $0 }
        var ended: [Int32] = []
        defer { forget(ended) }
        for program in lately {
            switch descriptor(of: program.pid, linkingTo: link, skipping: program.descriptors) {
            case .at(let descriptor): return remember(program.pid, descriptor)
            case .ended: ended.append(program.pid)
            case .notThere: break
            }
        }
        let own = getpid()
        for pid in processesNewestFirst() where pid != own && !lately.contains(where: { $0.pid == pid }) {
            if case .at(let descriptor) = descriptor(of: pid, linkingTo: link) { return remember(pid, descriptor) }
        }
        return nil
    }

    /// Takes programs whose processes have ended off the list of those found lately: a `curl`
    /// a request left sixteen ended ones there, whose descriptors every lookup tried again
    /// (~40 failed `readlink`s and `open`s a connection, #58).
    private static func forget(_ ended: [Int32]) {
        guard !ended.isEmpty else { return }
        recent.withLock { list in list.removeAll { ended.contains($0.pid) } }
    }

    /// Every process under `/proc`, the newest first. A program's first connection most often
    /// comes in its first moments (a `curl` a request in a loop, a script started for one call),
    /// and process ids grow as processes start, so the one looked for is among the first read.
    /// In the order `/proc` lists them, the oldest first, it came last, after every descriptor
    /// of every other process: ~1.5 ms of the proxy's CPU a request for a new `curl` each, on
    /// a machine of 70 processes (#58). Once the ids wrap round, a new one is low again, and
    /// found as late as before.
    private static func processesNewestFirst() -> [Int32] {
        var pids: [Int32] = []
        forEachNumber(in: "/proc") { pid in
            pids.append(pid)
            return true
        }
        pids.sort(by: >)
        return pids
    }

    /// The holder of socket `inode` if it is where one was lately: read on the way to another
    /// socket, or at a descriptor a program found lately had one at, reading at most
    /// `budget` of them.
    private static func recentOwner(of inode: UInt32, budget: Int) -> Place? {
        if let found = seen.value(for: inode, taking: true) {
            return remember(found.pid, found.descriptor)
        }
        let link = socketLink(inode)
        var left = budget
        // Those no connection here holds first (the latest freed first), then the held ones
        // lowest first: a close the client made may not have reached us yet, and the kernel
        // gives the lowest free descriptor.
        for program in recent.withLock({ $0 }) {
            let order = program.descriptors.filter { !program.open.contains($0) } + program.open.sorted()
            for descriptor in order {
                guard left > 0 else { return nil }
                left -= 1
                if links(program.pid, descriptor, to: link) { return remember(program.pid, descriptor) }
            }
        }
        return nil
    }

    /// `curl 4242`: read from `/proc` at most once a second for a program (a client that opens
    /// a connection a request had its name read at every one: an open, a read and a close of
    /// the ~30 system calls of such a request, #58). A name a program takes later (an `exec`)
    /// shows within the second; a process id is given again only after the kernel has gone
    /// round all of them (32,768 at least), not within a second.
    private static func label(_ place: Place) -> String {
        if let known = labels.value(for: place.pid) { return known }
        let label = "\(name(of: place.pid)) \(place.pid)"
        labels.put(label, for: place.pid)
        return label
    }

    /// Labels read lately, by process id, and when (``label(_:)``).
    private static let labels = ShortMemory<Int32, String>(lifetime: .seconds(1), capacity: 64)

    /// Puts `pid` first among the recent programs, `descriptor` first among its places.
    private static func remember(_ pid: Int32, _ descriptor: Int32) -> Place {
        recent.withLock { list in
            var program = list.first { $0.pid == pid } ?? Recent(pid: pid, descriptors: [])
            list.removeAll { $0.pid == pid }
            program.descriptors.removeAll { $0 == descriptor }
            program.descriptors.insert(descriptor, at: 0)
            program.open.insert(descriptor)
            if program.descriptors.count > 16 { program.open.remove(program.descriptors.removeLast()) }
            list.insert(program, at: 0)
            if list.count > 16 { list.removeLast() }
        }
        return Place(pid: pid, descriptor: descriptor)
    }

    /// Where a process's descriptors were looked through for a socket.
    private enum Search {
        case at(Int32)
        case notThere
        /// The process has ended (its `/proc` folder is gone).
        case ended
    }

    /// The descriptor of `pid` that links to `link`, if any, not looking again at `skipping`.
    private static func descriptor(of pid: Int32, linkingTo link: [UInt8], skipping: [Int32] = []) -> Search {
        var found: Int32?
        let failure = forEachNumber(in: "/proc/\(pid)/fd") { descriptor in
            guard !skipping.contains(descriptor), links(pid, descriptor, to: link) else { return true }
            found = descriptor
            return false
        }
        if let found { return .at(found) }
        // ENOENT: no such process. EACCES (another user's) and the rest: it may be there.
        return failure == ENOENT ? .ended : .notThere
    }

    /// Whether `/proc/pid/fd/descriptor` is a link to `link`; another socket read there is
    /// kept in `seen`, for its own lookup.
    private static func links(_ pid: Int32, _ descriptor: Int32, to link: [UInt8]) -> Bool {
        descriptorsRead.add(1, ordering: .relaxed)
        let other: UInt32? = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 64) { buffer in
            let length = buffer.withMemoryRebound(to: CChar.self) { target in
                withDescriptorPath(pid, descriptor) { readlink($0, target.baseAddress!, target.count) }
            }
            guard length > 0 else { return nil }
            let read = UnsafeBufferPointer(rebasing: buffer[..<length])
            if read.elementsEqual(link) { return 0 }
            return socketInode(inLink: read)
        }
        guard let other else { return false }
        if other == 0 { return true }
        seen.put(Place(pid: pid, descriptor: descriptor), for: other)
        return false
    }

    /// The program's name as the kernel keeps it (`comm`, up to 15 bytes and a newline).
    private static func name(of pid: Int32) -> String {
        namesRead.add(1, ordering: .relaxed)
        let file = open("/proc/\(pid)/comm", O_RDONLY | O_CLOEXEC)
        guard file >= 0 else { return "?" }
        defer { close(file) }
        var bytes = [UInt8](repeating: 0, count: 64)
        let count = read(file, &bytes, bytes.count)
        guard count > 0 else { return "?" }
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }
        let start = bytes[..<count].firstIndex { !isSpace($0) } ?? count
        let end = (bytes[start..<count].lastIndex { !isSpace($0) }).map { $0 + 1 } ?? start
        return String(decoding: bytes[start..<end], as: UTF8.self)
    }
    #endif
}
