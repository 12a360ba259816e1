import CertificateMint
import Crypto
import Foundation
import NIOSSL
import RequestArchive
import Synchronization
import X509

/// The proxy's own certificate authority, made on first use and kept in a folder only this
/// user may enter: `ca.pem` (what clients are told to trust) and `ca-key.pem` (0600, never
/// printed, served or recorded). It signs a leaf per host a client asks for (by SNI, or the
/// `CONNECT` authority when the client sends none), all with one key made at start; leaves are
/// kept for the life of the process.
public final class LocalCertificateAuthority: Sendable {
    /// The folder, the certificate's file and the key's.
    public let folder: String
    public var certificateFile: String { folder + "/ca.pem" }
    public var keyFile: String { folder + "/ca-key.pem" }
    /// The authority's certificate, to show its fingerprint and dates.
    public let certificate: Certificate

    private let key: P256.Signing.PrivateKey
    /// One key for every leaf (made once: a key per host cost a key generation per new host).
    private let leafKey = P256.Signing.PrivateKey()
    private let leafKeySource: NIOSSLPrivateKeySource
    private let contexts = Mutex<[String: NIOSSLContext]>([:])
    /// Leaves and contexts kept at most (each a few KB); past it they are made again.
    static let kept = 1_000
    private let leaves = Mutex<[String: NIOSSLCertificate]>([:])

    /// `$XDG_CONFIG_HOME/reqtop/ca`, or `~/.config/reqtop/ca`.
    public static var defaultFolder: String {
        let environment = ProcessInfo.processInfo.environment
        let base = environment["XDG_CONFIG_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? (environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()) + "/.config"
        return base + "/reqtop/ca"
    }

    /// What went wrong with the authority's folder or files, naming the file.
    public struct Problem: Error, CustomStringConvertible {
        public let description: String
    }

    /// Loads the authority in `folder`, or makes it there when the folder has none.
    /// - Returns: the authority, and whether it was made now.
    public static func loadOrMake(in folder: String = defaultFolder) throws -> (LocalCertificateAuthority, made: Bool) {
        let parent = (folder as NSString).deletingLastPathComponent
        var existing = stat()
        if lstat(folder, &existing) == 0, ![S_IFDIR, S_IFLNK].contains(existing.st_mode & S_IFMT) {
            // Named by the person (`--ca-dir`): said plainly, with no advice to remove it.
            throw Problem(description: "\(folder): not a folder; the certificate authority is kept in a folder of its own (--ca-dir names one)")
        }
        do {
            try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            try PrivateFolder.make(folder)
        } catch let error as ArchiveError {
            throw Problem(description: "the proxy's certificate authority: \(error)")
        } catch {
            throw Problem(description: "the proxy's certificate authority: cannot make \(parent): \(error.localizedDescription)")
        }
        let certificatePath = folder + "/ca.pem", keyPath = folder + "/ca-key.pem"
        let hasCertificate = FileManager.default.fileExists(atPath: certificatePath)
        let hasKey = FileManager.default.fileExists(atPath: keyPath)
        if !hasCertificate, !hasKey {
            let (certificate, key) = try make()
            do {
                try PrivateFolder.writeNew(Data(key.pemRepresentation.utf8), to: keyPath)
                try PrivateFolder.writeNew(Data(try certificate.serializeAsPEM().pemString.utf8), to: certificatePath)
            } catch {
                throw Problem(description: "the proxy's certificate authority: \(error)")
            }
            return (LocalCertificateAuthority(folder: folder, certificate: certificate, key: key), true)
        }
        guard hasCertificate, hasKey else {
            let missing = hasCertificate ? keyPath : certificatePath
            throw Problem(description: "\(missing) is missing beside \(hasCertificate ? certificatePath : keyPath); remove the folder \(folder) to make a new authority (clients that trusted the old one must be told the new one)")
        }
        var info = stat()
        if lstat(keyPath, &info) == 0, info.st_mode & 0o077 != 0 {
            throw Problem(description: "\(keyPath) is open to other users (mode \(String(info.st_mode & 0o777, radix: 8))); chmod 600 it: anyone who reads it can read and change all traffic through the proxy")
        }
        do {
            let keyText = String(decoding: try PrivateFolder.read(keyPath), as: UTF8.self)
            let certificateText = String(decoding: try PrivateFolder.read(certificatePath), as: UTF8.self)
            let key = try P256.Signing.PrivateKey(pemRepresentation: keyText)
            let certificate = try Certificate(pemEncoded: certificateText)
            guard certificate.publicKey == Certificate.PublicKey(key.publicKey) else {
                throw Problem(description: "\(keyPath) is not the key of \(certificatePath); remove the folder \(folder) to make a new authority")
            }
            return (LocalCertificateAuthority(folder: folder, certificate: certificate, key: key), false)
        } catch let problem as Problem {
            throw problem
        } catch {
            throw Problem(description: "the proxy's certificate authority in \(folder) cannot be read (\(error)); remove the folder to make a new one")
        }
    }

    private init(folder: String, certificate: Certificate, key: P256.Signing.PrivateKey) {
        self.folder = folder
        self.certificate = certificate
        self.key = key
        // The key of every leaf, as the TLS library takes it.
        leafKeySource = .privateKey(try! NIOSSLPrivateKey(bytes: Array(leafKey.pemRepresentation.utf8), format: .pem))
    }

    /// A new authority: P-256, valid for ten years, unique to this machine.
    private static func make() throws -> (Certificate, P256.Signing.PrivateKey) {
        let key = P256.Signing.PrivateKey()
        let now = Date()
        let name = try DistinguishedName {
            CommonName("reqtop proxy CA (\(ProcessInfo.processInfo.hostName), \(NSUserName()))")
            OrganizationName("reqtop")
        }
        let certificate = try CertificateMint.authority(named: name, key: key, from: now.addingTimeInterval(-86_400),
                                                        until: now.addingTimeInterval(10 * 365 * 86_400))
        return (certificate, key)
    }

    /// The certificate for `host` (a name or an IP address), signed now or taken from those
    /// signed before.
    func leaf(for host: String) throws -> NIOSSLCertificate {
        if let known = leaves.withLock({ $0[host] }) { return known }
        let now = Date()
        // A day back for clocks behind; under 398 days, the most clients accept for a leaf.
        let made = try CertificateMint.leaf(.server, commonName: host, hosts: [host], publicKey: leafKey.publicKey,
                                            from: now.addingTimeInterval(-86_400),
                                            until: min(now.addingTimeInterval(390 * 86_400), certificate.notValidAfter),
                                            issuer: certificate, issuerKey: key)
        let leaf = try NIOSSLCertificate(bytes: Array(try made.serializeAsPEM().pemString.utf8), format: .pem)
        leaves.withLock { leaves in
            // Any client may name any host in its TLS hello: bounded, not a cache that grows
            // with every name a client invents.
            if leaves.count >= Self.kept { leaves.removeAll() }
            leaves[host] = leaf
        }
        return leaf
    }

    /// A server context for a tunnel to `host`: its leaf, whatever name the client's TLS hello
    /// asks for. The requests inside go to `host` and its certificate is verified for `host`:
    /// a leaf for another name (a `CONNECT 127.0.0.1` whose hello says `evil.example`) would
    /// vouch for a name nobody checked, so such a client gets `host`'s leaf and its own check
    /// refuses it. ALPN offers `protocols` (``ProxyHTTP2/offered``, or HTTP/1.1 only).
    func serverContext(for host: String, protocols: [String] = ["http/1.1"]) throws -> NIOSSLContext {
        let key = protocols.joined(separator: ",") + " " + host
        if let known = contexts.withLock({ $0[key] }) { return known }
        var configuration = TLSConfiguration.makeServerConfiguration(certificateChain: [.certificate(try leaf(for: host))], privateKey: leafKeySource)
        configuration.applicationProtocols = protocols
        let context = try NIOSSLContext(configuration: configuration)
        contexts.withLock { contexts in
            if contexts.count >= Self.kept { contexts.removeAll() }
            contexts[key] = context
        }
        return context
    }
}
