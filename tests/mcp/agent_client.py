"""Acts as agents over the coordinator's MCP server with the official MCP Python SDK.

Usage: agent_client.py URL SCRIPT_JSON

SCRIPT_JSON is {"tokens": {name: bearer token}, "steps": [step, ...]} where a
step is {"token": name, "list": true} (list the tools) or {"token": name,
"tool": tool, "arguments": {...}} (call one). Each step opens its own
session, so a token refused at the transport (401/409) fails only its step.
Prints one JSON array of outcomes on stdout for the Rust test
(tests/it/agent_tools.rs) to assert on: {"tools": [...]} for a listing,
{"ok": bool, "result": ...} for a call (ok false when the tool returned
isError), or {"refused": "<transport error>"}.
"""

import asyncio
import json
import sys

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def payload(result):
    """The JSON a tool returned: structuredContent, else the first text block."""
    if result.structuredContent is not None:
        return result.structuredContent
    text = result.content[0].text if result.content else "null"
    try:
        return json.loads(text)
    except ValueError:
        return text


async def step(url, token, s):
    client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with client:
        async with streamable_http_client(url, http_client=client) as (read, write, _):
            async with ClientSession(read, write) as session:
                await session.initialize()
                if s.get("list"):
                    tools = (await session.list_tools()).tools
                    return {"tools": [t.name for t in tools]}
                result = await session.call_tool(s["tool"], s.get("arguments") or {})
                return {"ok": not result.isError, "result": payload(result)}


async def main(url, script):
    out = []
    for s in script["steps"]:
        token = script["tokens"][s["token"]]
        try:
            out.append(await asyncio.wait_for(step(url, token, s), 60))
        except Exception as e:  # the transport refused: record it and go on
            out.append({"refused": repr(e)})
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], json.loads(sys.argv[2])))
