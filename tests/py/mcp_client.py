"""A new user's MCP session against conduct's /mcp, with the stock Python SDK (PyPI `mcp`).

Runs with either pinned SDK: mcp 2.3.0 (tests/.tools/venv; the high-level `Client`, whose
`mode="auto"` probes the 2026-07-28 revision's server/discover first and falls back to
initialize) or mcp 1.30.0 (tests/.tools/venv-mcp1; `streamablehttp_client` + `ClientSession`,
the initialize handshake). It lists the tools, then calls every one with valid arguments the
way an agent would chain them (take a vow, report in on it, read its ledger and reading, list
the vows, profile a trace, ask), and checks each result: not an error, `structuredContent` an
object valid against the tool's outputSchema (jsonschema, checked here whatever the SDK did),
and the text block the same JSON.

usage: mcp_client.py URL TRACE_JSON AGENT_NAME [auto|legacy]
Prints one JSON object on stdout: {sdk, protocol, tools, calls: {name: {...}}, vow_id}.
Exits 0 when the session ran (the caller asserts on the report), 1 on an exception.
"""
import asyncio
import json
import sys

import jsonschema
import mcp

TOOLS = ["about", "take_vow", "report_in", "read_ledger", "list_vows", "get_reading",
         "demo_profile", "ask"]


def check(tool, result, schema):
    """What the caller asserts on: error flag, schema validity, text == structured."""
    out = {"is_error": bool(result["is_error"])}
    sc = result["structured"]
    out["structured"] = isinstance(sc, dict)
    if isinstance(sc, dict) and schema is not None:
        errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(sc), key=str)
        out["schema_errors"] = [e.message for e in errors[:5]]
    else:
        out["schema_errors"] = ["no structured content or no output schema"]
    texts = result["texts"]
    try:
        out["text_matches"] = len(texts) == 1 and json.loads(texts[0]) == sc
    except ValueError:
        out["text_matches"] = False
    if out["is_error"]:
        out["error_text"] = "".join(texts)[:2000]
    out["type"] = sc.get("type") if isinstance(sc, dict) else None
    return out


async def session_calls(list_tools, call, trace, agent):
    """The tool sequence, given list_tools() -> [tool] and call(name, args) -> result dict."""
    tools = await list_tools()
    schemas = {t.name: getattr(t, "outputSchema", None) or getattr(t, "output_schema", None)
               for t in tools}
    report = {"tools": [t.name for t in tools],
              "titled": sorted(t.name for t in tools if t.title),
              "described": sorted(t.name for t in tools if t.description),
              "calls": {}}

    async def run(name, args):
        r = await call(name, args)
        report["calls"][name] = check(name, r, schemas.get(name))
        return r["structured"] if isinstance(r["structured"], dict) else {}

    await run("about", {})
    vow = await run("take_vow", {"text": f"Answer billing questions; {agent} reports daily.",
                                 "agent": agent, "cadence_hours": 24})
    vow_id = vow.get("vow_id", "0000000000000000")
    report["vow_id"] = vow_id
    await run("report_in", {"vow_id": vow_id, "context_key": trace["context_key"],
                            "turns": trace["turns"], "note": f"first report-in of {agent}"})
    await run("read_ledger", {"vow_id": vow_id})
    await run("get_reading", {"vow_id": vow_id})
    await run("list_vows", {})
    await run("demo_profile", trace)
    await run("ask", {"question": "How do I take a vow and report in?"})
    return report


def as_result(r, v2):
    """A CallToolResult of either SDK as {is_error, structured, texts}."""
    return {
        "is_error": r.is_error if v2 else r.isError,
        "structured": r.structured_content if v2 else r.structuredContent,
        "texts": [c.text for c in r.content if getattr(c, "type", "") == "text"],
    }


async def main(url, trace, agent, mode):
    if hasattr(mcp, "Client"):  # mcp 2.x
        async with mcp.Client(url, mode=mode) as c:
            async def list_tools():
                return (await c.list_tools()).tools

            async def call(name, args):
                return as_result(await c.call_tool(name, args), True)

            report = await session_calls(list_tools, call, trace, agent)
            report["protocol"] = c.protocol_version
            report["sdk"] = "mcp " + getattr(mcp, "__version__", "2")
            return report
    from mcp.client.streamable_http import streamablehttp_client  # mcp 1.x
    async with streamablehttp_client(url) as (read, write, get_session_id):
        async with mcp.ClientSession(read, write) as s:
            init = await s.initialize()

            async def list_tools():
                return (await s.list_tools()).tools

            async def call(name, args):
                return as_result(await s.call_tool(name, args), False)

            report = await session_calls(list_tools, call, trace, agent)
            report["protocol"] = init.protocolVersion
            report["session"] = get_session_id()
            report["sdk"] = "mcp 1.x"
            return report


if __name__ == "__main__":
    url, trace_path, agent = sys.argv[1], sys.argv[2], sys.argv[3]
    mode = sys.argv[4] if len(sys.argv) > 4 else "auto"
    with open(trace_path) as f:
        trace = json.load(f)
    report = asyncio.run(main(url, trace, agent, mode))
    from importlib.metadata import version
    report["sdk"] = "mcp " + version("mcp")
    print(json.dumps(report))
