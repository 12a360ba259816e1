#!/usr/bin/env bash
# `reqtop demo` (the quick scenario, headless) as a user who is not root, and its operations
# must succeed as they do for root: 3 of 6 (the others fail or are cancelled on purpose).
# As root it runs as `nobody` through setpriv, on a copy of the binary `nobody` can reach;
# as anyone else it runs as that user.
set -euo pipefail
cd "$(dirname "$0")/.."
binary=$(swift build --show-bin-path)/reqtop
[ -x "$binary" ] || swift build --product reqtop
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"
cp "$binary" "$work/reqtop"
chmod 755 "$work/reqtop"
run=("$work/reqtop")
if [ "$(id -u)" = 0 ]; then
  run=(setpriv --reuid=65534 --regid=65534 --clear-groups -- env HOME="$work" TMPDIR=/tmp "$work/reqtop")
fi
status=0
(cd "$work" && timeout 120 "${run[@]}" demo --no-tui --scenario quick >"$work/out" 2>"$work/err") || status=$?
summary=$(tail -n 1 "$work/err")
echo "demo as $( [ "$(id -u)" = 0 ] && echo nobody || id -un ): $summary (exit $status)"
# Exit 1 is the demo's own (some requests fail on purpose); anything else is a failure.
if [ "$status" != 1 ] || ! grep -q "3 succeeded, 2 failed, 1 cancelled" <<<"$summary"; then
  echo "ci: the demo does not work for a user who is not root" >&2
  cat "$work/err" >&2
  exit 1
fi
