/// `reqtop proxy --ca`: where the proxy's certificate authority is, and how each kind of
/// client is told to trust it (and how to take that back).
enum ProxyTrustGuide {
    static func text(certificateFile file: String, folder: String, made: Bool) -> String {
        """
        reqtop proxy's certificate authority\(made ? " (made now)" : ""):
          certificate: \(file)
          its key:     \(folder)/ca-key.pem (0600; never printed, served or recorded: keep it so)

        It is unique to this machine. Trust it only in the clients you point at the proxy:

          curl            curl --cacert \(file) -x http://127.0.0.1:8080 https://example.com/
          OpenSSL-based   SSL_CERT_FILE=\(file) (replaces the system list for that program)
          Python requests REQUESTS_CA_BUNDLE=\(file)
          Python urllib   SSL_CERT_FILE=\(file)
          Node.js         NODE_EXTRA_CA_CERTS=\(file)
          Go              SSL_CERT_FILE=\(file)
          FoundationNetworking (URLSession on Linux; libcurl underneath)
                          SSL_CERT_FILE=\(file), or the system store below
          reqtop itself   reqtop run --cacert \(file) --proxy http://127.0.0.1:8080 ...

        The whole system (Debian, Ubuntu), for every program, as root:
          cp \(file) /usr/local/share/ca-certificates/reqtop-proxy.crt && update-ca-certificates
        and to take it back:
          rm /usr/local/share/ca-certificates/reqtop-proxy.crt && update-ca-certificates --fresh

        To start again with a new authority, remove \(folder) (and untrust the old one).
        """
    }
}
