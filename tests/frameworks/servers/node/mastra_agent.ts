/**
 * A Mastra agent served by `@ag-ui/mastra` (`MastraAgent`), its model Mastra's own deterministic
 * `MastraLanguageModelV2Mock` (models.ts), its suspended runs in an `InMemoryStore`.
 *
 * "Email …": the model proposes `sendEmail`; the tool suspends itself with `suspend()` before it sends, and the
 * adapter ends the run with an interrupt outcome (`reason: mastra:tool_suspend`, id `runId::toolCallId`, the
 * tool's `resumeSchema` as `responseSchema`, the proposed call in `metadata.mastra`). The resume payload becomes
 * the tool's `resumeData`: `{approved, editedArgs?}`.
 *
 * Run: `tests/frameworks/servers/node/node_modules/.bin/node tests/frameworks/servers/node/mastra_agent.ts
 * --port N` (`make frameworks-node` installs both). The snippet in docs/agents/mastra.md is this file's block
 * between the `docs` markers.
 */
import { recordSent, serve } from "./common.ts";
import { scriptedMastraModel } from "./models.ts";

const model = scriptedMastraModel();

// --- docs/agents/mastra.md ---
import { MastraAgent } from "@ag-ui/mastra";
import { Agent } from "@mastra/core/agent";
import { Mastra } from "@mastra/core/mastra";
import { InMemoryStore } from "@mastra/core/storage";
import { createTool } from "@mastra/core/tools";
import { z } from "zod";

const email = z.object({ to: z.string(), subject: z.string(), body: z.string() });

const sendEmail = createTool({
  id: "sendEmail",
  description: "Send an email.",
  inputSchema: email,
  suspendSchema: z.object({ message: z.string() }),
  // What a person answers: the interrupt's responseSchema (editedArgs offers "Approve with edits").
  resumeSchema: z.object({ approved: z.boolean(), editedArgs: email.optional() }),
  execute: async (args, context) => {
    const { resumeData, suspend, toolCallId } = context.agent!;
    if (!resumeData) {
      return await suspend({ message: `Send "${args.subject}" to ${args.to}?` });
    }
    if (!resumeData.approved) return { status: "not sent", reason: "denied by a person" };
    return recordSent(toolCallId, resumeData.editedArgs ?? args);
  },
});

const mailer = new Agent({ id: "mailer", name: "mailer", instructions: "You send emails.", model, tools: { sendEmail } });
// Suspended runs wait in the store: use a persistent one (e.g. @mastra/libsql) where resumes may hit another process.
const mastra = new Mastra({ agents: { mailer }, storage: new InMemoryStore() });
const agent = new MastraAgent({ agentId: "mailer", agent: mastra.getAgent("mailer"), resourceId: "inbox" });

serve({ "/": (input) => agent.clone().run(input) });
// --- end of snippet ---
