/**
 * A LangGraph JS graph (langgraph_graph.ts) behind `@ag-ui/langgraph`'s `LangGraphAgent`, which talks to a
 * LangGraph API server: here the one `langgraphjs dev` runs (`@langchain/langgraph-api`'s `startServer`,
 * in-memory, its files in a temporary directory), started in this process on a second loopback port.
 *
 * Run: `tests/frameworks/servers/node/node_modules/.bin/node tests/frameworks/servers/node/langgraph_agent.ts
 * --port N`. The snippet in docs/agents/langgraph-js.md is this file's block between the `docs` markers.
 */
import { mkdtempSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";

import { serve } from "./common.ts";

async function freePort(): Promise<number> {
  return await new Promise((resolve) => {
    const probe = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

const here = path.dirname(new URL(import.meta.url).pathname);
const apiPort = await freePort();

// --- docs/agents/langgraph-js.md ---
import { EventType, type RunAgentInput } from "@ag-ui/client";
import { LangGraphAgent } from "@ag-ui/langgraph";
import { startServer } from "@langchain/langgraph-api/server";
import { map } from "rxjs";

// The LangGraph API server the adapter talks to (in production: your LangGraph deployment).
await startServer({
  port: apiPort,
  nWorkers: 1,
  host: "127.0.0.1",
  cwd: mkdtempSync(path.join(tmpdir(), "langgraph-api-")),
  graphs: { mailer: `${here}/langgraph_graph.ts:graph` },
});

const agent = new LangGraphAgent({
  deploymentUrl: `http://127.0.0.1:${apiPort}`,
  graphId: "mailer",
  emitInterruptOutcome: true, // without it the pause is only a CUSTOM on_interrupt event
});

// The adapter ends the run under the LangGraph server's run id (RUN_STARTED carries the input's runId): put the
// input's runId back, or an AG-UI client that holds one POST to one run (the inbox does) refuses the reply.
const oneRun = (input: RunAgentInput) =>
  agent
    .clone()
    .run(input)
    .pipe(map((event) => (event.type === EventType.RUN_FINISHED ? { ...event, runId: input.runId } : event)));

serve({ "/": oneRun });
// --- end of snippet ---

// The adapter as released, for the test that shows the inbox refusing its reply.
serve({ "/released": (input) => agent.clone().run(input) });
