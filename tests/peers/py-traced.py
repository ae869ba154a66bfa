"""The official Python SDK, both sides, tracing with the OpenTelemetry SDK: its own
spans (the SDK makes a CLIENT span per request and a SERVER span per request it
answers, and carries W3C Trace Context in `_meta`, SEP-414) exported over OTLP/HTTP
to OTEL_EXPORTER_OTLP_ENDPOINT, each span as it ends.

    python py-traced.py server                  a server over stdio: tool `echo`
    python py-traced.py client ERA URL TOOL [ARGS_JSON]
                                                calls TOOL (with {"text": "traced"}, or ARGS_JSON)
                                                at URL, in ERA (`legacy` or `2026-07-28`), inside
                                                a span of its own, answering a sampling request;
                                                prints its trace id and the text
"""
import asyncio
import json
import sys

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor


def traced(service):
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    return provider


def server():
    traced("py-traced-server")
    from mcp.server.mcpserver import MCPServer

    served = MCPServer("traced")

    @served.tool(name="echo")
    def echo(text: str) -> str:
        return f"echo: {text}"

    served.run("stdio")


async def client(era, url, tool, arguments='{"text": "traced"}'):
    import mcp_types as types
    from mcp.client.client import Client

    async def sampling(context, params):
        return types.CreateMessageResult(role="assistant", model="py-traced", content=types.TextContent(type="text", text="sampled"))

    provider = traced("py-traced-client")
    with trace.get_tracer("py-traced").start_as_current_span("agent turn") as turn:
        async with Client(url, mode=era, sampling_callback=sampling) as connected:
            result = await connected.call_tool(tool, json.loads(arguments))
        trace_id = format(turn.get_span_context().trace_id, "032x")
    provider.force_flush()
    return {"trace_id": trace_id, "text": result.content[0].text if result.content else None}


if sys.argv[1] == "server":
    server()
else:
    print(json.dumps(asyncio.run(client(*sys.argv[2:]))))
