#!/usr/bin/env bash
# 1 GiB down and 1 GiB up through builds of `reqtop proxy`, each round beside a bare TCP relay
# (scripts/bare-relay.py: two sockets, 1 MiB buffers, nothing else — the most any proxy can move
# here): seconds, the rate as a share of the relay's in the same round, and the proxy's peak
# resident memory. Builds alternate round by round. Build each with
# `swift build -c release --product reqtop` in a git worktree.
#   bash scripts/proxy-bulk-compare.sh BUILD/reqtop [OTHER/reqtop ...] [ROUNDS (default 3)]
# Needs curl and python3. Loopback only; every wait is bounded (a transfer by curl's -m 60).
set -uo pipefail
builds=() rounds=3
for argument in "$@"; do
  if [[ "$argument" =~ ^[0-9]+$ ]]; then rounds=$argument; else builds+=("$argument"); fi
done
[ ${#builds[@]} -gt 0 ] || { echo "usage: $0 BUILD/reqtop [OTHER/reqtop ...] [ROUNDS]" >&2; exit 2; }
for build in "${builds[@]}"; do [ -x "$build" ] || { echo "$build: not an executable" >&2; exit 2; }; done
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d); pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$work"' EXIT
"${builds[0]}" serve --port 0 > "$work/serve.out" 2>&1 & pids+=($!)
for _ in $(seq 50); do grep -q http "$work/serve.out" 2>/dev/null && break; sleep 0.1; done
upstream="$(head -1 "$work/serve.out" | grep -o 'http://[^ ]*')"
python3 "$here/bare-relay.py" 18484 "${upstream##*:}" & pids+=($!)
head -c 1073741824 /dev/zero > "$work/upload.bin"
seconds() { local s e; s=$(date +%s.%N); "$@" > /dev/null || echo "failed: $*" >&2; e=$(date +%s.%N); awk -v s="$s" -v e="$e" 'BEGIN { printf "%.2f", e - s }'; }
down() { seconds curl -sf -m 60 "$@" "$upstream/zeros/1073741824" -o /dev/null; }
up() { seconds curl -sf -m 60 -H "Expect:" -X POST -T "$work/upload.bin" "$@" "$upstream/sink?hash=0"; }
for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/18484) 2>/dev/null && break; sleep 0.1; done
echo "| round | build | down (s) | up (s) | relay down / up (s) | down ÷ relay rate | up ÷ relay rate | peak resident |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
for round in $(seq "$rounds"); do
  relay_down=$(seconds curl -sf -m 60 "http://127.0.0.1:18484/zeros/1073741824" -o /dev/null)
  relay_up=$(seconds curl -sf -m 60 -H "Expect:" -X POST -T "$work/upload.bin" "http://127.0.0.1:18484/sink?hash=0")
  for build in "${builds[@]}"; do
    XDG_CONFIG_HOME="$work/config" "$build" proxy --port 18482 --no-tui > /dev/null 2>&1 & proxy=$!
    for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/18482) 2>/dev/null && break; sleep 0.1; done
    d=$(down -x http://127.0.0.1:18482) u=$(up -x http://127.0.0.1:18482)
    peak=$(awk '/VmHWM/ { printf "%.0f MiB", $2 / 1024 }' "/proc/$proxy/status")
    kill "$proxy"; wait "$proxy" 2>/dev/null
    awk -v r="$round" -v b="$build" -v d="$d" -v u="$u" -v rd="$relay_down" -v ru="$relay_up" -v p="$peak" \
      'BEGIN { printf "| %s | %s | %s | %s | %s / %s | %.2f | %.2f | %s |\n", r, b, d, u, rd, ru, rd / d, ru / u, p }'
  done
done
