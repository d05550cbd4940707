// The page: the AI SDK's own useChat hook (@ai-sdk/react) rendering what an
// agentcore endpoint streams in the UI message stream protocol. Built by
// `npm run build` (esbuild) into dist/app.js, which server.py serves.
import React, { useState } from "react";
import { createRoot } from "react-dom/client";
import { useChat } from "@ai-sdk/react";
import { DefaultChatTransport } from "ai";

function Part({ part }) {
  switch (part.type) {
    case "text":
      return <span className="text">{part.text}</span>;
    case "reasoning":
      return (
        <details className="reasoning" data-state={part.state}>
          <summary>{part.state === "done" ? "Reasoning" : "Thinking\u2026"}</summary>
          <div className="thought">{part.text}</div>
        </details>
      );
    case "dynamic-tool":
      return (
        <div className="tool" data-state={part.state} data-tool={part.toolName}>
          {"\u2192 " + part.toolName + " " + JSON.stringify(part.input ?? "")}
          {part.state === "output-available" ? "\n\u2190 " + part.toolName + ": " + String(part.output) : ""}
          {part.state === "output-error" ? "\n\u2190 " + part.toolName + " failed: " + part.errorText : ""}
        </div>
      );
    case "file":
      return part.mediaType.startsWith("image/") ? <img src={part.url} alt="a file a tool returned" /> : null;
    case "source-url":
      return <a className="source" href={part.url}>{part.title || part.url}</a>;
    default:
      return null;
  }
}

function usageOf(message) {
  const usage = message && message.metadata && message.metadata.total_usage;
  return usage ? ` (${usage.input} in, ${usage.output} out tokens)` : "";
}

function App() {
  const [input, setInput] = useState("");
  const { messages, sendMessage, status, stop, error } = useChat({
    transport: new DefaultChatTransport({ api: "/api/chat" }),
  });
  const last = messages[messages.length - 1];
  const busy = status === "submitted" || status === "streaming";
  return (
    <div>
      <div id="transcript">
        {messages.map((message) => (
          <div key={message.id} className={"message " + message.role} data-role={message.role}>
            {message.parts.map((part, index) => (
              <Part key={index} part={part} />
            ))}
          </div>
        ))}
      </div>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          if (!input.trim() || busy) return;
          sendMessage({ text: input });
          setInput("");
        }}
      >
        <input id="q" value={input} onChange={(event) => setInput(event.target.value)} placeholder="Ask something" size="50" />
        <button id="send" type="submit" disabled={busy}>Send</button>
        <button id="stop" type="button" onClick={() => stop()} disabled={!busy}>Stop</button>
      </form>
      <p id="status" data-state={status}>
        {error ? "Error: " + error.message : status === "ready" && last ? "Done" + usageOf(last) + "." : status}
      </p>
    </div>
  );
}

createRoot(document.getElementById("root")).render(<App />);
