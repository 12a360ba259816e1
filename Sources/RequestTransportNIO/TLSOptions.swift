import AsyncHTTPClient
import Foundation
import NIOSSL

/// What the NIO transport trusts and shows in TLS, as curl users know it: `--cacert FILE`
/// (extra trust roots, PEM), `--cert FILE --key FILE` (a client certificate, mTLS) and
/// `--insecure` (no verification at all: loud wherever it is used). Every file is read and
/// checked when the transport is made, so a wrong one is named before any request is sent.
public struct TLSOptions: Sendable, Equatable {
    public var caFile: String?
    public var certificateFile: String?
    public var keyFile: String?
    public var insecure: Bool
    /// Where each setting came from, as an error names it: the flags by default; a plan's
    /// field (`plan.json: tls.key`) or `SSL_CERT_FILE` where that is what gave it.
    public var names = Names()

    public struct Names: Sendable, Equatable {
        public var caFile = "--cacert"
        public var certificateFile = "--cert"
        public var keyFile = "--key"
        public var insecure = "--insecure"
        public init() {}
    }

    public init(caFile: String? = nil, certificateFile: String? = nil, keyFile: String? = nil, insecure: Bool = false) {
        self.caFile = caFile
        self.certificateFile = certificateFile
        self.keyFile = keyFile
        self.insecure = insecure
    }

    /// Nothing asked for: the system's trust roots, full verification.
    public var isDefault: Bool { caFile == nil && certificateFile == nil && keyFile == nil && !insecure }

    /// The client's TLS configuration; throws a ``TLSOptionError`` naming the flag and file.
    public func clientConfiguration() throws -> TLSConfiguration {
        var tls = TLSConfiguration.makeClientConfiguration()
        if insecure, caFile != nil {
            throw TLSOptionError("\(names.insecure) and \(names.caFile) contradict each other: \(names.insecure) verifies nothing")
        }
        if insecure { tls.certificateVerification = .none }
        if let caFile {
            let certificates = try Self.certificates(caFile, flag: names.caFile)
            tls.additionalTrustRoots = [.certificates(certificates)]
        }
        switch (certificateFile, keyFile) {
        case (nil, nil):
            break
        case (let certificate?, let key?):
            tls.certificateChain = try Self.certificates(certificate, flag: names.certificateFile).map { .certificate($0) }
            do {
                tls.privateKey = .privateKey(try NIOSSLPrivateKey(file: key, format: .pem))
            } catch {
                throw TLSOptionError("\(names.keyFile) \(key): \(Self.readable(key) ? "not a PEM private key" : "cannot be read")")
            }
            // A key that is not the certificate's is refused here, not at the first handshake.
            do {
                _ = try NIOSSLContext(configuration: tls)
            } catch {
                throw TLSOptionError("\(names.keyFile) \(key) does not match the certificate in \(names.certificateFile) \(certificate)")
            }
        case (_?, nil):
            throw TLSOptionError("\(names.certificateFile) needs \(names.keyFile == "--key" ? "--key" : names.keyFile) (the certificate's private key, PEM)")
        case (nil, _?):
            throw TLSOptionError("\(names.keyFile) needs \(names.certificateFile) (the client certificate, PEM)")
        }
        return tls
    }

    private static func readable(_ path: String) -> Bool {
        FileManager.default.isReadableFile(atPath: path)
    }

    private static func certificates(_ path: String, flag: String) throws -> [NIOSSLCertificate] {
        guard FileManager.default.fileExists(atPath: path) else { throw TLSOptionError("\(flag) \(path): no such file") }
        guard readable(path) else { throw TLSOptionError("\(flag) \(path): cannot be read") }
        let certificates: [NIOSSLCertificate]
        do {
            certificates = try NIOSSLCertificate.fromPEMFile(path)
        } catch {
            throw TLSOptionError("\(flag) \(path): not a PEM certificate file")
        }
        guard !certificates.isEmpty else { throw TLSOptionError("\(flag) \(path): holds no certificate") }
        return certificates
    }
}

/// A TLS option that cannot be used, in words that name the flag and the file.
public struct TLSOptionError: Error, CustomStringConvertible {
    public let description: String

    init(_ description: String) {
        self.description = description
    }
}

extension NIOTransport {
    /// A transport with `tls` (checked now) and `proxies`; `decodesBodies` as in
    /// ``init(configuration:proxies:maxDecodedRatio:decodesBodies:)``.
    public convenience init(tls: TLSOptions, proxies: ProxySettings = .fromEnvironment(), decodesBodies: Bool = true) throws {
        var configuration = HTTPClient.Configuration()
        configuration.tlsConfiguration = try tls.clientConfiguration()
        self.init(configuration: configuration, proxies: proxies, decodesBodies: decodesBodies)
    }
}
