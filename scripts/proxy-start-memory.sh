#!/usr/bin/env bash
# Where `reqtop proxy --no-tui`'s resident memory at start goes, for one or more builds, in one
# run: each build is started ROUNDS times in turn (alternated), and one second after it says it
# listens its /proc/PID/smaps is summed by what is mapped — the binary, the Swift runtime and
# Foundation, ICU, libcurl and the TLS libraries it loads, anonymous memory — and, across all
# of them, what is private and written (Private_Dirty: the process's own; the rest is clean
# pages of files, shared with the page cache); medians printed as the table
# docs/benchmarks.md holds.
#   bash scripts/proxy-start-memory.sh BUILD/reqtop [OTHER/reqtop ...] [ROUNDS (default 5)]
# Binds to 127.0.0.1 only; every wait is bounded.
set -euo pipefail
rounds=5
builds=()
for argument in "$@"; do
  if [[ "$argument" =~ ^[0-9]+$ ]]; then rounds=$argument; else builds+=("$argument"); fi
done
[ ${#builds[@]} -gt 0 ] || { echo "usage: $0 BUILD/reqtop [OTHER/reqtop ...] [ROUNDS]" >&2; exit 2; }
for build in "${builds[@]}"; do [ -x "$build" ] || { echo "$build: not an executable" >&2; exit 2; }; done
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

measure() {  # BUILD INDEX -> appends one line of figures (KiB) to $work/INDEX
  local build=$1 index=$2 port=$((18590 + $2)) pid
  HOME="$work/home" "$build" proxy --no-tui --port "$port" --ca-dir "$work/ca-$index" > /dev/null 2> "$work/err-$index" &
  pid=$!
  for _ in $(seq 100); do grep -q listening "$work/err-$index" 2>/dev/null && break; sleep 0.1; done
  grep -q listening "$work/err-$index" || { echo "$build did not start: $(cat "$work/err-$index")" >&2; kill $pid; exit 1; }
  sleep 1
  python3 - "$pid" "$(basename "$build")" >> "$work/$index" <<'PY'
import re, sys
pid, binary = sys.argv[1], sys.argv[2]
groups = {"binary": 0, "swift": 0, "icu": 0, "curl-tls": 0, "anonymous": 0, "other": 0, "total": 0, "private": 0}
def group(name):
    if name.endswith("/" + binary): return "binary"
    if "FoundationICU" in name: return "icu"
    if "/swift/" in name: return "swift"
    if re.search(r"lib(curl|crypto|ssl|gnutls|nettle|hogweed|gmp|p11-kit|krb5|k5crypto|gssapi|ldap|sasl|ssh|rtmp|nghttp2|psl|idn2|unistring|tasn1|brotli|zstd)", name): return "curl-tls"
    if name == "" or name.startswith("["): return "anonymous"
    return "other"
current = "other"
for line in open(f"/proc/{pid}/smaps"):
    fields = line.split()
    if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
        current = group(fields[5] if len(fields) > 5 else "")
    elif fields[0] == "Rss:":
        groups[current] += int(fields[1]); groups["total"] += int(fields[1])
    elif fields[0] == "Private_Dirty:":
        groups["private"] += int(fields[1])
print(" ".join(str(groups[k]) for k in ["total", "binary", "swift", "icu", "curl-tls", "anonymous", "other", "private"]))
PY
  kill $pid; wait $pid 2>/dev/null || true
}

for round in $(seq "$rounds"); do
  for index in "${!builds[@]}"; do measure "${builds[$index]}" "$index"; done
done
echo "| build | resident at start | the binary | Swift runtime + Foundation | ICU | libcurl + TLS libraries | anonymous | other | of it private (written) |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for index in "${!builds[@]}"; do
  python3 - "${builds[$index]}" "$work/$index" <<'PY'
import statistics, sys
rows = [list(map(int, line.split())) for line in open(sys.argv[2])]
medians = [statistics.median(column) / 1024 for column in zip(*rows)]
print(f"| {sys.argv[1]} | " + " | ".join(f"{m:.1f} MiB" for m in medians) + " |")
PY
done
