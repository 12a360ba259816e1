import FaultServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import RequestEndpoint
import RequestOperations
import Synchronization
import XCTest

/// The endpoint on TCP, mutual TLS only, with certificates made in the test: a remote
/// monitor watches, sends commands only where the program said so (named by its
/// certificate's subject), and a monitor without the right certificate is refused by name
/// on both sides.
final class RemoteEndpointTests: EndpointTestCase {
    var certificates: [TestCertificates] = []

    override func tearDown() {
        certificates.forEach { $0.remove() }
        super.tearDown()
    }

    func makeCertificates(expiredClient: Bool = false, clientName: String = "alice") throws -> TestCertificates {
        let made = try TestCertificates.make(expiredClient: expiredClient, clientName: clientName)
        certificates.append(made)
        return made
    }

    /// An endpoint on 127.0.0.1 (a free port) whose monitors must come with `pki`'s authority.
    func startRemote(_ queue: RequestQueue, _ pki: TestCertificates, acceptsCommands: Bool = false, acceptsFaults: Bool = false,
                     handshakeTimeout: TimeInterval = 10, maxMonitors: Int = 8, deadPeerTimeout: TimeInterval = 30) throws -> MonitorEndpoint {
        var options = MonitorEndpoint.Options(acceptsFaults: acceptsFaults, directory: directory, name: "remote-test")
        let notices = self.notices
        options.notice = { text in notices.add(text) }
        var tls = EndpointTLS(host: "127.0.0.1", port: 0, certificateFile: pki.serverCertificateFile, keyFile: pki.serverKeyFile, clientCAFile: pki.caFile)
        tls.acceptsCommands = acceptsCommands
        tls.handshakeTimeout = handshakeTimeout
        tls.maxMonitors = maxMonitors
        tls.deadPeerTimeout = deadPeerTimeout
        options.tls = tls
        let endpoint = try queue.startMonitorEndpoint(options: options)
        addTeardownBlock { endpoint.stop() }
        return endpoint
    }

    func connect(_ endpoint: MonitorEndpoint, trusting pki: TestCertificates, as client: TestCertificates) throws -> EndpointClient {
        try EndpointClient.connect(host: "127.0.0.1", port: try XCTUnwrap(endpoint.tlsPort),
                                   identity: .init(caFile: pki.caFile, certificateFile: client.clientCertificateFile, keyFile: client.clientKeyFile))
    }

    func testARemoteMonitorOnlyWatchesUnlessTheProgramAcceptsItsCommands() throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let pki = try makeCertificates()
        let queue = RequestQueue(earlyRetry: nil)
        let endpoint = try startRemote(queue, pki)
        let client = try connect(endpoint, trusting: pki, as: pki)
        guard case .message(.hello(let hello)) = client.greeting() else { return XCTFail("no hello over TLS") }
        XCTAssertTrue(hello.readOnly, "a remote monitor only watches by default")
        XCTAssertFalse(hello.acceptsFaults)
        let monitor = ClientReader(client)
        let slow = queue.add(URLRequest(url: server.url("/delay/20000")), id: "slow")
        waitFor("the remote monitor to see it") { monitor.events.contains { $0.operationID == "slow" && $0.payload.name == "started" } }
        XCTAssertEqual(client.request(.cancel(operation: "slow")),
                       .notCarriedOut(reason: "this program takes no commands from a remote monitor (it was started without --accept-commands)"))
        XCTAssertNil(slow.result)
        XCTAssert(notices.all.contains { $0.contains("remote monitor CN=alice attached from 127.0.0.1:") && $0.hasSuffix("(it may only watch)") },
                  "\(notices.all)")
        queue.cancelAll()
    }

    /// The library's one call for it: `startMonitorEndpoint(.tls(...))`.
    func testTheTLSListeningCallOpensTheEndpointOnTCP() throws {
        let pki = try makeCertificates()
        let queue = RequestQueue(earlyRetry: nil)
        var options = MonitorEndpoint.Options(directory: directory, name: "one-call")
        options.notice = { _ in }
        let endpoint = try queue.startMonitorEndpoint(.tls(host: "127.0.0.1", port: 0, certificate: pki.serverCertificateFile,
                                                           key: pki.serverKeyFile, clientCA: pki.caFile), options: options)
        defer { endpoint.stop() }
        XCTAssertNotNil(endpoint.tlsPort)
        XCTAssertTrue(FileManager.default.fileExists(atPath: endpoint.path), "the Unix socket is there too")
        guard case .message(.hello(let hello)) = try connect(endpoint, trusting: pki, as: pki).greeting() else { return XCTFail("no hello") }
        XCTAssertEqual(hello.name, "one-call")
        XCTAssertTrue(hello.readOnly)
    }

    func testAcceptedCommandsAndFaultsNameTheCertificatesSubject() throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let pki = try makeCertificates()
        let queue = RequestQueue(earlyRetry: nil)
        let endpoint = try startRemote(queue, pki, acceptsCommands: true, acceptsFaults: true)
        let client = try connect(endpoint, trusting: pki, as: pki)
        guard case .message(.hello(let hello)) = client.greeting() else { return XCTFail("no hello over TLS") }
        XCTAssertFalse(hello.readOnly)
        XCTAssertTrue(hello.acceptsFaults)
        let monitor = ClientReader(client)
        let slow = queue.add(URLRequest(url: server.url("/delay/20000")), id: "slow")
        waitFor("it to start") { monitor.events.contains { $0.operationID == "slow" && $0.payload.name == "started" } }
        XCTAssertEqual(client.request(.cancel(operation: "slow")), .cancelled(operation: "slow"))
        waitFor("the cancel to reach the monitor, with who did it") {
            monitor.events.contains { if $0.operationID == "slow", case .cancelled(let by) = $0.payload { by == "monitor CN=alice" } else { false } }
        }
        XCTAssertEqual(slow.result?.outcome, .cancelled)
        // A fault it sets is its own, named by its subject, and goes when it does.
        guard case .faultSet = client.request(.toggleFault(host: "127.0.0.1:\(server.port)")) else { return XCTFail("no fault") }
        XCTAssertEqual(queue.faults.list.map(\.rule.setBy).first?.hasPrefix("remote monitor CN=alice #"), true)
        XCTAssert(notices.all.contains { $0.hasPrefix("remote monitor CN=alice (127.0.0.1:") && $0.hasSuffix("cancel slow → cancelled slow") }, "\(notices.all)")
        client.close()
        waitFor("its fault to go when it goes") { queue.faults.list.isEmpty }
        XCTAssert(notices.all.contains { $0.contains("detached") }, "\(notices.all)")
    }

    /// Why the program turned a monitor away, as the monitor learns it: the connection fails,
    /// or (TLS 1.3 refuses a client's certificate after the client's handshake) it closes
    /// before the hello. Nil when it got a hello.
    func refusal(_ connect: () throws -> EndpointClient) -> String? {
        let client: EndpointClient
        do {
            client = try connect()
        } catch {
            return "\(error)"
        }
        switch client.greeting() {
        case .closed: return client.closeReason ?? "closed without a reason"
        case .timedOut: return "timed out"
        case .message(let message): return message.isHello ? nil : "\(message)"
        }
    }

    func testAMonitorWithoutTheRightCertificateIsRefusedByNameOnBothSides() throws {
        let pki = try makeCertificates()
        let queue = RequestQueue(earlyRetry: nil)
        let endpoint = try startRemote(queue, pki)

        // A certificate from another authority.
        let stranger = try makeCertificates(clientName: "mallory")
        let other = refusal { try connect(endpoint, trusting: pki, as: stranger) }
        // Both test authorities have one name, so the program finds "its" authority and the
        // signature fails; an authority of another name is UNKNOWN_CA. Either names the authority.
        XCTAssert(other?.contains("authority") == true, other ?? "a stranger got a hello")
        waitFor("the program to say why") { self.notices.all.contains { $0.contains("refused a remote monitor from 127.0.0.1:") && $0.hasSuffix("the certificate is from another authority than this program trusts (its --listen-client-ca)") } }

        // An expired one from the right authority (an endpoint of its own: its authority signed it).
        let expired = try makeCertificates(expiredClient: true)
        let expiring = try startRemote(RequestQueue(earlyRetry: nil), expired)
        let late = refusal { try connect(expiring, trusting: expired, as: expired) }
        XCTAssert(late?.contains("the certificate has expired") == true, late ?? "an expired certificate got a hello")
        // The program names the kind too, where BoringSSL says only that verification failed.
        waitFor("the program to say it expired") { self.notices.all.contains { $0.contains("refused a remote monitor from 127.0.0.1:") && $0.contains("the certificate has expired (on ") } }

        // No certificate at all: openssl, which can leave it out.
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = ["s_client", "-connect", "127.0.0.1:\(try XCTUnwrap(endpoint.tlsPort))", "-CAfile", pki.caFile, "-quiet"]
        let output = Pipe()
        (process.standardInput, process.standardOutput, process.standardError) = (Pipe(), output, output)
        try process.run()
        let said = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        XCTAssertFalse(said.contains("hello"), said)
        XCTAssert(said.lowercased().contains("certificate required") || said.contains("CERTIFICATE_REQUIRED") || said.contains("alert"), said)
        waitFor("the program to say why") { self.notices.all.contains { $0.hasSuffix("no client certificate was presented") } }
    }

    /// A monitor that does not trust the program's certificate (a wrong `--cacert`) refused
    /// it: the program says the monitor refused, not that it refused the monitor.
    func testAMonitorThatRefusesTheProgramsCertificateIsSaidSoByTheProgram() throws {
        let pki = try makeCertificates()
        let endpoint = try startRemote(RequestQueue(earlyRetry: nil), pki)
        let stranger = try makeCertificates(clientName: "mallory")
        let refused = refusal { try connect(endpoint, trusting: stranger, as: pki) }
        XCTAssertNotNil(refused, "the monitor refused the program's certificate")
        // The monitor names the kind, not only that verification failed.
        XCTAssert(refused?.contains("the certificate is from another authority than this monitor trusts (its --cacert)") == true, refused ?? "")
        waitFor("the program to say the monitor refused it") {
            self.notices.all.contains { $0.contains("a remote monitor from 127.0.0.1:") && $0.contains("refused this program's certificate") }
        }
        XCTAssertFalse(notices.all.contains { $0.contains("refused a remote monitor") }, "\(notices.all)")
    }

    func testGarbageAndAStalledHandshakeAreClosedAndRequestsGoOn() throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let pki = try makeCertificates()
        let queue = RequestQueue(earlyRetry: nil)
        let endpoint = try startRemote(queue, pki, handshakeTimeout: 0.5)
        let port = try XCTUnwrap(endpoint.tlsPort)
        // Plain text on the TLS port, and a connection that says nothing.
        let garbage = try TCPProbe(port: port)
        garbage.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        let silent = try TCPProbe(port: port)
        waitFor("both to be closed") { garbage.isClosed() && silent.isClosed() }
        XCTAssert(notices.all.contains { $0.contains("no TLS handshake within 0.5 s") }, "\(notices.all)")
        XCTAssert(notices.all.contains { $0.contains("not TLS") }, "\(notices.all)")
        let answer = queue.add(URLRequest(url: server.url("/echo")), id: "after")
        waitFor("the program's request to go on") { answer.result?.status == 200 }
    }
}

extension RemoteEndpointTests {
    /// 200 connections that never start a handshake: the program's requests go on, the flood
    /// is closed (past 64 at once, and each after the handshake limit), and then a monitor
    /// attaches; a monitor past the limit of attached ones is told why.
    func testAFloodOfConnectionsNeitherSlowsTheProgramNorKeepsMonitorsOutForLong() throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let pki = try makeCertificates()
        let queue = RequestQueue(earlyRetry: nil)
        let endpoint = try startRemote(queue, pki, handshakeTimeout: 0.5, maxMonitors: 1)
        let port = try XCTUnwrap(endpoint.tlsPort)
        let flood = try (0..<200).map { _ in try TCPProbe(port: port) }
        let during = (0..<20).map { queue.add(URLRequest(url: server.url("/echo")), id: "during-\($0)") }
        waitFor("the program's requests to go on during the flood") { during.allSatisfy { $0.result?.status == 200 } }
        waitFor("the flood to be closed") { flood.allSatisfy { $0.isClosed() } }
        XCTAssert(notices.all.contains { $0.contains("64 TLS handshakes under way already") }, "\(notices.all)")

        let first = try connect(endpoint, trusting: pki, as: pki)
        guard case .message(.hello) = first.greeting() else { return XCTFail("no hello after the flood") }
        let second = try connect(endpoint, trusting: pki, as: pki)
        XCTAssertEqual(second.greeting(), .message(.error("refused: 1 remote monitors are attached already")))
        first.close()
    }
}

extension RemoteEndpointTests {
    /// A cut network gives no close: a remote monitor that takes nothing while events wait
    /// for it is dropped after the limit, and the faults it set go with it.
    func testAMonitorBehindACutNetworkIsDroppedWithItsFaults() throws {
        let server = try FaultServer.start()
        defer { server.stop() }
        let pki = try makeCertificates()
        let queue = RequestQueue(maxConcurrentRequests: 8, earlyRetry: nil)
        let endpoint = try startRemote(queue, pki, acceptsCommands: true, acceptsFaults: true, deadPeerTimeout: 1)
        let client = try connect(endpoint, trusting: pki, as: pki)
        guard case .message(.hello) = client.greeting() else { return XCTFail("no hello") }
        // It sets a fault, then reads nothing more, as a monitor behind a dead link would.
        client.send(line: EndpointProtocol.line(for: .toggleFault(host: "127.0.0.1:9"), id: 1))
        waitFor("its fault to be set") { queue.faults.list.count == 1 }
        let started = Date()
        var sent = 0
        // Whichever notices first: the kernel (TCP_USER_TIMEOUT: data unacknowledged for the
        // limit) or the endpoint (nothing taken for the limit).
        while !queue.faults.list.isEmpty, Date().timeIntervalSince(started) < 30 {
            // Events to fill what lies between: the socket pair, NIO's buffers, the TCP window.
            (0..<200).forEach { _ in queue.add(URLRequest(url: server.url("/bytes/64")), options: RequestOptions(retryPolicy: .never)) }
            sent += 200
            queue.waitUntilAllOperationsAreFinished()
        }
        XCTAssert(queue.faults.list.isEmpty, "the fault outlived its monitor: \(notices.all) after \(sent) requests")
        XCTAssert(notices.all.contains("removed 1 fault set by a monitor that detached"), "\(notices.all)")
        XCTAssertLessThan(Date().timeIntervalSince(started), 15, "within a few times the limit")
        client.close()
    }
}

/// A raw TCP connection to 127.0.0.1, for what a broken peer sends.
extension EndpointClient.Message {
    var isHello: Bool { if case .hello = self { true } else { false } }
}

final class TCPProbe: Sendable {
    let fd: Int32

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw POSIXError(.ECONNREFUSED) }
    }

    func send(_ text: String) {
        _ = text.withCString { Glibc.send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
    }

    /// True once the peer closed (a read gives 0 or an error), reading whatever came first.
    func isClosed() -> Bool {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
        return count == 0 || (count < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
    }

    deinit { close(fd) }
}
