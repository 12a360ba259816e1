import Foundation

/// One attached monitor as the endpoint's I/O thread sees it: what waits to be written
/// (bounded; a monitor that falls behind is marked and resynced), and the command line
/// being read.
struct EndpointConnection {
    /// Who is attached: a process of this user, or a remote monitor with its certificate.
    var peer = EndpointPeer.local
    var outbound: [UInt8] = []
    var sent = 0
    var inbound: [UInt8] = []
    /// Skipping the rest of a line that was too long.
    var discarding = false
    /// Events are being dropped until the buffer drains and a snapshot is sent again.
    var behind = false
    var missed = 0
    /// When the socket last took bytes (or the connection began): a remote monitor with
    /// bytes waiting that has taken none for ``EndpointTLS/deadPeerTimeout`` is behind a cut
    /// network.
    var lastProgress = Date()

    /// Bytes wait for it, or events were dropped for it, and it has taken nothing for `limit`.
    func isStalled(for limit: TimeInterval) -> Bool {
        (pending > 0 || behind) && -lastProgress.timeIntervalSinceNow > limit
    }

    var pending: Int { outbound.count - sent }

    mutating func append(_ bytes: [UInt8]) {
        // Nothing was waiting: the wait for the peer to take something starts now.
        if pending == 0 { lastProgress = Date() }
        if sent > 0, sent * 2 > outbound.count {
            outbound.removeFirst(sent)
            sent = 0
        }
        outbound += bytes
    }
}

/// Who is at the other end of an endpoint connection.
enum EndpointPeer: Sendable, Equatable {
    /// A process of the same user, on the Unix socket.
    case local
    /// A monitor on TCP, known by its certificate's subject (`CN=alice`), from `address`.
    case remote(subject: String, address: String)
}
