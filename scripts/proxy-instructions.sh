#!/usr/bin/env bash
# Instructions a proxied request, counted by callgrind (valgrind): repeatable to ~0.2 % on a
# quiet machine (work batched by time runs more or less often as threads are scheduled: up to
# ~1 % apart beside a compile), where CPU time on this shared 2-core machine moves by a third
# between runs, so a change of 1 % shows. Compare builds in one run, twice.
# For each build given: `reqtop proxy --no-tui` (its event lines to /dev/null) under callgrind,
# `ab -X` through it to a `reqtop serve` upstream — 200 requests to warm it, the counters
# zeroed, then N requests (8 clients, a new connection each, small GETs) — and the
# instructions of those N over N. valgrind 3.19 cannot read this toolchain's debug
# information, so each binary is profiled from a copy after `strip -g`; the profile is kept
# (callgrind_annotate reads it) when --keep DIR is given.
#   bash scripts/proxy-instructions.sh BUILD/reqtop [BUILD2/reqtop ...] [-n N] [--keep DIR] [--keep-alive]
# --keep-alive: `ab -k`, the 8 clients keeping their connections (the difference from a run
# without it is what a connection costs: accepting it, its handlers, closing it).
# Build each with `swift build -c release --product reqtop` in a git worktree.
# Needs valgrind, ab (apache2-utils). Loopback only; every wait is bounded.
set -uo pipefail
n=1000 keep="" alive=() builds=()
while [ $# -gt 0 ]; do
  case $1 in
    -n) n=$2; shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    --keep-alive) alive=(-k); shift ;;
    *) builds+=("$1"); shift ;;
  esac
done
[ ${#builds[@]} -ge 1 ] || { echo "usage: proxy-instructions.sh BUILD/reqtop [BUILD2 ...] [-n N] [--keep DIR] [--keep-alive]" >&2; exit 2; }
for tool in valgrind callgrind_control ab; do
  command -v "$tool" > /dev/null || { echo "proxy-instructions: needs $tool" >&2; exit 2; }
done
for binary in "${builds[@]}"; do [ -x "$binary" ] || { echo "proxy-instructions: $binary is not an executable" >&2; exit 2; }; done
[ -z "$keep" ] || mkdir -p "$keep"
work=$(mktemp -d); pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$work"' EXIT

"${builds[0]}" serve --port 0 > "$work/upstream.out" 2>&1 & pids+=($!)
for _ in $(seq 50); do grep -q 'http://' "$work/upstream.out" 2>/dev/null && break; sleep 0.1; done
upstream="$(grep -o 'http://[^ ]*' "$work/upstream.out" | head -1)"
[ -n "$upstream" ] || { echo "proxy-instructions: the upstream did not start" >&2; exit 1; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

echo "| build | instructions a proxied GET |"
echo "| --- | --- |"
index=0
for binary in "${builds[@]}"; do
  index=$((index + 1))
  copy="$work/reqtop-$index"; cp "$binary" "$copy"; strip -g "$copy"
  port=$(free_port)
  out="$work/callgrind.$index"
  XDG_CONFIG_HOME="$work/config-$index" valgrind --tool=callgrind --callgrind-out-file="$out" \
    "$copy" proxy --port "$port" --no-tui > /dev/null 2> "$work/valgrind.$index" & proxy=$!
  pids+=($proxy)
  for _ in $(seq 600); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
  ab -q "${alive[@]}" -n 200 -c 8 -X "127.0.0.1:$port" "$upstream/status/200" > /dev/null 2>&1
  callgrind_control -z "$proxy" > /dev/null 2>&1
  ab -q "${alive[@]}" -n "$n" -c 8 -X "127.0.0.1:$port" "$upstream/status/200" > "$work/ab.$index" 2>&1
  failed=$(awk '/Failed requests/ {print $3}' "$work/ab.$index")
  callgrind_control -d "$proxy" > /dev/null 2>&1
  kill -INT "$proxy"
  for _ in $(seq 100); do kill -0 "$proxy" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$proxy" 2>/dev/null; wait "$proxy" 2>/dev/null
  dump=$(ls -t "$out".* 2>/dev/null | head -1)
  [ -n "$dump" ] || { echo "proxy-instructions: no profile for $binary" >&2; exit 1; }
  total=$(awk '/^summary:|^totals:/ {print $2; exit}' "$dump")
  echo "| $binary | $((total / n))$([ "${failed:-0}" = 0 ] || echo " ($failed failed)") |"
  [ -z "$keep" ] || cp "$dump" "$keep/proxy-$index.callgrind"
done
