#!/usr/bin/env bash
# Headless replay at scale: generates recordings of 100k, 400k and 1M events (GET operations
# of 6 events, as a quiet service records them), times `reqtop replay FILE --no-tui` on each
# (read, tally, write every event back as a line; release build) with its peak memory, and, in
# the same run, Python reading and re-writing the 1M lines with json as the reference.
# Usage: scripts/replay-bench.sh [sizes in thousands of events, default "100 400 1000"]
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=${1:-"100 400 1000"}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
swift build -c release --product reqtop >/dev/null
bin="$(swift build -c release --show-bin-path)/reqtop"

for k in $sizes; do
  python3 - "$work/r$k.jsonl" "$k" <<'PY'
import sys
path, events = sys.argv[1], int(sys.argv[2]) * 1000
with open(path, "w") as f:
    f.write('{"event":"session","version":1,"startedAt":"2026-11-22T10:00:00.000Z","redacted":true}\n')
    for n in range(events // 6):
        op, t, url = "op-%d" % n, n * 0.001, "http://api.test/items/%d" % n
        f.write('{"t":%.6f,"op":"%s","attempt":1,"event":"queued","method":"GET","url":"%s","maxAttempts":3}\n' % (t, op, url))
        f.write('{"t":%.6f,"op":"%s","attempt":1,"event":"started"}\n' % (t, op))
        f.write('{"t":%.6f,"op":"%s","attempt":1,"event":"taskCreated","task":%d,"url":"%s"}\n' % (t, op, n, url))
        f.write('{"t":%.6f,"op":"%s","attempt":1,"event":"response","status":200,"expectedBytes":2048}\n' % (t + 0.004, op))
        f.write('{"t":%.6f,"op":"%s","attempt":1,"event":"data","bytes":2048}\n' % (t + 0.005, op))
        f.write('{"t":%.6f,"op":"%s","attempt":1,"event":"finished","outcome":"success","status":200,"attempts":1,"duration":0.005}\n' % (t + 0.005, op))
PY
  size=$(du -m "$work/r$k.jsonl" | cut -f1)
  /usr/bin/time -f "%e %M" -o "$work/time" "$bin" replay "$work/r$k.jsonl" --no-tui > /dev/null 2>"$work/err" || true
  read -r seconds kb < "$work/time"
  echo "replay --no-tui, ${k}k events ($size MB): $seconds s, peak $((kb / 1024)) MB resident"
done
last=$(echo "$sizes" | awk '{print $NF}')
reference=$(python3 -c '
import json, sys, time
s = time.perf_counter()
with open(sys.argv[1], "rb") as f, open("/dev/null", "w") as out:
    for line in f:
        out.write(json.dumps(json.loads(line), separators=(",", ":")) + "\n")
print("%.2f" % (time.perf_counter() - s))' "$work/r$last.jsonl")
echo "python3 json.loads + json.dumps of every line, ${last}k events: $reference s"

# Opening in the monitor (needs tmux): the largest recording, repeated until it is about
# ${REPLAY_GB:-1} GB, then the time from the command to its first screen, the resident memory
# while it plays, the time `>` takes to reach the end while the file is read, and `<` back.
command -v tmux >/dev/null || { echo "no tmux: the monitor part is skipped"; exit 0; }
big="$work/big.jsonl"
python3 - "$work/r$last.jsonl" "$big" "${REPLAY_GB:-1}" <<'PY'
import sys, os
src, dst, gb = sys.argv[1], sys.argv[2], float(sys.argv[3])
lines = open(src).read().splitlines(True)
header, body = lines[0], lines[1:]
span = 1000.0  # seconds of session time per copy, so copies follow each other
with open(dst, "w") as f:
    f.write(header)
    copy = 0
    while f.tell() < gb * 1024 ** 3:
        if copy == 0:
            f.writelines(body)
        else:
            for line in body:
                t_end = line.index(",")
                t = float(line[5:t_end]) + copy * span
                f.write('{"t":%.6f%s' % (t, line[t_end:].replace('"op":"op-', '"op":"c%d-op-' % copy, 1)))
        copy += 1
PY
echo "monitor: $(du -m "$big" | cut -f1) MB, $(($(wc -l < "$big") - 1)) events"
sock="reqtop-bench-$$"
tmux -L "$sock" new-session -d -s s -x 200 -y 50 env LANG=C.UTF-8 bash --norc --noprofile
trap 'tmux -L "$sock" kill-server 2>/dev/null; rm -rf "$work"' EXIT
start=$(date +%s.%N)
tmux -L "$sock" send-keys -t s "$bin replay $big" Enter
until tmux -L "$sock" capture-pane -p -t s | grep -qE "^ op-[0-9]+ "; do sleep 0.01; done
first=$(python3 -c "import sys; print('%.2f' % (float(sys.argv[2]) - float(sys.argv[1])))" "$start" "$(date +%s.%N)")
pid=$(pgrep -f "$bin replay $big" | head -1)
echo "monitor: first screen (a row drawn) after $first s"
sleep 5
echo "monitor: resident after 5 s of playing: $(( $(awk '/VmRSS/ {print $2}' /proc/$pid/status) / 1024 )) MB"
start=$(date +%s.%N)
tmux -L "$sock" send-keys -t s ">"
peak=0
until tmux -L "$sock" capture-pane -p -t s | grep -q " END "; do
  rss=$(awk '/VmRSS/ {print $2}' /proc/$pid/status); [ "$rss" -gt "$peak" ] && peak=$rss
  sleep 0.2
done
echo "monitor: > reached the end in $(python3 -c "import sys; print('%.1f' % (float(sys.argv[2]) - float(sys.argv[1])))" "$start" "$(date +%s.%N)") s, peak $((peak / 1024)) MB resident"
tmux -L "$sock" send-keys -t s "<"
until tmux -L "$sock" capture-pane -p -t s | grep -q "PLAYING 0\.[0-9]/"; do sleep 0.05; done
echo "monitor: < back at the start: $(tmux -L "$sock" capture-pane -p -t s | head -1 | grep -o 'REPLAY[^·]*')"
tmux -L "$sock" send-keys -t s q
sleep 1
