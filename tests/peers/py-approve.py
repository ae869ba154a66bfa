"""The official Python SDK client calling one tool whose call needs a person's approval,
in the protocol era asked for, and answering seam's question as told. Prints one JSON
object: the call's first text and whether it was an error, and the messages it was asked.

    python py-approve.py ERA ANSWER TOOL ARGS_JSON URL

ANSWER: `yes` (accept, approve: true), `no` (accept, approve: false), `decline`,
`silent` (never answers: the question outlives `serve.input_timeout`), or `none` (the
client declares no elicitation at all).
"""
import asyncio
import json
import sys

import mcp_types as types
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

asked = []


def answering(answer):
    async def elicitation(context, params):
        asked.append(params.message)
        if answer == "silent":
            await asyncio.sleep(3600)
        if answer == "decline":
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content={"approve": answer == "yes"})

    return elicitation


async def run(era, answer, tool, arguments, target):
    options = {} if answer == "none" else {"elicitation_callback": answering(answer)}
    async with Client(target, mode=era, **options) as client:
        result = await client.call_tool(tool, arguments)
        call = {"text": result.content[0].text if result.content else None, "error": bool(result.is_error)}
        return {"call": call, "asked": asked}


era, answer, tool, arguments, target, *rest = sys.argv[1:]
if target == "stdio":
    target = StdioServerParameters(command=rest[0], args=rest[1:])
print(json.dumps(asyncio.run(run(era, answer, tool, json.loads(arguments), target))))
