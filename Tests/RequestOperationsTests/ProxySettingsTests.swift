import Foundation
import RequestTransportNIO
import Testing

/// The environment read with curl's rules, so both transports go the same way.
@Suite("Proxy settings")
struct ProxySettingsTests {
    @Test func curlsRulesForTheEnvironment() {
        let settings = ProxySettings.fromEnvironment(["http_proxy": "proxy:3128", "HTTP_PROXY": "http://evil:1",
                                                     "HTTPS_PROXY": "http://secure:8080", "NO_PROXY": " .internal.example, 10.0.0.1:80 ,localhost"])
        #expect(settings.http == URL(string: "http://proxy:3128"), "host:port means http://; HTTP_PROXY in capitals is ignored (httpoxy)")
        #expect(settings.https == URL(string: "http://secure:8080"))
        #expect(settings.noProxy == ["internal.example", "10.0.0.1", "localhost"])
        #expect(settings.proxy(for: URL(string: "http://api.example.com/")!) == URL(string: "http://proxy:3128"))
        #expect(settings.proxy(for: URL(string: "https://api.example.com/")!) == URL(string: "http://secure:8080"))
        #expect(settings.proxy(for: URL(string: "http://a.internal.example/")!) == nil, "a subdomain of a NO_PROXY entry")
        #expect(settings.proxy(for: URL(string: "http://internal.example/")!) == nil)
        #expect(settings.proxy(for: URL(string: "http://notinternal.example/")!) != nil, "a suffix that is no subdomain")
        #expect(settings.proxy(for: URL(string: "http://10.0.0.1:8080/")!) == nil)
        #expect(ProxySettings.fromEnvironment(["all_proxy": "http://p:1", "no_proxy": "*"]).proxy(for: URL(string: "https://x/")!) == nil)
        #expect(ProxySettings.fromEnvironment(["all_proxy": "http://p:1"]).proxy(for: URL(string: "https://x/")!) == URL(string: "http://p:1"))
        #expect(ProxySettings.fromEnvironment(["https_proxy": "socks5://p:1"]).https == nil)
        #expect(ProxySettings.problems(in: ["https_proxy": "socks5://p:1"]) == ["https_proxy is not an http:// proxy URL; it is ignored"])
    }
}
