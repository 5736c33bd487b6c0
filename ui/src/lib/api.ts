// Calling the app: every command's result is a Result; an error becomes a banner here, in
// one place, and the caller gets `undefined`.

import { Channel } from "@tauri-apps/api/core";
import type { CommandError, Numbered, Result } from "./bindings";
import { commands } from "./bindings";
import { t } from "./i18n.svelte";
import { showProblem } from "./state.svelte";

export { commands };

/** Runs a command; on failure shows its banner and returns `undefined`. */
export async function call<T>(pending: Promise<Result<T, CommandError>>): Promise<T | undefined> {
  try {
    const r = await pending;
    if (r.status === "ok") return r.data;
    showProblem(r.error);
  } catch (e) {
    showProblem({
      kind: "internal",
      title: t("errors.internal.title"),
      message: String(e),
      next_step: t("errors.internal.next"),
      detail: null,
    });
  }
  return undefined;
}

/** Listens to the app's events from now on. */
export function subscribe(onMessage: (m: Numbered) => void): Promise<null | undefined> {
  const channel = new Channel<Numbered>();
  channel.onmessage = onMessage;
  // The generated signature types the channel loosely; it is this Channel.
  return call(commands.subscribe(channel as never));
}
