import Crypto
import Foundation
import SwiftASN1
import X509
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Certificates this machine makes for itself: an authority of its own and the leaves it
/// signs. One way to make them for the proxy (its authority and a leaf per host a client asks
/// for) and for the fault server (the demo's and the tests' authority, server and client).
/// P-256 keys, ECDSA with SHA-256.
public enum CertificateMint {
    /// What a leaf is for: a server (its names are what clients check) or a client.
    public enum Role: Sendable {
        case server
        case client

        var usage: ExtendedKeyUsage.Usage { self == .server ? .serverAuth : .clientAuth }
    }

    /// A self-signed authority named `name`, valid `from`–`until`, that signs leaves only
    /// (path length 0: no authority under it).
    public static func authority(named name: DistinguishedName, key: P256.Signing.PrivateKey, from: Date, until: Date) throws -> Certificate {
        try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(key.publicKey),
            notValidBefore: from, notValidAfter: until,
            issuer: name, subject: name, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                SubjectKeyIdentifier(hash: .init(key.publicKey))
            },
            issuerPrivateKey: .init(key))
    }

    /// A leaf for `role`, named `commonName`, for `hosts` (names and IP addresses; none for a
    /// client), valid `from`–`until`, signed by `issuer` with `issuerKey`.
    public static func leaf(_ role: Role, commonName: String, hosts: [String] = [], publicKey: P256.Signing.PublicKey,
                            from: Date, until: Date, issuer: Certificate, issuerKey: P256.Signing.PrivateKey) throws -> Certificate {
        try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(publicKey),
            notValidBefore: from, notValidAfter: until,
            // A common name is at most 64 characters (RFC 5280's upper bound).
            issuer: issuer.subject, subject: try DistinguishedName { CommonName(String(commonName.prefix(64))) },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                if !hosts.isEmpty { SubjectAlternativeNames(hosts.map(alternativeName(for:))) }
                try ExtendedKeyUsage([role.usage])
            },
            issuerPrivateKey: .init(issuerKey))
    }

    /// `host` as a certificate names it: an IPv4 or IPv6 address (bracketed or not) by its
    /// bytes, anything else as a DNS name. Clients check an address against the bytes only.
    public static func alternativeName(for host: String) -> GeneralName {
        if let bytes = addressBytes(host) { return .ipAddress(ASN1OctetString(contentBytes: bytes[...])) }
        return .dnsName(host)
    }

    /// The bytes of an IPv4 or IPv6 address (bracketed or not), or nil for a name: what a
    /// certificate names an address by, and what the kernel's socket tables hold.
    public static func addressBytes(_ text: String) -> [UInt8]? {
        let text = text.trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        var v4 = in_addr(), v6 = in6_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }
}
