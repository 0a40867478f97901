/**
 * A LangGraph JS graph (the twin of tests/integration/langgraph_app.py), served by the LangGraph API server in
 * langgraph_agent.ts. Its model is LangChain's own `FakeStreamingChatModel`, told per turn what to stream: a
 * `sendEmail` call read from the user's last message (`emailArgs`), or, once the tool answered, a short reply.
 * The `sendEmail` tool asks a person with `interrupt({...})` (the dict is the AG-UI interrupt: `reason`,
 * `toolCallId`, `message`, `responseSchema` offering `editedArgs`) and, when approved, sends.
 */
import { dispatchCustomEvent } from "@langchain/core/callbacks/dispatch";
import { AIMessage, AIMessageChunk, HumanMessage, ToolMessage } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { FakeStreamingChatModel } from "@langchain/core/utils/testing";
import {
  END,
  interrupt,
  type LangGraphRunnableConfig,
  MessagesValue,
  START,
  StateGraph,
  StateSchema,
} from "@langchain/langgraph";
import { ToolNode } from "@langchain/langgraph/prebuilt";
import { z } from "zod";

import { emailArgs, recordSent } from "./common.ts";

const CANCELLED = "__agui_cancelled__"; // @ag-ui/langgraph's resume value for a cancelled interrupt
const EMAIL_SCHEMA = {
  type: "object",
  properties: {
    approved: { type: "boolean" },
    editedArgs: {
      type: "object",
      description: "Full replacement of the tool args. Not merged.",
      properties: { to: { type: "string" }, subject: { type: "string" }, body: { type: "string" } },
    },
  },
  required: ["approved"],
};

let calls = 0;
// A StateSchema: the API server reads the graph's schemas from it at run time (else it parses this file with the
// TypeScript compiler in a worker, which a busy machine may not finish within its 30 s).
const State = new StateSchema({ messages: MessagesValue });

const sendEmail = tool(
  async (args, config) => {
    const toolCallId: string = config.toolCall?.id ?? "";
    const answer = interrupt({
      reason: "tool_call",
      toolCallId,
      message: `Send email to ${args.to} with subject '${args.subject}'?`,
      responseSchema: EMAIL_SCHEMA,
    });
    if (answer?.[CANCELLED]) return JSON.stringify({ status: "cancelled", sent: false });
    if (answer?.approved !== true) return JSON.stringify({ status: "denied", sent: false });
    return JSON.stringify(recordSent(toolCallId, answer.editedArgs ?? args));
  },
  {
    name: "sendEmail",
    description: "Send an email, after a person approved it.",
    schema: z.object({ to: z.string(), subject: z.string(), body: z.string() }),
  },
);

async function agent(state: typeof State.State, config: LangGraphRunnableConfig) {
  const last = state.messages[state.messages.length - 1];
  let chunk: AIMessageChunk;
  if (last instanceof ToolMessage) {
    const status = JSON.parse(String(last.content)).status;
    chunk = new AIMessageChunk({ content: `Email ${status}.` });
  } else {
    const human = [...state.messages].reverse().find((message) => message instanceof HumanMessage);
    calls += 1;
    const call = { name: "sendEmail", args: emailArgs(String(human?.content ?? "")), id: `call_${process.pid}_${calls}` };
    chunk = new AIMessageChunk({ content: "", tool_calls: [{ ...call, type: "tool_call" }] });
    // FakeStreamingChatModel streams the call whole (no tool_call_chunks): emit the proposal for AG-UI clients,
    // as a node without a streaming LLM does.
    // The adapter forwards `args` as TOOL_CALL_ARGS.delta as it is: a JSON string.
    await dispatchCustomEvent("manually_emit_tool_call", { ...call, args: JSON.stringify(call.args) }, config);
  }
  const model = new FakeStreamingChatModel({ sleep: 0, chunks: [chunk] }).bindTools([sendEmail]);
  return { messages: [await model.invoke(state.messages)] };
}

function route(state: typeof State.State) {
  const last = state.messages[state.messages.length - 1] as AIMessage;
  return last.tool_calls?.length ? "tools" : END;
}

export const graph = new StateGraph(State)
  .addNode("agent", agent)
  .addNode("tools", new ToolNode([sendEmail]))
  .addEdge(START, "agent")
  .addConditionalEdges("agent", route, ["tools", END])
  .addEdge("tools", "agent")
  .compile();
