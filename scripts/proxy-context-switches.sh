#!/usr/bin/env bash
# What a proxied request costs in the kernel, reqtop beside tinyproxy in one run: context
# switches (perf stat, every thread of the proxy) and user and system CPU (utime, stime from
# /proc) a request, over `ab -n N -c 8 -X` small GETs to a `reqtop serve` upstream after 500
# to warm up. Each build given is measured in turn, ROUNDS times (alternated).
#   bash scripts/proxy-context-switches.sh BUILD/reqtop [OTHER/reqtop ...] [N (default 6000)] [ROUNDS (default 2)]
# Needs ab (apache2-utils), tinyproxy and perf. Loopback only; every wait is bounded.
set -uo pipefail
builds=() numbers=()
for argument in "$@"; do
  if [[ "$argument" =~ ^[0-9]+$ ]]; then numbers+=("$argument"); else builds+=("$argument"); fi
done
[ ${#builds[@]} -gt 0 ] || { echo "usage: $0 BUILD/reqtop [OTHER/reqtop ...] [N] [ROUNDS]" >&2; exit 2; }
for build in "${builds[@]}"; do [ -x "$build" ] || { echo "$build: not an executable" >&2; exit 2; }; done
for tool in ab tinyproxy perf; do command -v "$tool" > /dev/null || { echo "proxy-context-switches: needs $tool" >&2; exit 2; }; done
n=${numbers[0]:-6000} rounds=${numbers[1]:-2}
work=$(mktemp -d); pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$work"' EXIT
"${builds[0]}" serve --port 0 > "$work/serve.out" 2>&1 & pids+=($!)
for _ in $(seq 50); do grep -q http "$work/serve.out" 2>/dev/null && break; sleep 0.1; done
url="$(head -1 "$work/serve.out" | grep -o 'http://[^ ]*')/status/200"
printf 'Port 18381\nListen 127.0.0.1\nTimeout 30\nMaxClients 100\nAllow 127.0.0.1\n' > "$work/tinyproxy.conf"
tinyproxy -d -c "$work/tinyproxy.conf" > /dev/null 2>&1 & tiny=$!; pids+=($tiny)
tick=$(getconf CLK_TCK)

measure() {  # NAME PID PORT -> one table row
  local name=$1 pid=$2 port=$3 u0 s0 u1 s1 switches
  ab -q -n 500 -c 8 -X "127.0.0.1:$port" "$url" > /dev/null 2>&1
  read -r u0 s0 < <(awk '{print $14, $15}' "/proc/$pid/stat")
  perf stat -e context-switches -x, -p "$pid" -o "$work/perf" & local perf=$!
  sleep 0.3
  ab -q -n "$n" -c 8 -X "127.0.0.1:$port" "$url" > /dev/null 2>&1
  kill -INT "$perf"; wait "$perf" 2>/dev/null
  read -r u1 s1 < <(awk '{print $14, $15}' "/proc/$pid/stat")
  switches=$(awk -F, '/context-switches/ {print $1}' "$work/perf")
  awk -v name="$name" -v c="$switches" -v u=$((u1 - u0)) -v s=$((s1 - s0)) -v t="$tick" -v n="$n" \
    'BEGIN { printf "| %s | %.2f | %.0f | %.0f |\n", name, c / n, u / t * 1e6 / n, s / t * 1e6 / n }'
}

echo "| proxy | context switches a request | user CPU a request (µs) | system CPU a request (µs) |"
echo "| --- | --- | --- | --- |"
sleep 0.5
for _ in $(seq "$rounds"); do
  for build in "${builds[@]}"; do
    XDG_CONFIG_HOME="$work/config" "$build" proxy --port 18382 --no-tui > /dev/null 2>&1 & proxy=$!
    for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/18382) 2>/dev/null && break; sleep 0.1; done
    measure "$build" "$proxy" 18382
    kill "$proxy"; wait "$proxy" 2>/dev/null
  done
  measure tinyproxy "$tiny" 18381
done
