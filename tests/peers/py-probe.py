"""The official Python SDK client probing an MCP server over Streamable HTTP,
in the protocol era asked for: `legacy` (the `initialize` handshake and
sessions) or `2026-07-28` (`server/discover`, stateless). Prints one JSON
object: the protocol version agreed, what each list holds (names, and the
cache hints a 2026-07-28 list carries), a call, a read, a prompt and a
completion; only what needs no request from the server to the client.

    python py-probe.py URL ERA TOOL PROMPT RESOURCE
"""
import asyncio
import json
import sys

from mcp.client.client import Client


def hints(result):
    return {"ttlMs": getattr(result, "ttl_ms", None), "cacheScope": getattr(result, "cache_scope", None)}


async def probe(url, era, tool, prompt, resource):
    async with Client(url, mode=era) as client:
        session = client._session
        tools = await client.list_tools()
        resources = await client.list_resources()
        templates = await client.list_resource_templates()
        prompts = await client.list_prompts()
        call = await client.call_tool(tool, {"message": era})
        read = await client.read_resource(resource)
        got = await client.get_prompt(prompt, {"city": "Paris"})
        return {
            "version": str(getattr(session, "protocol_version", None)),
            "tools": sorted(t.name for t in tools.tools),
            "tools_hints": hints(tools),
            "resources": sorted(str(r.uri) for r in resources.resources),
            "resources_hints": hints(resources),
            "templates": sorted(t.uri_template for t in templates.resource_templates),
            "prompts": sorted(p.name for p in prompts.prompts),
            "call": call.content[0].text,
            "read": read.contents[0].text.split(" created at ")[0],
            "prompt": got.messages[0].content.text,
        }


print(json.dumps(asyncio.run(probe(*sys.argv[1:6]))))
