//! The conversations at the window's left (issue 45): with three conversations in the
//! database, every title shows on start without opening anything; the search finds one by
//! a word said in it, and says so when nothing matches; ↑/↓ and Enter open one; a row's
//! menu renames it in place, exports it in each format and deletes it after a question
//! that names it.

mod common;

use std::time::Duration;

use common::*;
use hark_core::conversation::{HistorySettings, Message, MessageKind};
use hark_core::store::{SessionMeta, Store};
use hark_e2e::FakeLlm;
use serde_json::{json, Value};

/// The conversations stored before the app starts: (id, what the user said).
const STORED: [(&str, &str); 3] = [
    ("trip-0001", "Plan a weekend trip to Lisbon"),
    ("bike-0002", "My bike lock code is 3582"),
    ("soup-0003", "How long do I simmer a lentil soup?"),
];

/// The rows' titles as the sidebar shows them, top to bottom.
const TITLES: &str =
    "return [...document.querySelectorAll('#session-list .session-title')].map(e => e.innerText.trim())";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs scripts/test.sh (display, virtual audio, keyring, models)"]
async fn the_conversations_are_listed_searched_renamed_exported_and_deleted_from_the_sidebar() {
    require_environment();
    let _one = ONE_APP.lock().await;
    let llm = FakeLlm::openai(None);
    let dir = tempfile::tempdir().unwrap();
    let export = dir.path().join("export.out");
    let setup = Setup::new(
        dir.path(),
        "sidebar",
        Some(settings(
            "Ctrl+Alt+Shift+F7",
            json!({
                "llm_provider": "openai", "llm_model": "local", "llm_base_url": llm.base_url(),
                "stt": "whisper", "tts": "system", "recall": false,
            }),
        )),
    )
    .env("HARK_TEST_DIALOG_PATH", &export);
    {
        let store = Store::open(&setup.db).unwrap();
        for (id, text) in STORED {
            store
                .create_session(&SessionMeta::new(id, "", HistorySettings::default()))
                .unwrap();
            let m = Message::new(MessageKind::User { text: text.into() });
            store.save_message(id, &m).unwrap();
            let reply = Message::new(MessageKind::Note { text: "noted".into() });
            store.save_message(id, &reply).unwrap();
        }
    }
    let app = open_app(&setup).await;

    // Every title on start, without opening anything.
    let titles = app
        .wait("the stored conversations listed", TITLES, |v| {
            STORED.iter().all(|(_, t)| v.as_array().unwrap().iter().any(|s| s == t))
        })
        .await;
    assert!(
        app.text("#session-list").await.contains("2 messages"),
        "each row says how many messages: {titles}"
    );

    // Search by a word said in one of them (not in its title: renamed below), and by nothing.
    let search = app.c.find(fantoccini::Locator::Css("#session-search")).await.unwrap();
    search.send_keys("lentil").await.unwrap();
    app.wait("the search's one hit", TITLES, |v| {
        v == &json!(["How long do I simmer a lentil soup?"])
    })
    .await;
    search.clear().await.unwrap();
    search.send_keys("zebra").await.unwrap();
    app.wait(
        "nothing found",
        "return document.querySelector('#no-sessions')?.innerText ?? ''",
        |v| v == "No matching conversations",
    )
    .await;
    // Emptied as a user does, key by key (WebDriver's clear fires no input event).
    search.send_keys(&"\u{E003}".repeat(5)).await.unwrap(); // Backspace
    app.wait("all listed again", TITLES, |v| v.as_array().unwrap().len() >= 3)
        .await;

    // ↑/↓ and Enter open a conversation.
    let row = |id: &str| format!("#session-list .session[data-id=\"{id}\"]");
    app.js(&format!(
        "document.querySelector('{} .session-open').focus(); return true",
        row("bike-0002")
    ))
    .await;
    let focused = "return document.activeElement?.closest('.session')?.dataset.id ?? null";
    let before = app.js(focused).await;
    app.c
        .active_element()
        .await
        .unwrap()
        .send_keys(&'\u{E015}'.to_string()) // ArrowDown
        .await
        .unwrap();
    let moved = app.wait("focus moved down", focused, |v| *v != before).await;
    app.c
        .active_element()
        .await
        .unwrap()
        .send_keys(&'\u{E007}'.to_string()) // Enter
        .await
        .unwrap();
    app.wait(
        "the focused conversation opened",
        "return document.querySelector('#session-list .session.current')?.dataset.id ?? null",
        |v| *v == moved,
    )
    .await;

    // Rename in place, from the row's menu.
    let menu = |id: &str, item: &str| format!("{} {item}", row(id));
    app.click(&menu("trip-0001", ".session-menu")).await;
    app.click(&menu("trip-0001", ".rename-session")).await;
    let input = app.c.find(fantoccini::Locator::Css(".session .rename")).await.unwrap();
    // The old title is selected: typing replaces it, Enter keeps it.
    input.send_keys("Lisbon weekend\u{E007}").await.unwrap();
    app.wait(
        "the new title",
        &format!(
            "return document.querySelector('{} .session-title')?.innerText ?? ''",
            row("trip-0001")
        ),
        |v| v == "Lisbon weekend",
    )
    .await;
    let stored = Store::open(&setup.db).unwrap();
    let title_of = |id: &str| {
        stored
            .list_sessions()
            .unwrap()
            .into_iter()
            .find(|s| s.id == id)
            .and_then(|s| s.title)
    };
    assert_eq!(title_of("trip-0001").as_deref(), Some("Lisbon weekend"), "stored");

    // Export it in each format, from its menu (the file as the save dialog would name it).
    for (item, check) in [
        (".export-json", "json"),
        (".export-md", "md"),
        (".export-deepgram", "deepgram"),
    ] {
        let _ = std::fs::remove_file(&export);
        app.click(&menu("trip-0001", ".session-menu")).await;
        app.click(&menu("trip-0001", item)).await;
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while !export.exists() {
            assert!(std::time::Instant::now() < deadline, "{item}: no file written");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        let text = std::fs::read_to_string(&export).unwrap();
        match check {
            "json" => {
                let v: Value = serde_json::from_str(&text).unwrap();
                assert_eq!(v["session"]["title"], "Lisbon weekend", "{text}");
                assert_eq!(v["messages"][0]["kind"], "user", "{text}");
                assert!(text.contains(STORED[0].1), "{text}");
            }
            "md" => {
                assert!(text.starts_with("# Lisbon weekend"), "{text}");
                assert!(text.contains(STORED[0].1), "{text}");
            }
            _ => {
                let v: Value = serde_json::from_str(&text).unwrap();
                assert_eq!(v["type"], "Settings", "{text}");
                assert!(text.contains(STORED[0].1), "{text}");
            }
        }
    }

    // Delete it, after a question that names it (answered yes: the page's confirm).
    app.js("window.confirm = (m) => { window.__asked = m; return true; }; return true")
        .await;
    app.click(&menu("soup-0003", ".session-menu")).await;
    app.click(&menu("soup-0003", ".delete-session")).await;
    app.wait("the row gone", TITLES, |v| {
        !v.as_array().unwrap().iter().any(|s| s == STORED[2].1)
    })
    .await;
    let asked = app.js("return window.__asked ?? ''").await;
    assert!(
        asked.as_str().unwrap_or_default().contains(STORED[2].1),
        "the question names the conversation: {asked}"
    );
    assert_eq!(title_of("soup-0003"), None, "deleted from the database");
    assert!(stored.load_session("soup-0003").is_err(), "deleted from the database");
    app.screenshot("sidebar.png").await;
    app.close().await;
}
