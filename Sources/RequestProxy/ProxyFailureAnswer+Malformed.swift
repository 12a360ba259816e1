import NIOHTTP1

extension ProxyFailureAnswer {
    /// The answer to a request NIO's HTTP/1 parser could not read, naming what was wrong (a
    /// client's developer reads it in the body and in `Proxy-Status`): 431 for a head too
    /// large to read, 400 for the rest. The connection closes after it: where the next request
    /// would begin is not known.
    init(malformed error: HTTPParserError) {
        let (status, problem) = Self.describe(error)
        self.init(status: status, errorType: "http_request_error", message: "the request could not be read: \(problem)")
    }

    private static func describe(_ error: HTTPParserError) -> (status: Int, problem: String) {
        switch error {
        case .headerOverflow:
            return (431, "its head is larger than the proxy reads")
        case .invalidCharactersUsed, .invalidHeaderToken, .invalidConstant:
            return (400, "its head has a character HTTP does not allow there")
        case .lfExpected, .strictModeAssertion:
            return (400, "a line of its head does not end as HTTP/1.1 says (CRLF)")
        case .invalidMethod:
            return (400, "its method is not a token")
        case .invalidURL:
            return (400, "its target is not a URI")
        case .invalidVersion:
            return (400, "its HTTP version is not one the proxy speaks")
        case .invalidContentLength:
            return (400, "its Content-Length is not one number")
        case .unexpectedContentLength:
            // Two lengths: read by one here and the other upstream, a second request could hide
            // in the body (request smuggling).
            return (400, "it has more than one Content-Length")
        case .invalidChunkSize:
            return (400, "a chunk's size is not a hexadecimal number")
        case .trailingGarbage:
            return (400, "what follows it is not a request")
        default:
            // NIO's `unknown` holds llhttp's errors it has no case for: a Content-Length beside
            // Transfer-Encoding (the smuggler's other framing) and a CR not followed by LF.
            return (400, "its framing or a line's end is not HTTP/1.1's (Content-Length beside Transfer-Encoding, a CR without LF)")
        }
    }
}
