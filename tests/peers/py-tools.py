"""The official Python SDK client listing a server's tools and calling one, in the
protocol era asked for (`legacy` or `2026-07-28`). Prints one JSON object: each
tool's name and the names of its input schema's properties, and the call's first
text and whether it was an error (null when TOOL is `-`).

    python py-tools.py ERA TOOL ARGS_JSON stdio COMMAND [ARGS...]
    python py-tools.py ERA TOOL ARGS_JSON URL
"""
import asyncio
import json
import sys

from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters


async def run(era, tool, arguments, target):
    async with Client(target, mode=era) as client:
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
