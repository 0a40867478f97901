/**
 * What every TypeScript agent server in tests/frameworks shares (the Node twin of ../common.py).
 *
 * - `emailArgs(text)` reads "Email bob@example.com subject: Lunch body: Are we on?" into tool arguments, the
 *   deterministic "model" every server shares.
 * - `RECORD` is the agent's own record of what it did (`sent`: the sendEmail calls that actually ran, with the
 *   arguments used; `seen`: every RunAgentInput the server received), served at `GET /record`, so a test checks
 *   what the agent executed, not what the inbox believes.
 * - `serve(routes)` answers `POST <path>` with the AG-UI event stream of `routes[path](input)` (SSE, encoded by
 *   @ag-ui/encoder) and serves `/healthz`, `/record` and `POST /reset` on 127.0.0.1, at the port given as
 *   `--port N`.
 */
import http from "node:http";
import { parseArgs } from "node:util";

import type { BaseEvent, RunAgentInput } from "@ag-ui/client";
import { EventEncoder } from "@ag-ui/encoder";
import type { Observable } from "rxjs";

export type Sent = { toolCallId: string; args: Record<string, unknown> };
export const RECORD: { sent: Sent[]; seen: unknown[] } = { sent: [], seen: [] };
const resetHooks: Array<() => void> = [];

const EMAIL = /email\s+(?<to>\S+)\s+subject:\s*(?<subject>.*?)\s+body:\s*(?<body>.*)$/is;

export function emailArgs(text: string): { to: string; subject: string; body: string } {
  const match = EMAIL.exec(text ?? "");
  if (!match?.groups) return { to: "nobody@example.com", subject: "(none)", body: text ?? "" };
  return { to: match.groups.to.trim(), subject: match.groups.subject.trim(), body: match.groups.body.trim() };
}

export function recordSent(toolCallId: string, args: Record<string, unknown>): Record<string, unknown> {
  RECORD.sent.push({ toolCallId, args: { ...args } });
  return { status: "sent", to: args.to, args: { ...args } };
}

/** The text of the last user message of a RunAgentInput-shaped or model-prompt-shaped message list. */
export function lastUserText(messages: Array<{ role: string; content: unknown }>): string {
  const last = [...messages].reverse().find((message) => message.role === "user");
  const content = last?.content;
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .filter((part) => part?.type === "text")
      .map((part) => part.text)
      .join(" ");
  }
  return "";
}

/** Forget what the server remembers (as a restart would), besides RECORD. */
export function onReset(hook: () => void): void {
  resetHooks.push(hook);
}

function reply(response: http.ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { "content-type": "application/json" });
  response.end(JSON.stringify(body));
}

async function readBody(request: http.IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

export type Run = (input: RunAgentInput) => Observable<BaseEvent>;

const ROUTES: Record<string, Run> = {};
let listening = false;

/** Serve `routes` (added to those of earlier calls: one server per process). */
export function serve(routes: Record<string, Run>): void {
  Object.assign(ROUTES, routes);
  if (listening) return;
  listening = true;
  const { values } = parseArgs({ options: { port: { type: "string" } } });
  const server = http.createServer(async (request, response) => {
    const path = (request.url ?? "/").split("?")[0];
    if (request.method === "GET" && path === "/healthz") return void response.end("ok");
    if (request.method === "GET" && path === "/record") return reply(response, 200, RECORD);
    if (request.method === "POST" && path === "/reset") {
      RECORD.sent.length = 0;
      RECORD.seen.length = 0;
      for (const hook of resetHooks) hook();
      return reply(response, 200, { ok: true });
    }
    const run = ROUTES[path];
    if (request.method !== "POST" || !run) return reply(response, 404, { error: "not found" });
    const text = await readBody(request);
    let input: RunAgentInput;
    try {
      input = JSON.parse(text);
    } catch {
      RECORD.seen.push({ unparsable: text });
      return reply(response, 400, { error: "the body is not JSON" });
    }
    RECORD.seen.push(input);
    const encoder = new EventEncoder({ accept: request.headers.accept });
    response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    run(input).subscribe({
      next: (event) => response.write(encoder.encodeSSE(event)),
      error: (error: unknown) => {
        const message = error instanceof Error ? error.message : String(error);
        response.end(encoder.encodeSSE({ type: "RUN_ERROR", message } as BaseEvent));
      },
      complete: () => response.end(),
    });
  });
  server.listen(Number(values.port), "127.0.0.1");
}
