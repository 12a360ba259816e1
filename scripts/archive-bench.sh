#!/usr/bin/env bash
# The archive load benchmark: makes a HAR of about 100 MB and a recording of 1,000,000
# events, loads each with reqtop's readers (release build), and, in the same run, loads the
# same HAR with Python's json.load as the reference (and the recording with json.loads a line
# at a time); orjson too where installed. Prints seconds and the ratios.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 - "$work/big.har" "$work/big.jsonl" <<'PY'
import json, sys
har_path, jsonl_path = sys.argv[1], sys.argv[2]
entry = lambda i: {
    "startedDateTime": "2026-11-22T10:%02d:%02d.%03dZ" % (i // 60000 % 60, i // 1000 % 60, i % 1000),
    "time": 12.5,
    "request": {"method": "GET", "url": "https://api.example.test/items/%d?page=%d" % (i, i % 17), "httpVersion": "HTTP/1.1",
                "cookies": [], "headers": [{"name": "Accept", "value": "application/json"}, {"name": "User-Agent", "value": "bench/1.0 " + "x" * 200}],
                "queryString": [{"name": "page", "value": str(i % 17)}], "headersSize": -1, "bodySize": 0},
    "response": {"status": 200 if i % 10 else 503, "statusText": "OK", "httpVersion": "HTTP/1.1", "cookies": [],
                 "headers": [{"name": "Content-Type", "value": "application/json"}, {"name": "Server", "value": "bench"}],
                 "content": {"size": 2048, "mimeType": "application/json", "text": "eyJrIjoidiJ9" * 150, "encoding": "base64"},
                 "redirectURL": "", "headersSize": -1, "bodySize": 2048},
    "cache": {}, "timings": {"blocked": -1, "dns": -1, "connect": -1, "ssl": -1, "send": 0.5, "wait": 10, "receive": 2},
}
entries = []
size = 0
i = 0
while size < 100 * 1024 * 1024:
    e = entry(i)
    entries.append(e)
    size += len(json.dumps(e))
    i += 1
with open(har_path, "w") as f:
    json.dump({"log": {"version": "1.2", "creator": {"name": "bench", "version": "1"}, "entries": entries}}, f)
with open(jsonl_path, "w") as f:
    f.write('{"event":"session","version":1,"startedAt":"2026-11-22T10:00:00.000Z","redacted":true}\n')
    for n in range(100000):
        op = "op-%d" % n
        t = n * 0.001
        url = "http://api.test/items/%d" % n
        f.write('{"t":%.6f,"op":"%s","attempt":1,"event":"queued","method":"GET","url":"%s","maxAttempts":3}\n' % (t, op, url))
        f.write('{"t":%.6f,"op":"%s","attempt":1,"event":"started"}\n' % (t, op))
        f.write('{"t":%.6f,"op":"%s","attempt":1,"event":"taskCreated","task":%d,"url":"%s"}\n' % (t, op, n, url))
        f.write('{"t":%.6f,"op":"%s","attempt":1,"event":"response","status":503,"expectedBytes":15}\n' % (t + 0.004, op))
        f.write('{"t":%.6f,"op":"%s","attempt":1,"event":"taskCompleted","error":null}\n' % (t + 0.005, op))
        f.write('{"t":%.6f,"op":"%s","attempt":1,"event":"retryScheduled","delay":0.5,"reason":"status 503"}\n' % (t + 0.005, op))
        f.write('{"t":%.6f,"op":"%s","attempt":2,"event":"started"}\n' % (t + 0.5, op))
        f.write('{"t":%.6f,"op":"%s","attempt":2,"event":"response","status":200,"expectedBytes":2048}\n' % (t + 0.509, op))
        f.write('{"t":%.6f,"op":"%s","attempt":2,"event":"data","bytes":2048}\n' % (t + 0.51, op))
        f.write('{"t":%.6f,"op":"%s","attempt":2,"event":"finished","outcome":"success","status":200,"attempts":2,"duration":0.51}\n' % (t + 0.51, op))
PY
ls -l "$work" | awk 'NR>1 {printf "%s %.1f MB\n", $9, $5/1048576}'

swift build -c release --product reqtop-archive-bench >/dev/null
bin="$(swift build -c release --show-bin-path)/reqtop-archive-bench"
ours=$("$bin" "$work/big.har" "$work/big.jsonl")
echo "$ours"
reference=$(python3 -c 'import json,sys,time; s=time.perf_counter(); json.load(open(sys.argv[1])); print("%.3f" % (time.perf_counter()-s))' "$work/big.har")
echo "python3 json.load on the same HAR: $reference s"
har=$(echo "$ours" | awk '/^har/ {print $2}')
python3 -c "import sys; print('reqtop HAR load / python json.load: %.2f (below 1 is faster)' % (float(sys.argv[1]) / float(sys.argv[2])))" "$har" "$reference"
# Seconds Python's MODULE (json, orjson) takes to read FILE a line at a time with loads.
per_line_seconds() {
  python3 -c '
import importlib, sys, time
loads = importlib.import_module(sys.argv[1]).loads
s = time.perf_counter()
with open(sys.argv[2], "rb") as f:
    for line in f:
        loads(line)
print("%.3f" % (time.perf_counter() - s))' "$1" "$2"
}
# The recording against Python reading the same lines one by one with json.loads.
lines_reference=$(per_line_seconds json "$work/big.jsonl")
echo "python3 json.loads per line on the same recording: $lines_reference s"
lines=$(echo "$ours" | awk '/^jsonl/ {print $2}')
python3 -c "import sys; print('reqtop recording load / python json.loads per line: %.2f (below 1 is faster)' % (float(sys.argv[1]) / float(sys.argv[2])))" "$lines" "$lines_reference"
# orjson, where installed: the fastest JSON reader Python has, as a second anchor (no goal).
if python3 -c 'import orjson' 2>/dev/null; then
  orjson_har=$(python3 -c 'import orjson,sys,time; s=time.perf_counter(); orjson.loads(open(sys.argv[1],"rb").read()); print("%.3f" % (time.perf_counter()-s))' "$work/big.har")
  orjson_lines=$(per_line_seconds orjson "$work/big.jsonl")
  echo "orjson on the same HAR: $orjson_har s; per line on the same recording: $orjson_lines s"
  python3 -c "import sys; print('reqtop / orjson: HAR %.2f, recording %.2f' % (float(sys.argv[1]) / float(sys.argv[2]), float(sys.argv[3]) / float(sys.argv[4])))" "$har" "$orjson_har" "$lines" "$orjson_lines"
else
  echo "orjson is not installed: its anchor is left out (pip install orjson)"
fi
