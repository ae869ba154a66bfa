"""The official Python SDK client listing a server's tools and calling one, in the
protocol era asked for (`legacy` or `2026-07-28`). Prints one JSON object: each
tool's name and the names of its input schema's properties, and the call's first
text and whether it was an error (null when TOOL is `-`).

    python py-tools.py ERA TOOL ARGS_JSON stdio COMMAND [ARGS...]
    python py-tools.py ERA TOOL ARGS_JSON URL

With SEAM_ROOTS (paths joined by ':') the client offers those folders as its roots;
with SEAM_CLIENT_NAME it gives itself that name (its `clientInfo`).
"""
import asyncio
import json
import os
import sys

import mcp_types as types
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters


def options():
    given = {}
    if os.environ.get("SEAM_ROOTS"):
        folders = os.environ["SEAM_ROOTS"].split(":")

        async def roots(context):
            return types.ListRootsResult(roots=[types.Root(uri=f"file://{p}", name=p) for p in folders])

        given["list_roots_callback"] = roots
    if os.environ.get("SEAM_CLIENT_NAME"):
        given["client_info"] = types.Implementation(name=os.environ["SEAM_CLIENT_NAME"], version="1")
    return given


async def run(era, tool, arguments, target):
    async with Client(target, mode=era, **options()) as client:
        listed = await client.list_tools()
        tools = {t.name: sorted((t.input_schema or {}).get("properties", {}).keys()) for t in listed.tools}
        call = None
        if tool != "-":
            result = await client.call_tool(tool, arguments)
            call = {"text": result.content[0].text if result.content else None, "error": bool(result.is_error)}
        return {"tools": tools, "call": call}


era, tool, arguments, target, *rest = sys.argv[1:]
if target == "stdio":
    target = StdioServerParameters(command=rest[0], args=rest[1:])
print(json.dumps(asyncio.run(run(era, tool, json.loads(arguments), target))))
