// Hark's window: push-to-talk, live transcript, the history panel (exactly what the model
// sees next turn), settings with keys kept in the OS keychain, sessions.
// All state lives in Rust; this file renders events and calls commands.

import { Channel, invoke } from "@tauri-apps/api/core";
import { open, save } from "@tauri-apps/plugin-dialog";

// ---- types mirrored from hark-core / src-tauri ------------------------------------------

interface Usage {
  input_tokens?: number;
  output_tokens?: number;
  estimated_input_tokens: number;
  estimated_output_tokens: number;
}
interface PanelEntry {
  id: string;
  kind: "user" | "assistant" | "tool_result" | "note" | "context_reset";
  text: string;
  generated: string | null;
  interrupted: boolean;
  failed: string | null;
  in_context: boolean;
}
interface Panel {
  session_id: string;
  model: string;
  system_prompt: string;
  summary: string | null;
  recall: string | null;
  settings: { enabled: boolean; max_turns: number; max_context_tokens: number | null };
  entries: PanelEntry[];
  hidden_entries: number;
  context_turns: number;
  dropped_turns: number;
  context_tokens: number;
  model_window: number;
  budget: number | null;
  last_usage: Usage | null;
  totals: { turns: number; input_tokens: number; output_tokens: number };
}
interface Metrics {
  transcript_ms?: number;
  first_token_ms?: number;
  first_audio_out_ms?: number;
}
type VoiceEvent =
  | { type: "listening_started" }
  | { type: "level"; rms: number }
  | { type: "transcript_interim"; text: string }
  | { type: "transcript_final"; text: string }
  | { type: "no_turn"; reason: string }
  | { type: "thinking_started" }
  | { type: "reply_delta"; text: string }
  | { type: "speaking_started" }
  | { type: "tool_started"; name: string }
  | { type: "tool_finished"; name: string; state: string }
  | { type: "reply_interrupted"; heard: string; generated: string; heard_ms: number }
  | { type: "turn_finished"; reply: string; metrics: Metrics }
  | { type: "context_changed"; panel: Panel }
  | { type: "failed"; kind: string; message: string; next_step: string }
  | { type: "idle" }
  | { type: "model_progress"; model: string; phase: string; done: number; total: number }
  | { type: "session_ready"; session_id: string };
interface CommandError {
  kind: string;
  message: string;
}
interface KeyStatus {
  provider: string;
  present: boolean;
  source: "environment" | "keychain" | null;
  error: string | null;
}
interface Settings {
  [k: string]: unknown;
  ptt_mode: "hold" | "toggle";
  shortcut: string;
}
interface AppStateView {
  settings: Settings;
  keys: KeyStatus[];
  session_id: string | null;
  panel: Panel | null;
  problems: CommandError[];
  model_progress: VoiceEvent | null;
}
interface SessionInfo {
  id: string;
  title: string | null;
  updated_at: string;
  messages: number;
}
interface Fact {
  id: string;
  text: string;
  created_at: string;
  updated_at: string;
}
interface SearchHit {
  session_id: string;
  session_title: string | null;
  kind: string;
  text: string;
  created_at: string;
}
interface DeviceInfo {
  id: string;
  name: string;
  is_default: boolean;
}

const $ = <T extends HTMLElement>(sel: string) => document.querySelector(sel) as T;
const el = (tag: string, cls?: string, text?: string) => {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
};

// ---- errors as banners -------------------------------------------------------------------

const NEXT_STEPS: Record<string, string> = {
  auth: "Check the API key in Settings.",
  rate_limit: "Wait a moment and try again.",
  quota: "Add credit or raise the plan's limit with the provider.",
  connectivity: "Check the network connection and the provider's base URL.",
  server: "The provider is having trouble; try again shortly.",
  audio: "Check that a microphone and speaker are connected, then press again.",
  keychain: "Start or unlock the system keyring.",
  shortcut: "Pick another shortcut in Settings, or use the button.",
};

function banner(kind: string, message: string, next?: string) {
  const b = el("div", "banner");
  b.dataset.kind = kind;
  b.append(el("strong", undefined, kind.replace("_", " ")), el("span", undefined, message));
  b.append(el("span", "next", next || NEXT_STEPS[kind] || ""));
  const close = el("button", undefined, "Dismiss");
  close.addEventListener("click", () => b.remove());
  b.append(close);
  $("#banners").append(b);
}

function fail(e: unknown) {
  const err = e as CommandError;
  if (err && typeof err === "object" && "kind" in err) banner(err.kind, err.message);
  else banner("error", String(e));
}

async function call<T>(cmd: string, args?: Record<string, unknown>): Promise<T | undefined> {
  try {
    return await invoke<T>(cmd, args);
  } catch (e) {
    fail(e);
    return undefined;
  }
}

// ---- transcript ----------------------------------------------------------------------------

let interim: HTMLElement | null = null;
let reply: HTMLElement | null = null;

function userLine(text: string, final: boolean) {
  if (!interim) {
    interim = el("li", "user interim");
    $("#transcript").append(interim);
  }
  interim.textContent = text;
  if (final) {
    interim.classList.remove("interim");
    interim = null;
  }
  scrollDown();
}

function replyLine(): HTMLElement {
  if (!reply) {
    reply = el("li", "assistant");
    $("#transcript").append(reply);
  }
  return reply;
}

function scrollDown() {
  const t = $("#transcript");
  t.scrollTop = t.scrollHeight;
}

function setPhase(phase: string) {
  const s = $("#state");
  s.dataset.phase = phase;
  s.textContent = phase;
}

// ---- history panel -------------------------------------------------------------------------

let panel: Panel | null = null;

function renderPanel(p: Panel) {
  panel = p;
  const slider = $<HTMLInputElement>("#max-turns");
  if (document.activeElement !== slider) slider.value = String(p.settings.max_turns);
  $("#max-turns-label").textContent = p.settings.max_turns === 0 ? "all" : String(p.settings.max_turns);
  $("#system").textContent = p.system_prompt || "(none)";
  $("#summary-block").hidden = !p.summary;
  $("#summary").textContent = p.summary || "";
  $("#recall-block").hidden = !p.recall;
  $("#recall").textContent = p.recall || "";
  const list = $("#history");
  list.replaceChildren();
  if (p.hidden_entries > 0) list.append(el("li", "out-of-context", `… ${p.hidden_entries} older entries in the record`));
  for (const e of p.entries) {
    const li = el("li", `${e.kind} ${e.in_context ? "in-context" : "out-of-context"}`);
    li.dataset.id = e.id;
    if (e.kind === "context_reset") {
      li.textContent = "— context reset —";
    } else {
      li.append(el("span", "role", e.kind === "user" ? "You" : e.kind === "assistant" ? "Hark" : e.kind));
      li.append(el("span", "text", e.text));
      if (e.interrupted) li.append(el("span", "role", `interrupted; generated: “${e.generated ?? e.text}”`));
      if (e.failed) li.append(el("span", "role", `failed: ${e.failed}`));
    }
    list.append(li);
  }
  const u = p.last_usage;
  $("#stat-in").textContent = u?.input_tokens != null ? String(u.input_tokens) : "–";
  $("#stat-out").textContent = u?.output_tokens != null ? String(u.output_tokens) : "–";
  $("#stat-in-est").textContent = u ? String(u.estimated_input_tokens) : "–";
  $("#stat-out-est").textContent = u ? String(u.estimated_output_tokens) : "–";
  $("#total-in").textContent = String(p.totals.input_tokens);
  $("#total-out").textContent = String(p.totals.output_tokens);
  const fill = Math.min(1, p.context_tokens / Math.max(1, p.model_window));
  $("#fill-bar").style.width = `${(fill * 100).toFixed(1)}%`;
  $("#fill-label").textContent =
    `${p.context_tokens} / ${p.model_window} tokens · ${p.context_turns} turns` +
    (p.dropped_turns ? ` (${p.dropped_turns} outside)` : "");
}

// ---- first-run model download ----------------------------------------------------------------

function modelProgress(model: string, phase: string, done: number, total: number) {
  let b = document.querySelector<HTMLElement>("#model-progress");
  if (!b) {
    b = el("div", "banner progress");
    b.id = "model-progress";
    b.append(el("span", "what"), el("progress"), el("span", "figures"));
    $("#banners").prepend(b);
  }
  const pct = total > 0 ? Math.min(100, Math.floor((done * 100) / total)) : 0;
  const verb = phase === "downloading" ? "Downloading" : phase === "verifying" ? "Checking" : "Preparing";
  (b.querySelector(".what") as HTMLElement).textContent =
    `${verb} the offline model ${model} (once; Hark then runs without any API key)`;
  const bar = b.querySelector("progress") as HTMLProgressElement;
  bar.max = 100;
  bar.value = pct;
  (b.querySelector(".figures") as HTMLElement).textContent =
    `${pct}% · ${(done / 1e6).toFixed(0)} / ${(total / 1e6).toFixed(0)} MB`;
  setPhase("preparing");
}

// ---- events from the voice session ---------------------------------------------------------

function onEvent(e: VoiceEvent) {
  switch (e.type) {
    case "listening_started":
      setPhase("listening");
      reply = null;
      break;
    case "level":
      $("#level-bar").style.width = `${Math.min(100, e.rms * 400).toFixed(0)}%`;
      break;
    case "transcript_interim":
      userLine(e.text, false);
      break;
    case "transcript_final":
      userLine(e.text, true);
      $("#level-bar").style.width = "0";
      break;
    case "no_turn":
      if (interim) interim.remove();
      interim = null;
      $("#level-bar").style.width = "0";
      break;
    case "thinking_started":
      setPhase("thinking");
      reply = null;
      break;
    case "reply_delta":
      replyLine().textContent += e.text;
      scrollDown();
      break;
    case "speaking_started":
      setPhase("speaking");
      break;
    case "tool_started":
      setPhase("thinking");
      $("#state").textContent = `using ${e.name.replace(/_/g, " ")}…`;
      break;
    case "tool_finished":
      // The call and its result appear in the history panel with the next context_changed.
      $("#state").textContent = e.state === "done" ? "thinking" : `${e.name.replace(/_/g, " ")}: ${e.state}`;
      break;
    case "reply_interrupted": {
      const line = replyLine();
      line.classList.add("interrupted");
      line.replaceChildren(el("span", "heard", e.heard));
      const rest = e.generated.slice(e.heard.length);
      if (rest) line.append(el("span", "unheard", rest));
      line.append(el("span", "tag", `interrupted after ${(e.heard_ms / 1000).toFixed(1)} s — struck-through text was not heard`));
      reply = null;
      break;
    }
    case "turn_finished": {
      void loadSessions();
      const line = reply;
      if (line && e.metrics.first_audio_out_ms != null) {
        line.append(el("span", "tag", `first audio ${e.metrics.first_audio_out_ms} ms after release`));
      }
      reply = null;
      break;
    }
    case "context_changed":
      renderPanel(e.panel);
      break;
    case "failed":
      if (e.kind === "model") $("#model-progress")?.remove();
      banner(e.kind, e.message, e.next_step);
      break;
    case "idle":
      setPhase("idle");
      break;
    case "model_progress":
      modelProgress(e.model, e.phase, e.done, e.total);
      break;
    case "session_ready":
      $("#model-progress")?.remove();
      void call<AppStateView>("app_state").then((st) => {
        if (st) apply(st);
        void loadSessions();
      });
      break;
  }
}

// ---- push-to-talk --------------------------------------------------------------------------

let mode: "hold" | "toggle" = "hold";
let down = false;

function pttDown() {
  if (down) return;
  down = true;
  $("#ptt").setAttribute("aria-pressed", "true");
  void call("ptt", { pressed: true });
}

function pttUp() {
  if (!down) return;
  down = false;
  $("#ptt").setAttribute("aria-pressed", "false");
  void call("ptt", { pressed: false });
}

function setupPtt() {
  const b = $("#ptt");
  b.addEventListener("pointerdown", (ev) => {
    ev.preventDefault();
    if (mode === "hold") pttDown();
  });
  b.addEventListener("pointerup", () => {
    if (mode === "hold") pttUp();
  });
  b.addEventListener("pointerleave", () => {
    if (mode === "hold") pttUp();
  });
  b.addEventListener("click", () => {
    if (mode === "toggle") {
      // A toggle press is a press and a release of the key.
      void call("ptt", { pressed: true }).then(() => call("ptt", { pressed: false }));
    }
  });
}

// ---- sessions ------------------------------------------------------------------------------

let sessionId: string | null = null;

async function loadSessions() {
  const list = (await call<SessionInfo[]>("list_sessions")) ?? [];
  const sel = $<HTMLSelectElement>("#sessions");
  sel.replaceChildren();
  for (const s of list) {
    const o = el("option", undefined, `${s.title ?? "New conversation"} · ${s.messages} messages`) as HTMLOptionElement;
    o.value = s.id;
    o.selected = s.id === sessionId;
    sel.append(o);
  }
}

async function switched(id: string | undefined) {
  if (!id) return;
  sessionId = id;
  $("#transcript").replaceChildren();
  await loadSessions();
  await call("refresh");
}

async function exportAs(format: "json" | "md" | "deepgram") {
  const ext = format === "md" ? "md" : "json";
  const path = await save({
    defaultPath: format === "deepgram" ? "hark-deepgram-settings.json" : `hark-conversation.${ext}`,
    filters: [{ name: ext === "json" ? "JSON" : "Markdown", extensions: [ext] }],
  });
  if (path) await call("export_session", { path, format });
}

function setupSessions() {
  $("#sessions").addEventListener("change", async (e) => {
    await switched(await call<string>("open_session", { id: (e.target as HTMLSelectElement).value }));
  });
  $("#new-session").addEventListener("click", async () => switched(await call<string>("new_session")));
  $("#delete-session").addEventListener("click", async () => {
    if (sessionId && confirm("Delete this conversation and its whole record?")) {
      await switched(await call<string>("delete_session", { id: sessionId }));
    }
  });
  $("#export-json").addEventListener("click", () => exportAs("json"));
  $("#export-md").addEventListener("click", () => exportAs("md"));
  $("#export-deepgram").addEventListener("click", () => exportAs("deepgram"));
  $("#import").addEventListener("click", async () => {
    const path = await open({ multiple: false, filters: [{ name: "Conversation", extensions: ["json", "jsonc"] }] });
    if (typeof path === "string") await switched(await call<string>("import_session", { path }));
  });
}

// ---- settings ------------------------------------------------------------------------------

let settings: Settings | null = null;

function renderKeys(keys: KeyStatus[]) {
  const box = $("#keys");
  box.querySelectorAll(".key-row").forEach((r) => r.remove());
  for (const k of keys) {
    const row = el("div", "key-row");
    row.append(el("span", undefined, k.provider));
    const input = el("input") as HTMLInputElement;
    input.type = "password";
    input.id = `key-${k.provider}`;
    input.placeholder = k.present ? "stored — paste to replace" : "paste the key";
    input.autocomplete = "off";
    const saveBtn = el("button", undefined, "Save key") as HTMLButtonElement;
    saveBtn.type = "button";
    saveBtn.id = `save-key-${k.provider}`;
    saveBtn.addEventListener("click", async () => {
      const key = input.value;
      input.value = ""; // the key leaves the page at once and never comes back
      const keys2 = await call<KeyStatus[]>("set_key", { provider: k.provider, key });
      if (keys2) renderKeys(keys2);
    });
    const del = el("button", undefined, "Delete") as HTMLButtonElement;
    del.type = "button";
    del.addEventListener("click", async () => {
      const keys2 = await call<KeyStatus[]>("delete_key", { provider: k.provider });
      if (keys2) renderKeys(keys2);
    });
    const test = el("button", undefined, "Test") as HTMLButtonElement;
    test.type = "button";
    const status = el(
      "span",
      `key-status ${k.present ? "present" : "absent"}`,
      k.error ?? (k.present ? `present (${k.source})` : "absent"),
    );
    status.id = `key-status-${k.provider}`;
    test.addEventListener("click", async () => {
      status.textContent = "testing…";
      const r = await call<string>("test_connection", { provider: k.provider });
      status.textContent = r ?? "failed";
    });
    row.append(input, saveBtn, del, test, status);
    box.append(row);
  }
}

async function fillDevices(form: HTMLFormElement) {
  const d = await call<{ inputs: DeviceInfo[]; outputs: DeviceInfo[] }>("list_devices");
  for (const [name, list] of [
    ["input_device", d?.inputs ?? []],
    ["output_device", d?.outputs ?? []],
  ] as const) {
    const sel = form.elements.namedItem(name) as HTMLSelectElement;
    sel.replaceChildren(el("option", undefined, "System default"));
    (sel.firstChild as HTMLOptionElement).value = "";
    for (const dev of list) {
      const o = el("option", undefined, dev.name) as HTMLOptionElement;
      o.value = dev.id;
      sel.append(o);
    }
    sel.value = (settings?.[name] as string) ?? "";
  }
}

function setupSettings() {
  const dialog = $<HTMLDialogElement>("#settings");
  const form = $<HTMLFormElement>("#settings-form");
  $("#open-settings").addEventListener("click", async () => {
    const st = await call<AppStateView>("app_state");
    if (!st) return;
    settings = st.settings;
    for (const [k, v] of Object.entries(settings)) {
      const f = form.elements.namedItem(k) as HTMLInputElement | null;
      if (f) f.value = v == null ? "" : String(v);
    }
    renderKeys(st.keys);
    dialog.showModal();
    await fillDevices(form);
  });
  $("#settings-save").addEventListener("click", async (ev) => {
    ev.preventDefault();
    if (!settings) return;
    const next: Settings = { ...settings };
    for (const k of Object.keys(settings)) {
      const f = form.elements.namedItem(k) as HTMLInputElement | null;
      if (!f) continue;
      const v = f.value.trim();
      next[k] =
        k === "max_tokens"
          ? Number(v)
          : BOOLEAN_SETTINGS.includes(k)
            ? v === "true"
            : v === "" && !["system_prompt", "llm_model"].includes(k)
              ? null
              : v;
    }
    const st = await call<AppStateView>("save_settings", { settings: next });
    if (st) {
      apply(st);
      dialog.close();
    }
  });
}

const BOOLEAN_SETTINGS = ["summarize", "recall", "tools"];

// ---- memory (rule 12) ------------------------------------------------------------------------

function renderFacts(facts: Fact[]) {
  const list = $("#facts");
  list.replaceChildren();
  if (facts.length === 0) list.append(el("li", "empty", "Nothing remembered yet."));
  for (const f of facts) {
    const li = el("li", "fact");
    li.dataset.id = f.id;
    const input = el("input", "fact-text") as HTMLInputElement;
    input.value = f.text;
    input.maxLength = 500;
    input.setAttribute("aria-label", "Remembered fact");
    const saveBtn = el("button", "save-fact small", "Save");
    saveBtn.addEventListener("click", async () => {
      const next = await call<Fact[]>("update_fact", { id: f.id, text: input.value });
      if (next) renderFacts(next);
    });
    const forget = el("button", "forget-fact small danger", "Forget");
    forget.addEventListener("click", async () => {
      const next = await call<Fact[]>("delete_fact", { id: f.id });
      if (next) renderFacts(next);
    });
    li.append(input, saveBtn, forget, el("span", "when", f.updated_at.slice(0, 10)));
    list.append(li);
  }
}

function setupMemory() {
  const dialog = $<HTMLDialogElement>("#memory");
  $("#open-memory").addEventListener("click", async () => {
    renderFacts((await call<Fact[]>("list_facts")) ?? []);
    $("#search-results").replaceChildren();
    dialog.showModal();
  });
  $("#memory-close").addEventListener("click", () => dialog.close());
  $("#add-fact-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const input = $<HTMLInputElement>("#new-fact");
    const next = await call<Fact[]>("add_fact", { text: input.value });
    if (next) {
      renderFacts(next);
      input.value = "";
    }
  });
  $("#search-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const hits = (await call<SearchHit[]>("search_memory", { query: $<HTMLInputElement>("#memory-query").value })) ?? [];
    const list = $("#search-results");
    list.replaceChildren();
    if (hits.length === 0) list.append(el("li", "empty", "Nothing matches."));
    for (const h of hits) {
      const li = el("li", `hit ${h.kind}`);
      li.append(
        el("span", "role", `${h.created_at.slice(0, 16).replace("T", " ")} · ${h.session_title ?? "conversation"} · ${h.kind === "user" ? "You" : "Hark"}`),
        el("span", "text", h.text),
      );
      list.append(li);
    }
  });
}

function apply(st: AppStateView) {
  settings = st.settings;
  mode = st.settings.ptt_mode;
  $("#ptt").textContent = mode === "hold" ? "Hold to talk" : "Click to talk";
  $("#shortcut-hint").textContent = `Shortcut: ${st.settings.shortcut} (works while Hark is in the background)`;
  sessionId = st.session_id;
  if (st.panel) renderPanel(st.panel);
  $("#banners").replaceChildren();
  for (const p of st.problems) banner(p.kind, p.message);
  const mp = st.model_progress;
  if (mp && mp.type === "model_progress") modelProgress(mp.model, mp.phase, mp.done, mp.total);
}

// ---- start ---------------------------------------------------------------------------------

async function start() {
  setupPtt();
  setupSessions();
  setupSettings();
  setupMemory();
  $("#max-turns").addEventListener("input", (e) => {
    const n = Number((e.target as HTMLInputElement).value);
    $("#max-turns-label").textContent = n === 0 ? "all" : String(n);
    void call("set_max_turns", { maxTurns: n });
  });
  $("#reset").addEventListener("click", () => call("reset_context"));
  $("#edit-summary").addEventListener("click", () => {
    const editor = $("#summary-editor");
    editor.hidden = !editor.hidden;
    $<HTMLTextAreaElement>("#summary-text").value = panel?.summary ?? "";
  });
  $("#save-summary").addEventListener("click", async () => {
    await call("set_summary", { text: $<HTMLTextAreaElement>("#summary-text").value });
    $("#summary-editor").hidden = true;
  });
  const channel = new Channel<VoiceEvent>();
  channel.onmessage = onEvent;
  const st = await call<AppStateView>("app_state");
  if (st) apply(st);
  await call("subscribe", { channel });
  await loadSessions();
  document.body.dataset.ready = "true";
}

void start();
