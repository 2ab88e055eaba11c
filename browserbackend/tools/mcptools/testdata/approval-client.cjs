// The TypeScript SDK's client answers the server's approval elicitations:
// it approves the first and denies the second, calling browser_links each
// time, and prints what it saw as one JSON line.
// Usage: node approval-client.cjs <streamable HTTP URL>
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");
const { ElicitRequestSchema } = require("@modelcontextprotocol/sdk/types.js");

async function main() {
  const client = new Client({ name: "ts-sdk-approver", version: "1" }, { capabilities: { elicitation: {} } });
  const asked = [];
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    asked.push(req.params.message);
    return { action: "accept", content: { approve: asked.length === 1 } };
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(process.argv[2])));
  const calls = [];
  for (let i = 0; i < 2; i++) {
    const res = await client.callTool({ name: "browser_links", arguments: {} });
    calls.push({ isError: !!res.isError, text: res.content.map((c) => c.text || "").join("\n") });
  }
  await client.close();
  console.log(JSON.stringify({ asked, calls }));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
