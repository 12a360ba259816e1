#!/usr/bin/env bash
# A new program a request — `curl` in a shell loop, as a person debugging often runs it —
# through two builds of `reqtop proxy`, alternated round by round: the proxy's CPU a request
# (utime + stime from /proc) and the wall time a request. The proxy names each connection's
# program by finding its socket among the processes' descriptors under /proc; each curl is a
# new process to find. Each round runs twice: alone, and beside a process holding many
# descriptors (a browser or an IDE holds thousands), which a lookup must not read each time.
#   bash scripts/proxy-new-programs.sh BEFORE/reqtop AFTER/reqtop [rounds] [requests] [descriptors]
# Build each with `swift build -c release --product reqtop` in a git worktree.
# Needs curl and python3. Loopback only; every wait is bounded.
set -uo pipefail
[ $# -ge 2 ] || { echo "usage: proxy-new-programs.sh BEFORE/reqtop AFTER/reqtop [rounds] [requests] [descriptors]" >&2; exit 2; }
for binary in "$1" "$2"; do [ -x "$binary" ] || { echo "proxy-new-programs: $binary is not an executable" >&2; exit 2; }; done
for tool in curl python3; do command -v "$tool" > /dev/null || { echo "proxy-new-programs: needs $tool" >&2; exit 2; }; done
before=$1 after=$2 rounds=${3:-2} requests=${4:-100} descriptors=${5:-5000}
work=$(mktemp -d); pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$work"' EXIT

"$after" serve --port 0 > "$work/upstream.out" 2>&1 & pids+=($!)
for _ in $(seq 50); do grep -q 'http://' "$work/upstream.out" 2>/dev/null && break; sleep 0.1; done
upstream="$(grep -o 'http://[^ ]*' "$work/upstream.out" | head -1)"
[ -n "$upstream" ] || { echo "proxy-new-programs: the upstream did not start" >&2; exit 1; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }   # clock ticks
tick=$(getconf CLK_TCK)

run() { # binary -> "CPU µs a request | wall ms a request"
  local port proxy c0 c1 start end
  port=$(free_port)
  XDG_CONFIG_HOME="$work/config" "$1" proxy --port "$port" --no-tui > /dev/null 2>&1 & proxy=$!
  for _ in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
  for _ in $(seq 10); do curl -s --max-time 20 -x "http://127.0.0.1:$port" "$upstream/status/200" -o /dev/null; done
  c0=$(cpu "$proxy"); start=$(date +%s.%N)
  for _ in $(seq "$requests"); do curl -s --max-time 20 -x "http://127.0.0.1:$port" "$upstream/status/200" -o /dev/null; done
  c1=$(cpu "$proxy"); end=$(date +%s.%N)
  kill "$proxy"; wait "$proxy" 2>/dev/null
  awk -v c=$((c1 - c0)) -v t="$tick" -v n="$requests" -v s="$start" -v e="$end" \
    'BEGIN { printf "%.0f | %.1f", c / t * 1e6 / n, (e - s) * 1000 / n }'
}

echo "| round | build | beside | proxy CPU a request (µs) | wall a request (ms) |"
echo "| --- | --- | --- | --- | --- |"
for round in $(seq "$rounds"); do
  for beside in nothing "$descriptors descriptors"; do
    decoy=""
    if [ "$beside" != nothing ]; then
      python3 -c "
import os, resource, sys, time
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, $descriptors + 64), hard))
held = [os.open('/dev/null', os.O_RDONLY) for _ in range(min($descriptors, min(hard, $descriptors + 64) - 64))]
print(len(held), flush=True)
time.sleep(600)" > "$work/decoy.out" & decoy=$!; pids+=($decoy)
      for _ in $(seq 50); do [ -s "$work/decoy.out" ] && break; sleep 0.1; done
      beside="$(cat "$work/decoy.out") descriptors"
    fi
    for build in before after; do
      binary=$before; [ "$build" = after ] && binary=$after
      echo "| $round | $build | $beside | $(run "$binary") |"
    done
    [ -z "$decoy" ] || { kill "$decoy"; wait "$decoy" 2>/dev/null; }
  done
done
