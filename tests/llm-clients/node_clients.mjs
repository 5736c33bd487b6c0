// The official OpenAI client for Node (npm `openai`) and the Vercel AI SDK (`ai` with
// `@ai-sdk/openai-compatible`, which validates every streamed chunk against its schema)
// against a running hark-llm. Usage: node node_clients.mjs BASE_URL TOKEN MODEL. Prints one
// line per check ("ok NAME" or "FAILED NAME: why"); exits 1 if any failed. Content is not
// judged (the model is tiny).
import OpenAI from "openai";
import { generateText, streamText } from "ai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";

const [base, token, model] = process.argv.slice(2);
const hello = [{ role: "user", content: "Say hello." }];
const client = new OpenAI({ baseURL: base, apiKey: token, maxRetries: 0, timeout: 120_000 });
const hark = createOpenAICompatible({ name: "hark-llm", baseURL: base, apiKey: token, includeUsage: true });
let failed = 0;

function expect(cond, why) {
  if (!cond) throw new Error(typeof why === "string" ? why : JSON.stringify(why));
}

async function check(name, fn) {
  try {
    await fn();
    console.log(`ok ${name}`);
  } catch (e) {
    failed++;
    console.log(`FAILED ${name}: ${e?.constructor?.name}: ${e?.message}`);
  }
}

await check("node openai: the model list", async () => {
  const ids = [];
  for await (const m of client.models.list()) ids.push(m.id);
  expect(ids.includes(model), ids);
});

await check("node openai: a plain reply", async () => {
  const r = await client.chat.completions.create({ model, messages: hello, max_tokens: 16 });
  expect(r.choices[0].message.content, r);
  expect(["stop", "length"].includes(r.choices[0].finish_reason), r.choices[0].finish_reason);
});

await check("node openai: the stream helper's final completion", async () => {
  const s = client.chat.completions.stream({ model, messages: hello, max_tokens: 16 });
  let text = "";
  s.on("content", (d) => (text += d));
  const final = await s.finalChatCompletion();
  expect(text && final.choices[0].message.content === text, { text, final });
});

await check('node openai: finish_reason "length"', async () => {
  const r = await client.chat.completions.create({ model, messages: hello, max_tokens: 1 });
  expect(r.choices[0].finish_reason === "length", r.choices[0].finish_reason);
});

await check("node openai: a wrong token refused with 401", async () => {
  const bad = new OpenAI({ baseURL: base, apiKey: "not-the-token", maxRetries: 0 });
  try {
    await bad.models.list();
  } catch (e) {
    expect(e instanceof OpenAI.AuthenticationError && e.status === 401, `${e}`);
    return;
  }
  throw new Error("a wrong token was accepted");
});

await check("ai sdk: generateText", async () => {
  const r = await generateText({ model: hark.chatModel(model), prompt: "Say hello.", maxOutputTokens: 16 });
  expect(r.text, r);
  expect(r.usage.inputTokens > 0, r.usage);
});

await check("ai sdk: streamText, every chunk valid", async () => {
  const errors = [];
  const r = streamText({
    model: hark.chatModel(model),
    prompt: "Say hello.",
    maxOutputTokens: 16,
    onError: ({ error }) => errors.push(error),
  });
  let text = "";
  for await (const d of r.textStream) text += d;
  expect(errors.length === 0, `${errors}`);
  expect(text, "no text streamed");
  const finish = await r.finishReason;
  expect(["stop", "length"].includes(finish), finish);
});

process.exit(failed ? 1 : 0);
