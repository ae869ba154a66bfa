"""An OTLP/HTTP trace receiver on loopback: decodes each export with the official
protobuf definitions (opentelemetry-proto) and prints one JSON line per span: its
service, trace and span ids, parent, name, kind and attributes. The first line is
`{"port": N}`.

    python otlp-receiver.py
"""
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest, ExportTraceServiceResponse
from opentelemetry.proto.trace.v1.trace_pb2 import Span

KINDS = {v: k.removeprefix("SPAN_KIND_").lower() for k, v in Span.SpanKind.items()}


def value(any_value):
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path != "/v1/traces" or self.headers.get("Content-Type") != "application/x-protobuf":
            self.send_response(415)
            self.end_headers()
            return
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        for resource_spans in request.resource_spans:
            resource = {a.key: value(a.value) for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    line = {
                        "service": resource.get("service.name"),
                        "trace_id": span.trace_id.hex(),
                        "span_id": span.span_id.hex(),
                        "parent_span_id": span.parent_span_id.hex(),
                        "name": span.name,
                        "kind": KINDS.get(span.kind, str(span.kind)),
                        "attributes": {a.key: value(a.value) for a in span.attributes},
                        "status": span.status.code,
                    }
                    sys.stdout.write(json.dumps(line) + "\n")
                    sys.stdout.flush()
        answer = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


receiver = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
sys.stdout.write(json.dumps({"port": receiver.server_address[1]}) + "\n")
sys.stdout.flush()
receiver.serve_forever()
