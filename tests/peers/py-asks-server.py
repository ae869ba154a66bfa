"""A server written with the official Python SDK's MCPServer that asks its client
during calls, in whichever revision each call comes in: by a request in the
call's session (<= 2025-11-25), or by answering `input_required` and reading
the answers from the retry (2026-07-28). One tool per question: a sampling, a
form elicitation, a URL elicitation, the client's roots; each answers with what
it was told, so a client and a gateway between them can be checked end to end.
`ask-then-progress` asks, then reports progress (in the 2026-07-28 revision, on
the retry's stream).

For 2026-07-28 clients its tool list carries caching hints (ttlMs 300000,
public), and what changes is published to their `subscriptions/listen`
streams: `grow` adds a tool and says the tool list changed; `quietly` adds a
tool without saying so, and a prompt, saying the prompt list changed (a client
that honours the tool list's hint lists the tools again only once told);
`touch` says the resource `asks://note` was updated.

    python py-asks-server.py        (over stdio)
"""
from typing import Annotated

import mcp_types as types
from pydantic import BaseModel

from mcp.server.caching import CacheHint
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.prompts.base import Prompt
from mcp.server.mcpserver.resolve import Elicit, ListRoots, Resolve, Sample

server = MCPServer(
    "py-asks",
    cache_hints={"tools/list": CacheHint(ttl_ms=300_000, scope="public")},
)


class Name(BaseModel):
    name: str


def who():
    return Elicit("Who is there?", Name)


def sample():
    message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text="say something"))
    return Sample([message], max_tokens=5)


def roots():
    return ListRoots()


@server.tool(name="ask-form")
async def ask_form(name: Annotated[Name, Resolve(who)]) -> str:
    return f"there is {name.name}"


@server.tool(name="ask-sample")
async def ask_sample(sampled: Annotated[types.CreateMessageResult, Resolve(sample)]) -> str:
    return f"sampled {sampled.content.text}"


@server.tool(name="ask-then-progress")
async def ask_then_progress(name: Annotated[Name, Resolve(who)], ctx: Context) -> str:
    await ctx.report_progress(1, 2)
    await ctx.report_progress(2, 2)
    return f"{name.name} was told how far it came"


@server.tool(name="ask-roots")
async def ask_roots(listed: Annotated[types.ListRootsResult, Resolve(roots)]) -> str:
    return "roots " + " ".join(str(root.uri) for root in listed.roots)


URL = "https://example.com/sign-in"


@server.tool(name="ask-url")
async def ask_url(ctx: Context) -> str | types.InputRequiredResult:
    if (ctx.protocol_version or "") >= "2026-07-28":
        answered = (ctx.input_responses or {}).get("open")
        if answered is not None and ctx.request_state == "url-1":
            action = answered.get("action") if isinstance(answered, dict) else answered.action
            return f"url {action}"
        params = types.ElicitRequestURLParams(mode="url", message="Sign in", url=URL, elicitation_id="sign-in")
        return types.InputRequiredResult(input_requests={"open": types.ElicitRequest(params=params)}, request_state="url-1")
    answered = await ctx.elicit_url("Sign in", URL, "sign-in")
    return f"url {answered.action}"


@server.resource("asks://note")
def note() -> str:
    return "a note"


@server.tool(name="grow")
async def grow(ctx: Context) -> str:
    server.add_tool(lambda: "grown", name="grown")
    await ctx.notify_tools_changed()
    return "grew"


@server.tool(name="quietly")
async def quietly(ctx: Context) -> str:
    server.add_tool(lambda: "unsaid", name="unsaid")
    server.add_prompt(Prompt.from_function(lambda: "later", name="later"))
    await ctx.notify_prompts_changed()
    return "added quietly"


@server.tool(name="touch")
async def touch(ctx: Context) -> str:
    await ctx.notify_resource_updated("asks://note")
    return "touched"


server.run("stdio")
