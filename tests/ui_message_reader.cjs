// Reads a UI message stream (the bytes on stdin, as an HTTP body with the
// headers in argv[3]) with the AI SDK's own client code: DefaultChatTransport
// parses the Server-Sent Events against the package's uiMessageChunkSchema,
// as useChat does, and readUIMessageStream builds the UIMessage. Prints
// {"message": the last UIMessage, "errors": [messages of the errors seen]}.
// argv[2]: the directory whose node_modules holds the pinned "ai" package
// (examples/chat_ui, installed by .ci/run with npm ci).
const path = require("node:path");
const { createRequire } = require("node:module");

const ai = createRequire(path.join(path.resolve(process.argv[2]), "package.json"))("ai");

async function main() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  const body = Buffer.concat(chunks);
  const headers = JSON.parse(process.argv[3] || "{}");
  const transport = new ai.DefaultChatTransport({
    api: "http://agentcore.invalid/chat",
    fetch: async () => new Response(body, { status: 200, headers }),
  });
  const stream = await transport.sendMessages({
    chatId: "chat",
    messages: [],
    trigger: "submit-message",
    messageId: undefined,
    abortSignal: undefined,
  });
  const errors = [];
  let message = null;
  for await (const snapshot of ai.readUIMessageStream({ stream, onError: (e) => errors.push(String(e && e.message || e)) })) {
    message = snapshot;
  }
  process.stdout.write(JSON.stringify({ message, errors }));
}

main().catch((err) => {
  process.stdout.write(JSON.stringify({ message: null, errors: ["uncaught: " + String(err && err.stack || err)] }));
});
