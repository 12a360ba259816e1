#!/usr/bin/env python3
"""An OTLP/HTTP receiver for reqtop's tests: decodes what it is sent with the OpenTelemetry
project's own protobuf schema (the `opentelemetry-proto` package from PyPI), not a reader of
ours, and writes one JSON line per span, metric data point, and request it could not decode.

Usage: receiver.py OUTPUT.jsonl
Binds 127.0.0.1 on a free port and prints that port on stdout, then serves until killed.
"""
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

OUTPUT = open(sys.argv[1], "a", buffering=1)


def value(any_value):
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


def attributes(items):
    return {item.key: value(item.value) for item in items}


def write(record):
    OUTPUT.write(json.dumps(record, sort_keys=True) + "\n")


def spans(body):
    request = trace_service_pb2.ExportTraceServiceRequest()
    request.ParseFromString(body)
    for resource_spans in request.resource_spans:
        resource = attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                write({
                    "type": "span",
                    "service": resource.get("service.name"),
                    "name": span.name,
                    "kind": span.kind,
                    "traceId": span.trace_id.hex(),
                    "spanId": span.span_id.hex(),
                    "parentSpanId": span.parent_span_id.hex(),
                    "start": span.start_time_unix_nano,
                    "end": span.end_time_unix_nano,
                    "attributes": attributes(span.attributes),
                    "events": [{"name": e.name, "time": e.time_unix_nano, "attributes": attributes(e.attributes)} for e in span.events],
                    "status": span.status.code,
                    "statusMessage": span.status.message,
                })


def metrics(body):
    request = metrics_service_pb2.ExportMetricsServiceRequest()
    request.ParseFromString(body)
    for resource_metrics in request.resource_metrics:
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                data = metric.WhichOneof("data")
                for point in getattr(metric, data).data_points:
                    record = {"type": "metric", "name": metric.name, "data": data, "attributes": attributes(point.attributes)}
                    if data in ("sum", "gauge"):
                        record["value"] = point.as_double if point.WhichOneof("value") == "as_double" else point.as_int
                    elif data == "histogram":
                        record["count"] = point.count
                        record["sum"] = point.sum
                    write(record)


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            if self.path == "/v1/traces":
                spans(body)
            elif self.path == "/v1/metrics":
                metrics(body)
            else:
                self.send_response(404)
                self.end_headers()
                return
        except DecodeError as error:
            write({"type": "undecodable", "path": self.path, "error": str(error)})
            self.send_response(400)
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
