import Foundation

/// The fault server's routes, parsed from a request target. Kept apart from SwiftNIO so
/// the route table reads as a list.
///
/// | route | what it does |
/// | --- | --- |
/// | `/status/{code}` | answers with that status; `?retry-after=S`, `?retry-after-date=S` (an HTTP-date S seconds ahead), `?www-authenticate=SCHEME` add headers |
/// | `/delay/{ms}` | answers 200 after `ms` milliseconds (`?status=` to change it) |
/// | `/bytes/{n}` | `n` bytes (up to 1 TiB, made as they are sent); `?seed=S` picks the byte stream (see `SeededBytes`) |
/// | `/zeros/{n}` | `n` zero bytes, sent from one shared buffer: as fast as the server can write, for bulk-transfer benchmarks |
/// | `/drip` | `?bytes=N&duration=MS&chunks=K`: N bytes (at most 64 MiB) in K pieces spread over MS milliseconds |
/// | `/redirect/{n}` | a chain of `n` redirects (`?status=301/302/307/308`) ending at 200 |
/// | `/raw-status/{ddd}` | a head with that status line as written (`000`, `050`, `150`: statuses no HTTP library will encode), then `?body=N` bytes (0) and a close |
/// | `/set-cookie` | `Set-Cookie: N=V` from `?name=N&value=V` (`?attrs=` appended as written: `; Path=/a; Secure`), 200, or 302 to `?redirect=U` |
/// | `/echo-auth` | 401 that copies the request's `Authorization` into `WWW-Authenticate`, `X-Echo-Auth`, a `Location` query and the body (a careless server; secrets must not come back out in the clear) |
/// | `/redirect-to` | one redirect to `?url=U` as given (another host, another scheme: for the redirect-safety tests), `?status=` (302) |
/// | `/flaky/{key}` | fails the first `?failures=N` hits on `key` with `?status=` (a code, `drop` or `reset`; `?retry-after=` adds the header), then 200; `status=slow` answers those hits 200 `slow hit N` instead, `status=cut` cuts their answer off after 32 of 64 promised bytes; `ms=MS` delays the failing answers and `ok-ms=MS` the later ones (slow or racing copies, for hedged reads) |
/// | `/overlong` | promises `?bytes=N` (1024) and sends `?extra=M` (64) bytes more, then closes: a server that says less than it sends |
/// | `/close-mid-body` | promises `?bytes=N` (at most 64 MiB) and closes the connection after half |
/// | `/reset` | resets the connection (TCP RST) without answering |
/// | `/hang` | never answers |
/// | `/drop-reused` | on a connection that already served a request, reads the whole request and closes the connection without answering (a kept-alive connection the server gave up on); on a fresh connection answers 200 `{"bodyBytes":N}` |
/// | `/echo` | the request as JSON: method, path, query, headers (lower-cased names, the last of each), body; `?fields=1` adds `fields`, each head line as sent, in order |
/// | `/gzip/{n}` | `n` bytes of `/bytes/{n}?seed=S` sent `Content-Encoding: gzip` (stored blocks: every decoder reads them); `?broken=1`: the same header on bytes that are not gzip; `?zeros=1`: `n` zero bytes in about `n`/159 on the wire (a decompression bomb, up to 1 GiB); `?chunked=1`: without `Content-Length` |
/// | `/sink` | reads the request's body without keeping it and answers `{"bodyBytes":N,"fnv1a":"HEX"}` (its length and 64-bit FNV-1a): for uploads larger than memory; `?hash=0` counts only (`{"bodyBytes":N}`, for upload benchmarks) |
/// | `/auth/token` | POST `{"username":U,"password":"secret"}` → `{"token":T,"expiresIn":S}`; a new token replaces that user's last one; `?ttl=S` (default 3600), `?delay=MS`, `?status=C` to fail; wrong password → 403 |
/// | `/auth/expire` | expires the current token now |
/// | `/auth/resource/{name}` | with `Authorization: Bearer <current token>`: 200 `{"resource":name,"user":U,"id":N}`; else 401 with `WWW-Authenticate: Bearer` (`?delay=MS` first; the token is checked after the delay) |
/// | `/` | this list |
public enum FaultRoute: Equatable, Sendable {
    case status(Int, retryAfter: String?, retryAfterDate: Double?, wwwAuthenticate: String?)
    case delay(milliseconds: Int, status: Int)
    case bytes(count: Int, seed: UInt64)
    case zeros(count: Int)
    case drip(bytes: Int, durationMilliseconds: Int, chunks: Int)
    case redirect(remaining: Int, status: Int)
    case redirectTo(location: String, status: Int)
    case rawStatus(code: String, bodyBytes: Int)
    case echoAuth
    case setCookie(name: String, value: String, attributes: String, redirect: String?)
    case flaky(key: String, failures: Int, failure: FlakyFailure, retryAfter: String?, delay: Delays = Delays())
    case closeMidBody(bytes: Int)
    case overlong(bytes: Int, extra: Int)
    case reset
    case hang
    case dropReused
    case echo
    case sink
    case gzip(count: Int, seed: UInt64, broken: Bool, zeros: Bool = false, chunked: Bool = false)
    case authToken(ttl: Double, delayMilliseconds: Int, failStatus: Int?)
    case authExpire
    case authResource(name: String, delayMilliseconds: Int)
    case index
    case notFound(String)

    public enum FlakyFailure: Equatable, Sendable {
        case status(Int)
        /// Close the connection without answering.
        case drop
        /// Reset the connection.
        case reset
        /// Answer 200 `slow hit N` (late, with `ms=`).
        case slow
        /// Promise 64 bytes and close the connection after 32: the answer cut off. Unlike a
        /// connection closed before any answer, libcurl never re-sends a request silently
        /// after part of its answer came, so every transport reports it (connection lost).
        case cut
    }

    /// How long a flaky route waits before its answers, in milliseconds.
    public struct Delays: Equatable, Sendable {
        /// Before each failing answer (`ms=`).
        public var failing = 0
        /// Before each answer after the failures (`ok-ms=`).
        public var succeeding = 0

        public init(failing: Int = 0, succeeding: Int = 0) {
            self.failing = failing
            self.succeeding = succeeding
        }
    }

    /// The text of `/`, and of a 404.
    public static let routeList = """
    reqtop fault server routes:
      /status/{code}[?retry-after=S][&retry-after-date=S][&www-authenticate=SCHEME]
      /delay/{ms}[?status=C]
      /bytes/{n}[?seed=S]
      /zeros/{n}  (fast: for bulk-transfer benchmarks)
      /drip?bytes=N&duration=MS[&chunks=K]
      /redirect/{n}[?status=302]
      /redirect-to?url=U[&status=302]
      /raw-status/{ddd}[?body=N]  (a status line as written, then a close)
      /echo-auth  (401 echoing Authorization in headers and body)
      /set-cookie?name=N&value=V[&attrs=; Path=/][&redirect=U]
      /flaky/{key}?failures=N[&status=503|drop|reset|slow|cut][&retry-after=S][&ms=MS][&ok-ms=MS]
      /close-mid-body?bytes=N
      /reset
      /hang
      /drop-reused  (closes a reused connection without answering)
      /echo[?fields=1]  (the request as JSON; fields: each head line as sent)
      /auth/token  (POST {"username":U,"password":"secret"})[?ttl=S][&delay=MS][&status=C]
      /auth/expire
      /auth/resource/{name}  (Authorization: Bearer TOKEN)[?delay=MS]

    """

    /// Parses a request target such as `/flaky/a?failures=2&status=503`.
    public static func parse(_ target: String) -> FaultRoute {
        let components = URLComponents(string: target)
        let path = components?.path ?? target
        var query: [String: String] = [:]
        for item in components?.queryItems ?? [] {
            query[item.name] = item.value ?? ""
        }
        func int(_ name: String, _ fallback: Int) -> Int { query[name].flatMap { Int($0) } ?? fallback }

        let parts = path.split(separator: "/").map(String.init)
        switch (parts.first, parts.count) {
        case (nil, _):
            return .index
        case ("status", 2):
            guard let code = Int(parts[1]), (100...599).contains(code) else { return .notFound(path) }
            return .status(code, retryAfter: query["retry-after"], retryAfterDate: query["retry-after-date"].flatMap { Double($0) },
                           wwwAuthenticate: query["www-authenticate"])
        case ("delay", 2):
            guard let milliseconds = Int(parts[1]), milliseconds >= 0 else { return .notFound(path) }
            return .delay(milliseconds: milliseconds, status: int("status", 200))
        case ("bytes", 2):
            guard let count = Int(parts[1]), count >= 0, count <= 1 << 40 else { return .notFound(path) }
            return .bytes(count: count, seed: query["seed"].flatMap { UInt64($0) } ?? 0)
        case ("zeros", 2):
            guard let count = Int(parts[1]), count >= 0, count <= 1 << 40 else { return .notFound(path) }
            return .zeros(count: count)
        case ("drip", 1):
            // A piece is made whole: the size is held to 64 MiB.
            return .drip(bytes: max(0, min(int("bytes", 1024), 64 << 20)), durationMilliseconds: max(0, int("duration", 1000)),
                         chunks: max(1, int("chunks", 10)))
        case ("redirect", 2):
            guard let remaining = Int(parts[1]), remaining >= 0 else { return .notFound(path) }
            return .redirect(remaining: remaining, status: int("status", 302))
        case ("set-cookie", 1):
            guard let name = query["name"], !name.isEmpty else { return .notFound(path) }
            return .setCookie(name: name, value: query["value"] ?? "", attributes: query["attrs"] ?? "", redirect: query["redirect"])
        case ("echo-auth", 1):
            return .echoAuth
        case ("raw-status", 2):
            guard parts[1].count == 3, parts[1].allSatisfy(\.isASCII), parts[1].allSatisfy(\.isNumber) else { return .notFound(path) }
            return .rawStatus(code: parts[1], bodyBytes: max(0, min(int("body", 0), 1 << 20)))
        case ("redirect-to", 1):
            guard let location = query["url"], !location.isEmpty else { return .notFound(path) }
            return .redirectTo(location: location, status: int("status", 302))
        case ("flaky", 2):
            let failure: FlakyFailure = switch query["status"] {
            case "drop": .drop
            case "reset": .reset
            case "slow": .slow
            case "cut": .cut
            case let value?: .status(Int(value) ?? 503)
            case nil: .status(503)
            }
            return .flaky(key: parts[1], failures: max(0, int("failures", 1)), failure: failure, retryAfter: query["retry-after"],
                          delay: Delays(failing: max(0, int("ms", 0)), succeeding: max(0, int("ok-ms", 0))))
        case ("overlong", 1):
            return .overlong(bytes: max(0, min(int("bytes", 1024), 1 << 20)), extra: max(1, min(int("extra", 64), 1 << 20)))
        case ("close-mid-body", 1):
            return .closeMidBody(bytes: max(2, min(int("bytes", 1024), 64 << 20)))
        case ("reset", 1):
            return .reset
        case ("hang", 1):
            return .hang
        case ("drop-reused", 1):
            return .dropReused
        case ("echo", _):
            return .echo
        case ("sink", 1):
            return .sink
        case ("gzip", 2):
            let zeros = query["zeros"] == "1"
            guard let count = Int(parts[1]), count >= 0, count <= (zeros ? 1 << 30 : 64 << 20) else { return .notFound(path) }
            return .gzip(count: count, seed: query["seed"].flatMap { UInt64($0) } ?? 0, broken: query["broken"] == "1", zeros: zeros,
                         chunked: query["chunked"] == "1")
        case ("auth", 2) where parts[1] == "token":
            return .authToken(ttl: query["ttl"].flatMap { Double($0) } ?? 3600, delayMilliseconds: max(0, int("delay", 0)),
                              failStatus: query["status"].flatMap { Int($0) })
        case ("auth", 2) where parts[1] == "expire":
            return .authExpire
        case ("auth", 3) where parts[1] == "resource":
            return .authResource(name: parts[2], delayMilliseconds: max(0, int("delay", 0)))
        default:
            return .notFound(path)
        }
    }
}
