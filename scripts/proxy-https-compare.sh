#!/usr/bin/env bash
# Intercepted HTTPS through two builds of `reqtop proxy`, alternated round by round, each
# beside direct curl to the same upstream in the same round: requests per second and the
# proxy's CPU a request (utime + stime from /proc). The upstream is `reqtop serve --tls`
# (HTTP/2 and HTTP/1.1 by ALPN); 8 curl clients, each its N requests in turn on one kept-alive
# connection, speaking HTTP/1.1, then HTTP/2. A warm-up run before each measured one.
#   bash scripts/proxy-https-compare.sh BEFORE/reqtop AFTER/reqtop [rounds] [requests-per-client]
# Build each with `swift build -c release --product reqtop` in a git worktree.
# Needs curl. Loopback only; every loop is bounded.
set -uo pipefail
[ $# -ge 2 ] || { echo "usage: proxy-https-compare.sh BEFORE/reqtop AFTER/reqtop [rounds] [requests-per-client]" >&2; exit 2; }
for binary in "$1" "$2"; do [ -x "$binary" ] || { echo "proxy-https-compare: $binary is not an executable" >&2; exit 2; }; done
before=$1 after=$2 rounds=${3:-3} per=${4:-250}
work=$(mktemp -d); pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$work"' EXIT
"$after" serve --tls --port 0 > "$work/https.out" 2>&1 & pids+=($!)
for _ in $(seq 50); do grep -q 'https://' "$work/https.out" 2>/dev/null && break; sleep 0.1; done
https="$(head -1 "$work/https.out" | grep -o 'https://[^ ]*')"
https="https://localhost:${https##*:}"
upstream_ca="$(sed -n 2p "$work/https.out" | grep -o '/[^ ]*ca.pem')"
[ -n "$upstream_ca" ] || { echo "proxy-https-compare: reqtop serve --tls did not start" >&2; exit 1; }

rate() { # curl's version flag, then curl's other arguments: 8 clients × $per requests, req/s
  local version=$1 urls=() clients=() start end
  shift
  for _ in $(seq "$per"); do urls+=("$https/status/200" -o /dev/null); done
  start=$(date +%s.%N)
  for _ in $(seq 8); do timeout 120 curl -s "$version" "$@" "${urls[@]}" & clients+=($!); done
  wait "${clients[@]}"
  end=$(date +%s.%N)
  awk -v p="$per" -v s="$start" -v e="$end" 'BEGIN { printf "%.0f", 8 * p / (e - s) }'
}
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }   # clock ticks
tick=$(getconf CLK_TCK)
echo "| round | build | client | direct req/s | proxy req/s | proxy ÷ direct | proxy CPU a request (µs) |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
for round in $(seq "$rounds"); do
  for build in before after; do
    binary=$before; [ "$build" = after ] && binary=$after
    XDG_CONFIG_HOME="$work/$build" "$binary" proxy --port 18292 --no-tui --cacert "$upstream_ca" > /dev/null 2>&1 & proxy=$!
    for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/18292) 2>/dev/null && break; sleep 0.1; done
    through=(--cacert "$work/$build/reqtop/ca/ca.pem" -x http://127.0.0.1:18292)
    for version in --http1.1 --http2; do
      rate "$version" "${through[@]}" > /dev/null   # warm-up
      c0=$(cpu "$proxy"); mine=$(rate "$version" "${through[@]}"); c1=$(cpu "$proxy")
      direct=$(rate "$version" --cacert "$upstream_ca")
      per_request=$(awk -v c=$((c1 - c0)) -v t="$tick" -v n=$((8 * per)) 'BEGIN { printf "%.0f", c / t * 1e6 / n }')
      echo "| $round | $build | ${version#--} | $direct | $mine | $(awk -v a="$mine" -v b="$direct" 'BEGIN { printf "%.2f", a / b }') | $per_request |"
    done
    kill "$proxy"; wait "$proxy" 2>/dev/null
  done
done
