// A new user's MCP session against conduct's /mcp with the stock TypeScript SDK
// (@modelcontextprotocol/sdk, pinned in contracts/package.json): Client +
// StreamableHTTPClientTransport, the initialize handshake. Lists the tools, then calls every one
// with valid arguments the way an agent chains them. The SDK itself checks each result's
// structuredContent against the tool's outputSchema (callTool throws when it does not match, or
// when a tool with an outputSchema answers no structuredContent); this script records what it saw.
// Test use only.
//
// usage: node mcp-client.mjs URL TRACE_JSON AGENT_NAME
// Prints one JSON line: {sdk, protocol, session, tools, calls: {name: {...}}, vow_id}.
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, tracePath, agent] = process.argv.slice(2);
const trace = JSON.parse(readFileSync(tracePath, "utf8"));
const client = new Client({ name: "conduct-test-ts", version: "0.0.1" });
const transport = new StreamableHTTPClientTransport(new URL(url));
await client.connect(transport);

const { tools } = await client.listTools();
const report = {
  sdk: "@modelcontextprotocol/sdk 1.32.2",
  protocol: transport.protocolVersion,
  session: transport.sessionId ?? null,
  server: client.getServerVersion()?.name,
  tools: tools.map((t) => t.name),
  titled: tools.filter((t) => t.title).map((t) => t.name),
  withOutputSchema: tools.filter((t) => t.outputSchema).map((t) => t.name),
  calls: {},
};

async function run(name, args) {
  const entry = {};
  report.calls[name] = entry;
  try {
    // Throws if structuredContent is missing or does not match the tool's outputSchema.
    const r = await client.callTool({ name, arguments: args });
    const texts = r.content.filter((c) => c.type === "text").map((c) => c.text);
    entry.is_error = Boolean(r.isError);
    entry.structured = typeof r.structuredContent === "object" && r.structuredContent !== null;
    entry.schema_errors = [];
    let same = false;
    try {
      same = texts.length === 1 &&
        JSON.stringify(sortKeys(JSON.parse(texts[0]))) === JSON.stringify(sortKeys(r.structuredContent));
    } catch {
      same = false;
    }
    entry.text_matches = same;
    entry.type = r.structuredContent?.type ?? null;
    if (entry.is_error) entry.error_text = texts.join("").slice(0, 2000);
    return r.structuredContent ?? {};
  } catch (e) {
    entry.is_error = true;
    entry.structured = false;
    entry.schema_errors = [String(e?.message ?? e)];
    return {};
  }
}

function sortKeys(v) {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v && typeof v === "object") {
    return Object.fromEntries(Object.keys(v).sort().map((k) => [k, sortKeys(v[k])]));
  }
  return v;
}

await run("about", {});
const vow = await run("take_vow", {
  text: `Answer billing questions; ${agent} reports daily.`,
  agent,
  cadence_hours: 24,
});
const vowId = vow.vow_id ?? "0000000000000000";
report.vow_id = vowId;
await run("report_in", {
  vow_id: vowId,
  context_key: trace.context_key,
  turns: trace.turns,
  note: `first report-in of ${agent}`,
});
await run("read_ledger", { vow_id: vowId });
await run("get_reading", { vow_id: vowId });
await run("list_vows", {});
await run("demo_profile", trace);
await run("ask", { question: "How do I take a vow and report in?" });
await client.close();
console.log(JSON.stringify(report));
