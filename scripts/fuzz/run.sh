#!/usr/bin/env bash
# Fuzzes one of reqtop's parsers with libFuzzer (coverage-guided), for as long as you like.
#
#   scripts/fuzz/run.sh TARGET [SECONDS] [extra libFuzzer flags]
#   TARGET: plan, jsonl, jsonl-fast, har, endpoint-command, endpoint-message, retry-after, or all
#   SECONDS: per target (default 600)
#
# The seeds are in scripts/fuzz/corpus/TARGET; what libFuzzer learns goes to
# .build-fuzz/corpus/TARGET (kept between runs), crashes and hangs (> 10 s) to
# .build-fuzz/artifacts/TARGET/. Each run ends with a line:
#   fuzz TARGET: N inputs in S s, C crashes, H hangs
# The first build takes several minutes (everything is built with coverage, in release).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
targets=(plan jsonl jsonl-fast har endpoint-command endpoint-message retry-after)
which="${1:-}"; seconds="${2:-600}"; shift $(( $# > 2 ? 2 : $# ))
if [[ -z "$which" ]]; then
  sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 2
fi
if [[ "$which" != all && ! " ${targets[*]} " =~ " $which " ]]; then
  echo "run.sh: no target '$which'; one of: ${targets[*]}, all" >&2; exit 2
fi
if ! [[ "$seconds" =~ ^[0-9]+$ ]] || (( seconds < 1 )); then
  echo "run.sh: SECONDS must be a whole number of seconds, at least 1 (got '$seconds')" >&2; exit 2
fi
build="$root/.build-fuzz"
build_fuzzer() {
  swift build -c release --package-path "$here" --scratch-path "$build/build" \
    -Xswiftc -sanitize=fuzzer -Xswiftc -parse-as-library > "$build/build.log" 2>&1
}
mkdir -p "$build"
# A build that fails is never fuzzed with an older binary; a stale build folder (a source
# file moved between modules) is built again from scratch once.
if ! build_fuzzer; then
  echo "run.sh: the build failed; building again from scratch (see $build/build.log)" >&2
  rm -rf "$build/build"
  build_fuzzer || { tail -20 "$build/build.log" >&2; echo "run.sh: the fuzzer did not build" >&2; exit 2; }
fi
binary="$build/build/release/reqtop-fuzz"
[[ "$which" == all ]] && list=("${targets[@]}") || list=("$which")
status=0
for target in "${list[@]}"; do
  corpus="$build/corpus/$target"; artifacts="$build/artifacts/$target"
  mkdir -p "$corpus" "$artifacts"
  log="$build/$target.log"
  # Only what this run found counts: artifacts of earlier runs stay for reference.
  started="$build/.started-$target"; touch "$started"
  # The Swift backtracer would take the crash before libFuzzer can save the input.
  SWIFT_BACKTRACE=enable=no REQTOP_FUZZ_TARGET="$target" "$binary" "$corpus" "$here/corpus/$target" \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -max_len=65536 -fork=1 -ignore_crashes=1 -ignore_timeouts=1 \
    -artifact_prefix="$artifacts/" -print_final_stats=1 "$@" >"$log" 2>&1
  runs=$(grep -o '^#[0-9]*' "$log" | tail -1 | tr -d '#')
  crashes=$(find "$artifacts" -name 'crash-*' -newer "$started" 2>/dev/null | wc -l)
  hangs=$(find "$artifacts" -name 'timeout-*' -newer "$started" 2>/dev/null | wc -l)
  echo "fuzz $target: ${runs:-0} inputs in $seconds s, $crashes crashes, $hangs hangs (log: $log)"
  (( crashes + hangs > 0 )) && status=1
done
exit $status
