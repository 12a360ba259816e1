#!/usr/bin/env bash
# Builds the DocC documentation of the library targets (swift-docc-plugin) and fails on a
# broken symbol link (a ``Symbol`` that resolves to nothing), which DocC only warns about.
# Missing parameter docs are not counted. Run by .ci/run; about 20 s a target after a build.
set -euo pipefail
cd "$(dirname "$0")/.."
targets=(RequestOperations RequestEventFormat RequestArchive RequestEndpoint RequestTransportNIO RequestLogging RequestTracing RequestMetrics)
log=$(mktemp)
status=0
for target in "${targets[@]}"; do
  if ! swift package --disable-sandbox generate-documentation --target "$target" >"$log" 2>&1; then
    echo "docs: $target failed to build its documentation:"; tail -n 20 "$log"; status=1; continue
  fi
  broken=$(grep -a "warning: .* doesn't exist at " "$log" | sed "s|$(pwd)/||" | sort -u || true)
  if [ -n "$broken" ]; then
    echo "docs: broken symbol links in $target:"; echo "$broken"; status=1
  else
    echo "docs: $target: no broken symbol links"
  fi
done
rm -f "$log"
exit "$status"
