import Foundation
import HTTPTypes
import RequestOperations

/// Takes secrets out of events before they leave the process — on stdout, in recordings
/// and HAR, on the monitor endpoint's socket, in the monitor. One set of rules for all:
///
/// - headers `Authorization`, `Proxy-Authorization`, `Cookie`, `Set-Cookie`, and any header
///   whose name says it carries a credential (it contains token, secret, password, passwd,
///   signature, credential, session, api-key, api_key or apikey: `X-Api-Key`,
///   `X-Auth-Token`, `X-Amz-Security-Token`);
/// - the userinfo of a URL (`http://user:pw@host/` → `http://[redacted]@host/`);
/// - query and fragment values whose names are such words or the usual secret names
///   (`access_token`, `key`, `sig`, `X-Amz-Signature`, `X-Amz-Credential`, …), with `&` or
///   `;` between pairs and names percent-decoded to compare (`%74oken` is `token`);
/// - the OAuth `code` in a redirect's `Location`;
/// - request bodies' JSON members and form fields by the same names (Redactor+Body.swift).
///
/// Everything else is kept byte for byte (`%zz` stays `%zz`), so a URL that carried no
/// secret is re-sent exactly as it was. A value taken out reads ``placeholder``
/// (``urlPlaceholder`` in URLs).
public struct Redactor: Sendable {
    public static let placeholder = "[redacted]"
    /// The placeholder inside URLs, percent-encoded so the URL still parses (a query value
    /// reads `[redacted]` once decoded).
    public static let urlPlaceholder = "%5Bredacted%5D"
    /// Header names redacted whatever they contain (lower case).
    public var headers: Set<String>
    /// Query and fragment names redacted exactly (lower case).
    public var queryParameters: Set<String>
    /// Words that mark a header or parameter name as a credential wherever they appear in it.
    public var credentialWords: [String] {
        didSet { credentialWordBytes = Self.bytes(of: credentialWords) }
    }
    /// ``credentialWords`` as bytes, searched for in every name of every head redacted.
    private var credentialWordBytes: [[UInt8]]

    private static func bytes(of words: [String]) -> [[UInt8]] { words.map { Array($0.utf8) } }

    public init(headers: Set<String> = CredentialHeaders.names,
                queryParameters: Set<String> = ["access_token", "refresh_token", "id_token", "client_secret", "key", "sig",
                                                "x-amz-signature", "x-amz-credential", "x-amz-security-token", "x-goog-signature",
                                                "x-goog-credential", "auth", "pwd"],
                credentialWords: [String] = CredentialHeaders.words) {
        self.headers = headers
        self.queryParameters = queryParameters
        self.credentialWords = credentialWords
        credentialWordBytes = Self.bytes(of: credentialWords)
    }

    public func redact(_ event: RequestEvent) -> RequestEvent {
        var event = event
        switch event.payload {
        case .queued(let method, let url, let headerFields, let maxAttempts, let body, let options):
            event.payload = .queued(method: method, url: redact(url: url), headers: redact(headers: headerFields), maxAttempts: maxAttempts,
                                    body: redact(body: body, headers: headerFields), options: options)
        case .built(let method, let url, let headerFields, let body):
            event.payload = .built(method: method, url: redact(url: url), headers: redact(headers: headerFields),
                                   body: redact(body: body, headers: headerFields))
        case .taskCreated(let task, let url, let insecure):
            event.payload = .taskCreated(taskIdentifier: task, url: redact(url: url), insecure: insecure)
        case .redirect(let status, let location, let dropped, let refused):
            event.payload = .redirect(status: status, location: redact(url: location, oauthCode: true), dropped: dropped, refused: refused)
        case .response(let status, let headerFields, let expected, let version):
            event.payload = .response(status: status, headers: redact(headers: headerFields), expectedBytes: expected, httpVersion: version)
        case .responseBody(let body, let total, let truncated, let type):
            let redacted = redact(kept: body, truncated: truncated, mediaType: type,
                                  cut: "JSON cut at the body cap cannot be checked for secrets; raise --body-cap or use --no-redact")
            event.payload = .responseBody(body: redacted, totalBytes: total, truncated: truncated, mediaType: type)
        case .requestBody(let body, let total, let truncated, let type):
            let redacted = redact(kept: body, truncated: truncated, mediaType: type,
                                  cut: "JSON cut at the body limit cannot be checked for secrets; use --no-redact")
            event.payload = .requestBody(body: redacted, totalBytes: total, truncated: truncated, mediaType: type)
        case .headerFields(let side, let fields):
            event.payload = .headerFields(side: side, fields: redact(fields: fields))
        case .trailers(let side, let fields):
            event.payload = .trailers(side: side, fields: redact(fields: fields))
        default:
            break
        }
        return event
    }

    /// A body kept up to a cap (an answer's, a streamed upload's), by the rules of a request's
    /// body: secret-named JSON members and form pairs. A JSON body cut at the cap cannot be
    /// followed to its end, so it is left out, saying `cut`.
    private func redact(kept body: RecordedBody, truncated: Bool, mediaType: String?, cut: String) -> RecordedBody {
        let redacted = redact(body: body, headers: mediaType.map { ["Content-Type": $0] } ?? [:]) ?? body
        if truncated, case .omitted(let bytes, _) = redacted, case .bytes = body { return .omitted(bytes: bytes, reason: cut) }
        return redacted
    }

    public func isSecretHeader(_ name: String) -> Bool {
        isSecretHeader(lowered: name.lowercased())
    }

    private func isSecretHeader(lowered lower: String) -> Bool {
        headers.contains(lower) || hasCredentialWord(lower)
    }

    /// Whether a (lower-case) name holds one of ``credentialWords``: the name's bytes searched
    /// in place for each word. Through `Substring.UTF8View` slices (``contains(_:_:)``) this
    /// was ~6 % of a proxied request's instructions: each head's dozen names against ten
    /// words, several heads a request (#58).
    private func hasCredentialWord(_ name: String) -> Bool {
        var name = name
        return name.withUTF8 { name in credentialWordBytes.contains { word in word.withUnsafeBufferPointer { Self.find($0, in: name) } } }
    }

    private static func find(_ word: UnsafeBufferPointer<UInt8>, in text: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let first = word.first else { return true }
        guard word.count <= text.count else { return false }
        var start = 0
        while start <= text.count - word.count {
            if text[start] == first {
                var matched = 1
                while matched < word.count, text[start + matched] == word[matched] { matched += 1 }
                if matched == word.count { return true }
            }
            start += 1
        }
        return false
    }

    /// Whether `word` is in `text`, byte for byte: Foundation's `contains` (a `CFStringFind`
    /// on Linux) was a tenth of the proxy's CPU once each request's heads were redacted twice.
    static func contains(_ text: String, _ word: String) -> Bool {
        var text = text, word = word
        return text.withUTF8 { text in word.withUTF8 { word in find(word, in: text) } }
    }

    public func redact(headers fields: [String: String]) -> [String: String] {
        var out = fields
        for (key, value) in fields {
            // Lowered once per name (Foundation's caseInsensitiveCompare cost more than the
            // rest of the redaction of a small request's events).
            let lower = key.lowercased()
            if isSecretHeader(lowered: lower) {
                out[key] = Self.placeholder
            } else if lower == "location" || lower == "content-location" {
                out[key] = redact(url: value, oauthCode: true)
            }
        }
        return out
    }

    /// `fields` with the same rules as ``redact(headers:)``, each line apart, order kept.
    public func redact(fields: HTTPFields) -> HTTPFields {
        // Most heads hold no secret: given back as they are, nothing made.
        guard fields.contains(where: { field in
            let lower = field.name.canonicalName
            return isSecretHeader(lowered: lower) || lower == "location" || lower == "content-location"
        }) else { return fields }
        var out = HTTPFields()
        for field in fields {
            let lower = field.name.canonicalName
            if isSecretHeader(lowered: lower) {
                out.append(HTTPField(name: field.name, value: Self.placeholder))
            } else if lower == "location" || lower == "content-location" {
                out.append(HTTPField(name: field.name, value: redact(url: field.value, oauthCode: true)))
            } else {
                out.append(field)
            }
        }
        return out
    }

    /// Where `://` is in `text` (a URL's scheme ends), found without Foundation's
    /// `range(of:)`, which is slow on Linux and runs for every URL of every event.
    static func schemeSeparator(in text: Substring) -> Range<Substring.Index>? {
        var from = text.startIndex
        while let colon = text[from...].firstIndex(of: ":") {
            let after = text.index(after: colon)
            if text[after...].hasPrefix("//") { return colon..<text.index(after, offsetBy: 2) }
            from = after
        }
        return nil
    }

    /// Whether `url` has a `@`, `?` or `#`: without one it has no userinfo, query or fragment.
    static func mayHoldSecrets(url: String) -> Bool {
        url.utf8.contains { $0 == UInt8(ascii: "@") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }
    }

    /// Whether a query parameter, form field or JSON member so named is taken out.
    public func isSecretName(_ name: String) -> Bool {
        isSecretParameter(name, oauthCode: false)
    }

    func isSecretParameter(_ rawName: String, oauthCode: Bool) -> Bool {
        // Foundation's percent decoding only for a name that has a `%`: it was asked for every
        // member of every JSON body the proxy relays (a quarter of the redactor's time).
        let decoded = rawName.utf8.contains(UInt8(ascii: "%")) ? rawName.removingPercentEncoding ?? rawName : rawName
        let name = decoded.lowercased()
        if oauthCode, name == "code" { return true }
        return queryParameters.contains(name) || hasCredentialWord(name)
    }

    /// The URL with its userinfo and secret query and fragment values replaced, and every
    /// other byte as it was. `oauthCode` also takes out `code` (an OAuth redirect's).
    public func redact(url text: String, oauthCode: Bool = false) -> String {
        // Most URLs have no userinfo, query or fragment: nothing to take out, nothing made.
        guard Self.mayHoldSecrets(url: text) else { return text }
        var out = Substring(text)
        var result = ""
        // Userinfo: between "://" and the last "@" of the authority.
        if let scheme = Self.schemeSeparator(in: out) {
            let authorityStart = scheme.upperBound
            let authorityEnd = out[authorityStart...].firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? out.endIndex
            result += out[..<authorityStart]
            if let at = out[authorityStart..<authorityEnd].lastIndex(of: "@") {
                result += Self.urlPlaceholder
                result += out[at..<authorityEnd]
            } else {
                result += out[authorityStart..<authorityEnd]
            }
            out = out[authorityEnd...]
        }
        let fragmentStart = out.firstIndex(of: "#") ?? out.endIndex
        let queryStart = out[..<fragmentStart].firstIndex(of: "?") ?? fragmentStart
        result += out[..<queryStart]
        if queryStart < fragmentStart {
            result += "?"
            result += redactPairs(out[out.index(after: queryStart)..<fragmentStart], oauthCode: oauthCode)
        }
        if fragmentStart < out.endIndex {
            result += "#"
            result += redactPairs(out[out.index(after: fragmentStart)...], oauthCode: oauthCode)
        }
        return result
    }

    /// `name=value` pairs separated by `&` or `;`, with secret values replaced.
    func redactPairs(_ text: Substring, oauthCode: Bool) -> String {
        var result = ""
        var pieceStart = text.startIndex
        var index = text.startIndex
        func finish(_ piece: Substring) {
            if let equals = piece.firstIndex(of: "="), isSecretParameter(String(piece[..<equals]), oauthCode: oauthCode),
               piece.index(after: equals) < piece.endIndex {
                result += piece[...equals]
                result += Self.urlPlaceholder
            } else {
                result += piece
            }
        }
        while index < text.endIndex {
            if text[index] == "&" || text[index] == ";" {
                finish(text[pieceStart..<index])
                result.append(text[index])
                pieceStart = text.index(after: index)
            }
            index = text.index(after: index)
        }
        finish(text[pieceStart..<text.endIndex])
        return result
    }
}
