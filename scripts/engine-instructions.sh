#!/usr/bin/env bash
# Instructions a request, counted by callgrind (valgrind): repeatable to ~0.5 % on a quiet
# machine, where CPU time on this shared 2-core machine moves by a third between runs, so a
# change of 1 % shows. For each build of reqtop-bench given: request operations on the NIO
# transport, 8 (or -c) chains of GETs to the embedded fault server; for the first build also the floor (raw AsyncHTTPClient
# GETs each in an `OperationQueue` operation). Each figure is the difference between a run of
# 5N and one of N requests, over 4N, so start-up cancels out. Under valgrind threads take
# turns and the process runs ~100× slower, so work batched by time (event delivery every
# 2 ms) is counted more often than at full speed: compare builds, not against wall-clock CPU.
#   bash scripts/engine-instructions.sh BUILD/reqtop-bench [BUILD2/reqtop-bench ...] [-n N] [-c in-flight]
# Build each with `swift build -c release --product reqtop-bench` in a git worktree.
set -uo pipefail
n=500 inflight=8 builds=()
while [ $# -gt 0 ]; do
  case $1 in
    -n) n=$2; shift 2 ;;
    -c) inflight=$2; shift 2 ;;
    *) builds+=("$1"); shift ;;
  esac
done
[ ${#builds[@]} -ge 1 ] || { echo "usage: engine-instructions.sh BUILD/reqtop-bench [BUILD2 ...] [-n N] [-c in-flight]" >&2; exit 2; }
command -v valgrind > /dev/null || { echo "engine-instructions: needs valgrind" >&2; exit 2; }
for binary in "${builds[@]}"; do [ -x "$binary" ] || { echo "engine-instructions: $binary is not an executable" >&2; exit 2; }; done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

count() {  # binary args requests -> instructions
  # shellcheck disable=SC2086
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$1" $2 --in-flight "$inflight" --requests "$3" --rounds 1 2>&1 |
    awk '/Collected/ {print $4}'
}
per_request() {  # binary args
  local small big
  small=$(count "$1" "$2" "$n"); big=$(count "$1" "$2" $((n * 5)))
  [ -n "$small" ] && [ -n "$big" ] || { echo "engine-instructions: callgrind gave no count for $1" >&2; exit 1; }
  echo $(((big - small) / (n * 4)))
}

echo "| build | run | instructions a request |"
echo "| --- | --- | --- |"
index=0
for binary in "${builds[@]}"; do
  index=$((index + 1))
  # valgrind cannot read the debug information Swift writes; a copy without it.
  strip --strip-debug -o "$work/bench$index" "$binary"
  if [ $index = 1 ]; then
    echo "| $binary | floor | $(per_request "$work/bench$index" "--profile-raw --in-operations") |"
  fi
  echo "| $binary | operations | $(per_request "$work/bench$index" "--profile-nio --chained") |"
done
