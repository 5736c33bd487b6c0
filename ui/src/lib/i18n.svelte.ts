// The window's words in the UI language (issue 45). i18next, as Handy and Open WebUI use:
// every locale is bundled (they are small, and the window has no server to fetch them
// from), en.json is the source and types the keys (src/i18next.d.ts), and a missing key
// falls back to English. Numbers, dates and language names come from Intl in the same
// language. The app's Rust side (the tray menu and tooltip) reads the same files
// (src-tauri/src/i18n.rs), and scripts/check-i18n.mjs fails the suite when a locale lacks
// a key or a component shows a literal string.

import i18next from "i18next";
import de from "../locales/de.json";
import en from "../locales/en.json";
import es from "../locales/es.json";
import fr from "../locales/fr.json";
import it from "../locales/it.json";
import ja from "../locales/ja.json";
import pt from "../locales/pt.json";
import zhCN from "../locales/zh-CN.json";

/** The UI languages, each named in itself (as a language menu names them). */
export const UI_LANGUAGES = [
  { code: "en", name: "English" },
  { code: "de", name: "Deutsch" },
  { code: "es", name: "Español" },
  { code: "fr", name: "Français" },
  { code: "it", name: "Italiano" },
  { code: "pt", name: "Português" },
  { code: "ja", name: "日本語" },
  { code: "zh-CN", name: "简体中文" },
] as const;

const resources = {
  en: { translation: en },
  de: { translation: de },
  es: { translation: es },
  fr: { translation: fr },
  it: { translation: it },
  pt: { translation: pt },
  ja: { translation: ja },
  "zh-CN": { translation: zhCN },
};

void i18next.init({
  lng: "en",
  fallbackLng: "en",
  resources,
  initAsync: false,
  // Svelte escapes what it puts on the page; escaping here too would show "&amp;".
  interpolation: { escapeValue: false },
  returnNull: false,
});

// The language as state: a component that calls `t` reads it, so a change of language
// renders every word again at once.
const ui = $state({ lang: "en" });

/** A message in the UI language (i18next's `t`, typed by en.json's keys). */
export const t = ((...args: unknown[]) => {
  void ui.lang;
  return (i18next.t as unknown as (...a: unknown[]) => string)(...args);
}) as unknown as typeof i18next.t;

/** The UI language in use (a BCP 47 tag: "de", "zh-CN"). */
export function lang(): string {
  return ui.lang;
}

/** Shows the window in `code` (one of UI_LANGUAGES; anything else is English). */
export function setLanguage(code: string): void {
  const known = UI_LANGUAGES.some((l) => l.code === code) ? code : "en";
  if (known === ui.lang && i18next.language === known) return;
  void i18next.changeLanguage(known);
  ui.lang = known;
  document.documentElement.lang = known;
}

/** A number in the UI language's way. */
export function number(n: number, options?: Intl.NumberFormatOptions): string {
  return new Intl.NumberFormat(ui.lang, options).format(n);
}

/** A date and time (an RFC 3339 text) in the UI language's way. */
export function dateTime(iso: string, options: Intl.DateTimeFormatOptions): string {
  const ms = Date.parse(iso);
  return Number.isNaN(ms) ? iso : new Intl.DateTimeFormat(ui.lang, options).format(ms);
}

/** A conversation language's name in the UI language ("de" → "German", "Deutsch"…). */
export function languageName(code: string, fallback: string): string {
  try {
    return new Intl.DisplayNames([ui.lang], { type: "language" }).of(code) ?? fallback;
  } catch {
    return fallback;
  }
}

/** A key's place as Settings names it: "Anthropic (official endpoint)", "OpenAI at URL". */
export function keyLabel(k: { provider: string; endpoint: string | null }): string {
  const names: Record<string, string> = { anthropic: "Anthropic", openai: "OpenAI", deepgram: "Deepgram" };
  const provider = names[k.provider] ?? k.provider;
  return k.endpoint == null ? t("keys.official", { provider }) : t("keys.at", { provider, url: k.endpoint });
}

/** An option the app offers (a provider, an engine, a theme…) in the UI language, by its
 *  value; the app's own label when the window has no words for it (a value added later). */
export function choiceLabel(
  group: "llm" | "stt" | "tts" | "theme" | "log",
  c: { value: string; label: string },
): string {
  void ui.lang;
  const key = `choice.${group}.${c.value}`;
  return i18next.exists(key) ? String(i18next.t(key as never)) : c.label;
}
