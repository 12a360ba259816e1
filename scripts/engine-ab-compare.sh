#!/usr/bin/env bash
# Two builds of reqtop-bench, alternated round by round, each round beside the floor (raw
# AsyncHTTPClient GETs each in an `OperationQueue` operation, run by the first build): request
# operations on the NIO transport, 8 chains of GETs to the embedded fault server. For each run:
# requests a second, CPU a request (`perf stat -e task-clock`) and, when uprobes can be set
# (root), mallocs a request — each from the difference between a run of N and one of 6N
# requests, so start-up and warm-up cancel out. Medians at the end, as ratios to the floor.
# Build each with `swift build -c release --product reqtop-bench` in a git worktree.
#   bash scripts/engine-ab-compare.sh BEFORE/reqtop-bench AFTER/reqtop-bench [N] [rounds] [in-flight]
# Loopback only; every loop is bounded.
set -uo pipefail
[ $# -ge 2 ] || { echo "usage: engine-ab-compare.sh BEFORE/reqtop-bench AFTER/reqtop-bench [N] [rounds] [in-flight]" >&2; exit 2; }
for binary in "$1" "$2"; do [ -x "$binary" ] || { echo "engine-ab-compare: $binary is not an executable" >&2; exit 2; }; done
command -v perf > /dev/null || { echo "engine-ab-compare: needs perf (linux-perf)" >&2; exit 2; }
before="$1" after="$2" n=${3:-4000} rounds=${4:-5} inflight=${5:-8}
work=$(mktemp -d)
probe=""
libc=$(ldconfig -p | awk '/libc.so.6 .*x86-64/ {print $NF; exit}')
if [ "$(id -u)" = 0 ] && [ -n "$libc" ]; then
  perf probe -q -d probe_libc:malloc 2> /dev/null   # one left by an earlier run
  perf probe -q -x "$libc" malloc 2> /dev/null && probe="-e probe_libc:malloc"
fi
trap 'rm -rf "$work"; [ -n "$probe" ] && perf probe -q -d probe_libc:malloc 2> /dev/null' EXIT

# One run: prints "req/s cpu-ms mallocs" for `requests` requests (best rate of the run's one round).
run() {  # binary kind requests [events]
  local binary=$1 kind=$2 requests=$3 events=${4:-} args
  case $kind in
    floor) args="--profile-raw --in-operations" ;;
    ops) args="--profile-nio --chained" ;;
  esac
  # shellcheck disable=SC2086
  perf stat -x, -o "$work/stat" -e task-clock $events "$binary" $args --in-flight "$inflight" --warm --requests "$requests" --rounds 1 > "$work/out" 2>&1
  local rate cpu mallocs
  rate=$(awk '/req\/s/ {print $1; exit}' "$work/out")
  cpu=$(awk -F, '/task-clock/ {print $1}' "$work/stat")
  mallocs=$(awk -F, '/probe_libc:malloc/ {print $1}' "$work/stat")
  echo "${rate:-0} ${cpu:-0} ${mallocs:-0}"
}
# Per request: the difference between 6N and N requests, divided by 5N. The mallocs are
# counted in runs of their own (a uprobe costs a trap a call, which would be counted as CPU).
measure() {  # binary kind -> "req/s µs-a-request mallocs-a-request"
  read -r _ small_cpu _ <<< "$(run "$1" "$2" "$n")"
  read -r rate big_cpu _ <<< "$(run "$1" "$2" $((n * 6)))"
  local small_mallocs=0 big_mallocs=0
  if [ -n "$probe" ]; then
    read -r _ _ small_mallocs <<< "$(run "$1" "$2" "$n" "$probe")"
    read -r _ _ big_mallocs <<< "$(run "$1" "$2" $((n * 6)) "$probe")"
  fi
  awk -v r="$rate" -v a="$small_cpu" -v b="$big_cpu" -v m="$small_mallocs" -v M="$big_mallocs" -v k=$((n * 5)) \
    'BEGIN {printf "%.0f %.1f %.1f\n", r, (b - a) * 1000 / k, (M - m) / k}'
}

echo "| round | run | req/s | CPU a request (µs) | mallocs a request |"
echo "| --- | --- | --- | --- | --- |"
for round in $(seq "$rounds"); do
  for which in floor before after; do
    case $which in floor) binary=$before kind=floor ;; before) binary=$before kind=ops ;; after) binary=$after kind=ops ;; esac
    read -r rate per mallocs <<< "$(measure "$binary" "$kind")"
    echo "$which $rate $per $mallocs" >> "$work/rows"
    echo "| $round | $which | $rate | $per | $([ -n "$probe" ] && echo "$mallocs" || echo "—") |"
  done
done
echo
echo "Medians of $rounds rounds, $inflight in flight:"
echo
echo "| run | req/s | of the floor | CPU a request (µs) | mallocs a request |"
echo "| --- | --- | --- | --- | --- |"
median() { sort -n | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
floor_rate=$(awk '$1 == "floor" {print $2}' "$work/rows" | median)
for which in floor before after; do
  rate=$(awk -v w="$which" '$1 == w {print $2}' "$work/rows" | median)
  per=$(awk -v w="$which" '$1 == w {print $3}' "$work/rows" | median)
  mallocs=$(awk -v w="$which" '$1 == w {print $4}' "$work/rows" | median)
  echo "| $which | $rate | $(awk -v a="$rate" -v b="$floor_rate" 'BEGIN {printf "%.2f", a / b}') | $per | $([ -n "$probe" ] && echo "$mallocs" || echo "—") |"
done
