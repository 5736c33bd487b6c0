// The window's state: what the app said last (snapshot + events). All truth lives in Rust;
// this keeps the latest of it for the components to render.

import type {
  AppEvent,
  CommandError,
  ConsentRequest,
  Download,
  Numbered,
  PanelView,
  Snapshot,
  Stage,
  Status,
  TurnMetrics,
  VoiceEvent,
} from "./bindings";
import { commands } from "./bindings";
import { modelsWhat } from "./format";
import { number, setLanguage, t } from "./i18n.svelte";

/** One line of the live transcript. */
export interface Line {
  id: number;
  role: "user" | "assistant" | "tool";
  text: string;
  interim?: boolean;
  /** An interrupted reply: what was heard, and what was generated but not heard. */
  heard?: string;
  unheard?: string;
  /** A caption in the UI language (a function, so that a change of language shows it anew). */
  tag?: () => string;
  /** What Hark said after the reply about how it ended (a refusal, the length limit). */
  notice?: string;
}

/** A banner: a problem, or a notice. */
export interface Banner {
  id: number;
  problem: CommandError;
  notice?: boolean;
}

let nextId = 1;

export const app = $state({
  snapshot: null as Snapshot | null,
  status: { state: "preparing", stage: { step: "starting" } } as Status,
  panel: null as PanelView | null,
  download: null as Download | null,
  banners: [] as Banner[],
  transcript: [] as Line[],
  level: 0,
  mic: { rms: 0, device: "" },
  practiceHeard: null as string | null,
  /** What the tray asked the window to show. */
  navigate: null as string | null,
  /** Bumped when the session list may have changed. */
  sessionsVersion: 0,
  /** Consent questions waiting for the user, oldest first. */
  consent: [] as ConsentRequest[],
  /** Bumped when a tool server's state or tools changed. */
  toolServersVersion: 0,
  /** A user line being spoken (interim) and the reply being written. */
  interimId: null as number | null,
  /** Each running tool call's transcript line, by call id. */
  toolLines: {} as Record<string, number>,
  replyId: null as number | null,
  /** The reply's line when listening started over it: a barge-in marks it interrupted, and a
   *  voice that was no barge-in lets it go on. */
  heldReplyId: null as number | null,
});

/** Shows a problem (or an informational notice) as a banner: one per kind of problem, the
 *  newest (a microphone that is still missing is said once, in the latest words). */
export function showProblem(problem: CommandError, notice = false): void {
  app.banners = app.banners.filter(
    (b) =>
      b.problem.kind !== problem.kind ||
      (problem.kind === "not_ready" && b.problem.message !== problem.message),
  );
  app.banners.push({ id: nextId++, problem, notice: notice || problem.kind === "not_ready" });
}

export function notice(message: string): void {
  showProblem({ kind: "not_ready", title: t("app.name"), message, next_step: "", detail: null }, true);
}

/** Clears the banners of one kind (a problem that a later success has put right). */
export function clearProblems(kind: CommandError["kind"]): void {
  app.banners = app.banners.filter((b) => b.problem.kind !== kind);
}

export function dismiss(id: number): void {
  app.banners = app.banners.filter((b) => b.id !== id);
}

/** The number of the last event this window has shown. */
let shownSeq = 0;

/** An event from the app's channel (numbered in the order sent). */
export function onMessage(m: Numbered): void {
  shownSeq = Math.max(shownSeq, m.seq);
  onEvent(m.event);
}

/** Applies a snapshot (`app_state`'s, or what a command returns). A snapshot comes back by
 *  another route than the events: one read before an event this window has already shown
 *  would put the older state back (the panel without a language just chosen, a status
 *  that has moved on), so it is read again until it is at least as new. */
export async function applySnapshot(s: Snapshot): Promise<void> {
  while (s.seq < shownSeq) {
    const fresh = await commands.appState();
    if (fresh.status === "error") {
      showProblem(fresh.error);
      return;
    }
    s = fresh.data;
  }
  app.snapshot = s;
  app.status = s.status;
  if (s.panel) app.panel = s.panel;
  app.download = s.download;
  setLanguage(s.ui_language);
  app.banners = [];
  for (const p of s.problems) showProblem(p);
  applyTheme(s.settings.theme);
}

export function applyTheme(theme: string): void {
  if (theme === "system") delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = theme;
}

function line(role: Line["role"], text: string, interim = false): Line {
  const l: Line = { id: nextId++, role, text, interim };
  app.transcript.push(l);
  return l;
}

function find(id: number | null): Line | undefined {
  return id == null ? undefined : app.transcript.find((l) => l.id === id);
}

function onVoice(e: VoiceEvent): void {
  switch (e.type) {
    case "listening_started":
      app.heldReplyId = app.replyId;
      app.replyId = null;
      break;
    case "reply_resumed":
      // The voice over the reply was no barge-in (Hark's own, or a backchannel): it goes on.
      app.replyId = app.heldReplyId;
      app.heldReplyId = null;
      break;
    case "level":
      app.level = e.rms;
      break;
    case "transcript_interim": {
      const l = find(app.interimId) ?? line("user", "", true);
      l.text = e.text;
      app.interimId = l.id;
      break;
    }
    case "transcript_final": {
      const l = find(app.interimId) ?? line("user", "");
      l.text = e.text;
      l.interim = false;
      app.interimId = null;
      app.level = 0;
      break;
    }
    case "no_turn":
      if (app.interimId != null) app.transcript = app.transcript.filter((l) => l.id !== app.interimId);
      app.interimId = null;
      app.level = 0;
      break;
    case "thinking_started":
      app.replyId = null;
      break;
    case "reply_delta": {
      const l = find(app.replyId) ?? line("assistant", "");
      l.text += e.text;
      app.replyId = l.id;
      break;
    }
    case "reply_interrupted": {
      const l = find(app.replyId ?? app.heldReplyId) ?? line("assistant", e.generated);
      l.heard = e.heard;
      l.unheard = e.generated.slice(e.heard.length);
      const secs = e.heard_ms / 1000;
      l.tag = () =>
        t("transcript.interrupted", {
          s: number(secs, { minimumFractionDigits: 1, maximumFractionDigits: 1 }),
        });
      app.replyId = null;
      app.heldReplyId = null;
      break;
    }
    case "turn_finished": {
      // A refusal with no words has no line yet: the notice is the reply's line.
      const l = e.notice != null ? (find(app.replyId) ?? line("assistant", "")) : find(app.replyId);
      if (l && e.notice != null) l.notice = e.notice;
      const m: TurnMetrics = e.metrics;
      const ms = m.first_audio_out_ms;
      if (l && ms != null) l.tag = () => t("transcript.firstAudio", { ms: number(ms) });
      app.replyId = null;
      app.sessionsVersion++;
      break;
    }
    case "tool_started": {
      // The reply goes on in a new line after the call.
      const l = line("tool", `${e.name} ${e.arguments}`);
      l.tag = () => t("transcript.running");
      app.toolLines[e.id] = l.id;
      app.replyId = null;
      break;
    }
    case "tool_finished": {
      const l = find(app.toolLines[e.id] ?? null) ?? line("tool", e.name);
      const { state, content } = e;
      l.tag = () =>
        state === "done" ? `→ ${content}` : t("transcript.toolEnded", { state: toolState(state), content });
      delete app.toolLines[e.id];
      break;
    }
    case "context_changed":
      app.panel = e.panel;
      break;
    case "failed":
      showProblem({
        kind: e.kind,
        title: e.title,
        message: e.message,
        next_step: e.next_step,
        detail: e.detail,
      });
      break;
    case "consent_heard": {
      // The answer to a consent question, said aloud: shown, never sent to the model.
      const l = find(app.interimId) ?? line("user", "");
      l.text = e.heard;
      l.interim = false;
      const answer = e.answer;
      l.tag = () => (answer === null ? t("transcript.notAnAnswer") : t(`transcript.answer.${answer}`));
      app.interimId = null;
      app.level = 0;
      break;
    }
    case "practice_heard":
      app.practiceHeard = e.transcript;
      break;
    default:
      break;
  }
}

/** Every event from the app, in order. */
function onEvent(e: AppEvent): void {
  switch (e.type) {
    case "voice":
      onVoice(e.event);
      break;
    case "status":
      app.status = e.status;
      break;
    case "download":
      app.download = e.progress;
      break;
    case "problem":
      showProblem(e.problem);
      break;
    case "notice":
      notice(e.message);
      break;
    case "session_started":
      app.sessionsVersion++;
      if (app.snapshot) app.snapshot.session_id = e.session_id;
      break;
    case "mic_level":
      app.mic = { rms: e.rms, device: e.device };
      break;
    case "navigate":
      app.navigate = e.view;
      break;
    case "consent_asked":
      app.consent = [...app.consent, e.request];
      break;
    case "consent_settled":
      app.consent = app.consent.filter((c) => c.id !== e.id);
      break;
    case "tool_servers_changed":
      app.toolServersVersion++;
      break;
    case "hands_free":
      if (app.snapshot) app.snapshot.settings.hands_free = e.on;
      break;
    case "shortcut":
      if (app.snapshot) {
        app.snapshot.shortcut_label = e.label;
        app.snapshot.no_global_shortcuts = e.unavailable;
      }
      break;
  }
}

/** A tool call's end in words. */
function toolState(state: string): string {
  switch (state) {
    case "error":
      return t("transcript.toolState.error");
    case "cancelled":
      return t("transcript.toolState.cancelled");
    case "in_progress":
      return t("transcript.toolState.in_progress");
    default:
      return state;
  }
}

/** The status line's words. */
export function statusText(s: Status): string {
  switch (s.state) {
    case "waiting":
      return t("status.waiting");
    case "preparing":
      return t("status.preparing", { what: stageText(s.stage) });
    case "ready":
      return t("status.ready");
    case "hands_free":
      if (s.muted) return t("status.muted");
      return s.full_duplex ? t("status.handsFree") : t("status.handsFreeHalf");
    case "listening":
      return t("status.listening");
    case "thinking":
      return t("status.thinking");
    case "speaking":
      return t("status.speaking");
    case "no_microphone":
      return t("status.noMicrophone");
    case "unavailable":
      return s.problem.title;
    case "fatal":
      return t("status.cannotStart");
  }
}

/** What is being prepared. */
function stageText(stage: Stage): string {
  switch (stage.step) {
    case "starting":
      return t("stage.starting");
    case "local_model":
      return t("stage.localModel");
    case "download":
      return t("stage.download", { what: modelsWhat(stage.kinds, stage.bytes) });
  }
}
