/**
 * CopilotKit's `BuiltInAgent` (`@copilotkit/runtime/v2`), two ways it asks a person, on two paths:
 *
 * - `POST /` (classic: a model and tools): the model (the AI SDK's own `MockLanguageModelV3`, models.ts) calls
 *   `confirmEmail`, an `interrupt: true` tool: the run ends with an interrupt outcome (`id` = `toolCallId` = the
 *   call's id, `reason: tool_call`, no `responseSchema`) after the call's `TOOL_CALL_*`. The resume payload
 *   becomes that call's result; told `{approved: true}`, the model then calls `sendEmail`, which runs here.
 * - `POST /factory` (a `custom` agent factory, no model): the factory streams its own `sendEmail` proposal and
 *   asks with `ctx.interrupt([...])` (a `responseSchema` offering `editedArgs`); on the resume the same call
 *   returns the matching resume entries.
 *
 * The agent keeps nothing between runs: a resume finds the call it answers in the `messages` it is sent.
 *
 * Run: `tests/frameworks/servers/node/node_modules/.bin/node tests/frameworks/servers/node/copilotkit_agent.ts
 * --port N`. The snippet in docs/agents/copilotkit.md is this file's block between the `docs` markers.
 */
import type { BaseEvent } from "@ag-ui/client";

import { emailArgs, lastUserText, recordSent, serve } from "./common.ts";
import { scriptedAISDKModel } from "./models.ts";

const model = scriptedAISDKModel();

// --- docs/agents/copilotkit.md ---
import { BuiltInAgent, defineTool } from "@copilotkit/runtime/v2";
import { z } from "zod";

const email = z.object({ to: z.string(), subject: z.string(), body: z.string() });

// Classic: an interrupt tool has no execute; the person's answer is its result, and the model goes on from it.
const confirmEmail = defineTool({
  name: "confirmEmail",
  description: "Ask a person to confirm an email before it is sent.",
  parameters: email,
  interrupt: true,
  interruptMessage: "Send this email?",
});
const sendEmail = defineTool({
  name: "sendEmail",
  description: "Send an email.",
  parameters: email,
  execute: async (args) => recordSent("", args), // a tool's execute gets its arguments only
});
const mailer = new BuiltInAgent({ model, tools: [confirmEmail, sendEmail], maxSteps: 3 });

// Factory: you own the loop; ctx.interrupt() pauses the run on a fresh run and returns the answers on the resume.
const WIRE_SCHEMA = {
  type: "object",
  properties: { approved: { type: "boolean" }, editedArgs: { type: "object" } },
  required: ["approved"],
};
const wire = new BuiltInAgent({
  type: "custom",
  factory: async function* ({ input, interrupt }): AsyncGenerator<BaseEvent> {
    // No server state: the proposed call comes back in the conversation the resume carries.
    const proposed = input.messages.flatMap((m) => (m.role === "assistant" ? (m.toolCalls ?? []) : [])).at(-1);
    const toolCallId = proposed?.id ?? `wire-${input.runId}`;
    const args = proposed ? JSON.parse(proposed.function.arguments) : emailArgs(lastUserText(input.messages as never));
    if (!input.resume?.length) {
      yield { type: "TOOL_CALL_START", toolCallId, toolCallName: "sendEmail" } as BaseEvent;
      yield { type: "TOOL_CALL_ARGS", toolCallId, delta: JSON.stringify(args) } as BaseEvent;
      yield { type: "TOOL_CALL_END", toolCallId } as BaseEvent;
    }
    const [answer] = await interrupt([
      { id: `approve-${toolCallId}`, reason: "tool_call", toolCallId, message: "Send it?", responseSchema: WIRE_SCHEMA },
    ]);
    const payload = answer.payload as { approved?: boolean; editedArgs?: Record<string, unknown> } | undefined;
    const result =
      answer.status === "resolved" && payload?.approved
        ? recordSent(toolCallId, payload.editedArgs ?? args)
        : { status: "not sent", answer: answer.status };
    yield { type: "TOOL_CALL_RESULT", messageId: `result-${toolCallId}`, toolCallId, content: JSON.stringify(result) } as BaseEvent;
  },
});

serve({ "/": (input) => mailer.clone().run(input), "/factory": (input) => wire.clone().run(input) });
// --- end of snippet ---
