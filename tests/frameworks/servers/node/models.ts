/**
 * The deterministic "models" of the TypeScript agents: each stands in for an LLM with the frameworks' own test
 * doubles, proposing one sendEmail call read from the user's last message (`emailArgs`) and, once a tool result
 * is in the prompt, answering with it.
 */
import { MastraLanguageModelV2Mock } from "@mastra/core/test-utils/llm-mock";
import { MockLanguageModelV3 } from "ai/test";

import { emailArgs, lastUserText } from "./common.ts";

let calls = 0;
const usage = { inputTokens: 1, outputTokens: 1, totalTokens: 2 };

function stream(parts: unknown[]): ReadableStream<never> {
  return new ReadableStream({
    start(controller) {
      for (const part of parts) controller.enqueue(part as never);
      controller.close();
    },
  });
}

/** Mastra's own mock (`@mastra/core/test-utils/llm-mock`), an AI SDK v5 language model. */
export function scriptedMastraModel(): MastraLanguageModelV2Mock {
  return new MastraLanguageModelV2Mock({
    doStream: async ({ prompt }) => {
      const last = prompt[prompt.length - 1];
      if (last.role === "tool") {
        const text = `Done: ${JSON.stringify(last.content[0])}`;
        return {
          stream: stream([
            { type: "stream-start", warnings: [] },
            { type: "text-start", id: "t1" },
            { type: "text-delta", id: "t1", delta: text },
            { type: "text-end", id: "t1" },
            { type: "finish", finishReason: "stop", usage },
          ]),
        };
      }
      calls += 1;
      const input = JSON.stringify(emailArgs(lastUserText(prompt as never)));
      return {
        stream: stream([
          { type: "stream-start", warnings: [] },
          { type: "tool-call", toolCallId: `call-${process.pid}-${calls}`, toolName: "sendEmail", input },
          { type: "finish", finishReason: "tool-calls", usage },
        ]),
      };
    },
  });
}

const usageV3 = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};

function answer(text: string): unknown[] {
  return [
    { type: "stream-start", warnings: [] },
    { type: "text-start", id: "t1" },
    { type: "text-delta", id: "t1", delta: text },
    { type: "text-end", id: "t1" },
    { type: "finish", finishReason: { unified: "stop", raw: "stop" }, usage: usageV3 },
  ];
}

function callTool(toolName: string, args: unknown): unknown[] {
  calls += 1;
  return [
    { type: "stream-start", warnings: [] },
    { type: "tool-call", toolCallId: `call-${process.pid}-${calls}`, toolName, input: JSON.stringify(args) },
    { type: "finish", finishReason: { unified: "tool-calls", raw: "tool_calls" }, usage: usageV3 },
  ];
}

type Part = { type: string; toolCallId?: string; toolName?: string; input?: unknown; output?: any };

/**
 * The AI SDK's own mock (`ai/test`) for CopilotKit's BuiltInAgent: asks a person first (`confirmEmail`, an
 * `interrupt: true` tool), then, told `{approved: true}` (and maybe `editedArgs`), calls `sendEmail` with the
 * confirmed arguments; told anything else, sends nothing.
 */
export function scriptedAISDKModel(): MockLanguageModelV3 {
  return new MockLanguageModelV3({
    doStream: async ({ prompt }) => {
      const last = prompt[prompt.length - 1];
      if (last.role !== "tool") {
        return { stream: stream(callTool("confirmEmail", emailArgs(lastUserText(prompt as never)))) };
      }
      const result = last.content[0] as Part;
      if (result.toolName === "sendEmail") return { stream: stream(answer(`Done: ${JSON.stringify(result.output)}`)) };
      const proposed = prompt
        .flatMap((message) => (message.role === "assistant" ? (message.content as Part[]) : []))
        .find((part) => part.type === "tool-call" && part.toolCallId === result.toolCallId);
      const answerValue = result.output?.value;
      if (proposed && answerValue?.approved === true) {
        return { stream: stream(callTool("sendEmail", answerValue.editedArgs ?? proposed.input)) };
      }
      return { stream: stream(answer(`Not sent: ${JSON.stringify(answerValue)}`)) };
    },
  });
}
