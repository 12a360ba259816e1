import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import RequestOperations
import Synchronization

/// Plays a ``DemoScenario`` on a ``RequestQueue`` against fault servers it starts.
package final class DemoRunner: Sendable {
    private let queue: RequestQueue
    private let servers: Mutex<[DemoScenario.DemoHost: FaultServer]>
    /// Every host's port, kept while its server is stopped (``DemoScenario/Action/takeDown(_:)``).
    private let ports: [DemoScenario.DemoHost: Int]
    private let operations = Mutex<[String: RequestOperation]>([:])
    private let batches = Mutex<[String: RequestBatch]>([:])
    /// One authenticator for the whole demo: it logs in on the first authenticated request.
    private let auth: BearerTokenAuthenticator

    /// Starts the demo's servers, one per host; the scenario takes hosts down (their ports
    /// then refuse connections) and brings them back on the same port.
    package init(queue: RequestQueue) throws {
        self.queue = queue
        var servers: [DemoScenario.DemoHost: FaultServer] = [:]
        for host in DemoScenario.DemoHost.allCases {
            servers[host] = try FaultServer.start()
        }
        ports = servers.mapValues(\.port)
        // The token route answers after 1.5 s, so the refresh can be watched. Each wave logs
        // in or refreshes twice on purpose (the burst of 401s, then the expiry), so the loop
        // guard counts over 15 s, less than a wave: with the default (3 a minute) the third
        // wave's refresh was refused and seven of its requests failed.
        auth = BearerTokenAuthenticator(refresher: TokenEndpoint(
            url: servers[.api]!.url("/auth/token?delay=1500"), credentials: ["username": "demo", "password": "secret"],
            queue: queue), options: RequestReactor.Options(maxRuns: 3, window: 15))
        self.servers = Mutex(servers)
    }

    deinit {
        stopServers()
    }

    package func stopServers() {
        let running = servers.withLock { servers in
            defer { servers = [:] }
            return Array(servers.values)
        }
        running.forEach { $0.stop() }
    }

    package func url(_ host: DemoScenario.DemoHost, _ path: String) -> URL {
        let port = ports[host]!
        return URL(string: "http://127.0.0.1:\(port)\(path)")!
    }

    /// Runs the scenario's timeline on this thread; returns when its last step is done
    /// (operations may still be running). `shouldStop` is checked between steps.
    package func play(_ scenario: DemoScenario, onSend: (RequestOperation) -> Void, shouldStop: () -> Bool) {
        // Ids, dependencies, cancels and batches belong to one wave: what earlier waves sent
        // is let go (kept, every wave's operations held their bodies — the demo's 1 MB
        // download each — and the monitor grew ~2 MB a wave).
        operations.withLock { $0 = [:] }
        batches.withLock { $0 = [:] }
        let start = Date()
        for step in scenario.steps.sorted(by: { $0.at < $1.at }) {
            while !shouldStop() {
                let wait = step.at - Date().timeIntervalSince(start)
                if wait <= 0 { break }
                Thread.sleep(forTimeInterval: min(wait, 0.1))
            }
            if shouldStop() { return }
            perform(step.action, onSend: onSend)
        }
    }

    /// Operations of the wave being played, by id (for its dependencies and cancels).
    package var rememberedOperations: Int { operations.withLock { $0.count } }

    /// The wave's batch `name` (ids start with the wave: `w2-upload-1` → `w2-uploads`).
    private func batch(_ name: String, wave id: String) -> RequestBatch {
        let key = "\(id.prefix { $0 != "-" })-\(name)"
        return batches.withLock { batches in
            if let batch = batches[key] { return batch }
            let settings = DemoScenario.batches[name] ?? (size: 2, timeLimit: 5)
            let batch = RequestBatch(name: key, size: settings.size, timeLimit: settings.timeLimit)
            batches[key] = batch
            return batch
        }
    }

    private func perform(_ action: DemoScenario.Action, onSend: (RequestOperation) -> Void) {
        switch action {
        case .send(let demo):
            var request = URLRequest(url: url(demo.host, demo.path))
            request.httpMethod = demo.method
            for (name, value) in demo.headers { request.setValue(value, forHTTPHeaderField: name) }
            if demo.method == "POST" {
                request.httpBody = Data((demo.body ?? #"{"demo":true}"#).utf8)
                request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            }
            var options = RequestOptions(retryPolicy: demo.retry, attemptTimeout: demo.attemptTimeout, deadline: 60, hedge: demo.hedge)
            if let name = demo.batch { options.interceptors.append(BatchingInterceptor(batch: batch(name, wave: demo.id))) }
            if demo.auth { auth.install(on: &options) }
            let parents = operations.withLock { known in demo.dependsOn.compactMap { known[$0] } }
            let operation = RequestOperation(request: request, id: demo.id, options: options, environment: queue.environment,
                                             after: parents, build: demo.build)
            operations.withLock { $0[demo.id] = operation }
            onSend(operation)
            queue.add(operation)
        case .cancel(let id):
            operations.withLock { $0[id] }?.cancel(by: "demo")
        case .takeDown(let host):
            let server = servers.withLock { $0.removeValue(forKey: host) }
            server?.stop()
        case .expireToken:
            servers.withLock { $0[.api] }?.counters.expireToken()
        case .bringBack(let host):
            if servers.withLock({ $0[host] }) == nil, let server = try? FaultServer.start(port: ports[host]!) {
                servers.withLock { $0[host] = server }
            }
        }
    }
}
