"""The official Python SDK client probing an MCP server, over Streamable
HTTP or stdio, in the protocol era asked for: `legacy` (the `initialize`
handshake), `auto` (`server/discover`, else `initialize`) or `2026-07-28`
(`server/discover`, stateless). Prints one JSON object: the protocol version
agreed, what each list holds (names without PREFIX, and the cache hints a
2026-07-28 list carries), a call, a read, a prompt and a completion, and a
call during which the server asks the client for a sampling.

    python py-probe.py ERA PREFIX URL
    python py-probe.py ERA PREFIX stdio COMMAND [ARGS...]

The server is server-everything, directly (PREFIX "") or through seam.
"""
import asyncio
import json
import sys

import mcp_types as types
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters


# The client declares sampling, elicitation and roots, as seam does to its
# mounts, and answers them: a server lists the same tools to both.
async def sampling(context, params):
    text = params.messages[-1].content.text
    return types.CreateMessageResult(role="assistant", model="py-probe", content=types.TextContent(type="text", text=f"sampled: {text}"))


async def elicitation(context, params):
    return types.ElicitResult(action="accept", content={"name": "python"} if getattr(params, "mode", "form") != "url" else None)


async def roots(context):
    return types.ListRootsResult(roots=[])


def hints(result):
    return {"ttlMs": getattr(result, "ttl_ms", None), "cacheScope": getattr(result, "cache_scope", None)}


async def probe(era, prefix, target):
    bare = lambda name: name[len(prefix):] if name.startswith(prefix) else name
    answers = {"sampling_callback": sampling, "elicitation_callback": elicitation, "list_roots_callback": roots}
    async with Client(target, mode=era, **answers) as client:
        session = client._session
        tools = await client.list_tools()
        resources = await client.list_resources()
        templates = await client.list_resource_templates()
        prompts = await client.list_prompts()
        call = await client.call_tool(prefix + "echo", {"message": "python"})
        read = await client.read_resource("demo://resource/dynamic/text/5")
        got = await client.get_prompt(prefix + "args-prompt", {"city": "Paris"})
        # A question the server asks during a call reaches this client: by a request in a
        # session, and in the 2026-07-28 era inside the call's input_required result, which
        # the client answers by retrying the call.
        asked = await client.call_tool(prefix + "trigger-sampling-request", {"prompt": "hi", "maxTokens": 5})
        sampled = "sampled: Resource trigger-sampling-request context: hi" in asked.content[0].text
        return {
            "version": str(getattr(session, "protocol_version", None)),
            "sampled": sampled,
            "tools": sorted(bare(t.name) for t in tools.tools),
            "tools_hints": hints(tools),
            "resources": sorted(str(r.uri) for r in resources.resources),
            "resources_hints": hints(resources),
            "templates": sorted(t.uri_template for t in templates.resource_templates),
            "prompts": sorted(bare(p.name) for p in prompts.prompts),
            "call": call.content[0].text,
            "read": read.contents[0].text.split(" created at ")[0],
            "prompt": got.messages[0].content.text,
        }


era, prefix, target, *rest = sys.argv[1:]
if target == "stdio":
    target = StdioServerParameters(command=rest[0], args=rest[1:])
print(json.dumps(asyncio.run(probe(era, prefix, target))))
