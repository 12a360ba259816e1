import CertificateMint
import Crypto
import Foundation
import X509

/// A certificate authority and certificates signed by it, made when asked (for the demo and
/// the tests: no key is ever committed). P-256 keys, PEM files in a folder of their own.
public struct TestCertificates: Sendable {
    /// The authority's certificate: what `--cacert` is given.
    public let caFile: String
    /// The server's chain (its certificate) and key, for ``FaultServer/start(port:tls:counters:logger:)``.
    public let serverCertificateFile: String
    public let serverKeyFile: String
    /// A client certificate from the same authority and its key, for `--cert`/`--key`
    /// against a server that asks for one (`FaultServer.start(tls:clientCertificates:)`).
    public let clientCertificateFile: String
    public let clientKeyFile: String
    /// The folder that holds them.
    public let folder: String

    /// Makes an authority and a server certificate for `hosts` (names and IP addresses),
    /// valid from an hour ago for a day, or, with `expired`, for a day that ended an hour ago;
    /// the client certificate likewise with `expiredClient`, named `clientName`.
    public static func make(hosts: [String] = ["127.0.0.1", "localhost"], expired: Bool = false, expiredClient: Bool = false,
                            clientName: String = "reqtop test client",
                            in folder: String = NSTemporaryDirectory() + "reqtop-pki-\(UUID().uuidString.prefix(8))") throws -> TestCertificates {
        // Keys are secrets even when made for a test: the folder is this user's alone, each key 0600.
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let now = Date()
        let caKey = P256.Signing.PrivateKey()
        let ca = try CertificateMint.authority(named: try DistinguishedName { CommonName("reqtop test authority") }, key: caKey,
                                               from: now.addingTimeInterval(-3600), until: now.addingTimeInterval(86_400))
        // Valid from an hour ago for a day, or for a day that ended an hour ago.
        func validity(expired: Bool) -> (from: Date, until: Date) {
            expired ? (now.addingTimeInterval(-2 * 86_400), now.addingTimeInterval(-3600)) : (now.addingTimeInterval(-3600), now.addingTimeInterval(86_400))
        }
        let serverKey = P256.Signing.PrivateKey(), serverDates = validity(expired: expired)
        let server = try CertificateMint.leaf(.server, commonName: hosts.first ?? "localhost", hosts: hosts, publicKey: serverKey.publicKey,
                                              from: serverDates.from, until: serverDates.until, issuer: ca, issuerKey: caKey)
        let clientKey = P256.Signing.PrivateKey(), clientDates = validity(expired: expiredClient)
        let client = try CertificateMint.leaf(.client, commonName: clientName, publicKey: clientKey.publicKey,
                                              from: clientDates.from, until: clientDates.until, issuer: ca, issuerKey: caKey)
        let files = TestCertificates(caFile: folder + "/ca.pem", serverCertificateFile: folder + "/server.pem",
                                     serverKeyFile: folder + "/server-key.pem", clientCertificateFile: folder + "/client.pem",
                                     clientKeyFile: folder + "/client-key.pem", folder: folder)
        try ca.serializeAsPEM().pemString.write(toFile: files.caFile, atomically: true, encoding: .utf8)
        try server.serializeAsPEM().pemString.write(toFile: files.serverCertificateFile, atomically: true, encoding: .utf8)
        try writeKey(serverKey.pemRepresentation, to: files.serverKeyFile)
        try client.serializeAsPEM().pemString.write(toFile: files.clientCertificateFile, atomically: true, encoding: .utf8)
        try writeKey(clientKey.pemRepresentation, to: files.clientKeyFile)
        return files
    }

    /// A key file made 0600 from the start (never readable by others, not even for a moment).
    private static func writeKey(_ pem: String, to path: String) throws {
        guard FileManager.default.createFile(atPath: path, contents: Data(pem.utf8), attributes: [.posixPermissions: 0o600]) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path])
        }
    }

    public func remove() {
        try? FileManager.default.removeItem(atPath: folder)
    }
}
