// Numbers in words a person reads, in the UI language.

import { lang, number, t } from "./i18n.svelte";

export function megabytes(bytes: number): string {
  const digits = bytes < 10e6 ? 1 : 0;
  return t("format.mb", {
    n: number(bytes / 1e6, { minimumFractionDigits: digits, maximumFractionDigits: digits }),
  });
}

export function speed(bytesPerSec: number | null): string {
  return bytesPerSec == null
    ? ""
    : t("format.mbPerSec", {
        n: number(bytesPerSec / 1e6, { minimumFractionDigits: 1, maximumFractionDigits: 1 }),
      });
}

export function duration(secs: number | null): string {
  if (secs == null) return "";
  if (secs < 60) return t("format.secondsLeft", { s: number(secs) });
  const m = Math.floor(secs / 60);
  return m < 60
    ? t("format.minutesLeft", { m: number(m), s: number(secs % 60) })
    : t("format.hoursLeft", { h: number(Math.floor(m / 60)), m: number(m % 60) });
}

export function percent(done: number, total: number): number {
  return total > 0 ? Math.min(100, Math.floor((done * 100) / total)) : 0;
}

/** What a download fetches ("the offline speech and chat models (180 MB)"), from the kinds
 *  of models the app names. */
export function modelsWhat(kinds: string[], bytes: number): string {
  const names = kinds.map((k) => kindName(k));
  return t("download.what", {
    count: names.length,
    kinds: listOf(names),
    size: megabytes(bytes),
  });
}

function kindName(kind: string): string {
  switch (kind) {
    case "chat":
      return t("kinds.chat");
    case "speech":
      return t("kinds.speech");
    case "voice":
      return t("kinds.voice");
    case "memory":
      return t("kinds.memory");
    default:
      return t("kinds.handsFree");
  }
}

/** "a, b and c" in the UI language. */
export function listOf(items: string[]): string {
  return new Intl.ListFormat(lang(), { type: "conjunction" }).format(items);
}

/** The start of today, local time, in ms since the epoch. */
export function startOfToday(): number {
  const d = new Date();
  d.setHours(0, 0, 0, 0);
  return d.getTime();
}
