import Foundation
import NIOSSL
import RequestEventFormat
import RequestOperations
import X509

/// The monitor endpoint on TCP, for a monitor on another machine: only with TLS, and only
/// for a monitor that presents a certificate from the authority the program names (mutual
/// TLS). The protocol is the Unix endpoint's, line for line; so are its limits (each
/// monitor's buffer, a fresh snapshot for one that falls behind).
///
/// A remote monitor may only watch unless ``acceptsCommands``; faults and breakpoints also
/// need ``MonitorEndpoint/Options/acceptsFaults``. Each command it sends is said on the
/// program's log with the certificate's subject, which is also the `by` of what it did.
public struct EndpointTLS: Sendable {
    /// The address to listen on (`127.0.0.1`, `0.0.0.0`, `::`); anything but loopback is said
    /// loudly at start.
    public var host: String
    /// 0 picks a free port (``MonitorEndpoint/tlsPort`` says which).
    public var port: Int
    /// The program's certificate chain and key (PEM files).
    public var certificateFile: String
    public var keyFile: String
    /// The authority whose certificates monitors must present (PEM).
    public var clientCAFile: String
    /// Remote monitors may send commands (cancel, retry, pause, ...); off: they only watch.
    public var acceptsCommands = false
    /// Remote monitors attached at once; more are turned away (told why).
    public var maxMonitors = 8
    /// Connections in their TLS handshake at once; more are closed at once. Apart from
    /// ``maxMonitors``, so a flood of handshakes never finished cannot keep monitors out.
    public var maxHandshakes = 64
    /// A connection whose TLS handshake is not done by then is closed (a peer that stalls).
    public var handshakeTimeout: TimeInterval = 10
    /// A remote monitor's connection with nothing acknowledged for this long is dropped, and
    /// its faults and breakpoints with it (a network cut gives no close): TCP keepalive
    /// probes an idle one, and a write the peer never acknowledges ends it.
    public var deadPeerTimeout: TimeInterval = 30

    public init(host: String, port: Int, certificateFile: String, keyFile: String, clientCAFile: String) {
        self.host = host
        self.port = port
        self.certificateFile = certificateFile
        self.keyFile = keyFile
        self.clientCAFile = clientCAFile
    }

    /// True for 127.0.0.0/8, ::1 and `localhost`.
    public var isLoopback: Bool { HostAddress.isLoopback(host) }

    /// What is wrong with the files, named; the server's TLS settings when nothing is.
    func serverConfiguration() throws -> TLSConfiguration {
        let chain = try EndpointTLS.load(certificateFile, "the endpoint's certificate") { try NIOSSLCertificate.fromPEMFile($0) }
        guard !chain.isEmpty else { throw EndpointTLSError("the endpoint's certificate \(certificateFile): no certificate in it") }
        let key = try EndpointTLS.load(keyFile, "the endpoint's key") { try NIOSSLPrivateKey(file: $0, format: .pem) }
        let roots = try EndpointTLS.load(clientCAFile, "the monitors' authority") { try NIOSSLCertificate.fromPEMFile($0) }
        guard !roots.isEmpty else { throw EndpointTLSError("the monitors' authority \(clientCAFile): no certificate in it") }
        var configuration = TLSConfiguration.makeServerConfigurationWithMTLS(
            certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key), trustRoots: .certificates(roots))
        configuration.minimumTLSVersion = .tlsv12
        return configuration
    }

    /// A PEM file read by `load`, or an error naming `what` and the file and what is wrong
    /// with it (missing, unreadable, not PEM): one way for both sides.
    static func load<T>(_ file: String, _ what: String, _ load: (String) throws -> T) throws -> T {
        guard FileManager.default.isReadableFile(atPath: file) else {
            throw EndpointTLSError("\(what) \(file): " + (FileManager.default.fileExists(atPath: file) ? "cannot be read" : "no such file"))
        }
        do {
            return try load(file)
        } catch {
            throw EndpointTLSError("\(what) \(file): not a PEM \(what.contains("key") ? "private key" : "certificate") (\(error))")
        }
    }

    /// The certificate's subject as people write it (`CN=alice,O=ops`): who a remote monitor is.
    static func subject(of certificate: NIOSSLCertificate) -> String {
        guard let bytes = try? certificate.toDERBytes(), let parsed = try? Certificate(derEncoded: bytes) else { return "an unreadable certificate" }
        // A subject is the peer's text: it reaches the program's log (a terminal) as it is.
        return TerminalText.clean(parsed.subject.description, singleLine: true)
    }
}

/// Why the TLS endpoint could not start, in words.
public struct EndpointTLSError: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}
