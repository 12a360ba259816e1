#!/usr/bin/env bash
# The engine's XCTest suites again, on the NIO transport (AsyncHTTPClient). `swift test` runs
# them on URLSession; XCTest on Linux finds no inherited test methods, so the transport is
# chosen by REQTOP_TEST_TRANSPORT (see Tests/RequestOperationsTests/Support.swift). Suites
# about URLSession itself (SharedSession, ConnectionReuse, TLSFailure) are left out; the
# Swift Testing suite TransportConformanceTests covers both transports in every run.
set -euo pipefail
cd "$(dirname "$0")/.."
suites="Hedge|CircuitBreaker|RateLimitPushback|RecentOperations|RetryBudget|EarlyRetry|ClockAndGate|AsyncAPI|HeaderCheck|Deadline|Authentication|EventDelivery|Backoff|TypedResult|HostileRetryAfter|Lifecycle|EventStream|Interceptor|Cancellation"
log=$(mktemp)
status=0
REQTOP_TEST_TRANSPORT=nio swift test --skip-build --filter "RequestOperationsTests\.(${suites})Tests" >"$log" 2>&1 || status=$?
grep -E ": error: |' failed \(" "$log" | head -n 40 || true
summary=$(grep -E "Executed [0-9]+ tests?, with " "$log" | tail -n 1 || true)
rm -f "$log"
echo "engine suites on nio: ${summary:-no summary (exit $status)}"
exit "$status"
