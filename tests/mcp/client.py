"""Drives the coordinator's MCP server with the official MCP Python SDK.

Usage: client.py URL TOKEN [DEADLINE_SECONDS]

Connects over streamable HTTP with the bearer token, initializes, lists the
tools, creates a mission in approve mode, approves its plan, follows it with
mission_status until its results await review, accepts them, and follows it to
completion. Along the way it makes two calls that must fail as tool results
(isError) rather than transport errors. Prints one JSON summary on stdout for
the Rust test (tests/it/tools.rs) to assert on; exits non-zero on failure.
"""

import asyncio
import json
import sys
import time

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def payload(result):
    """The JSON a tool returned: structuredContent, else the first text block."""
    if result.structuredContent is not None:
        return result.structuredContent
    return json.loads(result.content[0].text)


async def follow(session, mission_id, wanted, deadline, seen):
    """Calls mission_status until the status is in `wanted` or the deadline passes."""
    while True:
        result = await session.call_tool("mission_status", {"mission_id": mission_id})
        if result.isError:
            raise RuntimeError(f"mission_status failed: {result.content[0].text}")
        mission = payload(result)
        if not seen or seen[-1] != mission["status"]:
            seen.append(mission["status"])
        if mission["status"] in wanted:
            return mission
        if time.monotonic() > deadline:
            raise TimeoutError(f"mission {mission_id} stayed {mission['status']}; wanted {wanted}")
        await asyncio.sleep(0.2)


async def main(url, token, limit):
    deadline = time.monotonic() + limit
    client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with client:
        async with streamable_http_client(url, http_client=client) as (read, write, _):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                listed = await session.list_tools()
                tools = {t.name: t for t in listed.tools}

                created = await session.call_tool(
                    "create_mission",
                    {"goal": "Compare Postgres, MySQL and SQLite for an embedded use case"},
                )
                if created.isError:
                    raise RuntimeError(f"create_mission failed: {created.content[0].text}")
                mission = payload(created)
                mission_id = mission["mission_id"]

                missing = await session.call_tool("approve_plan", {})
                approved = await session.call_tool("approve_plan", {"mission_id": mission_id})
                if approved.isError:
                    raise RuntimeError(f"approve_plan failed: {approved.content[0].text}")
                again = await session.call_tool("approve_plan", {"mission_id": mission_id})

                seen = [mission["status"], payload(approved)["status"]]
                review = await follow(
                    session, mission_id, {"awaiting_review", "completed", "failed"}, deadline, seen
                )
                accepted = None
                if review["status"] == "awaiting_review":
                    accepted = await session.call_tool(
                        "review_results", {"mission_id": mission_id, "decision": "accept"}
                    )
                final = await follow(
                    session, mission_id, {"completed", "failed", "cancelled"}, deadline, seen
                )
                listing = payload(await session.call_tool("list_missions", {}))

    print(
        json.dumps(
            {
                "server": init.serverInfo.name,
                "protocol_version": init.protocolVersion,
                "instructions": init.instructions,
                "tools": sorted(tools),
                "schemas_are_objects": all(t.inputSchema.get("type") == "object" for t in tools.values()),
                "created": {
                    "status": mission["status"],
                    "tasks": len(mission["tasks"]),
                    "next_step": mission["next_step"],
                },
                "approved_status": payload(approved)["status"],
                "statuses_seen": seen,
                "review_next_step": review["next_step"],
                "accepted_is_error": accepted.isError if accepted else None,
                "final": {
                    "status": final["status"],
                    "progress": final["progress"],
                    "task_statuses": sorted({t["status"] for t in final["tasks"]}),
                },
                "listed": [m["mission_id"] for m in listing["missions"]],
                "missing_argument": {"is_error": missing.isError, "text": missing.content[0].text},
                "approve_twice": {"is_error": again.isError, "text": again.content[0].text},
            }
        )
    )


if __name__ == "__main__":
    url, token = sys.argv[1], sys.argv[2]
    limit = float(sys.argv[3]) if len(sys.argv) > 3 else 60.0
    asyncio.run(main(url, token, limit))
