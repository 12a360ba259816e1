#!/usr/bin/env bash
# Two builds of reqtop as a proxy, alternated round by round under `ab -X` (8 clients, small
# GETs to a `reqtop serve` upstream), each round beside tinyproxy: what a change cost, in one
# run, as ratios, and the proxy's CPU a request (its utime + stime from /proc over the run). Build each with `swift build -c release --product reqtop` in a git worktree.
#   bash scripts/proxy-ab-compare.sh BEFORE/reqtop AFTER/reqtop [requests-per-run] [rounds] [--keep-alive]
# --keep-alive: `ab -k`, each client keeping its connection as browsers, requests' sessions, pip
# and git do (reqtop keeps it; tinyproxy closes each after one request, as it does for all).
# Needs ab (apache2-utils) and tinyproxy. Loopback only; every loop is bounded.
set -uo pipefail
keep=()
args=()
for arg in "$@"; do if [ "$arg" = --keep-alive ]; then keep=(-k); else args+=("$arg"); fi; done
set -- "${args[@]}"
[ $# -ge 2 ] || { echo "usage: proxy-ab-compare.sh BEFORE/reqtop AFTER/reqtop [requests] [rounds] [--keep-alive]" >&2; exit 2; }
for binary in "$1" "$2"; do [ -x "$binary" ] || { echo "proxy-ab-compare: $binary is not an executable" >&2; exit 2; }; done
before="$1" after="$2" n=${3:-4000} rounds=${4:-6}
work=$(mktemp -d); pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$work"' EXIT
"$after" serve --port 0 > "$work/http.out" 2>&1 & pids+=($!)
sleep 1
http="$(head -1 "$work/http.out" | grep -o 'http://[^ ]*')"
printf 'Port 18281\nListen 127.0.0.1\nTimeout 30\nMaxClients 100\nAllow 127.0.0.1\n' > "$work/tinyproxy.conf"
"$(command -v tinyproxy || echo /usr/sbin/tinyproxy)" -d -c "$work/tinyproxy.conf" > /dev/null 2>&1 & pids+=($!)
sleep 0.5
rate() { ab -q "${keep[@]}" -n "$n" -c 8 -X "127.0.0.1:$1" "$http/status/200" 2>/dev/null | awk '/Requests per second/ {printf "%.0f", $4}'; }
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }   # clock ticks
tick=$(getconf CLK_TCK)
echo "| round | build | reqtop req/s | tinyproxy req/s | reqtop ÷ tinyproxy | reqtop CPU a request (µs) |"
echo "| --- | --- | --- | --- | --- | --- |"
for round in $(seq "$rounds"); do
  for build in before after; do
    binary=$before; [ "$build" = after ] && binary=$after
    XDG_CONFIG_HOME="$work/$build" "$binary" proxy --port 18282 --no-tui > /dev/null 2>&1 & proxy=$!
    for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/18282) 2>/dev/null && break; sleep 0.1; done
    rate 18282 > /dev/null   # warm-up
    before_cpu=$(cpu "$proxy"); mine=$(rate 18282); after_cpu=$(cpu "$proxy"); tiny=$(rate 18281)
    kill "$proxy"; wait "$proxy" 2>/dev/null
    per=$(awk -v c=$((after_cpu - before_cpu)) -v t="$tick" -v n="$n" 'BEGIN{printf "%.0f", c / t * 1e6 / n}')
    echo "| $round | $build | $mine | $tiny | $(awk -v a="$mine" -v b="$tiny" 'BEGIN{printf "%.2f", a/b}') | $per |"
  done
done
