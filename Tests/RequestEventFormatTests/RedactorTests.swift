import RequestEventFormat
import RequestOperations
import XCTest

/// The one set of redaction rules, as a table: what goes in, what must come out. Each row
/// that leaked before is marked.
final class RedactorTests: XCTestCase {
    private let redactor = Redactor()
    private let r = Redactor.urlPlaceholder
    private let h = Redactor.placeholder

    func testURLs() {
        let table: [(String, String)] = [
            ("http://a.test/x?page=2&token=abc", "http://a.test/x?page=2&token=\(r)"),
            ("http://u:pw@a.test/x", "http://\(r)@a.test/x"),                                       // leaked
            ("https://user@a.test:8443/p?q=1", "https://\(r)@a.test:8443/p?q=1"),
            ("http://a.test/x?x=1;token=t", "http://a.test/x?x=1;token=\(r)"),                       // leaked
            ("http://a.test/cb#access_token=t&state=s", "http://a.test/cb#access_token=\(r)&state=s"), // leaked
            ("http://a.test/#section-2", "http://a.test/#section-2"),
            ("https://b.s3.test/o?X-Amz-Algorithm=AWS4&X-Amz-Credential=AK%2F1&X-Amz-Signature=ff&X-Amz-Security-Token=st",
             "https://b.s3.test/o?X-Amz-Algorithm=AWS4&X-Amz-Credential=\(r)&X-Amz-Signature=\(r)&X-Amz-Security-Token=\(r)"), // leaked
            ("http://a.test/x?%74oken=t&q=%zz", "http://a.test/x?%74oken=\(r)&q=%zz"),             // re-encoded before
            ("http://a.test/x?q=a%20b&api_key=k&sessionid=s&key=g", "http://a.test/x?q=a%20b&api_key=\(r)&sessionid=\(r)&key=\(r)"),
            ("http://a.test/x?code=US", "http://a.test/x?code=US"),
            ("http://a.test/x?token=", "http://a.test/x?token="),
            ("http://a.test/x?token", "http://a.test/x?token"),
            ("http://a.test/plain/path", "http://a.test/plain/path"),                                  // nothing to look at
            ("not a url", "not a url"),
            ("", ""),
        ]
        for (input, expected) in table {
            XCTAssertEqual(redactor.redact(url: input), expected, input)
        }
        XCTAssertEqual(redactor.redact(url: "https://app.test/cb?code=oauth-code&state=s", oauthCode: true), "https://app.test/cb?code=\(r)&state=s")
    }

    func testHeaders() {
        let input = ["Authorization": "Bearer t", "Proxy-Authorization": "Basic x", "Cookie": "a=b", "Set-Cookie": "s=1",
                     "X-Api-Key": "k", "X-Auth-Token": "t", "X-Amz-Security-Token": "st", "X-Client-Secret": "s",
                     "X-Session-Id": "s", "Accept": "application/json", "Location": "https://app.test/cb?code=c&state=s",
                     "X-Request-Id": "r-1"]
        let out = redactor.redact(headers: input)
        for name in ["Authorization", "Proxy-Authorization", "Cookie", "Set-Cookie", "X-Api-Key", "X-Auth-Token",  // the last two leaked
                     "X-Amz-Security-Token", "X-Client-Secret", "X-Session-Id"] {
            XCTAssertEqual(out[name], h, name)
        }
        XCTAssertEqual(out["Accept"], "application/json")
        XCTAssertEqual(out["X-Request-Id"], "r-1")
        XCTAssertEqual(out["Location"], "https://app.test/cb?code=\(r)&state=s", "the OAuth code in a redirect")  // leaked
    }

    /// Each credential word wherever it sits in a name (start, middle, end, the whole name),
    /// and near misses kept; words set after the redactor was made are the ones searched.
    func testCredentialWordsAnywhereInANameAndNowhereElse() {
        for word in CredentialHeaders.words {
            for name in [word, "x-\(word)", "\(word)-id", "a\(word)b"] {
                XCTAssert(redactor.isSecretHeader(name.uppercased()), name)
                XCTAssertEqual(redactor.redact(url: "http://a.test/?\(name)=v"), "http://a.test/?\(name)=\(r)", name)
            }
            let nearMiss = String(word.dropLast())
            XCTAssertFalse(redactor.isSecretHeader("x-\(nearMiss)"), nearMiss)
        }
        XCTAssertFalse(redactor.isSecretHeader("t"))
        XCTAssertFalse(redactor.isSecretHeader(""))
        var custom = Redactor()
        custom.credentialWords = ["pin"]
        XCTAssert(custom.isSecretHeader("X-Card-PIN"))
        XCTAssertFalse(custom.isSecretHeader("X-Auth-Token"))
    }

    func testEvents() {
        let redirect = redactor.redact(RequestEvent(time: 0, operationID: "a", attempt: 1,
                                                    payload: .redirect(status: 302, location: "https://app.test/cb?code=c")))
        XCTAssertEqual(redirect.payload, .redirect(status: 302, location: "https://app.test/cb?code=\(r)"))
        let queued = redactor.redact(RequestEvent(time: 0, operationID: "a", attempt: 1,
                                                  payload: .queued(method: "GET", url: "http://u:p@a.test/?token=t", headers: ["X-Api-Key": "k"], maxAttempts: 1)))
        XCTAssertEqual(queued.payload, .queued(method: "GET", url: "http://\(r)@a.test/?token=\(r)", headers: ["X-Api-Key": h], maxAttempts: 1))
    }

    /// A proxy's heads as they were said are redacted line by line by the same rules, their
    /// order and the lines that carry no secret kept; a streamed upload's body by its names.
    func testHeadsAsSaidAndStreamedUploadsAreRedacted() {
        let fields = FieldMerge.fields([("X-Zeta", "1"), ("Cookie", "a=1"), ("Authorization", "Bearer t"), ("Cookie", "b=2"),
                                        ("Location", "https://app.test/cb?code=c"), ("x-api-key", "k")])
        let event = redactor.redact(RequestEvent(time: 0, operationID: "a", attempt: 1, payload: .headerFields(side: .request, fields: fields)))
        guard case .headerFields(.request, let out) = event.payload else { return XCTFail("\(event)") }
        XCTAssertEqual(out.map { "\($0.name.rawName): \($0.value)" },
                       ["X-Zeta: 1", "Cookie: \(h)", "Authorization: \(h)", "Cookie: \(h)", "Location: https://app.test/cb?code=\(r)", "x-api-key: \(h)"])
        let upload = redactor.redact(RequestEvent(time: 0, operationID: "a", attempt: 1,
                                                  payload: .requestBody(body: .bytes(Data("user=a&password=p".utf8)), totalBytes: 17, truncated: false,
                                                                        mediaType: "application/x-www-form-urlencoded")))
        guard case .requestBody(.bytes(let data), _, _, _) = upload.payload else { return XCTFail("\(upload)") }
        XCTAssertFalse(String(decoding: data, as: UTF8.self).contains("password=p"), String(decoding: data, as: UTF8.self))
    }

    /// Request bodies are recorded now, so they are redacted by the same names.
    func testBodies() {
        let json = ["Content-Type": "application/json"]
        func body(_ text: String, _ headers: [String: String] = [:]) -> String {
            switch redactor.redact(body: .bytes(Data(text.utf8)), headers: headers) {
            case .bytes(let data)?: String(decoding: data, as: UTF8.self)
            case .omitted(_, let reason)?: "omitted: \(reason)"
            case nil: "nil"
            }
        }
        let table: [(String, [String: String], String)] = [
            (#"{"username":"ann","password":"s3cret"}"#, json, #"{"username":"ann","password":"[redacted]"}"#),
            // every other byte kept: spacing, order, escapes, numbers
            (#"{ "a" : 1.50e2 ,"client_secret":  "x\"y" , "b":[true,null] }"#, [:], #"{ "a" : 1.50e2 ,"client_secret":  "[redacted]" , "b":[true,null] }"#),
            // nested, in arrays, and whole values under a credential's name
            (#"[{"user":{"api_key":123}},{"credentials":{"user":"a","password":"b"}}]"#, json,
             #"[{"user":{"api_key":"[redacted]"}},{"credentials":"[redacted]"}]"#),
            // an escaped name is still the name
            (#"{"pass\u0077ord":"p"}"#, json, #"{"pass\u0077ord":"[redacted]"}"#),
            // a percent-encoded name is still the name (decoded only when it has a `%`)
            (#"{"access%5Ftoken":"t","plain":"v"}"#, json, #"{"access%5Ftoken":"[redacted]","plain":"v"}"#),
            ("access%5Ftoken=t&plain=v", ["Content-Type": "application/x-www-form-urlencoded"], "access%5Ftoken=\(r)&plain=v"),
            (#"{"page":2,"tokenless":false}"#, json, #"{"page":2,"tokenless":"[redacted]"}"#),
            ("grant_type=password&username=a&password=p%20q&client_secret=s", ["content-type": "application/x-www-form-urlencoded"],
             "grant_type=password&username=a&password=\(r)&client_secret=\(r)"),
            ("password=p", ["Content-Type": "text/plain"], "password=p"),
            (#"{"password":"p""#, json, "omitted: not JSON reqtop can read, so not recorded in case it holds a secret"),
            (#"{"password":"p"} trailing"#, [:], "omitted: not JSON reqtop can read, so not recorded in case it holds a secret"),
            (String(repeating: "[", count: 600) + String(repeating: "]", count: 600), json,
             "omitted: not JSON reqtop can read, so not recorded in case it holds a secret"),
            ("", json, "omitted: not JSON reqtop can read, so not recorded in case it holds a secret"),
        ]
        for (input, headers, expected) in table {
            XCTAssertEqual(body(input, headers), expected, input)
        }
        let binary = RecordedBody.bytes(Data([0xFF, 0x00, 0x7B]))
        XCTAssertEqual(redactor.redact(body: binary, headers: json), binary, "binary bodies are kept")
        XCTAssertEqual(Redactor.redactedFields(body: Data(#"{"a":{"password":"[redacted]"},"token":"[redacted]","b":"c"}"#.utf8), headers: json),
                       ["password", "token"])
        XCTAssertEqual(Redactor.redactedFields(body: Data("a=1&password=\(r)".utf8), headers: ["Content-Type": "application/x-www-form-urlencoded"]),
                       ["password"])
        let built = redactor.redact(RequestEvent(time: 0, operationID: "a", attempt: 1,
                                                 payload: .built(method: "POST", url: "http://a.test/?sig=s", headers: ["Content-Type": "application/json"],
                                                                 body: .bytes(Data(#"{"refresh_token":"t"}"#.utf8)))))
        XCTAssertEqual(built.payload, .built(method: "POST", url: "http://a.test/?sig=\(r)", headers: ["Content-Type": "application/json"],
                                             body: .bytes(Data(#"{"refresh_token":"[redacted]"}"#.utf8))))
    }

    /// An answer's body is redacted by the request bodies' rules, and a server that echoes
    /// the request's secrets (its Authorization, its body's password) does not show them.
    func testResponseBodiesAreRedactedAndEchoedSecretsScrubbed() {
        let stream = StreamRedactor()
        _ = stream.redact(RequestEvent(time: 0, operationID: "op", attempt: 1, payload: .queued(
            method: "POST", url: "http://h/login", headers: ["Authorization": "Bearer t0ken-abc", "Content-Type": "application/json"],
            maxAttempts: 1, body: .bytes(Data(#"{"user":"me","password":"hunter22"}"#.utf8)))))
        let echoed = #"{"session":"s3ss10n-xyz","echo":"Bearer t0ken-abc sent hunter22"}"#
        let event = stream.redact(RequestEvent(time: 1, operationID: "op", attempt: 1, payload: .responseBody(
            body: .bytes(Data(echoed.utf8)), totalBytes: echoed.utf8.count, truncated: false, mediaType: "application/json")))
        guard case .responseBody(.bytes(let data), _, _, _) = event.payload else { return XCTFail("\(event)") }
        let text = String(decoding: data, as: UTF8.self)
        XCTAssertEqual(text, #"{"session":"[redacted]","echo":"[redacted] sent [redacted]"}"#)

        let cut = Redactor().redact(RequestEvent(time: 1, operationID: "op", attempt: 1, payload: .responseBody(
            body: .bytes(Data(#"{"token":"abc","#.utf8)), totalBytes: 9000, truncated: true, mediaType: "application/json")))
        guard case .responseBody(.omitted(_, let reason), 9000, true, _) = cut.payload else { return XCTFail("\(cut)") }
        XCTAssertTrue(reason.contains("cut at the body cap"), reason)
    }
}

/// The secrets taken from answers: longest first, the oldest forgotten past the limit.
final class DerivedSecretsTests: XCTestCase {
    func testValuesAreKeptLongestFirstAndTheOldestGoFirst() {
        let secrets = DerivedSecrets()
        secrets.add("short1")
        secrets.add("a-much-longer-token")
        secrets.add("tiny")
        XCTAssertEqual(secrets.all, ["a-much-longer-token", "short1"], "under 6 characters is not kept")
        secrets.add("with space")
        XCTAssert(secrets.all.contains("with%20space"), "its URL form too: \(secrets.all)")
        for index in 0..<DerivedSecrets.limit { secrets.add("token-\(index)") }
        XCTAssertEqual(secrets.all.count, DerivedSecrets.limit)
        XCTAssertFalse(secrets.all.contains("a-much-longer-token"), "the oldest went first")
        XCTAssert(secrets.all.contains("token-\(DerivedSecrets.limit - 1)"))
    }

    /// Userinfo is found after the first `://`, whatever comes before it, and a URL without one
    /// is left as it was (the scheme's end is found by hand, not with Foundation's range(of:)).
    func testUserinfoIsFoundAfterTheSchemeWhereverThatEnds() {
        let redactor = Redactor()
        XCTAssertEqual(redactor.redact(url: "https://ann:pw@api.test/x?token=1"), "https://\(Redactor.urlPlaceholder)@api.test/x?token=\(Redactor.urlPlaceholder)")
        XCTAssertEqual(redactor.redact(url: "git+ssh:x://ann:pw@host/"), "git+ssh:x://\(Redactor.urlPlaceholder)@host/")
        XCTAssertEqual(redactor.redact(url: "mailto:ann@example.com"), "mailto:ann@example.com")
        XCTAssertEqual(redactor.redact(url: "http:/"), "http:/")
        XCTAssertEqual(redactor.redact(url: "http://"), "http://")
        XCTAssertEqual(redactor.redact(headers: ["LOCATION": "https://a.test/cb?code=abc", "X-Api-Key": "k", "Accept": "*/*"]),
                       ["LOCATION": "https://a.test/cb?code=\(Redactor.urlPlaceholder)", "X-Api-Key": Redactor.placeholder, "Accept": "*/*"])
    }
}
