// The window's words, checked (issue 45), as OpenWhispr's scripts/check-i18n.js does for
// its locales and Handy's eslint-plugin-i18next for literal strings. Written here, not taken
// from a package: eslint-plugin-i18next reads JSX, not Svelte's templates, so the literal
// check walks the templates with Svelte's own parser.
//
// 1. Every locale has every key of en.json, in each plural form its language has
//    (Intl.PluralRules), no key en.json lacks, no empty text where English has words, and
//    the same {{placeholders}} as English.
// 2. No component shows a literal string: a template's text or a shown attribute (title,
//    aria-label, placeholder, alt, label) with a letter in it goes through `t`.
//
// Run: node scripts/check-i18n.mjs [locale.json ...]  (no argument: every locale and component)

import { readdirSync, readFileSync } from "node:fs";
import { basename, join } from "node:path";
import { parse } from "svelte/compiler";

const root = new URL("..", import.meta.url).pathname;
const locales = join(root, "src/locales");
const problems = [];

/** Flattens nested keys: { a: { b: "x" } } → { "a.b": "x" }. */
function flatten(o, prefix = "", out = {}) {
  for (const [k, v] of Object.entries(o)) {
    const key = prefix ? `${prefix}.${k}` : k;
    if (v && typeof v === "object") flatten(v, key, out);
    else out[key] = v;
  }
  return out;
}

const PLURAL = /_(zero|one|two|few|many|other)$/;
const placeholders = (s) => [...String(s).matchAll(/\{\{\s*([\w.]+)[^}]*\}\}/g)].map((m) => m[1]).sort();

function checkLocale(file) {
  const code = basename(file, ".json");
  const en = flatten(JSON.parse(readFileSync(join(locales, "en.json"), "utf8")));
  let mine;
  try {
    mine = flatten(JSON.parse(readFileSync(file, "utf8")));
  } catch (e) {
    problems.push(`${code}: not valid JSON (${e.message})`);
    return;
  }
  const categories = new Intl.PluralRules(code).resolvedOptions().pluralCategories;
  const wanted = new Map(); // key in this locale → the English text it translates
  for (const [key, text] of Object.entries(en)) {
    if (!PLURAL.test(key)) {
      wanted.set(key, text);
      continue;
    }
    const base = key.replace(PLURAL, "");
    for (const c of categories)
      if (!wanted.has(`${base}_${c}`)) wanted.set(`${base}_${c}`, en[`${base}_other`]);
  }
  for (const [key, english] of wanted) {
    if (!(key in mine)) problems.push(`${code}: lacks ${key}`);
    else if (String(mine[key]).trim() === "" && String(english).trim() !== "" && !isSplit(key))
      problems.push(`${code}: ${key} is empty`);
    else if (placeholders(mine[key]).join() !== placeholders(english).join())
      problems.push(
        `${code}: ${key} has {{${placeholders(mine[key])}}}, English {{${placeholders(english)}}}`,
      );
  }
  for (const key of Object.keys(mine)) {
    const known = wanted.has(key) || (PLURAL.test(key) && wanted.has(key.replace(PLURAL, "_other")));
    if (!known) problems.push(`${code}: has ${key}, which en.json lacks`);
  }
}

/** Keys around a piece of markup (a key on the keyboard): a language may put all its
 *  words on one side, and leave the other empty. */
function isSplit(key) {
  return key === "onboarding.try.hold" || key === "onboarding.try.say";
}

/** Attributes whose text a person sees or hears. */
const SHOWN = new Set(["title", "aria-label", "placeholder", "alt", "label"]);
/** Text that is no words: example values a person types, and symbols. */
const NOT_WORDS = [/^https?:\/\//, /^npx /, /^[\s\d\p{P}\p{S}]*$/u];

function checkComponent(file) {
  const source = readFileSync(file, "utf8");
  const ast = parse(source, { modern: true });
  const walk = (node) => {
    if (!node || typeof node !== "object") return;
    if (Array.isArray(node)) return node.forEach(walk);
    if (
      node.type === "Text" &&
      /\p{L}/u.test(node.data) &&
      !NOT_WORDS.some((r) => r.test(node.data.trim()))
    ) {
      const line = source.slice(0, node.start).split("\n").length;
      problems.push(`${basename(file)}:${line}: literal text "${node.data.trim().slice(0, 60)}"`);
    }
    if (node.type === "Attribute" && SHOWN.has(node.name) && Array.isArray(node.value)) {
      for (const v of node.value) {
        if (v.type === "Text" && /\p{L}/u.test(v.data) && !NOT_WORDS.some((r) => r.test(v.data.trim()))) {
          const line = source.slice(0, v.start).split("\n").length;
          problems.push(`${basename(file)}:${line}: literal ${node.name} "${v.data.trim().slice(0, 60)}"`);
        }
      }
    }
    // Other attributes' text is code (ids, classes, values), not words.
    if (node.type === "Attribute") return;
    for (const [k, v] of Object.entries(node)) {
      // Scripts and styles are code; the template is what a person sees.
      if (k === "instance" || k === "module" || k === "css" || k === "expression") continue;
      walk(v);
    }
  };
  walk(ast.fragment);
}

const args = process.argv.slice(2);
if (args.length > 0) args.forEach(checkLocale);
else {
  for (const f of readdirSync(locales))
    if (f.endsWith(".json") && f !== "en.json") checkLocale(join(locales, f));
  const components = join(root, "src/components");
  for (const f of readdirSync(components)) if (f.endsWith(".svelte")) checkComponent(join(components, f));
  checkComponent(join(root, "src/App.svelte"));
}

if (problems.length > 0) {
  console.error(problems.join("\n"));
  console.error(`check-i18n: ${problems.length} problem(s)`);
  process.exit(1);
}
console.log("check-i18n: every locale has every key, and no component shows a literal string");
