//! A full voice session on real audio devices: a private PulseAudio with a virtual speaker
//! and a virtual microphone (scripts/virtual-audio.sh, started by scripts/test.sh).
//!
//! espeak-ng speech is played into the virtual microphone while the push-to-talk key is
//! down; cpal captures it, whisper.cpp transcribes it, a loopback OpenAI-compatible server
//! answers, the OS voice speaks the reply through rodio to the virtual speaker, where the
//! test records it back and has whisper read it. Then the user barges in on a long reply.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use hark_core::audio::input::Microphone;
use hark_core::audio::playback::Speaker;
use hark_core::audio::resample::rms;
use hark_core::audio::wav::read_16k_mono;
use hark_core::conversation::{HistorySettings, MessageKind};
use hark_core::provider::{ProviderConfig, ProviderKind};
use hark_core::session::ptt::{Key, PttMode};
use hark_core::session::voice::{self, ActorOptions, Voice, VoiceEvent};
use hark_core::session::ChatSession;
use hark_core::store::Store;
use hark_core::stt::whisper::WhisperStt;
use hark_core::stt::Transcriber;
use hark_core::tts::system::SystemVoice;
use hark_e2e::recording::record;
use hark_e2e::{espeak_wav, whisper_model, Behaviour, FakeLlm};
use tokio::sync::mpsc::UnboundedReceiver;

/// The tests here run one at a time. The spoken conversation plays and records in real
/// time; whisper on both cores in a test beside it (the stop test's 25 s clip, the unload
/// test's transcriptions) starved its playback into ALSA underruns that garbled the reply
/// whisper reads back ("your name is time" in a clean-clone run, with underruns logged).
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn require_audio() {
    assert!(
        std::env::var_os("PULSE_SERVER").is_some(),
        "no PulseAudio: run the tests through scripts/test.sh (virtual speaker and microphone)"
    );
}

async fn wait_for(
    rx: &mut UnboundedReceiver<VoiceEvent>,
    what: &str,
    pred: impl Fn(&VoiceEvent) -> bool,
) -> VoiceEvent {
    hark_e2e::wait_for_event(rx, &mut Vec::new(), what, pred).await
}

/// Plays a WAV into the virtual speaker (and so into the virtual microphone).
fn play(path: &Path) {
    let ok = Command::new("paplay").arg("--device=spk").arg(path).status().unwrap();
    assert!(ok.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs virtual audio devices and the whisper model (scripts/test.sh)"]
async fn a_spoken_conversation_on_virtual_audio_devices_with_barge_in() {
    let _one = ONE_AT_A_TIME.lock().await;
    require_audio();
    let model = whisper_model();
    let dir = tempfile::tempdir().unwrap();
    let llm = FakeLlm::openai(None);
    let mut c = ProviderConfig::new(ProviderKind::OpenAi);
    c.base_url = llm.base_url();
    c.model = "local".into();
    let store = Arc::new(Store::open(dir.path().join("hark.db")).unwrap());
    let chat = ChatSession::create(store, c.build().unwrap(), "Be brief.", HistorySettings::default()).unwrap();
    let whisper: Arc<WhisperStt> = Arc::new(WhisperStt::load(&model).unwrap());
    let voice = Voice {
        stt: whisper.clone(),
        tts: Arc::new(SystemVoice::default()),
        out: Arc::new(Speaker::open(None).expect("the virtual speaker")),
    };
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let session = voice::spawn(
        chat,
        voice,
        ActorOptions {
            mode: PttMode::Hold,
            input_device: None,
            input: Arc::new(Microphone),
            cues: false,
            pipeline: Default::default(),
            questions: None,
        },
        tx,
    );
    let cmd = session.handle().clone();

    let u1 = dir.path().join("u1.wav");
    let u2 = dir.path().join("u2.wav");
    espeak_wav("My name is Sam.", &u1);
    espeak_wav("Tell me, what is my name?", &u2);

    // Turn 1: hold the key, speak, release.
    cmd.key(Key::Press).unwrap();
    wait_for(&mut rx, "listening", |e| {
        matches!(e, VoiceEvent::ListeningStarted { .. })
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    tokio::task::spawn_blocking({
        let u1 = u1.clone();
        move || play(&u1)
    })
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    cmd.key(Key::Release).unwrap();
    let VoiceEvent::TranscriptFinal { text } = wait_for(&mut rx, "transcript 1", |e| {
        matches!(e, VoiceEvent::TranscriptFinal { .. })
    })
    .await
    else {
        unreachable!()
    };
    let lower = text.to_lowercase();
    assert!(lower.contains("my name is sam"), "captured and transcribed: {text}");
    let VoiceEvent::TurnFinished { reply, .. } =
        wait_for(&mut rx, "reply 1", |e| matches!(e, VoiceEvent::TurnFinished { .. })).await
    else {
        unreachable!()
    };
    assert_eq!(reply, "Nice to meet you, Sam!");
    wait_for(&mut rx, "idle", |e| *e == VoiceEvent::Idle).await;

    // Turn 2: the reply is recorded back from the virtual speaker.
    cmd.key(Key::Press).unwrap();
    wait_for(&mut rx, "listening", |e| {
        matches!(e, VoiceEvent::ListeningStarted { .. })
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    tokio::task::spawn_blocking({
        let u2 = u2.clone();
        move || play(&u2)
    })
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    // The recorder starts before the release: the reply may reach the speaker within
    // moments of the transcript (a clean-clone run heard only "…name is Sam" when the
    // recorder started after it).
    let rec_path = dir.path().join("reply.wav");
    let rec = record(&rec_path);
    cmd.key(Key::Release).unwrap();
    wait_for(&mut rx, "transcript 2", |e| {
        matches!(e, VoiceEvent::TranscriptFinal { .. })
    })
    .await;
    let VoiceEvent::TurnFinished { reply, metrics, .. } =
        wait_for(&mut rx, "reply 2", |e| matches!(e, VoiceEvent::TurnFinished { .. })).await
    else {
        unreachable!()
    };
    tokio::time::sleep(Duration::from_millis(400)).await;
    let recorded = rec.stop();
    assert_eq!(reply, "Your name is Sam.");
    assert!(
        metrics.first_audio_out_ms.is_some() && metrics.transcript_ms.is_some(),
        "{metrics:?}"
    );
    assert!(
        rms(&recorded) > 0.01,
        "the reply reached the speaker (rms {})",
        rms(&recorded)
    );
    let heard_back = whisper.transcribe(&recorded).await.unwrap().to_lowercase();
    // The reply's words are checked above; this checks that they came out of the
    // speaker intelligibly. Whisper tiny.en hears espeak's "Sam" as "Tom" now and then
    // (CI, 2026-12-03), so the name itself is not asked of it.
    assert!(
        heard_back.contains("your name is"),
        "whisper heard the speaker say: {heard_back:?}"
    );
    wait_for(&mut rx, "idle", |e| *e == VoiceEvent::Idle).await;

    // Turn 3: a long reply, interrupted by pressing the key while Hark speaks.
    llm.push(Behaviour::Text(
        "Once upon a time there was a fox who lived in a deep green wood. Every morning it walked to the river. \
         It watched the fish and the birds. Then it went home to sleep."
            .into(),
    ));
    cmd.key(Key::Press).unwrap();
    wait_for(&mut rx, "listening", |e| {
        matches!(e, VoiceEvent::ListeningStarted { .. })
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    tokio::task::spawn_blocking(move || play(&u1)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    cmd.key(Key::Release).unwrap();
    wait_for(&mut rx, "speaking", |e| *e == VoiceEvent::SpeakingStarted).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    cmd.key(Key::Press).unwrap(); // barge-in
    let VoiceEvent::ReplyInterrupted {
        heard,
        generated,
        heard_ms,
    } = wait_for(&mut rx, "interruption", |e| {
        matches!(e, VoiceEvent::ReplyInterrupted { .. })
    })
    .await
    else {
        unreachable!()
    };
    assert!(
        !heard.is_empty() && heard.len() < generated.len(),
        "heard {heard:?} of {generated:?}"
    );
    assert!(generated.starts_with("Once upon a time") && generated.starts_with(&heard));
    // Played audio counts as heard; how much depends on how the 2 cores scheduled the
    // playback, so the figure is not held to a range (issue 21): the text above is the
    // behaviour.
    assert!(heard_ms > 0, "{heard_ms} ms heard");
    cmd.key(Key::Release).unwrap(); // a silent utterance: no turn
    wait_for(&mut rx, "no turn", |e| matches!(e, VoiceEvent::NoTurn { .. })).await;

    let chat = session.shutdown().await.unwrap();
    let record = chat.conversation().record();
    let MessageKind::Assistant(a) = &record[5].kind else {
        panic!("{:?}", record[5])
    };
    assert!(a.interrupted && a.heard.as_deref() == Some(heard.as_str()));
    assert_eq!(
        chat.conversation().prompt().unwrap().messages.len(),
        6,
        "the next request is valid"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the whisper model (scripts/test.sh)"]
async fn whisper_unloads_after_its_idle_time_reloads_on_use_and_can_stay_loaded() {
    let _one = ONE_AT_A_TIME.lock().await;
    let model = whisper_model();
    let dir = tempfile::tempdir().unwrap();
    let wav = dir.path().join("u.wav");
    espeak_wav("My name is Sam.", &wav);
    let audio = read_16k_mono(&wav).unwrap();
    let whisper = WhisperStt::load(&model).unwrap();
    assert!(!whisper.is_loaded(), "the weights load on first use, not when checked");
    whisper.set_unload_after(Some(Duration::from_millis(800)));
    assert!(whisper.transcribe(&audio).await.unwrap().contains("Sam"));
    assert!(whisper.is_loaded());
    // Unloaded once its 800 ms pass: waited for, with a deadline (20 s, 25× the idle
    // time) that only catches an unloader that never runs, not a slow one (issue 21).
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while whisper.is_loaded() {
        assert!(
            std::time::Instant::now() < deadline,
            "still loaded 20 s after an 800 ms idle time"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Used again, it loads again and the idle timer starts over.
    assert!(whisper.transcribe(&audio).await.unwrap().contains("Sam"));
    assert!(whisper.is_loaded());
    // Kept while the app runs: the unloader waits for the next use, not a deadline.
    whisper.set_unload_after(None);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(whisper.is_loaded(), "kept loaded");
}

/// Issue 12: a speculative transcription no longer wanted (a pause made a partial one
/// stale) stops inside whisper.cpp when its token is cancelled, instead of running on;
/// the model is fine afterwards and a token left alone changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the whisper model (scripts/test.sh)"]
async fn a_whisper_transcription_that_is_stopped_gives_up_midway() {
    let _one = ONE_AT_A_TIME.lock().await;
    let model = whisper_model();
    let dir = tempfile::tempdir().unwrap();
    let wav = dir.path().join("u.wav");
    espeak_wav("My name is Sam.", &wav);
    let audio = read_16k_mono(&wav).unwrap();
    // About 25 s of speech: over a second of whisper on this machine, so a stop 50 ms in
    // lands midway.
    let long: Vec<f32> = std::iter::repeat_n(audio.as_slice(), 20).flatten().copied().collect();
    let whisper = WhisperStt::load(&model).unwrap();
    whisper.set_unload_after(None);
    let kept = tokio_util::sync::CancellationToken::new();
    assert!(whisper.transcribe_until(&audio, &kept).await.unwrap().contains("Sam"));

    let stop = tokio_util::sync::CancellationToken::new();
    let stopper = stop.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        stopper.cancel();
    });
    let stopped = whisper.transcribe_until(&long, &stop).await;
    assert!(stopped.is_err(), "it ran to the end: {stopped:?}");
    assert!(
        whisper.transcribe(&audio).await.unwrap().contains("Sam"),
        "usable after a stop"
    );
}

/// The default microphone is captured through PulseAudio's own protocol where a server
/// answers (over PulseAudio's ALSA plugin a 20 ms period cost most of a core:
/// `audio::host`), and when the server drops that connection (a restarted server does),
/// the next opening connects again instead of falling back to ALSA for good.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs virtual audio devices (scripts/test.sh)"]
async fn the_default_microphone_goes_through_pulseaudio_and_connects_again_after_the_server_drops_it() {
    use hark_core::audio::input::AudioInput;
    let _one = ONE_AT_A_TIME.lock().await;
    require_audio();
    // The virtual microphone by its PulseAudio description; through ALSA it is "default".
    let pulse_name = "Virtual Source mic on Monitor of VirtualSpeaker";
    let hears = |what: &'static str| async move {
        let mut mic = Microphone.open(None).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(mic.device(), pulse_name, "{what}: not captured through PulseAudio");
        let chunk = tokio::time::timeout(Duration::from_secs(10), mic.next_chunk()).await;
        assert!(
            matches!(chunk, Ok(Some(ref c)) if !c.is_empty()),
            "{what}: no audio came: {chunk:?}"
        );
        mic.stop().unwrap_or_else(|e| panic!("{what}: {e}"));
    };
    hears("the first opening").await;
    let client = our_record_client().expect("this process's connection to the server");
    pulse_cli(&format!("kill-client {client}"));
    hears("the opening after the server dropped the connection").await;
    assert!(
        our_record_client().is_some_and(|c| c != client),
        "the microphone connected again"
    );
}

/// What `pactl list KIND` says (clients, sink-inputs, …), as JSON objects.
fn pactl_list(kind: &str) -> Vec<serde_json::Value> {
    let out = Command::new("pactl")
        .args(["-f", "json", "list", kind])
        .output()
        .unwrap();
    assert!(out.status.success(), "pactl: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The PulseAudio client of this process's own connection (cpal names it after the pid).
fn our_record_client() -> Option<String> {
    let name = format!("cpal-pulseaudio-{}", std::process::id());
    pactl_list("clients").iter().find_map(|c| {
        (c["properties"]["application.name"].as_str() == Some(name.as_str()))
            .then(|| c["index"].as_u64().map(|i| i.to_string()))
            .flatten()
    })
}

/// The PulseAudio client (connection) of this process's playback stream.
fn our_playback_client() -> Option<String> {
    let pid = std::process::id().to_string();
    pactl_list("sink-inputs").iter().find_map(|i| {
        (i["properties"]["application.process.id"].as_str() == Some(pid.as_str()))
            .then(|| i["client"].as_str().map(str::to_string))
            .flatten()
    })
}

/// Runs one command of PulseAudio's command-line interface (`pactl` has no `kill-client`):
/// loads the CLI module on a socket of its own, says the command there, unloads it.
fn pulse_cli(command: &str) {
    use std::io::{Read, Write};
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("cli");
    let load = Command::new("pactl")
        .args(["load-module", "module-cli-protocol-unix"])
        .arg(format!("socket={}", socket.display()))
        .output()
        .unwrap();
    assert!(load.status.success(), "{}", String::from_utf8_lossy(&load.stderr));
    let module = String::from_utf8(load.stdout).unwrap().trim().to_string();
    let mut cli = std::os::unix::net::UnixStream::connect(&socket).unwrap();
    // End of input closes the connection (the CLI's `exit` would end the server).
    cli.write_all(format!("{command}\n").as_bytes()).unwrap();
    cli.shutdown(std::net::Shutdown::Write).unwrap();
    let mut said = String::new();
    cli.read_to_string(&mut said).unwrap();
    assert!(
        !said.contains("No client found") && !said.contains("Unknown command"),
        "{said}"
    );
    let unload = Command::new("pactl").args(["unload-module", &module]).status().unwrap();
    assert!(unload.success());
}

/// Plays one second of a tone as a reply and waits (20 s at most) until the device has
/// taken all of it; returns whether it did.
async fn a_reply_plays_out(out: &Speaker) -> bool {
    use hark_core::audio::playback::AudioOut;
    out.start_reply();
    let s = out.begin_sentence("A tone.");
    let tone: Vec<f32> = (0..24_000)
        .map(|i| (i as f32 * 440.0 * std::f32::consts::TAU / 24_000.0).sin() * 0.2)
        .collect();
    out.push(s, tone, 24_000);
    out.end_sentence(s);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while tokio::time::Instant::now() < deadline {
        if out.heard().complete && out.is_idle() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

/// In a CI run the sound server dropped the playback stream's connection mid-test; every
/// later poll of the stream failed ("snd_pcm_avail_delay … I/O error"), so every reply
/// after it stalled until the app was restarted. Here the server drops it on purpose
/// (`pactl kill-client`): the speaker opens the device again and the next reply plays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs virtual audio devices (scripts/test.sh)"]
async fn a_speaker_whose_connection_the_sound_server_drops_opens_again_and_plays_on() {
    let _one = ONE_AT_A_TIME.lock().await;
    require_audio();
    let out = Speaker::open(None).expect("the virtual speaker");
    assert!(a_reply_plays_out(&out).await, "the first reply did not play");
    let client = our_playback_client().expect("this process's playback stream on the server");
    pulse_cli(&format!("kill-client {client}"));
    assert!(
        a_reply_plays_out(&out).await,
        "the reply after the server dropped the stream did not play"
    );
    assert!(
        our_playback_client().is_some_and(|c| c != client),
        "the speaker plays through a new connection"
    );
}
