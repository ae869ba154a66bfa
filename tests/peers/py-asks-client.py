"""The official Python SDK client calling the tools of tests/peers/py-asks-server.py
that ask it something mid-call (a sampling, a form and a URL elicitation, its
roots), in the protocol era asked for: `legacy` (a session: asked by request)
or `2026-07-28` (stateless: asked in the call's `input_required`, answered by
retrying). Prints one JSON object: each tool's answer, the questions this
client was asked, by kind, in order, and the progress it was told of.

    python py-asks-client.py ERA PREFIX URL
    python py-asks-client.py ERA PREFIX stdio COMMAND [ARGS...]

The server is reached directly (PREFIX "") or through seam.
"""
import asyncio
import json
import sys

import mcp_types as types
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

asked = []


async def sampling(context, params):
    asked.append("sampling")
    return types.CreateMessageResult(role="assistant", model="py-asks", content=types.TextContent(type="text", text="hello"))


async def elicitation(context, params):
    mode = getattr(params, "mode", None) or "form"
    asked.append(f"elicitation:{mode}")
    if mode == "url":
        return types.ElicitResult(action="accept")
    return types.ElicitResult(action="accept", content={"name": "python"})


async def roots(context):
    asked.append("roots")
    return types.ListRootsResult(roots=[types.Root(uri="file:///probe/root", name="probe")])


async def probe(era, prefix, target):
    answers = {"sampling_callback": sampling, "elicitation_callback": elicitation, "list_roots_callback": roots}
    async with Client(target, mode=era, **answers) as client:
        answered = {}
        for tool in ["ask-sample", "ask-form", "ask-url", "ask-roots"]:
            result = await client.call_tool(prefix + tool, {})
            answered[tool] = result.content[0].text
        told = []

        async def progress(value, total, message):
            told.append([value, total])

        result = await client.call_tool(prefix + "ask-then-progress", {}, progress_callback=progress)
        answered["ask-then-progress"] = result.content[0].text
        return {"answered": answered, "asked": asked, "progress": told}


era, prefix, target, *rest = sys.argv[1:]
if target == "stdio":
    target = StdioServerParameters(command=rest[0], args=rest[1:])
print(json.dumps(asyncio.run(probe(era, prefix, target))))
