#!/usr/bin/env bash
# reqtop proxy's resident memory over a day's kind of load, on a release build: after a warm-up
# of 5,000 kept-alive small GETs, 40,000 more (ab -k, 8 clients), then 10,000 on a new
# connection each; the RSS after each step. Prints the table docs/benchmarks.md holds.
#   bash scripts/proxy-memory.sh [--monitor]
# --monitor runs the proxy with its monitor (in a detached tmux session) instead of --no-tui.
# Needs ab (apache2-utils); tmux for --monitor. Binds to 127.0.0.1 only; every loop is bounded.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-}
swift build -c release --product reqtop > /dev/null
reqtop="$(swift build -c release --show-bin-path)/reqtop"
work="$(mktemp -d)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  tmux kill-session -t reqtop-memory 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
wait_port() { for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; echo "nothing on $1" >&2; return 1; }

"$reqtop" serve --port 0 > "$work/http.out" 2>&1 & pids+=($!)
sleep 1
http="$(head -1 "$work/http.out" | grep -o 'http://[^ ]*')"
port=18191
if [ "$mode" = "--monitor" ]; then
  tmux new-session -d -s reqtop-memory -x 160 -y 50 "HOME=$work '$reqtop' proxy --port $port --ca-dir '$work/ca' 2>'$work/proxy.err'"
else
  HOME="$work" "$reqtop" proxy --no-tui --port $port --ca-dir "$work/ca" > /dev/null 2> "$work/proxy.err" & pids+=($!)
fi
wait_port $port
pid=$(pgrep -f "reqtop proxy.*--port $port" | head -1)
rss() { awk '/VmRSS/ { printf "%.1f", $2 / 1024 }' "/proc/$pid/status"; }
load() { ab -q "$@" -c 8 -s 20 -X "127.0.0.1:$port" "$http/status/200" | awk '/Failed requests/ { print $3 }'; }

start=$(rss)
failed=$(load -k -n 5000); warm=$(rss)
failed=$((failed + $(load -k -n 40000))); kept=$(rss)
failed=$((failed + $(load -n 10000))); fresh=$(rss)
echo "| proxy | at start | after 5,000 (warm) | after 40,000 more, kept alive | after 10,000 new connections | growth after warm-up | failed |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
awk -v m="${mode:---no-tui}" -v a="$start" -v b="$warm" -v c="$kept" -v d="$fresh" -v f="$failed" \
  'BEGIN { printf "| %s | %.1f MiB | %.1f MiB | %.1f MiB | %.1f MiB | %+.1f MiB | %d |\n", m, a, b, c, d, d - b, f }'
