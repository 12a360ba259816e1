import Foundation
import XCTest

/// A raw HTTP/2 client for the proxy's tests: Python's `h2` through `CONNECT`, with TLS (ALPN
/// h2) or with prior knowledge, each stream's status, bytes, reset and trailers reported.
extension XCTestCase {
    struct H2Answer: Decodable, CustomStringConvertible {
        struct Stream: Decodable {
            var status: String?
            var bytes: Int
            var reset: Int?
            /// The fields after the body, `name: value`.
            var trailers: [String]?
        }
        var order: [Int]
        var streams: [Int: Stream]
        var description: String { "order \(order), streams \(streams)" }
    }

    /// Runs Python's `h2` through `CONNECT 127.0.0.1:port`: `mode` `tls:CAFILE` (ALPN h2) or
    /// `plain` (prior knowledge). Requests: `GET path` sent at once, `RESET path` reset by the
    /// client after 0.5 s, `STALL path` whose data the client never makes room for again (its
    /// window stays shut), `TRAILERS path` a POST whose body is followed by trailers, `LATER path`
    /// sent once the first stream ended.
    func runH2(proxy: ProxyUnderTest, port: Int, mode: String, requests: [String]) throws -> H2Answer {
        guard (try? run("/usr/bin/python3", ["-c", "import h2"]).status) == 0 else {
            if ProcessInfo.processInfo.environment["CI"] == "true" { XCTFail("python3-h2 is missing: .ci/run installs it") }
            throw XCTSkip("python3-h2 is not installed")
        }
        let result = try run("/usr/bin/python3", ["-c", Self.h2Client, String(proxy.server.port), String(port), mode] + requests, timeout: 60)
        XCTAssertEqual(result.status, 0, result.stderr)
        let line = result.stdout.split(separator: "\n").last.map(String.init) ?? ""
        return try JSONDecoder().decode(H2Answer.self, from: Data(line.utf8))
    }

    static let h2Client = """
    import json, socket, ssl, sys, time
    import h2.config, h2.connection, h2.events
    proxy_port, port, mode, requests = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4:]
    host = "localhost" if mode.startswith("tls:") else "127.0.0.1"
    s = socket.create_connection(("127.0.0.1", proxy_port)); s.settimeout(20)
    s.sendall(f"CONNECT {host}:{port} HTTP/1.1\\r\\nHost: {host}:{port}\\r\\n\\r\\n".encode())
    head = b""
    while b"\\r\\n\\r\\n" not in head: head += s.recv(4096)
    assert head.startswith(b"HTTP/1.1 200"), head
    if mode.startswith("tls:"):
        context = ssl.create_default_context(cafile=mode[4:]); context.set_alpn_protocols(["h2"])
        s = context.wrap_socket(s, server_hostname=host)
        assert s.selected_alpn_protocol() == "h2", s.selected_alpn_protocol()
    c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
    c.initiate_connection(); s.sendall(c.data_to_send())
    streams, order, resets, later, stalls = {}, [], [], [], set()
    def send(path, trailers=False):
        sid = c.get_next_available_stream_id()
        c.send_headers(sid, [(":method", "POST" if trailers else "GET"), (":path", path), (":scheme", "https" if mode.startswith("tls:") else "http"),
                             (":authority", f"{host}:{port}"), ("x-zeta", "1"), ("x-alpha", "2")], end_stream=not trailers)
        if trailers:
            # A body, then fields after it: the trailing HEADERS ends the stream.
            c.send_data(sid, b"three words here")
            c.send_headers(sid, [("x-checksum", "sha-256=abc"), ("x-count", "3")], end_stream=True)
        streams[sid] = {"status": None, "bytes": 0, "reset": None}
        return sid
    for item in requests:
        verb, path = item.split(" ", 1)
        if verb == "LATER": later.append(path); continue
        sid = send(path, trailers=verb == "TRAILERS")
        if verb == "RESET": resets.append(sid)
        if verb == "STALL": stalls.add(sid)

    s.sendall(c.data_to_send())
    started, deadline = time.time(), time.time() + 20
    s.settimeout(0.1)
    while time.time() < deadline and len([sid for sid in order if sid not in stalls]) < len(streams) - len(stalls) + len(later):
        if resets and time.time() - started > 0.5:
            for sid in resets: c.reset_stream(sid); order.append(sid)
            resets = []
        try:
            data = s.recv(65536)
        except socket.timeout:
            data = None
        if data == b"": break
        for event in (c.receive_data(data) if data else []):
            if isinstance(event, h2.events.ResponseReceived): streams[event.stream_id]["status"] = dict(event.headers)[":status"]
            elif isinstance(event, h2.events.DataReceived):
                streams[event.stream_id]["bytes"] += len(event.data)
                # A stalled stream's window is never opened again (the connection's is).
                if event.stream_id in stalls: c.increment_flow_control_window(event.flow_controlled_length)
                else: c.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, h2.events.TrailersReceived): streams[event.stream_id]["trailers"] = [f"{k}: {v}" for k, v in event.headers]
            elif isinstance(event, h2.events.StreamEnded): order.append(event.stream_id)
            elif isinstance(event, h2.events.StreamReset) and event.stream_id not in order:
                streams[event.stream_id]["reset"] = int(event.error_code); order.append(event.stream_id)
            if later and order:
                for path in later: send(path)
                later = []
        s.sendall(c.data_to_send())
    print(json.dumps({"order": order, "streams": streams}))
    """
}
