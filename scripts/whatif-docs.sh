#!/usr/bin/env bash
# Runs docs/whatif.md's walkthrough as written and prints the lines the page quotes: the
# unchanged re-run's summary, the summary with a 10 % retry budget, and the dead host's line
# with no circuit breaker. The page's numbers come from this script's output.
#   bash scripts/whatif-docs.sh [--transport nio|urlsession]
# Loopback only (the demo's own fault servers); about two minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
swift build --product reqtop > /dev/null 2>&1
reqtop="$(swift build --show-bin-path)/reqtop"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
"$reqtop" demo --once --no-tui --record incident.jsonl "$@" > /dev/null 2>&1 || true
# The host the demo takes down: its recorded refusals are the connection-refused errors.
dead=$(python3 - <<'PY'
import json, collections
refused = collections.Counter()
hosts = {}
for line in open("incident.jsonl"):
    e = json.loads(line)
    if e.get("event") == "queued":
        url = e["url"].split("/")[2]
        hosts[e["op"]] = url
    if e.get("event") == "taskCompleted" and e.get("error") and e["error"].get("code") == -1004:
        refused[hosts.get(e["op"], "?")] += 1
print(refused.most_common(1)[0][0] if refused else "")
PY
)
echo "# unchanged"
"$reqtop" whatif incident.jsonl "$@" 2>/dev/null | grep -E "^summary:|^  $dead:" || true
echo "# --set budget.percent=10"
"$reqtop" whatif incident.jsonl --set budget.percent=10 --record budget10.jsonl "$@" 2>/dev/null | grep -E "^summary:" || true
echo "# --set circuitBreaker=false"
"$reqtop" whatif incident.jsonl --set circuitBreaker=false "$@" 2>/dev/null | grep -E "^summary:|^  $dead:" || true
