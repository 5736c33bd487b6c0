//! Hark as an app people keep running (issue 11): the window closes to the tray, the
//! shortcut and `hark-app --toggle` keep working while it is hidden, a second launch brings
//! it back, one process throughout; the start and stop cues reach the speaker; the log
//! exists and holds no key; a corrupt database gets a window that says what to do; themes;
//! keyboard-only push-to-talk; an accessibility audit.

mod common;

use std::time::Duration;

use common::*;
use hark_e2e::recording::record;
use hark_e2e::{espeak_wav, whisper_model, FakeLlm};
use serde_json::json;

const KEY: &str = "sk-proj-resident-test-7a3f9d1c5e";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs scripts/test.sh (display, virtual audio, keyring, models)"]
async fn hark_lives_in_the_tray_and_answers_while_hidden() {
    require_environment();
    let _one = ONE_APP.lock().await;
    let model = whisper_model();
    let llm = FakeLlm::openai(None);
    let dir = tempfile::tempdir().unwrap();
    let setup = Setup::new(
        dir.path(),
        "resident",
        Some(settings(
            "Ctrl+Alt+Shift+F11",
            json!({
                "llm_provider": "openai", "llm_model": "local", "llm_base_url": llm.base_url(),
                "stt": "whisper", "whisper_model": model, "ptt_mode": "hold", "sound_cues": true, "recall": false,
                "tts": "system", "start_hidden": true,
            }),
        )),
    );
    // A key in the keychain (for the official endpoint): it must reach no file.
    hark_core::secrets::Keychain::with_service(&setup.service)
        .set(&hark_core::secrets::KeySlot::official("openai"), KEY)
        .unwrap();
    let (u1, u2) = (dir.path().join("u1.wav"), dir.path().join("u2.wav"));
    espeak_wav("My name is Sam.", &u1);
    espeak_wav("Tell me, what is my name?", &u2);
    // Hark starts in the tray (the setting): the window never shows. Closing a shown
    // window is `the_close_button_hides_the_window_and_hark_keeps_running`.
    let app = open_app(&setup).await;
    app.phase("ready").await;
    assert_eq!(app_processes(), 1);
    assert!(visible_windows("Hark").is_empty(), "started hidden, in the tray");

    // Hidden, the global shortcut (held) runs a spoken turn that is answered.
    key(true, "ctrl+alt+shift+F11");
    tokio::time::sleep(Duration::from_millis(600)).await;
    play(&u1).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    key(false, "ctrl+alt+shift+F11");
    let m = wait_stored(&setup.db, 2).await;
    assert!(m[0].1.to_lowercase().contains("my name is sam"), "{m:?}");
    assert_eq!(m[1], ("assistant".into(), "Nice to meet you, Sam!".into()));

    // Hidden, `hark-app --toggle` from a second process starts and stops listening; the
    // start and stop cues are heard on the speaker.
    tokio::time::sleep(Duration::from_millis(1500)).await; // the reply has been spoken
    let cues = record(&dir.path().join("cues.wav"));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (status, took) = second_launch(&setup, &["--toggle"]);
    assert!(status.success(), "--toggle exits 0");
    // "At once" as a hang check: it hands over and exits in ~0.3 s; 10 s is over 10× that.
    assert!(took < Duration::from_secs(10), "--toggle returns at once ({took:?})");
    tokio::time::sleep(Duration::from_millis(700)).await;
    play(&u2).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(second_launch(&setup, &["--toggle"]).0.success());
    // The stop cue plays as listening stops, before the turn is stored: the recording ends
    // once the user's words are in the record (a fixed 400 ms caught only part of the cue
    // once, on a busy clean-clone run: stop 0.39).
    wait_stored(&setup.db, 3).await;
    let recorded = cues.stop();
    let m = wait_stored(&setup.db, 4).await;
    assert_eq!(m[3], ("assistant".into(), "Your name is Sam.".into()), "{m:?}");
    let (start, stop) = (
        tone_share(&recorded, hark_core::audio::cue::START_HZ),
        tone_share(&recorded, hark_core::audio::cue::STOP_HZ),
    );
    assert!(
        start > 0.5 && stop > 0.5,
        "the cues are heard (start {start:.2}, stop {stop:.2})"
    );
    assert_eq!(app_processes(), 1, "--toggle used the running Hark");
    assert!(visible_windows("Hark").is_empty(), "--toggle does not show the window");

    // A plain second launch exits 0 and brings the window back.
    let (status, _) = second_launch(&setup, &[]);
    assert!(status.success());
    // The window shows within ~0.2 s of the hand-over; 10 s only catches a hang.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while visible_windows("Hark").is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "a second launch did not show the window"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(app_processes(), 1, "one Hark throughout");
    // The window shows the turns taken while it was hidden.
    app.wait("the turns in the panel", HISTORY, |v| in_context(v).len() == 4)
        .await;

    // A shortcut another program holds is refused with the reason, and the previous one
    // stays Hark's: recorded in Settings as a person would press it.
    let other = XGrab::take("F10");
    assert!(XGrab::try_take("F11").is_none(), "Hark holds its shortcut");
    app.js("document.querySelector('#open-settings').click();").await;
    app.wait(
        "the settings",
        "return !!document.querySelector('#record-shortcut')",
        |v| v == true,
    )
    .await;
    app.js(
        "const b = document.querySelector('#record-shortcut'); b.click(); b.focus(); \
         b.dispatchEvent(new KeyboardEvent('keydown', {key: 'F10', code: 'F10', ctrlKey: true, altKey: true, shiftKey: true, bubbles: true}));",
    )
    .await;
    let banner = app
        .wait(
            "the refusal",
            "return document.querySelector('#banners')?.innerText ?? ''",
            |v| v.as_str().is_some_and(|t| t.contains("cannot be used")),
        )
        .await;
    let banner = banner.as_str().unwrap();
    assert!(banner.contains("Ctrl+Alt+Shift+F10"), "{banner}");
    assert!(banner.contains("Ctrl+Alt+Shift+F11 stays the shortcut"), "{banner}");
    let label = app
        .js("return document.querySelector('#shortcut-label').innerText")
        .await;
    assert_eq!(label, "Ctrl+Alt+Shift+F11");
    assert!(
        XGrab::try_take("F11").is_none(),
        "the previous shortcut is still Hark's"
    );
    drop(other);
    app.close().await;

    // The log is where Settings says, and no file under HOME (or the test's files) holds
    // the key.
    let logs: Vec<_> = std::fs::read_dir(&setup.logs).unwrap().flatten().collect();
    assert!(
        logs.iter()
            .any(|e| e.file_name().to_string_lossy().starts_with("hark.log")),
        "a log file in {}",
        setup.logs.display()
    );
    let mut found = Vec::new();
    files_containing(dir.path(), KEY.as_bytes(), &mut found);
    files_containing(
        std::path::Path::new(&std::env::var_os("HOME").unwrap()),
        KEY.as_bytes(),
        &mut found,
    );
    // The keyring's own file is encrypted; it never has the key in the clear.
    assert!(found.is_empty(), "the key is in {found:?}");
}

/// The window's close button, as a window manager sends it (one `WM_DELETE_WINDOW`), soon
/// after start: the window hides and Hark keeps running; a second launch brings it back,
/// and closing it again hides it again, Hark started as a person starts it. Issue 21: on a
/// loaded machine the request the harness sent was sometimes never delivered (see
/// `request_close`); this failed 5 runs of 5 under `stress -c 2` before that fix.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs scripts/test.sh (display, virtual audio, keyring, models)"]
async fn the_close_button_hides_the_window_and_hark_keeps_running() {
    require_environment();
    let _one = ONE_APP.lock().await;
    let llm = FakeLlm::openai(None);
    let dir = tempfile::tempdir().unwrap();
    let setup = Setup::new(
        dir.path(),
        "close",
        Some(settings(
            "Ctrl+Alt+Shift+F7",
            json!({"llm_provider": "openai", "llm_model": "local", "llm_base_url": llm.base_url(), "tts": "system"}),
        )),
    );
    let _app = Launched::start(&setup);
    // The window shows within a few seconds of the start; 60 s only catches a hang.
    wait_visible("Hark", true, Duration::from_secs(60), "the window never showed").await;
    for round in ["soon after start", "after a second launch showed it"] {
        // As the user did: one click on the close button, 2 s after it showed.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let shown = visible_windows("Hark");
        assert_eq!(shown.len(), 1, "one window shows ({round})");
        request_close(shown[0]);
        // It hides in milliseconds; 10 s only catches a request that did nothing.
        let until = std::time::Instant::now() + Duration::from_secs(10);
        while !visible_windows("Hark").is_empty() {
            assert!(
                std::time::Instant::now() < until,
                "one close request {round} did not hide the window; the app's log ends:\n{}",
                log_tail(&setup, 30)
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(
            app_processes(),
            1,
            "closing the window does not end Hark ({round}): {}; log:\n{}",
            String::from_utf8_lossy(
                &std::process::Command::new("ps")
                    .args(["-o", "pid,ppid,stat,etime,args", "-C", "hark-app"])
                    .output()
                    .unwrap()
                    .stdout
            ),
            log_tail(&setup, 30)
        );
        let (status, _) = second_launch(&setup, &[]);
        assert!(status.success(), "a second launch exits 0");
        // The window shows within ~0.2 s of the hand-over; 10 s only catches a hang.
        wait_visible(
            "Hark",
            true,
            Duration::from_secs(10),
            "a second launch did not show the window",
        )
        .await;
        assert_eq!(app_processes(), 1, "one Hark throughout");
    }
    assert!(
        log_tail(&setup, 50).matches("window closed: hidden").count() == 2,
        "each close request was handled as a hide:\n{}",
        log_tail(&setup, 50)
    );
}

/// A corrupt database at start: a window that names the file and offers the way on,
/// instead of an exit nobody sees; starting fresh keeps the old file, renamed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs scripts/test.sh (display, virtual audio, keyring, models)"]
async fn a_corrupt_database_at_start_shows_what_and_where() {
    require_environment();
    let _one = ONE_APP.lock().await;
    let llm = FakeLlm::openai(None);
    let dir = tempfile::tempdir().unwrap();
    let setup = Setup::new(
        dir.path(),
        "corrupt",
        Some(settings(
            "Ctrl+Alt+Shift+F12",
            json!({"llm_provider": "openai", "llm_model": "local", "llm_base_url": llm.base_url()}),
        )),
    );
    std::fs::write(&setup.db, b"this is not a database, it is a shopping list: eggs, milk").unwrap();
    let app = open_app(&setup).await;
    app.wait(
        "the fatal window",
        "return document.querySelector('#fatal') !== null",
        |v| v == true,
    )
    .await;
    let path = app.text("#fatal-path").await;
    assert_eq!(path, setup.db.display().to_string());
    let words = app.text("#fatal").await;
    assert!(
        words.contains("cannot be opened") && words.contains("Start fresh"),
        "{words}"
    );
    app.screenshot("fatal.png").await;
    app.click("#fatal-start-fresh").await;
    app.phase("ready").await;
    let kept: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("corrupt.db.broken-"))
        .collect();
    assert_eq!(kept.len(), 1, "the old file is kept, renamed");
    assert!(std::fs::read(kept[0].path())
        .unwrap()
        .starts_with(b"this is not a database"));
    app.close().await;
}

/// Light and dark themes, keyboard-only hold-to-talk, and axe-core's audit of the main
/// window, Settings and Memory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs scripts/test.sh (display, virtual audio, keyring, models)"]
async fn themes_keyboard_and_accessibility() {
    require_environment();
    let _one = ONE_APP.lock().await;
    let model = whisper_model();
    let llm = FakeLlm::openai(None);
    let dir = tempfile::tempdir().unwrap();
    let setup = Setup::new(
        dir.path(),
        "look",
        Some(settings(
            "Ctrl+Alt+Shift+F8",
            json!({
                "llm_provider": "openai", "llm_model": "local", "llm_base_url": llm.base_url(),
                "stt": "whisper", "whisper_model": model, "ptt_mode": "hold", "theme": "light",
            }),
        )),
    );
    let u1 = dir.path().join("u1.wav");
    espeak_wav("My name is Sam.", &u1);
    let app = open_app(&setup).await;
    app.phase("ready").await;

    // Keyboard only: Tab to the talk button, hold Space while speaking, let go.
    std::process::Command::new("xdotool")
        .args(["search", "--name", "^Hark$", "windowactivate", "--sync"])
        .status()
        .unwrap();
    let mut reached = false;
    for _ in 0..40 {
        std::process::Command::new("xdotool")
            .args(["key", "Tab"])
            .status()
            .unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        if app.js("return document.activeElement?.id ?? null").await == "ptt" {
            reached = true;
            break;
        }
    }
    assert!(reached, "the talk button is reachable with Tab");
    let focus = app
        .js("return getComputedStyle(document.activeElement).outlineStyle")
        .await;
    assert_ne!(focus, "none", "the keyboard focus is visible");
    key(true, "space");
    app.phase("listening").await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    play(&u1).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    key(false, "space");
    app.wait("the reply", HISTORY, |v| in_context(v).len() == 2).await;
    app.phase("ready").await;
    assert_eq!(
        app.js("return document.documentElement.dataset.theme ?? null").await,
        "light"
    );
    app.screenshot("main.png").await;

    // The audit: no serious or critical findings, in the main window, Settings, Memory.
    let main = axe_serious(&app).await;
    assert!(main.is_empty(), "main window: {main:?}");
    app.open_settings().await;
    let settings_found = axe_serious(&app).await;
    assert!(settings_found.is_empty(), "Settings: {settings_found:?}");
    // Dark theme, from Settings.
    app.choose("select[name=theme]", "Dark").await;
    app.save_settings().await;
    assert_eq!(
        app.js("return document.documentElement.dataset.theme ?? null").await,
        "dark"
    );
    let bg = app
        .js("return getComputedStyle(document.documentElement).backgroundColor")
        .await;
    app.phase("ready").await;
    app.screenshot("main-dark.png").await;
    assert!(bg.as_str().unwrap().contains("15, 23, 42"), "the dark background: {bg}");
    app.click("#open-memory").await;
    app.wait(
        "the memory view",
        "return document.querySelector('#memory')?.open === true",
        |v| v == true,
    )
    .await;
    let memory = axe_serious(&app).await;
    assert!(memory.is_empty(), "Memory: {memory:?}");
    app.click("#memory-close").await;
    let dark_main = axe_serious(&app).await;
    assert!(dark_main.is_empty(), "main window, dark: {dark_main:?}");
    app.close().await;
}

/// The cue detector the test above relies on: a 90 ms cue (resampled to 16 kHz as the
/// recording is) measures near 1 wherever it falls, the other cue's pitch and speech-like
/// noise near 0.
#[test]
fn a_cue_is_found_wherever_it_falls_in_the_recording() {
    use hark_core::audio::cue;
    let at_16k = |samples: Vec<f32>| -> Vec<f32> {
        let mut r = hark_core::audio::resample::ToMono16k::new(cue::RATE, 1).unwrap();
        let mut out = Vec::new();
        r.push(&samples, &mut out);
        r.finish(&mut out);
        out
    };
    for offset_ms in [0, 13, 27, 41, 55, 69, 83, 97] {
        let mut rec = vec![0.0; 16 * offset_ms];
        rec.extend(at_16k(cue::start()));
        rec.extend(vec![0.0; 4000]);
        let start = tone_share(&rec, cue::START_HZ);
        assert!(start > 0.8, "start cue at {offset_ms} ms: {start:.2}");
        assert!(tone_share(&rec, cue::STOP_HZ) < 0.2, "not the stop cue");
    }
    let mut seed = 7u32;
    let noise: Vec<f32> = (0..16_000)
        .map(|_| {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (seed >> 8) as f32 / (1u32 << 24) as f32 * 0.2 - 0.1
        })
        .collect();
    assert!(tone_share(&noise, cue::START_HZ) < 0.2);
}
