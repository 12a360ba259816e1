import FaultServer
import Foundation
import Synchronization

/// One fault server per recorded upstream, each answering as that host did, so the queue's
/// per-host machinery (breakers, budgets, early retry) sees the hosts the recording saw.
/// A host that refused connections in the recording refuses them again over the same spans:
/// its server stops listening when the span begins and listens again on the same port when
/// it ends ("an outage in the recording is an outage again").
package final class RecordedUpstreamServers: Sendable {
    /// The port of each recorded host's server.
    package let ports: [String: Int]
    private let servers: Mutex<[String: FaultServer]>
    /// Set by ``stop()``: a span that begins or ends later changes nothing.
    private let stopped = Mutex(false)

    package init(_ hosts: [String: RecordedUpstream.Host]) throws {
        var servers: [String: FaultServer] = [:]
        for (host, upstream) in hosts {
            servers[host] = try FaultServer.start(script: upstream.answers)
        }
        self.ports = servers.mapValues(\.port)
        self.servers = Mutex(servers)
    }

    /// Schedules each host's refusals from now, the run's 0.
    package func start(_ hosts: [String: RecordedUpstream.Host]) {
        let begun = DispatchTime.now()
        for upstream in hosts.values { upstream.answers.begin(at: Date()) }
        for (host, upstream) in hosts {
            for span in upstream.refused {
                // A little before the refused attempt: the listener must be gone when it comes.
                schedule(at: begun + max(0, span.from - 0.05)) { [self] in
                    servers.withLock { $0.removeValue(forKey: host) }?.stop()
                }
                guard let end = span.to, let port = ports[host] else { continue }
                schedule(at: begun + max(0, end - 0.05)) { [self] in
                    reopen(host, port: port, answers: upstream.answers)
                }
            }
        }
    }

    private func reopen(_ host: String, port: Int, answers: ScriptedAnswers) {
        guard let server = try? FaultServer.start(port: port, script: answers) else { return }
        let old = servers.withLock { servers in servers.updateValue(server, forKey: host) }
        old?.stop()
        // Stopped meanwhile: this one goes too.
        if stopped.withLock({ $0 }) { servers.withLock { $0.removeValue(forKey: host) }?.stop() }
    }

    private func schedule(at time: DispatchTime, _ work: @escaping @Sendable () -> Void) {
        DispatchQueue.global().asyncAfter(deadline: time) { [self] in
            if !stopped.withLock({ $0 }) { work() }
        }
    }

    package func stop() {
        stopped.withLock { $0 = true }
        servers.withLock { servers in
            defer { servers = [:] }
            return Array(servers.values)
        }.forEach { $0.stop() }
    }
}
