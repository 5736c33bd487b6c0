//! The real app, driven through WebDriver on a virtual display, with the virtual speaker
//! and microphone, the offline whisper engine, the OS voice, and a loopback
//! OpenAI-compatible model (or, with no key, the offline model).

mod common;

use std::time::Duration;

use common::*;
use fantoccini::Locator;
use hark_core::stt::wer::words;
use hark_e2e::keychain::secret_tool_lookup;
use hark_e2e::recording::record;
use hark_e2e::{espeak_wav, recorded, whisper_model, Behaviour, FakeLlm};
use serde_json::{json, Value};

/// One spoken turn with the button in toggle mode: click, speak into the microphone, click.
async fn speak(app: &App, wav: &std::path::Path) {
    app.click("#ptt").await;
    app.phase("listening").await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    play(wav).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    app.click("#ptt").await;
}

/// Whisper reads back what came out of the speaker: at least half of the reply's words of
/// four letters or more (both compared as `stt::wer::words`, so "8" and "eight" agree), or a
/// reading nearer the reply than not, letter by letter. A short reply may have one such
/// word, a name whisper tiny.en hears as another word: "I'm Hark." came back as "in heart"
/// (the words match in 5 of 8 letters), where silence or other speech match in few.
/// The recording is read stretch by stretch, split at its pauses (`stt::segment`): a reply
/// can pause for a second while the model writes its next clause, and whisper tiny.en,
/// given the whole recording at once, sometimes stopped at such a gap.
async fn assert_read_back(spoken: &[f32], reply: &str) {
    let whisper = hark_core::stt::whisper::WhisperStt::load(&whisper_model()).unwrap();
    let heard = tokio::task::block_in_place(|| {
        let rt = tokio::runtime::Handle::current();
        hark_core::stt::transcribe_whole(spoken, |stretch| {
            rt.block_on(hark_core::stt::Transcriber::transcribe(&whisper, stretch))
        })
    })
    .unwrap();
    let heard = words(&heard).join(" ");
    let said: Vec<String> = words(reply).into_iter().filter(|w| w.len() > 3).collect();
    let found = said.iter().filter(|w| heard.contains(w.as_str())).count();
    let alike = strsim::normalized_levenshtein(&heard, &words(reply).join(" "));
    assert!(
        found * 2 >= said.len() || alike >= 0.5,
        "whisper heard {heard:?} off the speaker for the reply {reply:?} ({found} of its {} long words, {alike:.2} alike)",
        said.len()
    );
}

/// The history panel shows the first turn: "My name is Sam." and the loopback model's
/// answer to it.
async fn first_reply_is_nice_to_meet_you(app: &App) {
    let h = app
        .wait("the first reply in the panel", HISTORY, |v| in_context(v).len() == 2)
        .await;
    let ctx = in_context(&h);
    assert!(ctx[0].to_lowercase().contains("my name is sam"), "{ctx:?}");
    assert_eq!(ctx[1], "Nice to meet you, Sam!");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs scripts/test.sh (display, virtual audio, keyring, models)"]
async fn the_desktop_app_end_to_end() {
    require_environment();
    let _one = ONE_APP.lock().await;
    let model = whisper_model();
    let llm = FakeLlm::openai(None);
    let dir = tempfile::tempdir().unwrap();
    let export = dir.path().join("export.json");
    let setup = Setup::new(
        dir.path(),
        "e2e",
        Some(settings(
            "Ctrl+Alt+Shift+F9",
            json!({
                "llm_provider": "openai", "llm_model": "local", "llm_base_url": llm.base_url(),
                "stt": "whisper", "whisper_model": model, "tts": "system", "ptt_mode": "toggle",
                "max_tokens": 256, "summarize": true,
                // Recall is switched on later in the test, after the Memory view has a fact.
                "recall": false,
            }),
        )),
    )
    .env("HARK_TEST_DIALOG_PATH", &export);
    let (u1, u2) = (dir.path().join("u1.wav"), dir.path().join("u2.wav"));
    espeak_wav("My name is Sam.", &u1);
    espeak_wav("Tell me, what is my name?", &u2);
    let app = open_app(&setup).await;
    app.phase("ready").await;
    assert_eq!(app.error_banners().await, "", "no setup problem");
    assert_eq!(app.text("#stat-in").await, "–");

    // Turn 1, spoken: it appears in the transcript and in the history panel.
    speak(&app, &u1).await;
    first_reply_is_nice_to_meet_you(&app).await;
    assert!(app.text("#transcript").await.contains("Nice to meet you, Sam!"));
    let stat_in: u64 = app.text("#stat-in").await.parse().expect("token stats filled in");
    assert!(stat_in > 0);
    app.phase("ready").await;

    // Turn 2, with the global shortcut while another window has the focus: remembered; the
    // session totals grow.
    let other = std::process::Command::new("xmessage").arg("another window").spawn();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let _ = std::process::Command::new("xdotool")
        .args(["search", "--name", "xmessage", "windowactivate"])
        .status();
    // Toggle mode: a press starts, a second press stops.
    key(true, "ctrl+alt+shift+F9");
    key(false, "ctrl+alt+shift+F9");
    app.phase("listening").await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    play(&u2).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    key(true, "ctrl+alt+shift+F9");
    key(false, "ctrl+alt+shift+F9");
    let h = app
        .wait("the second reply", HISTORY, |v| in_context(v).len() == 4)
        .await;
    assert_eq!(in_context(&h)[3], "Your name is Sam.");
    if let Ok(mut w) = other {
        let _ = w.kill();
        let _ = w.wait();
    }
    let total: u64 = app.text("#total-in").await.parse().unwrap();
    assert!(total > stat_in, "session totals grow: {total} vs {stat_in}");
    app.phase("ready").await;

    // The slider reshapes the context live, and the next request carries what it shows.
    app.js("const s = document.querySelector('#max-turns'); s.value = '1'; s.dispatchEvent(new Event('input', {bubbles: true})); return true")
        .await;
    let h = app.wait("one turn kept", HISTORY, |v| in_context(v).len() == 2).await;
    assert_eq!(in_context(&h)[1], "Your name is Sam.", "the newest turn stays");
    let dimmed = h
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cls"].as_str().unwrap().contains("out-of-context"))
        .count();
    assert_eq!(dimmed, 2, "the first turn is shown dimmed");
    speak(&app, &u2).await;
    app.wait("the third reply", HISTORY, |v| {
        in_context(v).len() == 2 && in_context(v)[1] == "I don't know your name yet."
    })
    .await;
    assert_eq!(
        llm.last_turn().messages().len(),
        1,
        "max_turns=1: the request carried only the current turn"
    );
    app.phase("ready").await;

    // The turns that left the context were folded into the running summary, shown in the
    // panel; the user edits it there.
    let summary = "return document.querySelector('#summary-block').hidden ? null : document.querySelector('#summary').textContent";
    app.wait("the summary", summary, |v| {
        v.as_str().is_some_and(|t| t.contains("My name is Sam"))
    })
    .await;
    app.click("#edit-summary").await;
    let editor = app.c.find(Locator::Css("#summary-text")).await.unwrap();
    editor.clear().await.unwrap();
    editor.send_keys("The user is Sam; they asked twice.").await.unwrap();
    app.click("#save-summary").await;
    app.wait("the edited summary", summary, |v| {
        v == "The user is Sam; they asked twice."
    })
    .await;

    // Reset empties the panel (and forgets the summary); the record keeps everything.
    app.click("#reset").await;
    app.wait("an empty context", HISTORY, |v| in_context(v).is_empty())
        .await;
    app.wait("no summary", summary, |v| v.is_null()).await;

    // Export, from the conversation's menu in the sidebar: it asks for a file in the
    // system's save dialog (this debug build is told which, by HARK_TEST_DIALOG_PATH; the
    // page never names a path).
    app.click("#session-list .session.current .session-menu").await;
    app.click("#session-list .session.current .export-json").await;
    app.wait(
        "the export notice",
        "return document.querySelector('#banners').innerText",
        |v| v.as_str().unwrap_or_default().contains("Exported to"),
    )
    .await;
    let e: Value = serde_json::from_str(&std::fs::read_to_string(&export).unwrap()).unwrap();
    let kinds: Vec<&str> = e["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        vec![
            "user",
            "assistant",
            "user",
            "assistant",
            "user",
            "assistant",
            "context_reset"
        ]
    );
    assert!(
        e["messages"][1]["latency"]["first_audio_out_ms"].is_u64(),
        "voice metrics exported"
    );
    // The page has no way to name a file: no global Tauri object, no path argument.
    assert_eq!(app.js("return typeof window.__TAURI__").await, "undefined");

    // The Memory view: add, edit and forget facts, search past conversations; the database
    // holds exactly what the view shows.
    let facts_in_db = || -> Vec<String> {
        let store = hark_core::store::Store::open(&setup.db).unwrap();
        store.facts().unwrap().into_iter().map(|f| f.text).collect()
    };
    let facts_shown = "return Array.from(document.querySelectorAll('#facts .fact-text')).map(i => i.value)";
    app.click("#open-memory").await;
    app.wait(
        "the memory view",
        "return document.querySelector('#facts')?.innerText ?? ''",
        |v| v.as_str().is_some_and(|t| t.trim() == "Nothing remembered yet."),
    )
    .await;
    for fact in ["My name is Ada.", "I live in Paris."] {
        let input = app.c.find(Locator::Css("#new-fact")).await.unwrap();
        input.send_keys(fact).await.unwrap();
        app.click("#add-fact").await;
        app.wait("the fact listed", facts_shown, |v| {
            v.as_array().unwrap().iter().any(|t| t == fact)
        })
        .await;
    }
    let second = app
        .c
        .find(Locator::Css("#facts li:nth-child(2) .fact-text"))
        .await
        .unwrap();
    second.clear().await.unwrap();
    second.send_keys("I live in Lyon.").await.unwrap();
    app.click("#facts li:nth-child(2) .save-fact").await;
    app.wait("the edited fact", facts_shown, |v| {
        v == &json!(["My name is Ada.", "I live in Lyon."])
    })
    .await;
    app.click("#facts li:nth-child(2) .forget-fact").await;
    app.wait("one fact left", facts_shown, |v| v == &json!(["My name is Ada."]))
        .await;
    assert_eq!(facts_in_db(), ["My name is Ada."]);
    // A bad fact is refused with a banner naming the problem; nothing changes.
    app.click("#add-fact").await;
    app.wait(
        "the empty-fact banner",
        "return document.querySelector('#banners').innerText",
        |v| v.as_str().unwrap_or_default().contains("a fact cannot be empty"),
    )
    .await;
    assert_eq!(facts_in_db(), ["My name is Ada."]);
    let q = app.c.find(Locator::Css("#memory-query")).await.unwrap();
    q.send_keys("name").await.unwrap();
    app.click("#search-memory").await;
    let hits = app
        .wait(
            "search results",
            "return document.querySelector('#search-results').innerText",
            |v| v.as_str().unwrap_or_default().to_lowercase().contains("my name is sam"),
        )
        .await;
    assert!(hits.as_str().unwrap().contains("You"), "{hits}");
    app.screenshot("memory.png").await;
    app.click("#memory-close").await;

    // Recall on (Settings): the next spoken turn is answered from the remembered fact, which
    // the history panel shows beside the system prompt; the context list stays as it was.
    app.open_settings().await;
    app.choose("select[name=recall]", "Recall").await;
    app.save_settings().await;
    app.phase("ready").await;
    speak(&app, &u2).await;
    app.wait("the recalled answer", HISTORY, |v| {
        in_context(v).last().is_some_and(|t| t == "Your name is Ada.")
    })
    .await;
    let recall = app
        .js("return document.querySelector('#recall-block').hidden ? null : document.querySelector('#recall').textContent")
        .await;
    assert!(
        recall.as_str().unwrap_or_default().contains("- My name is Ada."),
        "{recall}"
    );
    assert!(
        llm.last_turn().system().unwrap().contains("- My name is Ada."),
        "the request carried the fact beside the system prompt"
    );
    app.phase("ready").await;

    // Memory finds meaning (issue 24): with recall on, the embedding model is loaded and the
    // earlier messages are embedded in the background. A question that shares no word with
    // "My name is Sam." finds it in the Memory view, whose line says why (by meaning) and
    // with what score. Searched again until the background indexing has reached it.
    app.click("#open-memory").await;
    let q = app.c.find(Locator::Css("#memory-query")).await.unwrap();
    q.clear().await.unwrap();
    q.send_keys("what am I called").await.unwrap();
    const SEARCH: &str = "document.querySelector('#search-memory').click(); \
        return Array.from(document.querySelectorAll('#search-results li.hit')).map(li => li.innerText)";
    let found_by_meaning = |v: &Value| {
        v.as_array().is_some_and(|hits| {
            hits.iter().filter_map(Value::as_str).any(|h| {
                let h = h.to_lowercase();
                h.contains("my name is sam") && h.contains("meaning")
            })
        })
    };
    let hits = app
        .wait_for(
            "a result found by meaning",
            SEARCH,
            Duration::from_secs(120),
            found_by_meaning,
        )
        .await;
    let hit = hits
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .find(|h| h.to_lowercase().contains("my name is sam"))
        .unwrap()
        .to_string();
    let score: f64 = hit
        .rsplit('·')
        .next()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| panic!("a score on the line: {hit}"));
    assert!(score > 0.0 && score <= 1.0, "{hit}");
    app.click("#memory-close").await;

    // The conversation language (issue 13): chosen in Settings, its instruction follows the
    // system prompt in the history panel (and so in every request); "Automatic" takes it
    // away again.
    app.open_settings().await;
    app.choose("select[name=language]", "German").await;
    app.save_settings().await;
    app.wait(
        "the language in the panel",
        "return document.querySelector('#language-note')?.textContent ?? ''",
        |v| v.as_str().unwrap_or_default().contains("Always answer in German"),
    )
    .await;
    app.open_settings().await;
    app.choose("select[name=language]", "Automatic").await;
    app.save_settings().await;
    app.wait(
        "no language in the panel",
        "return document.querySelector('#language-note') === null",
        |v| v == true,
    )
    .await;
    app.phase("ready").await;
    assert_eq!(app.error_banners().await, "");

    // The natural voice in Settings: its voices to pick from, and a spoken preview of the
    // one picked before anything is saved (recorded off the speaker, read back by whisper).
    app.open_settings().await;
    app.choose("select[name=tts]", "Natural voice").await;
    app.choose("select[name=natural_voice]", "Michael").await;
    app.js("document.querySelector('#preview-voice').scrollIntoView({block: 'center'}); return true")
        .await;
    app.screenshot("settings-natural-voice.png").await;
    let preview = record(&dir.path().join("preview.wav"));
    app.click_js("#preview-voice").await;
    app.wait(
        "the preview to start",
        "return document.querySelector('#preview-voice').disabled",
        |v| v == true,
    )
    .await;
    app.wait_for(
        "the preview to end",
        "return document.querySelector('#preview-voice').disabled",
        Duration::from_secs(60),
        |v| v == false,
    )
    .await;
    let preview = preview.stop();
    assert_eq!(app.error_banners().await, "", "the preview spoke without a problem");
    let whisper = hark_core::stt::whisper::WhisperStt::load(&model).unwrap();
    let heard = hark_core::stt::Transcriber::transcribe(&whisper, &preview)
        .await
        .unwrap()
        .to_lowercase();
    // "sound", not "sounds": whisper tiny.en once heard "…how harks sound" (1 run in 33).
    assert!(
        heard.contains("hello") && heard.contains("sound"),
        "whisper heard {heard:?} in the preview"
    );
    app.click_js("#settings-cancel").await;

    // A reply the length limit cut off (OpenAI's recorded `finish_reason: "length"` stream,
    // issue 46): the panel marks it, and the transcript shows what Hark said after it.
    llm.push(Behaviour::Replay(recorded(
        "openai-python",
        "4cc50a6135d254573a502310e6af1246f55edb6ad95fa24059f160996b68866d.bin",
    )));
    speak(&app, &u2).await;
    app.wait(
        "the cut-off mark in the panel",
        "return document.querySelector('#history .ended')?.textContent ?? null",
        |v| v == "cut off by the length limit",
    )
    .await;
    app.wait(
        "the notice in the transcript",
        "return document.querySelector('#transcript .notice')?.textContent ?? null",
        |v| v == "My answer was cut off there: it reached the length limit.",
    )
    .await;
    app.phase("ready").await;

    // A key saved in Settings goes to the Secret Service and into no file the app wrote.
    let key = "sk-ant-entered-in-settings-4f9c2e";
    app.open_settings().await;
    app.js("document.querySelector('#key-anthropic').scrollIntoView(); return true")
        .await;
    let input = app.c.wait().for_element(Locator::Css("#key-anthropic")).await.unwrap();
    input.send_keys(key).await.unwrap();
    app.click_js("#save-key-anthropic").await;
    app.wait(
        "the key stored",
        "return document.querySelector('#key-status-anthropic').textContent",
        |v| v.as_str().unwrap_or_default().trim().starts_with("present"),
    )
    .await;
    assert_eq!(
        app.js("return document.querySelector('#key-anthropic').value").await,
        "",
        "the field is cleared"
    );
    app.screenshot("settings.png").await;
    assert_eq!(secret_tool_lookup(&setup.service, "anthropic").as_deref(), Some(key));
    let page = app.js("return document.documentElement.outerHTML").await;
    assert!(
        !page.as_str().unwrap().contains(key),
        "the key never comes back to the webview"
    );
    // A custom endpoint shown beside its own key field (the OpenAI-compatible loopback).
    let labels = app.text("#keys").await;
    assert!(
        labels.contains(&format!("OpenAI at {}", llm.base_url().trim_end_matches('/'))),
        "{labels}"
    );

    app.close().await;
    let mut found = Vec::new();
    files_containing(dir.path(), key.as_bytes(), &mut found);
    if let Some(home) = std::env::var_os("HOME") {
        files_containing(std::path::Path::new(&home), key.as_bytes(), &mut found);
    }
    assert!(found.is_empty(), "the key is in files the app wrote: {found:?}");
}

/// What the README's run command gives on a machine with the models in place and no API
/// key: the offline stack (whisper.cpp, the local model through `hark-llm`, the quick Heart
/// voice) answers a spoken turn; the reply recorded off the speaker is read back by whisper.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs scripts/test.sh (display, virtual audio, keyring, models)"]
async fn with_no_keys_the_app_answers_a_spoken_turn_offline() {
    require_environment();
    let _one = ONE_APP.lock().await;
    let dir = tempfile::tempdir().unwrap();
    // Default settings, except toggle mode (a click starts, a click stops) and a shortcut
    // of its own, so no other test's app can hold it.
    let setup = Setup::new(
        dir.path(),
        "offline",
        Some(settings("Ctrl+Alt+Shift+F10", json!({"ptt_mode": "toggle"}))),
    );
    let u1 = dir.path().join("u1.wav");
    espeak_wav("My name is Sam.", &u1);
    let app = open_app(&setup).await;
    app.phase("ready").await;
    assert_eq!(app.error_banners().await, "", "no setup problem");

    speak(&app, &u1).await;
    let spoken = record(&dir.path().join("reply.wav"));
    let h = app
        .wait("the offline reply in the panel", HISTORY, |v| {
            in_context(v).len() == 2 && !in_context(v)[1].trim().is_empty()
        })
        .await;
    let ctx = in_context(&h);
    // The words, not the name: Moonshine's transcript of espeak's "Sam" depends on where its
    // decodes fall (a clean-clone run heard "My name is M.."); its word error is measured
    // by the offline-turn benchmark, and this test is about the offline stack answering.
    assert!(ctx[0].to_lowercase().contains("my name is"), "{ctx:?}");
    app.phase("ready").await;
    let spoken = spoken.stop();
    assert!(app.text("#transcript").await.contains(ctx[1].trim()));
    let cached_shown = app.text("#stat-in-cached").await;
    app.close().await;

    // The default voice is the quick Heart voice (its files are in the models directory),
    // and what came out of the speaker is the reply.
    let mut logs = String::new();
    for e in std::fs::read_dir(&setup.logs).unwrap().flatten() {
        logs.push_str(&std::fs::read_to_string(e.path()).unwrap_or_default());
    }
    assert!(
        logs.contains("quick Heart voice loaded"),
        "the quick Heart voice spoke: {logs}"
    );
    assert_read_back(&spoken, &ctx[1]).await;

    // The record: the offline model answered, with its reported usage and voice metrics.
    let store = hark_core::store::Store::open(&setup.db).unwrap();
    let session = store.list_sessions().unwrap().remove(0);
    assert_eq!(session.model.as_deref(), Some("qwen2.5-coder-1.5b"));
    let stored = store.load_session(&session.id).unwrap();
    let hark_core::conversation::MessageKind::Assistant(a) = &stored.messages[1].kind else {
        panic!("{:?}", stored.messages)
    };
    let usage = a.usage.unwrap();
    assert!(usage.input_tokens.unwrap() > 0);
    // The app evaluated the system prompt at start-up and the user turn's opening at the
    // press, and the whole request when the transcript came while the key was still held:
    // the turn's request found some or all of it in the model's cache, as the panel shows.
    let cached = usage.cached_input_tokens.expect("hark-llm reports cached tokens");
    assert!(cached > 0 && cached <= usage.input_tokens.unwrap(), "{usage:?}");
    assert_eq!(cached_shown, cached.to_string());
    assert!(a.latency.unwrap().first_audio_out_ms.is_some(), "the reply was played");
}

/// Issue 20: offline, the words appear in the window while the user speaks. With no keys,
/// Moonshine and the OS voice: while a question of two sentences plays into the virtual
/// microphone (the button on, in toggle mode), the first sentence's words show in an
/// interim line before the second has been played; at the release the final words
/// replace that very line (the same element, no longer interim), and the reply is spoken:
/// whisper reads it back off the speaker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs scripts/test.sh (display, virtual audio, keyring, models)"]
async fn offline_the_words_show_while_the_user_speaks_and_the_reply_is_spoken() {
    require_environment();
    let _one = ONE_APP.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let setup = Setup::new(
        dir.path(),
        "live",
        Some(settings(
            "Ctrl+Alt+Shift+F4",
            json!({"ptt_mode": "toggle", "stt": "moonshine", "tts": "system"}),
        )),
    );
    let question = dir.path().join("question.wav");
    espeak_wav(
        "What is the capital of France? Tell me one thing that the city is famous for.",
        &question,
    );
    let app = open_app(&setup).await;
    app.phase("ready").await;
    assert_eq!(app.error_banners().await, "", "no setup problem");

    app.click("#ptt").await;
    app.phase("listening").await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    let playing = {
        let question = question.clone();
        tokio::spawn(async move { play(&question).await })
    };
    // The interim line is marked, to find the same element after the release.
    const INTERIM: &str = "const l = document.querySelector('#transcript li.user.interim'); \
        if (!l) return null; l.dataset.seen = 'interim'; return l.textContent.trim()";
    let interim = app
        .wait("the first sentence's words while the user speaks", INTERIM, |v| {
            v.as_str().is_some_and(|t| words(t).iter().any(|w| w == "capital"))
        })
        .await;
    assert!(
        !playing.is_finished(),
        "the words {interim} showed only after the whole question had been played"
    );
    playing.await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let reply = record(&dir.path().join("reply.wav"));
    app.click("#ptt").await;

    const SEEN: &str = "const l = document.querySelector('#transcript li[data-seen]'); \
        return l ? {interim: l.classList.contains('interim'), text: l.textContent.trim()} : null";
    let line = app
        .wait("the final words in the line that was interim", SEEN, |v| {
            v["interim"] == false
        })
        .await;
    let heard = line["text"].as_str().unwrap().to_string();
    let heard_words = words(&heard);
    // The first sentence's key word. Moonshine tiny makes less of the rest of espeak-ng's
    // voice off the virtual microphone: one run in ten heard "the capital and friends".
    assert!(
        heard_words.iter().any(|h| h == "capital"),
        "the final transcript: {heard:?}"
    );
    assert_eq!(
        app.js("return document.querySelectorAll('#transcript li.user').length")
            .await,
        1,
        "one line for what the user said"
    );
    let h = app
        .wait("the reply in the panel", HISTORY, |v| {
            in_context(v).len() == 2 && !in_context(v)[1].trim().is_empty()
        })
        .await;
    let ctx = in_context(&h);
    assert_eq!(words(&ctx[0]), heard_words, "the turn is what the window showed");
    app.phase("ready").await;
    let spoken = reply.stop();
    app.close().await;
    assert_read_back(&spoken, &ctx[1]).await;
}

/// Issue 25: a tool server the user adds in Settings. The window adds server-everything
/// (npm) as a program, lists its tools, sets one to *always* and another to *ask*; after a
/// spoken turn the *always* tool's call shows in the transcript and in the history panel
/// with its arguments and result, and the *ask* one is put to the user in the window and
/// runs once allowed. The choices are in the shared servers file, for the CLI too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs scripts/test.sh (display, virtual audio, keyring, models, MCP servers)"]
async fn a_tool_server_added_in_settings_runs_in_a_spoken_turn() {
    require_environment();
    let everything = std::env::var("HARK_TEST_MCP_EVERYTHING")
        .expect("HARK_TEST_MCP_EVERYTHING is not set: run the tests through scripts/test.sh");
    let _one = ONE_APP.lock().await;
    let llm = FakeLlm::openai(None);
    let dir = tempfile::tempdir().unwrap();
    let setup = Setup::new(
        dir.path(),
        "tools",
        Some(settings(
            "Ctrl+Alt+Shift+F11",
            json!({
                "llm_provider": "openai", "llm_model": "local", "llm_base_url": llm.base_url(),
                "stt": "whisper", "whisper_model": whisper_model(), "tts": "system", "ptt_mode": "toggle",
                "recall": false,
            }),
        )),
    );
    let (u1, u2) = (dir.path().join("u1.wav"), dir.path().join("u2.wav"));
    espeak_wav("Add two and three.", &u1);
    espeak_wav("Say hello back to me.", &u2);
    let app = open_app(&setup).await;
    app.phase("ready").await;

    // Settings → Tools → Add a tool server: a program on this computer.
    app.open_settings().await;
    app.click_js("#add-tool-server-open").await;
    let fill = format!(
        "const set = (n, v) => {{ const e = document.querySelector(`[name=${{n}}]`); e.value = v; e.dispatchEvent(new Event('input', {{bubbles: true}})); }};\
         set('tool-server-name', 'everything'); set('tool-server-command', {}); return true",
        json!(everything)
    );
    app.js(&fill).await;
    app.click_js("#add-tool-server-save").await;
    let tools = app
        .wait(
            "the server's tools listed",
            "return Array.from(document.querySelectorAll('[data-server=everything] [data-tool]')).map(t => t.dataset.tool)",
            |v| v.as_array().is_some_and(|a| a.len() > 5),
        )
        .await;
    for t in ["echo", "get-sum", "toggle-simulated-logging"] {
        assert!(tools.as_array().unwrap().iter().any(|x| x == t), "{t} in {tools}");
    }
    app.choose("select[name='consent-everything-get-sum']", "Always").await;
    app.choose("select[name='consent-everything-echo']", "Ask").await;
    let file = setup.config.join("tools.json");
    // Each choice is saved as it is made (the command writes the file).
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !std::fs::read_to_string(&file)
        .is_ok_and(|t| t.contains("\"echo\": \"ask\"") && t.contains("\"get-sum\": \"always\""))
    {
        assert!(std::time::Instant::now() < deadline, "the choices were not saved");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(saved["servers"][0]["consent"]["get-sum"], "always", "{saved}");
    assert_eq!(saved["servers"][0]["consent"]["echo"], "ask", "{saved}");

    // A server that cannot start is named in a banner, with its own words under Details,
    // and stays listed (failed) to be fixed or removed.
    app.click_js("#add-tool-server-open").await;
    app.js(
        "const set = (n, v) => { const e = document.querySelector(`[name=${n}]`); e.value = v; e.dispatchEvent(new Event('input', {bubbles: true})); };\
         set('tool-server-name', 'calendar'); set('tool-server-command', 'sh -c \"echo cannot open the calendar database >&2; exit 3\"'); return true",
    )
    .await;
    app.click_js("#add-tool-server-save").await;
    let banner = app
        .wait(
            "the tool server's banner",
            "return [...document.querySelectorAll('#banners .banner[data-kind=tool_server]')].map(b => b.querySelector('.message').innerText + ' / ' + (b.querySelector('details code')?.textContent ?? '')).join(' | ')",
            |v| v.as_str().is_some_and(|t| !t.is_empty()),
        )
        .await;
    let banner = banner.as_str().unwrap();
    assert!(banner.contains("the tool server calendar could not start"), "{banner}");
    assert!(
        banner.contains("cannot open the calendar database"),
        "its words under Details: {banner}"
    );
    assert_eq!(
        app.js("return document.querySelector('[data-server=calendar] .server-state')?.textContent")
            .await,
        "failed"
    );
    app.click_js("#settings-cancel").await;

    // A spoken turn: the model calls the *always* tool; it runs without a question.
    llm.push(hark_e2e::Behaviour::CallTool {
        name: "everything__get-sum".into(),
        arguments: r#"{"a": 2, "b": 3}"#.into(),
    });
    speak(&app, &u1).await;
    let line = app
        .wait(
            "the call in the transcript",
            "return Array.from(document.querySelectorAll('#transcript li.tool')).map(l => l.innerText).join('\\n')",
            |v| v.as_str().is_some_and(|t| t.contains("→")),
        )
        .await;
    let line = line.as_str().unwrap();
    assert!(
        line.contains("everything__get-sum") && line.contains(r#""a": 2"#),
        "{line}"
    );
    assert!(line.contains("5"), "the result shows: {line}");
    let panel = app
        .wait(
            "the call in the history panel",
            "return Array.from(document.querySelectorAll('#history li.tool_result')).map(l => l.innerText).join('\\n')",
            |v| v.as_str().is_some_and(|t| t.contains("everything__get-sum")),
        )
        .await;
    assert!(panel.as_str().unwrap().contains("5"), "{panel}");
    app.phase("ready").await;

    // The *ask* tool: the window asks, the user allows it once, and it runs.
    llm.push(hark_e2e::Behaviour::CallTool {
        name: "everything__echo".into(),
        arguments: r#"{"message": "hello back"}"#.into(),
    });
    speak(&app, &u2).await;
    let asked = app
        .wait(
            "the consent question",
            "return document.querySelector('#consent')?.innerText ?? ''",
            |v| v.as_str().is_some_and(|t| !t.is_empty()),
        )
        .await;
    assert!(
        asked.as_str().unwrap().contains("Hark wants to use everything"),
        "{asked}"
    );
    assert!(
        asked.as_str().unwrap().contains("hello back"),
        "the arguments are shown: {asked}"
    );
    app.click("#consent-yes").await;
    app.wait(
        "the allowed call's result",
        "return Array.from(document.querySelectorAll('#transcript li.tool')).map(l => l.innerText).join('\\n')",
        |v| v.as_str().is_some_and(|t| t.contains("Echo: hello back")),
    )
    .await;
    app.phase("ready").await;
    assert_eq!(app.text("#consent").await, "", "the question is gone");

    // The *ask* tool again, answered by voice: the question is spoken (recorded off the
    // speaker and read back by whisper), and a press with "Yes, go ahead." allows the call
    // without a click and without interrupting the turn.
    let (u3, yes) = (dir.path().join("u3.wav"), dir.path().join("yes.wav"));
    espeak_wav("Say hello again.", &u3);
    espeak_wav("Yes, go ahead.", &yes);
    llm.push(hark_e2e::Behaviour::CallTool {
        name: "everything__echo".into(),
        arguments: r#"{"message": "hello again"}"#.into(),
    });
    let question = record(&dir.path().join("question.wav"));
    speak(&app, &u3).await;
    app.wait(
        "the second consent question",
        "return document.querySelector('#consent')?.innerText ?? ''",
        |v| v.as_str().is_some_and(|t| t.contains("hello again")),
    )
    .await;
    // Time for the system voice to say it (about 3 s) before the press hushes it.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let question = question.stop();
    speak(&app, &yes).await;
    app.wait(
        "the call allowed by voice",
        "return Array.from(document.querySelectorAll('#transcript li.tool')).map(l => l.innerText).join('\\n')",
        |v| v.as_str().is_some_and(|t| t.contains("Echo: hello again")),
    )
    .await;
    app.phase("ready").await;
    assert_eq!(app.text("#consent").await, "", "the spoken answer settled the dialog");
    let transcript = app.text("#transcript").await;
    assert!(transcript.contains("allowed once"), "the answer is shown: {transcript}");
    assert!(
        !transcript.contains("interrupted after"),
        "the press answered, it did not interrupt: {transcript}"
    );
    assert_read_back(&question, "Hark wants to use everything: echo. Allow?").await;
    app.close().await;

    // The record (and so the export) has both calls with their results.
    let store = hark_core::store::Store::open(&setup.db).unwrap();
    let session = store.list_sessions().unwrap().remove(0);
    let stored = store.load_session(&session.id).unwrap();
    let results: Vec<String> = stored
        .messages
        .iter()
        .filter_map(|m| match &m.kind {
            hark_core::conversation::MessageKind::ToolResult(r) => Some(format!("{} {}", r.name, r.content)),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 3, "{results:?}");
    assert!(
        results[1].starts_with("everything__echo Echo: hello back"),
        "{results:?}"
    );
    assert!(
        results[2].starts_with("everything__echo Echo: hello again"),
        "{results:?}"
    );
    let users = stored.messages.iter().filter(|m| m.kind_name() == "user").count();
    assert_eq!(users, 3, "the spoken answer is not a message to the model");
}

/// How many streams are capturing from the virtual microphone now (PulseAudio's source
/// outputs): conversation mode keeps one open, and only while it is on.
fn capturing() -> usize {
    let out = std::process::Command::new("pactl")
        .args(["list", "short", "source-outputs"])
        .output()
        .expect("pactl (scripts/test.sh installs pulseaudio-utils)");
    String::from_utf8_lossy(&out.stdout).lines().count()
}

/// Issue 23 in the real window, with the speakers next to the microphone (the virtual room):
/// the switch turns conversation mode on and the microphone opens; a question played into
/// the room is answered with no key; the reply, which the microphone hears, starts nothing;
/// a voice over a long reply interrupts it, what was heard is recorded, and the new question
/// is answered. Muted (its shortcut), a question starts nothing. Its shortcut turns
/// conversation mode off, and the microphone closes. With Hark's own voice not cancelled,
/// the window says it is half-duplex.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs scripts/test.sh (display, virtual audio, keyring, models)"]
async fn conversation_mode_in_the_window_answers_the_room_and_a_voice_interrupts_the_reply() {
    require_environment();
    let _one = ONE_APP.lock().await;
    let llm = FakeLlm::openai(None);
    let dir = tempfile::tempdir().unwrap();
    let mut s = settings(
        "Ctrl+Alt+Shift+F1",
        json!({
            "llm_provider": "openai", "llm_model": "local", "llm_base_url": llm.base_url(),
            "stt": "whisper", "whisper_model": whisper_model(), "tts": "system",
            "recall": false, "summarize": false, "log_level": "debug",
        }),
    );
    s["hands_free_shortcut"] = json!("Ctrl+Alt+Shift+F2");
    s["mute_shortcut"] = json!("Ctrl+Alt+Shift+F3");
    let setup = Setup::new(dir.path(), "hands-free", Some(s));
    let said = |name: &str, text: &str| {
        let wav = dir.path().join(name);
        espeak_wav(text, &wav);
        wav
    };
    let u1 = said("u1.wav", "My name is Sam.");
    let story = said("story.wav", "Tell me a story.");
    // As in the core's full-duplex test: no full stop or comma, where espeak pauses and
    // Smart Turn may call the half sentence finished ("Stop." became a turn of its own).
    let over = said("over.wav", "Excuse me Hark tell me what is my name?");
    let muted = said("muted.wav", "What time is it now?");
    let app = open_app(&setup).await;
    app.phase("ready").await;
    assert_eq!(app.error_banners().await, "", "no setup problem");
    let closed = capturing();

    app.click("#hands-free").await;
    app.phase("hands_free").await;
    assert_eq!(capturing(), closed + 1, "the microphone is open while hands-free is on");
    assert_eq!(app.js("return document.querySelector('#ptt').disabled").await, true);
    assert_eq!(app.js("return !!document.querySelector('#duplex-note')").await, false);
    assert_eq!(app.text("#state").await, "Listening hands-free");

    // 1. A question played into the room, no key: answered.
    tokio::time::sleep(Duration::from_millis(500)).await;
    play(&u1).await;
    first_reply_is_nice_to_meet_you(&app).await;
    app.phase("hands_free").await;

    // 2. The reply, which the microphone heard, started nothing, then or in the 2 s after.
    tokio::time::sleep(Duration::from_secs(2)).await;
    const USER_LINES: &str = "return document.querySelectorAll('#transcript li.user').length";
    assert_eq!(app.js(USER_LINES).await, 1, "Hark heard itself");
    assert_eq!(
        app.js("return document.querySelectorAll('#transcript li.interrupted').length")
            .await,
        0
    );
    assert_eq!(stored(&setup.db).len(), 2);

    // 3. A long reply, and a voice over it.
    llm.push(hark_e2e::Behaviour::Text(
        "Once upon a time there was a fox who lived in a deep green wood. Every morning it walked to the river. \
         It watched the fish and the birds for hours. Then it went home and slept until the moon came up."
            .into(),
    ));
    play(&story).await;
    app.phase("speaking").await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    play(&over).await;
    const HEARD: &str =
        "const l = document.querySelector('#transcript li.interrupted .heard'); return l ? l.textContent : null";
    let heard = app
        .wait("the interrupted reply's heard text", HEARD, |v| {
            v.as_str().is_some_and(|t| !t.trim().is_empty())
        })
        .await;
    let heard = heard.as_str().unwrap().to_string();
    assert!(heard.starts_with("Once upon a time"), "{heard}");
    let h = app
        .wait("the words over the reply, answered", HISTORY, |v| {
            let ctx = in_context(v);
            ctx.len() == 6 && !ctx[4].trim().is_empty() && !ctx[5].trim().is_empty()
        })
        .await;
    let ctx = in_context(&h);
    assert_eq!(ctx[3], heard, "the context carries what was heard (rule 9)");
    // What whisper makes of the words spoken over the reply varies: AEC3 suppresses the
    // voice it hears during double talk, and here the detector sometimes started only near
    // the end of the words (2 runs in 6 of the suite's app tests heard "I've came." for
    // them; issue 23 keeps the barge-in's words open). Heard whole, they are answered.
    if ctx[4].to_lowercase().contains("what is my name") {
        assert_eq!(ctx[5], "Your name is Sam.");
    }
    app.phase("hands_free").await;

    // Muted by its shortcut: a question starts nothing.
    key(true, "ctrl+alt+shift+F3");
    key(false, "ctrl+alt+shift+F3");
    app.wait(
        "the muted status",
        "return document.querySelector('#state').innerText",
        |v| v == "Conversation mode: muted",
    )
    .await;
    play(&muted).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(app.js(USER_LINES).await, 3, "a question was heard while muted");

    // Its shortcut turns conversation mode off: the key again, and the microphone closed.
    key(true, "ctrl+alt+shift+F2");
    key(false, "ctrl+alt+shift+F2");
    app.phase("ready").await;
    assert_eq!(
        app.js("return document.querySelector('#hands-free').checked").await,
        false
    );
    assert_eq!(capturing(), closed, "the microphone is closed when hands-free is off");

    // Hark's own voice not cancelled: half-duplex, and the window says so.
    app.open_settings().await;
    app.choose("select[name=echo_cancellation]", "Not cancelled").await;
    app.save_settings().await;
    app.phase("ready").await;
    app.click("#hands-free").await;
    app.phase("hands_free").await;
    assert_eq!(app.text("#state").await, "Listening hands-free (half-duplex)");
    assert!(app.text("#duplex-note").await.contains("Half-duplex"));
    app.close().await;

    // The record: three turns, the interrupted reply with what was heard.
    let store = hark_core::store::Store::open(&setup.db).unwrap();
    let session = store.list_sessions().unwrap().remove(0);
    let stored = store.load_session(&session.id).unwrap();
    let users = stored
        .messages
        .iter()
        .filter(|m| matches!(m.kind, hark_core::conversation::MessageKind::User { .. }))
        .count();
    assert_eq!(users, 3, "{:?}", stored.messages);
    let interrupted = stored.messages.iter().any(|m| match &m.kind {
        hark_core::conversation::MessageKind::Assistant(a) => {
            a.interrupted && a.heard.as_deref() == Some(heard.as_str())
        }
        _ => false,
    });
    assert!(interrupted, "the record keeps the heard text: {:?}", stored.messages);
}
