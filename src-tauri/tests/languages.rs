//! Hark in the user's language (issue 45): started in a fresh home with `LANG` German, then
//! Japanese, the introduction, the main window, Settings and the tray's menu speak it; the
//! language chosen in Settings takes effect at once and survives a restart; in both, no
//! button or label's text overflows its box at 1024 × 700, and axe finds nothing serious.
//! What each language should say is read from the window's catalogues (ui/src/locales),
//! and a text of the English catalogue left on the page is a failure.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::*;
use serde_json::{json, Value};

/// A catalogue's texts by flattened key ("settings.title").
fn catalogue(lang: &str) -> BTreeMap<String, String> {
    fn flatten(prefix: &str, v: &Value, out: &mut BTreeMap<String, String>) {
        match v {
            Value::Object(o) => {
                for (k, v) in o {
                    let key = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    flatten(&key, v, out);
                }
            }
            Value::String(s) => {
                out.insert(prefix.to_string(), s.clone());
            }
            _ => {}
        }
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../ui/src/locales/{lang}.json"));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let mut out = BTreeMap::new();
    flatten("", &v, &mut out);
    out
}

/// One language's expectations: its texts, and the English ones it must not show.
struct Lang {
    code: &'static str,
    texts: BTreeMap<String, String>,
    /// English texts with no placeholder that this language words differently.
    english: Vec<String>,
}

impl Lang {
    fn new(code: &'static str) -> Self {
        let en = catalogue("en");
        let texts = catalogue(code);
        let english = en
            .iter()
            .filter(|(k, v)| !v.contains("{{") && texts.get(*k).is_some_and(|t| t != *v))
            .map(|(_, v)| v.clone())
            .collect();
        Lang { code, texts, english }
    }

    fn t(&self, key: &str) -> &str {
        self.texts.get(key).unwrap_or_else(|| panic!("{}: no {key}", self.code))
    }
}

/// Checks that the page is in `lang`: its `lang` attribute, and no English text of the
/// catalogue in a text node or a shown attribute (where the language words it otherwise).
async fn in_language(app: &App, lang: &Lang, where_: &str) {
    app.wait(
        &format!("{where_} in {}", lang.code),
        "return document.documentElement.lang",
        |v| v == lang.code,
    )
    .await;
    let english = app
        .c
        .execute(
            "const english = new Set(arguments[0]); const found = [];
             const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
             for (let n = walker.nextNode(); n; n = walker.nextNode()) {
               const t = n.textContent.trim();
               if (english.has(t)) found.push(t);
             }
             for (const el of document.querySelectorAll('[aria-label], [title], [placeholder]')) {
               for (const a of ['aria-label', 'title', 'placeholder']) {
                 const t = (el.getAttribute(a) ?? '').trim();
                 if (english.has(t)) found.push(`${a}=${t}`);
               }
             }
             return found;",
            vec![json!(lang.english)],
        )
        .await
        .unwrap();
    assert_eq!(english, json!([]), "{where_} in {} shows English", lang.code);
}

/// Buttons, labels and headings whose text is wider than their box.
async fn overflowing(app: &App) -> Vec<String> {
    let v = app
        .js(
            "const bad = [];
             for (const el of document.querySelectorAll('button, label, legend, h1, h2, th, summary, kbd, .tag, .hint, .key-status')) {
               const r = el.getBoundingClientRect();
               // Hidden, inline (no box of its own), or only for screen readers (clipped on purpose).
               if (r.width === 0 || r.height === 0 || getComputedStyle(el).display === 'inline' || el.closest('.visually-hidden')) continue;
               if (el.scrollWidth > el.clientWidth + 1)
                 bad.push(`${el.tagName.toLowerCase()}${el.id ? '#' + el.id : ''} \"${el.innerText.slice(0, 40)}\" (${el.scrollWidth} > ${el.clientWidth}; ${[...el.children].map(c => `${c.tagName.toLowerCase()} ${c.offsetWidth}/${c.scrollWidth} ${getComputedStyle(c).width}`).join(', ')})`);
             }
             return bad;",
        )
        .await;
    serde_json::from_value(v).unwrap()
}

/// Sizes the window as a user would: 1024 × 700.
async fn size(app: &App) {
    app.c.set_window_size(1024, 700).await.unwrap();
}

/// The tray menu's labels, as the desktop's tray reads them: the app's com.canonical.dbusmenu
/// object on the session bus (libayatana-appindicator's export, under
/// /org/ayatana/NotificationItem/ID/Menu), found among the app's own connections.
fn tray_labels() -> Vec<String> {
    let bus = |args: &[&str]| bus_call(args).unwrap_or_default();
    let pid = String::from_utf8_lossy(&Command::new("pgrep").args(["-x", "hark-app"]).output().unwrap().stdout)
        .lines()
        .next()
        .expect("hark-app runs")
        .trim()
        .to_string();
    let dbus = [
        "--dest",
        "org.freedesktop.DBus",
        "--object-path",
        "/org/freedesktop/DBus",
    ];
    let names = bus(&[&dbus[..], &["--method", "org.freedesktop.DBus.ListNames"]].concat());
    let mut seen = Vec::new();
    for name in names.split('\'').filter(|n| n.starts_with(":1.")) {
        let of = bus(&[
            &dbus[..],
            &["--method", "org.freedesktop.DBus.GetConnectionUnixProcessID", name],
        ]
        .concat());
        if of.trim() != format!("(uint32 {pid},)") {
            continue;
        }
        seen.push(name.to_string());
        let items = bus(&[
            "--dest",
            name,
            "--object-path",
            "/org/ayatana/NotificationItem",
            "--method",
            "org.freedesktop.DBus.Introspectable.Introspect",
        ]);
        let Some(id) = items.split("<node name=\"").nth(1).and_then(|r| r.split('"').next()) else {
            continue;
        };
        let menu = format!("/org/ayatana/NotificationItem/{id}/Menu");
        let layout = bus(&[
            "--dest",
            name,
            "--object-path",
            &menu,
            "--method",
            "com.canonical.dbusmenu.GetLayout",
            "--",
            "0",
            "-1",
            "['label']",
        ]);
        if layout.contains("'label'") {
            return labels(&layout);
        }
    }
    panic!("no tray menu of hark-app ({pid}) on the session bus; its connections: {seen:?}");
}

/// The labels in a GetLayout reply as gdbus prints it (`'label': <'Show Hark'>`).
fn labels(layout: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = layout;
    while let Some(i) = rest.find("'label': <") {
        rest = &rest[i + "'label': <".len()..];
        let quote = rest.chars().next().unwrap();
        let body = &rest[1..];
        let end = body.find(quote).unwrap_or(body.len());
        out.push(body[..end].to_string());
        rest = &body[end..];
    }
    out
}

/// Waits until the tray's menu reads as `lang`'s (it is relabelled after a change).
async fn tray_in(lang: &Lang) {
    let want: Vec<String> = ["tray.show", "tray.ptt", "tray.handsFree", "tray.quit"]
        .iter()
        .map(|k| lang.t(k).to_string())
        .collect();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let got = tray_labels();
        if want.iter().all(|w| got.contains(w)) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the tray menu in {}: {want:?}; it shows {got:?}",
            lang.code
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// One view of the window (`where_`) as `lang` should show it: in that language, nothing
/// overflowing, axe clean; then its picture (`shot`-CODE.png).
async fn view_in(app: &App, lang: &Lang, where_: &str, shot: &str) {
    in_language(app, lang, where_).await;
    assert_eq!(
        overflowing(app).await,
        Vec::<String>::new(),
        "{where_} in {}",
        lang.code
    );
    assert_eq!(
        axe_serious(app).await,
        Vec::<String>::new(),
        "axe, {where_} in {}",
        lang.code
    );
    app.screenshot(&format!("{shot}-{}.png", lang.code)).await;
}

/// The introduction, the main window and Settings in `lang`, the app started with `LANG`
/// set to `posix` and nothing chosen; then, with `then`, another language chosen in
/// Settings, at once and after a restart.
async fn started_in(lang: &Lang, posix: &str, then: Option<&Lang>) {
    let _one = ONE_APP.lock().await;
    let dir = tempfile::tempdir().unwrap();
    // A first run (no settings file): the introduction, in the system's language.
    let setup = Setup::new(dir.path(), &format!("lang-{}", lang.code), None).env("LANG", posix);
    let app = open_app(&setup).await;
    size(&app).await;
    app.wait(
        "the introduction",
        "return document.querySelector('#onboarding-title')?.innerText ?? ''",
        |v| v == lang.t("onboarding.welcome.title"),
    )
    .await;
    assert_eq!(app.text("#onb-next").await.trim(), lang.t("onboarding.start"));
    view_in(&app, lang, "the introduction", "onboarding").await;
    tray_in(lang).await;

    // The main window.
    app.click("#onb-skip-all").await;
    app.wait(
        "the main window",
        "return document.querySelector('#open-settings')?.innerText ?? ''",
        |v| v == lang.t("header.settings"),
    )
    .await;
    assert_eq!(app.text("#history-title").await.trim(), lang.t("history.title"));
    view_in(&app, lang, "the main window", "main").await;

    // Settings.
    app.open_settings().await;
    assert_eq!(app.text("#settings-title").await.trim(), lang.t("settings.title"));
    view_in(&app, lang, "Settings", "settings").await;

    let Some(next) = then else {
        app.close().await;
        return;
    };
    // Another language chosen in Settings: the window, Settings still open, and the tray
    // show it at once.
    app.choose("#ui-language", native(next.code)).await;
    app.wait(
        "Settings in the language chosen",
        "return document.querySelector('#settings-title')?.innerText ?? ''",
        |v| v == next.t("settings.title"),
    )
    .await;
    in_language(&app, next, "Settings, the language just chosen").await;
    tray_in(next).await;
    app.close().await;

    // And after a restart, whatever the system's language.
    let app = open_app(&setup).await;
    app.wait(
        "the main window after a restart",
        "return document.querySelector('#open-settings')?.innerText ?? ''",
        |v| v == next.t("header.settings"),
    )
    .await;
    in_language(&app, next, "the main window after a restart").await;
    tray_in(next).await;
    app.close().await;
}

/// A language's name in itself, as the UI language menu lists it.
fn native(code: &str) -> &'static str {
    match code {
        "de" => "Deutsch",
        "ja" => "日本語",
        other => panic!("no name for {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs scripts/test.sh (display, virtual audio, keyring, models)"]
async fn the_window_and_the_tray_speak_the_system_s_language_and_the_one_chosen() {
    require_environment();
    started_in(&Lang::new("de"), "de_DE.UTF-8", Some(&Lang::new("ja"))).await;
    started_in(&Lang::new("ja"), "ja_JP.UTF-8", None).await;
}
