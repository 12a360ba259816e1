#!/usr/bin/env bash
# End to end: the example service (Examples/UpstreamService) under `reqtop attach`.
#
# Starts `reqtop serve` (the upstream) and the service on free loopback ports, attaches
# headless, sends the service requests with curl (one authenticated, one whose upstream
# fails twice before answering, one whose upstream never recovers), stops the service with
# SIGTERM, and checks: the answers; that the attached stream shows those operations with
# their retries and exactly one `finished` each; that the service ended cleanly (status 0,
# "stopped cleanly"); and that attach ended by itself when the service did.
#
#   bash scripts/example-e2e.sh        (after `swift build`; builds the example itself)
set -euo pipefail
cd "$(dirname "$0")/.."

work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "example-e2e: FAILED: $*" >&2; for f in "$work"/*.log; do echo "--- $f" >&2; tail -n 20 "$f" >&2; done; exit 1; }

# Waits up to $2 seconds for a pattern ($1) in a file ($3); prints the first match.
wait_for() {
  local pattern=$1 seconds=$2 file=$3
  for _ in $(seq 1 $((seconds * 10))); do
    if grep -m1 -oE "$pattern" "$file" 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  return 1
}

swift build --product reqtop >/dev/null
reqtop="$(swift build --show-bin-path)/reqtop"
echo "example-e2e: building Examples/UpstreamService"
build_start=$SECONDS
# First in reqtop's own build folder at the versions reqtop resolved: every module the two share
# (reqtop's, NIO's, AsyncHTTPClient's) is already built there, so only Hummingbird and the
# service compile (~1 min, where a folder of its own takes ~9 of CI's minutes). Once, in a CI
# clean clone, that build said complete without the service's binary (cause not found; the
# build plan reqtop's own build left there, reused, would explain it, so it is not reused):
# then its output is shown and the example builds in a folder of its own, as it always can.
cp Package.resolved Examples/UpstreamService/Package.resolved
shared=(--package-path Examples/UpstreamService --scratch-path "$PWD/.build" --disable-build-manifest-caching)
service=""
shared_status=0
swift build "${shared[@]}" > "$work/example-build.log" 2>&1 || shared_status=$?
candidate="$(swift build "${shared[@]}" --show-bin-path 2>/dev/null)/UpstreamService" || true
[ "$shared_status" = 0 ] && [ -x "$candidate" ] && service=$candidate
if [ -z "$service" ]; then
  echo "example-e2e: the build in reqtop's folder (exit $shared_status) left no $candidate; its last lines:"
  tail -n 15 "$work/example-build.log" | sed 's/^/  /'
  echo "example-e2e: building it in its own folder instead"
  swift build --package-path Examples/UpstreamService >/dev/null
  service="$(swift build --package-path Examples/UpstreamService --show-bin-path)/UpstreamService"
fi
echo "example-e2e: built in $((SECONDS - build_start)) s"

"$reqtop" serve --port 0 > "$work/serve.log" 2>&1 &
pids+=($!)
upstream=$(wait_for 'http://127\.0\.0\.1:[0-9]+' 10 "$work/serve.log") || fail "reqtop serve did not start"

LOG_LEVEL=debug "$service" --port 0 --upstream "$upstream" > "$work/service.log" 2>&1 &
service_pid=$!
pids+=($service_pid)
url=$(wait_for 'url=http://127\.0\.0\.1:[0-9]+' 30 "$work/service.log" | sed 's/^url=//') || fail "the service did not start"
echo "example-e2e: upstream $upstream, service $url (pid $service_pid)"

"$reqtop" attach "$service_pid" --no-tui > "$work/attach.jsonl" 2> "$work/attach.log" &
attach_pid=$!
pids+=($attach_pid)
wait_for '"event":"hello"|"event":"snapshot"|"op"' 10 "$work/attach.jsonl" >/dev/null || true
sleep 0.5

answer() { curl -s --max-time 20 -o "$work/$1.json" -w '%{http_code}' "$url$2"; }
[ "$(answer resource /resource/books)" = 200 ] || fail "/resource/books: $(cat "$work/resource.json")"
[ "$(answer flaky '/flaky/twice?failures=2')" = 200 ] || fail "/flaky/twice: $(cat "$work/flaky.json")"
[ "$(answer dead '/flaky/dead?failures=9')" = 502 ] || fail "/flaky/dead: $(cat "$work/dead.json")"

kill -TERM "$service_pid"
status=0
wait "$service_pid" || status=$?
[ "$status" = 0 ] || fail "the service exited with status $status after SIGTERM"
grep -q "stopped cleanly" "$work/service.log" || fail "the service did not say it stopped cleanly"
for _ in $(seq 1 100); do kill -0 "$attach_pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$attach_pid" 2>/dev/null && fail "attach did not end when the service did"

python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
def load(name):
    return json.load(open(f"{work}/{name}.json"))
assert load("resource") == {"id": 42, "resource": "books", "user": "upstream-service"}, load("resource")
assert load("flaky")["attempts"] == 3, load("flaky")
dead = load("dead")
assert dead["stage"] == "retriesExhausted" and dead["attempts"] == 4 and dead["upstreamStatus"] == 503, dead

events = [json.loads(line) for line in open(f"{work}/attach.jsonl") if line.strip()]
by_op = {}
for event in events:
    if "op" in event and event.get("op"):
        by_op.setdefault(event["op"], []).append(event)
def op_for(fragment):
    matches = [op for op, evs in by_op.items() if any(fragment in e.get("url", "") for e in evs if e["event"] == "queued")]
    assert len(matches) == 1, (fragment, matches)
    return by_op[matches[0]]
for op, evs in by_op.items():
    finished = [e for e in evs if e["event"] == "finished"]
    assert len(finished) == 1, (op, [e["event"] for e in evs])
twice = op_for("/flaky/twice")
assert [e["event"] for e in twice].count("retryScheduled") == 2, twice
assert twice[-1]["event"] == "finished" and twice[-1]["outcome"] == "success" and twice[-1]["attempts"] == 3, twice[-1]
dead_events = op_for("/flaky/dead")
assert dead_events[-1]["outcome"] == "failure" and dead_events[-1]["attempts"] == 4, dead_events[-1]
assert any(op.startswith("token-refresh") for op in by_op), sorted(by_op)
resource = op_for("/auth/resource/books")
assert resource[-1]["outcome"] == "success", resource[-1]
assert not any("secret" in json.dumps(e) for e in events), "a secret reached the monitor"
print(f"example-e2e: {len(by_op)} operations attached, each finished once; retries as expected")
PY
echo "example-e2e: passed"
