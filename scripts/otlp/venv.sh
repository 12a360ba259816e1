#!/usr/bin/env bash
# The Python environment of the OTLP test receiver (scripts/otlp/receiver.py): the
# OpenTelemetry project's protobuf schema from PyPI, in .build/otlp-venv (ignored by git).
# Prints the interpreter's path. Quiet and quick when it exists already.
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=.build/otlp-venv
if ! "$venv/bin/python" -c "import opentelemetry.proto.collector.trace.v1.trace_service_pb2" 2>/dev/null; then
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install --quiet --disable-pip-version-check "opentelemetry-proto==1.27.0" >&2
fi
echo "$PWD/$venv/bin/python"
