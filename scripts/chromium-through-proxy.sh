#!/usr/bin/env bash
# Headless Chromium loads an HTTPS page with subresources (CSS, a script, an image, a fetch of
# JSON, a redirect) through `reqtop proxy`, the proxy's authority trusted through an NSS
# database as docs/proxy.md says; then the recording is read with Python's json and every row
# must show its status and its body. Prints one line per row and exits 1 when a row lacks its
# body, a row was not an HTTP/2 stream (Chromium offers h2 first), or the page did not load as
# it does directly.
#   bash scripts/chromium-through-proxy.sh
# Needs chromium, certutil (libnss3-tools), openssl, python3. Loopback only; bounded in time.
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in chromium certutil openssl python3; do
  command -v "$tool" > /dev/null || { echo "chromium-through-proxy: $tool is needed (apt install chromium libnss3-tools openssl)" >&2; exit 2; }
done
swift build --product reqtop > /dev/null 2>&1
reqtop="$(swift build --show-bin-path)/reqtop"
work="$(mktemp -d)"
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

# The site: a page whose script fetches JSON and writes it into the page, and a redirect.
mkdir -p "$work/site"
cat > "$work/site/index.html" <<'HTML'
<!doctype html><html><head><link rel="stylesheet" href="style.css"><script src="app.js"></script></head>
<body><h1>reqtop through Chromium</h1><img src="logo.svg" width="10"><p id="data">not fetched</p></body></html>
HTML
echo 'h1 { color: #336; }' > "$work/site/style.css"
echo '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>' > "$work/site/logo.svg"
echo '{"answer": 42, "via": "fetch"}' > "$work/site/data.json"
cat > "$work/site/app.js" <<'JS'
document.addEventListener("DOMContentLoaded", () => {
  fetch("old-data.json").then(r => r.json()).then(d => { document.getElementById("data").textContent = "fetched " + d.answer; });
});
JS
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=127.0.0.1" -addext "subjectAltName=IP:127.0.0.1" \
  -keyout "$work/server-key.pem" -out "$work/server.pem" 2> /dev/null
cat > "$work/serve.py" <<'PY'
import http.server, ssl, sys, os
os.chdir(sys.argv[1])
class Handler(http.server.SimpleHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/old-data.json":  # a redirect, as sites have them
            self.send_response(302); self.send_header("Location", "/data.json"); self.send_header("Content-Length", "0"); self.end_headers(); return
        super().do_GET()
    def log_message(self, *args): pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); context.load_cert_chain(sys.argv[2], sys.argv[3])
server.socket = context.wrap_socket(server.socket, server_side=True)
print(server.server_address[1], flush=True)
server.serve_forever()
PY
python3 "$work/serve.py" "$work/site" "$work/server.pem" "$work/server-key.pem" > "$work/site.port" & pids+=($!)
for _ in $(seq 50); do [ -s "$work/site.port" ] && break; sleep 0.1; done
site="https://127.0.0.1:$(head -1 "$work/site.port")"

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
XDG_CONFIG_HOME="$work/config" "$reqtop" proxy --no-tui --port "$port" --cacert "$work/server.pem" --record "$work/chromium.jsonl" \
  > /dev/null 2> "$work/proxy.err" & pids+=($!)
proxy_pid=$!
for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done

# Chromium trusts what its NSS database trusts (a HOME of its own here).
export HOME="$work/home"
mkdir -p "$HOME/.pki/nssdb"
certutil -d "sql:$HOME/.pki/nssdb" -N --empty-password
certutil -d "sql:$HOME/.pki/nssdb" -A -t "C,," -n reqtop -i "$work/config/reqtop/ca/ca.pem"
timeout 60 chromium --headless --no-sandbox --disable-gpu --proxy-server="http://127.0.0.1:$port" --proxy-bypass-list="<-loopback>" \
  --virtual-time-budget=5000 --dump-dom "$site/" > "$work/through.html" 2> /dev/null || true
timeout 60 chromium --headless --no-sandbox --disable-gpu --virtual-time-budget=5000 --ignore-certificate-errors \
  --dump-dom "$site/" > "$work/direct.html" 2> /dev/null || true
kill -TERM "$proxy_pid"; wait "$proxy_pid" 2>/dev/null || true

python3 - "$work/chromium.jsonl" "$work/through.html" "$work/direct.html" "$site" <<'PY'
import json, sys
rows, order = {}, []
for line in open(sys.argv[1]):
    event = json.loads(line)
    op = event.get("op")
    if not op: continue
    if op not in rows: rows[op] = {}; order.append(op)
    row = rows[op]
    kind = event["event"]
    if kind == "queued": row["request"], row["version"] = event["method"] + " " + event["url"], event.get("clientHTTPVersion", "?")
    elif kind == "finished": row["status"], row["outcome"] = event.get("status"), event["outcome"]
    elif kind == "responseBody": row["body"] = event.get("body", event.get("bodyBase64", "")); row["total"] = event["totalBytes"]
    elif kind == "headerFields": row.setdefault("heads", []).append(event["side"])
failed, page = False, [op for op in order if rows[op].get("request", "").split(" ")[-1].startswith(sys.argv[4])]
for op in order:
    row = rows[op]
    if op not in page:
        # Chromium's own requests (updates, time, accounts): no network here, so no answer.
        print(f'{op:8} {row.get("request", "?"):55.55} (Chromium\'s own, not the page\'s: {row.get("outcome", "-")})')
        continue
    status = row.get("status") or 0
    bodied = status in (204, 304) or status // 100 == 3 or bool(row.get("body"))
    failed |= not bodied or "status" not in row
    print(f'{op:8} {row.get("request", "?"):55.55} {row.get("version", "?"):9} {str(row.get("status")):4} {row.get("outcome", "-"):8} '
          f'{"body " + str(row.get("total")) + " bytes" if row.get("body") else "no body":18} heads: {",".join(row.get("heads", []))}')
# Chromium offers h2 first, and the proxy takes it: every row of the page is an HTTP/2 stream.
versions = sorted({rows[op].get("version", "?") for op in page})
failed |= versions != ["HTTP/2.0"]
print(f"Chromium spoke {', '.join(versions)} to the proxy")
through, direct = open(sys.argv[2]).read(), open(sys.argv[3]).read()
same = "fetched 42" in through and through == direct
print(f"{len(page)} rows of the page, each with its status and body; the page through the proxy {'is the same as' if same else 'DIFFERS from'} the page loaded directly ('fetched 42' {'in' if 'fetched 42' in through else 'not in'} it)")
sys.exit(0 if same and not failed and page else 1)
PY
