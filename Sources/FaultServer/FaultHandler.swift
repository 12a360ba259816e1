import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix

/// Serves one connection: collects a request, then carries out its ``FaultRoute``.
final class FaultHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let counters: FaultCounters
    private let logger: Logger
    private var head: HTTPRequestHead?
    private var body = ByteBuffer()
    /// `/sink`: the body is counted and hashed as it arrives, never kept.
    private var sink: BodyDigest?
    /// `/sink?hash=0`: the body is counted only.
    private var sinkHashes = true
    /// Requests answered on this connection so far: `/drop-reused` drops a connection that
    /// already served one.
    private var answered = 0

    /// Answers from a recording instead of the routes (`reqtop serve --from`).
    let script: ScriptedAnswers?

    init(counters: FaultCounters, logger: Logger, script: ScriptedAnswers? = nil) {
        self.script = script
        self.counters = counters
        self.logger = logger
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body.clear()
            let components = URLComponents(string: head.uri)
            let path = components?.path ?? head.uri
            sink = path == "/sink" ? BodyDigest() : nil
            sinkHashes = components?.queryItems?.first { $0.name == "hash" }?.value != "0"
            counters.recordHead(path)
        case .body(var chunk):
            if sink != nil {
                if sinkHashes { sink?.add(chunk.readableBytesView) } else { sink?.count(chunk.readableBytes) }
            } else {
                body.writeBuffer(&chunk)
            }
        case .end:
            guard let head else { return }
            self.head = nil
            let path = URLComponents(string: head.uri)?.path ?? head.uri
            var headers: [String: String] = [:]
            for (name, value) in head.headers { headers[name.lowercased()] = value }
            counters.recordHit(path, .init(method: head.method.rawValue, uri: head.uri, headers: headers, body: Data(body.readableBytesView)))
            defer { answered += 1 }
            if let script {
                serve(script, head: head, context: context)
            } else {
                serve(FaultRoute.parse(head.uri), head: head, context: context)
            }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        logger.debug("connection error", metadata: ["error": "\(error)"])
        context.close(promise: nil)
    }

    private func serve(_ route: FaultRoute, head: HTTPRequestHead, context: ChannelHandlerContext) {
        let keepAlive = head.isKeepAlive
        switch route {
        case .index:
            respond(context, status: 200, body: FaultRoute.routeList, keepAlive: keepAlive)
        case .notFound(let path):
            respond(context, status: 404, body: "no route \(path)\n\n" + FaultRoute.routeList, keepAlive: keepAlive)
        case .status(let code, let retryAfter, let retryAfterDate, let scheme):
            var headers: [(String, String)] = []
            if let retryAfter { headers.append(("Retry-After", retryAfter)) }
            if let retryAfterDate { headers.append(("Retry-After", Self.httpDate(Date().addingTimeInterval(retryAfterDate)))) }
            if let scheme { headers.append(("WWW-Authenticate", "\(scheme) realm=\"reqtop\"")) }
            respond(context, status: code, headers: headers, body: "status \(code)\n", keepAlive: keepAlive)
        case .delay(let milliseconds, let status):
            let loop = context.eventLoop.assumeIsolated()
            loop.scheduleTask(in: .milliseconds(Int64(milliseconds))) { [self] in
                respond(context, status: status, body: "delayed \(milliseconds) ms\n", keepAlive: keepAlive)
            }
        case .bytes(let count, let seed):
            var bytes = SeededBytes(seed: seed)
            let allocator = context.channel.allocator
            sendInParts(context, count: count, partSize: 256 << 10, keepAlive: keepAlive) { size in
                var part = allocator.buffer(capacity: size)
                bytes.write(size, into: &part)
                return part
            }
        case .zeros(let count):
            // Slices of one 1 MiB buffer (they share its storage): as fast as loopback takes.
            var block = context.channel.allocator.buffer(capacity: 1 << 20)
            block.writeRepeatingByte(0, count: 1 << 20)
            sendInParts(context, count: count, partSize: block.readableBytes, keepAlive: keepAlive) { size in
                block.getSlice(at: 0, length: size)!
            }
        case .gzip(let count, let seed, let broken, let zeros, let chunked):
            let body: [UInt8]
            if zeros {
                body = ZerosGzip.encode(count: count)
            } else {
                let plain = FaultServer.expectedBytes(count: count, seed: seed)
                body = broken ? plain : StoredGzip.encode(plain)
            }
            var buffer = context.channel.allocator.buffer(capacity: body.count)
            buffer.writeBytes(body)
            respond(context, status: 200, headers: [("Content-Type", "application/octet-stream"), ("Content-Encoding", "gzip")],
                    buffer: buffer, keepAlive: keepAlive, withLength: !chunked)
        case .drip(let bytes, let duration, let chunks):
            drip(context, bytes: bytes, durationMilliseconds: duration, chunks: chunks, keepAlive: keepAlive)
        case .redirect(let remaining, let status):
            if remaining == 0 {
                respond(context, status: 200, body: "end of the redirect chain\n", keepAlive: keepAlive)
            } else {
                respond(context, status: status, headers: [("Location", "/redirect/\(remaining - 1)?status=\(status)")],
                        body: "", keepAlive: keepAlive)
            }
        case .setCookie(let name, let value, let attributes, let redirect):
            var headers = [("Set-Cookie", "\(name)=\(value)\(attributes)")]
            if let redirect { headers.append(("Location", redirect)) }
            respond(context, status: redirect == nil ? 200 : 302, headers: headers, body: "cookie \(name) set\n", keepAlive: keepAlive)
        case .echoAuth:
            let authorization = head.headers.first(name: "Authorization") ?? ""
            let credential = authorization.split(separator: " ").last.map(String.init) ?? ""
            respond(context, status: 401, headers: [
                ("WWW-Authenticate", "Bearer error=\"invalid_token\", token=\"\(credential)\""),
                ("X-Echo-Auth", authorization),
                ("Content-Location", "/login?token=\(credential)"),
            ], body: "{\"error\": \"bad credential \(authorization)\"}\n", keepAlive: keepAlive)
        case .rawStatus(let code, let bodyBytes):
            writeRaw(context, "HTTP/1.1 \(code) X\r\nContent-Length: \(bodyBytes)\r\nConnection: close\r\n\r\n"
                     + String(repeating: "x", count: bodyBytes))
        case .redirectTo(let location, let status):
            respond(context, status: status, headers: [("Location", location)], body: "", keepAlive: keepAlive)
        case .flaky(let key, let failures, let failure, let retryAfter, let delay):
            let hit = counters.nextFlakyHit(key)
            let wait = hit <= failures ? delay.failing : delay.succeeding
            let answer = { [self] in
                guard hit <= failures else {
                    respond(context, status: 200, body: "ok after \(failures) failures (hit \(hit))\n", keepAlive: keepAlive)
                    return
                }
                switch failure {
                case .status(let code):
                    let headers = retryAfter.map { [("Retry-After", $0)] } ?? []
                    respond(context, status: code, headers: headers, body: "failure \(hit) of \(failures)\n", keepAlive: keepAlive)
                case .drop:
                    context.close(promise: nil)
                case .reset:
                    reset(context)
                case .slow:
                    respond(context, status: 200, body: "slow hit \(hit)\n", keepAlive: keepAlive)
                case .cut:
                    closeMidBody(context, bytes: 64)
                }
            }
            if wait == 0 {
                answer()
            } else {
                context.eventLoop.assumeIsolated().scheduleTask(in: .milliseconds(Int64(wait))) { answer() }
            }
        case .closeMidBody(let bytes):
            closeMidBody(context, bytes: bytes)
        case .overlong(let bytes, let extra):
            writeRaw(context, "HTTP/1.1 200 OK\r\nContent-Length: \(bytes)\r\nContent-Type: text/plain\r\n\r\n"
                     + String(repeating: "x", count: bytes) + String(repeating: "!", count: extra))
        case .reset:
            reset(context)
        case .hang:
            break
        case .dropReused:
            if answered > 0 {
                context.close(promise: nil)
            } else {
                json(context, status: 200, ["bodyBytes": body.readableBytes], keepAlive: keepAlive)
            }
        case .echo:
            echo(context, head: head, keepAlive: keepAlive)
        case .sink:
            let digest = sink ?? BodyDigest()
            let answer: [String: Any] = sinkHashes ? ["bodyBytes": digest.count, "fnv1a": digest.hex] : ["bodyBytes": digest.count]
            json(context, status: 200, answer, keepAlive: keepAlive)
        case .authToken(let ttl, let delay, let failStatus):
            let credentials = (try? JSONSerialization.jsonObject(with: Data(body.readableBytesView))) as? [String: Any]
            after(delay, context) { [self] in
                if let failStatus {
                    json(context, status: failStatus, ["error": "token route told to fail with \(failStatus)"], keepAlive: keepAlive)
                    return
                }
                guard let user = credentials?["username"] as? String, !user.isEmpty, credentials?["password"] as? String == "secret" else {
                    json(context, status: 403, ["error": "bad credentials: send {\"username\": ..., \"password\": \"secret\"}"], keepAlive: keepAlive)
                    return
                }
                let token = counters.issueToken(user: user, ttl: ttl)
                json(context, status: 200, ["token": token, "expiresIn": ttl], keepAlive: keepAlive)
            }
        case .authExpire:
            counters.expireToken()
            json(context, status: 200, ["expired": true], keepAlive: keepAlive)
        case .authResource(let name, let delay):
            let authorization = head.headers.first(name: "Authorization") ?? ""
            let token = authorization.hasPrefix("Bearer ") ? String(authorization.dropFirst(7)) : ""
            // Checked when the answer goes out, so a token replaced during the delay is refused.
            after(delay, context) { [self] in
                guard let user = counters.user(of: token) else {
                    json(context, status: 401, ["error": token.isEmpty ? "no token" : "invalid_token"],
                         headers: [("WWW-Authenticate", "Bearer realm=\"reqtop\", error=\"invalid_token\"")], keepAlive: keepAlive)
                    return
                }
                json(context, status: 200, ["resource": name, "user": user, "id": 42, "token": token], keepAlive: keepAlive)
            }
        }
    }

    /// Runs `work` after `milliseconds` on the connection's event loop (at once for 0).
    private func after(_ milliseconds: Int, _ context: ChannelHandlerContext, _ work: @escaping () -> Void) {
        guard milliseconds > 0 else {
            work()
            return
        }
        context.eventLoop.assumeIsolated().scheduleTask(in: .milliseconds(Int64(milliseconds))) { work() }
    }

    private func json(_ context: ChannelHandlerContext, status: Int, _ object: [String: Any], headers: [(String, String)] = [],
                      keepAlive: Bool) {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        var buffer = context.channel.allocator.buffer(capacity: data.count)
        buffer.writeBytes(data)
        respond(context, status: status, headers: [("Content-Type", "application/json")] + headers, buffer: buffer, keepAlive: keepAlive)
    }

    /// A 200 of `count` bytes, sent part by part as the connection takes them: a body of any
    /// size costs one part of memory. `part(n)` makes the next `n` bytes.
    private func sendInParts(_ context: ChannelHandlerContext, count: Int, partSize: Int, keepAlive: Bool,
                             part: @escaping (Int) -> ByteBuffer) {
        var head = HTTPResponseHead(version: .http1_1, status: .ok)
        head.headers.add(name: "Content-Type", value: "application/octet-stream")
        head.headers.add(name: "Content-Length", value: "\(count)")
        if !keepAlive { head.headers.add(name: "Connection", value: "close") }
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        let bound = NIOLoopBound((context, part), eventLoop: context.eventLoop)
        func send(_ left: Int) {
            let (context, part) = bound.value
            guard left > 0 else {
                let done = context.writeAndFlush(wrapOutboundOut(.end(nil)))
                if !keepAlive { done.assumeIsolated().whenComplete { _ in bound.value.0.close(promise: nil) } }
                return
            }
            let piece = part(min(left, partSize))
            context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(piece)))).assumeIsolated().whenComplete { result in
                // The next part as a new task, never from inside this callback: a fast reader
                // completes each write at once, and calling `send` here recursed a stack frame
                // per part until the event loop's thread overflowed (about 1.25 GB in).
                guard case .success = result else { return }
                bound.value.0.eventLoop.assumeIsolated().execute { send(left - piece.readableBytes) }
            }
        }
        send(count)
    }

    /// Promises `bytes`, sends half, closes the connection.
    private func closeMidBody(_ context: ChannelHandlerContext, bytes: Int) {
        var head = HTTPResponseHead(version: .http1_1, status: .ok)
        head.headers.add(name: "Content-Length", value: "\(bytes)")
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        var buffer = context.channel.allocator.buffer(capacity: bytes / 2)
        buffer.writeRepeatingByte(UInt8(ascii: "x"), count: bytes / 2)
        context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(buffer)))).assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
    }

    /// Writes `text` as it is, under the response encoder (which only encodes statuses it
    /// knows), and closes the connection.
    private func writeRaw(_ context: ChannelHandlerContext, _ text: String) {
        guard let encoder = try? context.pipeline.syncOperations.context(handlerType: HTTPResponseEncoder.self) else {
            context.close(promise: nil)
            return
        }
        var buffer = context.channel.allocator.buffer(capacity: text.utf8.count)
        buffer.writeString(text)
        // A write from the encoder's context goes to the handlers before it: the socket.
        // Closed from there too: the server pipeline handler would hold a close until a
        // response it saw ends.
        // The callback runs on the event loop: the context goes in bound to it.
        let bound = NIOLoopBound(encoder, eventLoop: context.eventLoop)
        encoder.writeAndFlush(NIOAny(buffer)).whenComplete { _ in bound.value.close(promise: nil) }
    }

    func respond(_ context: ChannelHandlerContext, status: Int, headers: [(String, String)] = [], body: String, keepAlive: Bool) {
        var buffer = context.channel.allocator.buffer(capacity: body.utf8.count)
        buffer.writeString(body)
        respond(context, status: status, headers: [("Content-Type", "text/plain; charset=utf-8")] + headers, buffer: buffer, keepAlive: keepAlive)
    }

    /// - Parameter withLength: false: no `Content-Length` (the encoder then sends it chunked).
    /// - Parameter withBody: false: the length is said but the body not sent (an answer to `HEAD`).
    func respond(_ context: ChannelHandlerContext, status: Int, headers: [(String, String)], buffer: ByteBuffer, keepAlive: Bool,
                 withLength: Bool = true, withBody: Bool = true) {
        var head = HTTPResponseHead(version: .http1_1, status: HTTPResponseStatus(statusCode: status))
        for (name, value) in headers { head.headers.add(name: name, value: value) }
        if withLength && status != 204 && status != 304 { head.headers.add(name: "Content-Length", value: "\(buffer.readableBytes)") }
        if !keepAlive { head.headers.add(name: "Connection", value: "close") }
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        if withBody && buffer.readableBytes > 0 {
            context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
        }
        let done = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if !keepAlive {
            done.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
        }
    }

    private func drip(_ context: ChannelHandlerContext, bytes: Int, durationMilliseconds: Int, chunks: Int, keepAlive: Bool) {
        var head = HTTPResponseHead(version: .http1_1, status: .ok)
        head.headers.add(name: "Content-Type", value: "application/octet-stream")
        head.headers.add(name: "Content-Length", value: "\(bytes)")
        context.writeAndFlush(wrapOutboundOut(.head(head)), promise: nil)
        let loop = context.eventLoop.assumeIsolated()
        let pieces = min(chunks, max(1, bytes))
        let interval = Int64(durationMilliseconds) / Int64(pieces)
        var sent = 0
        for index in 1...pieces {
            let size = index == pieces ? bytes - sent : bytes / pieces
            sent += size
            loop.scheduleTask(in: .milliseconds(interval * Int64(index))) { [self] in
                guard context.channel.isActive else { return }
                if size > 0 {
                    var buffer = context.channel.allocator.buffer(capacity: size)
                    buffer.writeRepeatingByte(UInt8(ascii: "."), count: size)
                    context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
                }
                if index == pieces {
                    let done = context.writeAndFlush(wrapOutboundOut(.end(nil)))
                    if !keepAlive { done.assumeIsolated().whenComplete { _ in context.close(promise: nil) } }
                } else {
                    context.flush()
                }
            }
        }
    }

    func reset(_ context: ChannelHandlerContext) {
        // SO_LINGER with a zero timeout makes close() send RST instead of FIN.
        guard let provider = context.channel as? SocketOptionProvider else {
            context.close(promise: nil)
            return
        }
        provider.setSoLinger(linger(l_onoff: 1, l_linger: 0))
            .assumeIsolated()
            .whenComplete { _ in context.close(promise: nil) }
    }

    private func echo(_ context: ChannelHandlerContext, head: HTTPRequestHead, keepAlive: Bool) {
        let components = URLComponents(string: head.uri)
        var query: [String: String] = [:]
        for item in components?.queryItems ?? [] { query[item.name] = item.value ?? "" }
        var headers: [String: String] = [:]
        for (name, value) in head.headers { headers[name.lowercased()] = value }
        let bodyText = body.getString(at: body.readerIndex, length: body.readableBytes) ?? ""
        var object: [String: Any] = [
            "method": head.method.rawValue,
            "path": components?.path ?? head.uri,
            "query": query,
            "headers": headers,
            "body": bodyText,
        ]
        // The head's lines as they came: their order, repeats apart, names as spelled.
        if query["fields"] == "1" { object["fields"] = head.headers.map { [$0.name, $0.value] } }
        json(context, status: 200, object, keepAlive: keepAlive)
    }

    static func httpDate(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }
}
