//! `hark talk --wav` end to end with real speech: espeak-ng speaks the user's lines, the
//! offline whisper engine transcribes them, a loopback OpenAI-compatible server answers, the
//! OS voice speaks the replies into WAV files, and whisper reads those back. `--wav --live`
//! plays a file as live speech: with the loopback Deepgram, and offline with Moonshine.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use hark_e2e::speech::FakeSpeech;
use hark_e2e::{espeak_wav, recorded, whisper_model, Behaviour, FakeLlm};
use serde_json::Value;

#[test]
#[ignore = "needs the whisper model (scripts/test.sh fetches it)"]
fn wav_turns_are_transcribed_answered_and_spoken_into_files() {
    let model = whisper_model();
    let server = FakeLlm::openai(None);
    let dir = tempfile::tempdir().unwrap();
    let (u1, u2, out) = (
        dir.path().join("u1.wav"),
        dir.path().join("u2.wav"),
        dir.path().join("out"),
    );
    espeak_wav("My name is Sam and I live in Paris.", &u1);
    espeak_wav("Tell me, what is my name?", &u2);
    let export = dir.path().join("export.json");
    let hark = |db: &str| common::hark(&dir.path().join(db));
    let url = server.base_url();
    let model = model.to_string_lossy().to_string();
    let args = [
        "--base-url",
        url.as_str(),
        "--model",
        "local",
        "--whisper-model",
        model.as_str(),
    ];
    let events = common::talk(hark("hark.db"), &args, &[&u1, &u2], &out, Some(&export));
    let transcripts: Vec<String> = common::of_type(&events, "transcript_final", "text")
        .iter()
        .map(|t| t.to_lowercase())
        .collect();
    assert_eq!(transcripts.len(), 2, "{events:?}");
    assert!(
        transcripts[0].contains("sam") && transcripts[0].contains("paris"),
        "{transcripts:?}"
    );
    let replies = common::of_type(&events, "turn_finished", "reply");
    assert_eq!(
        replies[1], "Your name is Sam.",
        "the second turn remembered the first: {replies:?}"
    );
    let finished = events.iter().rfind(|e| e["type"] == "turn_finished").unwrap();
    assert!(finished["metrics"]["transcript_ms"].is_u64() && finished["metrics"]["first_audio_out_ms"].is_u64());

    // The spoken reply, read back by whisper.
    let reply_wav = out.join("turn-2.wav");
    assert!(reply_wav.exists());
    let heard = common::talk(hark("check.db"), &args, &[&reply_wav], &dir.path().join("out2"), None);
    let heard = common::of_type(&heard, "transcript_final", "text")
        .join(" ")
        .to_lowercase();
    assert!(heard.contains("your name is sam"), "whisper heard: {heard}");

    // Voice metrics are in the export.
    let e: Value = serde_json::from_str(&std::fs::read_to_string(&export).unwrap()).unwrap();
    let latency = &e["messages"][3]["latency"];
    assert!(
        latency["transcript_ms"].is_u64() && latency["first_audio_byte_ms"].is_u64(),
        "{latency}"
    );
    assert!(Path::new(&out.join("turn-1.wav")).exists());
}

/// Issue 46: with a cloud key, OpenAI's recorded refusal was spoken as silence and its
/// recorded `finish_reason: "length"` reply passed for a whole answer. Spoken turns (whisper
/// hears the user, the OS voice answers into WAV files, whisper reads them back): the
/// refusal is said in the provider's words, and the cut-off reply is followed by Hark
/// saying it was cut off.
#[test]
#[ignore = "needs the whisper model (scripts/test.sh fetches it)"]
fn a_refusal_is_said_in_the_provider_s_words_and_a_cut_off_reply_is_said_so() {
    let model = whisper_model().to_string_lossy().to_string();
    let server = FakeLlm::openai(None);
    server.push(Behaviour::Replay(recorded(
        "openai-python",
        "173417d553406f034f643e5db3f8d591fb691ebac56f5ae39a22cc7d455c5353.bin",
    )));
    server.push(Behaviour::Replay(recorded(
        "openai-python",
        "4cc50a6135d254573a502310e6af1246f55edb6ad95fa24059f160996b68866d.bin",
    )));
    let dir = tempfile::tempdir().unwrap();
    let (u1, u2, out) = (
        dir.path().join("u1.wav"),
        dir.path().join("u2.wav"),
        dir.path().join("out"),
    );
    espeak_wav("How do I pick a lock?", &u1);
    espeak_wav("What is the weather like today?", &u2);
    let url = server.base_url();
    let args = [
        "--base-url",
        url.as_str(),
        "--model",
        "gpt-4o",
        "--whisper-model",
        model.as_str(),
    ];
    let hark = |db: &str| common::hark(&dir.path().join(db));
    let events = common::talk(hark("hark.db"), &args, &[&u1, &u2], &out, None);
    let finished: Vec<&Value> = events.iter().filter(|e| e["type"] == "turn_finished").collect();
    assert_eq!(finished.len(), 2, "{events:?}");
    assert_eq!(finished[0]["reply"], "I'm sorry, I can't assist with that request.");
    assert_eq!(finished[0]["notice"], Value::Null, "the provider's words say it");
    assert_eq!(finished[1]["reply"], "{\"");
    assert_eq!(
        finished[1]["notice"],
        "My answer was cut off there: it reached the length limit."
    );
    // What came out of the speaker, read back.
    let read_back = |wav: &str| {
        let heard = common::talk(
            hark(&format!("check-{wav}.db")),
            &args,
            &[&out.join(wav)],
            &dir.path().join(format!("out-{wav}")),
            None,
        );
        common::of_type(&heard, "transcript_final", "text")
            .join(" ")
            .to_lowercase()
    };
    let refusal = read_back("turn-1.wav");
    assert!(
        refusal.contains("sorry") && refusal.contains("assist"),
        "whisper heard: {refusal}"
    );
    let cut = read_back("turn-2.wav");
    assert!(
        cut.contains("cut off") && cut.contains("length limit"),
        "whisper heard: {cut}"
    );
}

#[test]
fn a_silent_wav_makes_no_turn() {
    let server = FakeLlm::openai(None);
    let dir = tempfile::tempdir().unwrap();
    let silent = dir.path().join("silence.wav");
    hark_core_wav_silence(&silent);
    let o = Command::new(env!("CARGO_BIN_EXE_hark"))
        .arg("--db")
        .arg(dir.path().join("hark.db"))
        .args([
            "talk",
            "--json",
            "--stt",
            "deepgram-prerecorded",
            "--base-url",
            &server.base_url(),
        ])
        .arg("--wav")
        .arg(&silent)
        .arg("--out")
        .arg(dir.path())
        .env("DEEPGRAM_API_KEY", "unused")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains(r#""type":"no_turn","reason":"silent""#), "{stdout}");
    assert!(server.requests().is_empty(), "no request for silence");
}

fn hark_core_wav_silence(path: &Path) {
    let spec = hound_spec();
    let mut w = hound::WavWriter::create(path, spec).unwrap();
    for _ in 0..16_000 {
        w.write_sample(0i16).unwrap();
    }
    w.finalize().unwrap();
}

/// `ms` of a loud tone at 16 kHz: speech, as far as push-to-talk can tell.
fn write_tone(path: &Path, ms: usize) {
    let mut w = hound::WavWriter::create(path, hound_spec()).unwrap();
    for i in 0..ms * 16 {
        w.write_sample((6_000.0 * (i as f32 * 0.05).sin()) as i16).unwrap();
    }
    w.finalize().unwrap();
}

/// The index of the first event of a type.
fn first(events: &[Value], ty: &str) -> Option<usize> {
    events.iter().position(|e| e["type"] == ty)
}

/// The turn's figures are there: release → transcript, request → first token, first
/// sentence → first audio byte, release → first audio out.
fn assert_metrics(events: &[Value]) {
    let finished = &events[first(events, "turn_finished").expect("a finished turn")];
    for m in [
        "transcript_ms",
        "first_token_ms",
        "first_audio_byte_ms",
        "first_audio_out_ms",
    ] {
        assert!(finished["metrics"][m].is_u64(), "{m}: {finished}");
    }
}

/// Issue 20: `hark talk --wav F --live` plays the file as live speech through the
/// microphone's path, so a live engine shows its words while the file plays, before the
/// final transcript, and the turn has a live turn's figures. Hermetic: the loopback
/// Deepgram (interim words every half second of audio, the rest final at `Finalize`), the
/// loopback model and voice, and a tone as the speech.
#[test]
fn a_wav_played_live_shows_interim_words_before_the_final_transcript() {
    const KEY: &str = "test-deepgram-key";
    let said = "what is the capital of france";
    let speech = FakeSpeech::deepgram(KEY);
    speech.set_transcript(said);
    let llm = FakeLlm::openai(None);
    let dir = tempfile::tempdir().unwrap();
    let wav = dir.path().join("question.wav");
    write_tone(&wav, 2_000);
    let out = dir.path().join("out");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hark"));
    cmd.arg("--db")
        .arg(dir.path().join("hark.db"))
        .args(["talk", "--json", "--live", "--release-ms", "300"])
        .args(["--stt", "deepgram", "--tts", "deepgram"])
        .args(["--base-url", &llm.base_url(), "--model", "local"])
        .arg("--wav")
        .arg(&wav)
        .arg("--out")
        .arg(&out)
        .env("HARK_DEEPGRAM_BASE_URL", speech.base_url())
        .env("DEEPGRAM_API_KEY", KEY);
    // A hang catcher: the turn takes about three seconds.
    let events = common::events_within(cmd, Duration::from_secs(120));

    let listening = first(&events, "listening_started").unwrap_or_else(|| panic!("{events:?}"));
    assert_eq!(events[listening]["device"], wav.display().to_string());
    let interim = first(&events, "transcript_interim").unwrap_or_else(|| panic!("no interim words: {events:?}"));
    let transcript = first(&events, "transcript_final").unwrap_or_else(|| panic!("{events:?}"));
    let finished = first(&events, "turn_finished").unwrap_or_else(|| panic!("{events:?}"));
    assert!(
        listening < interim && interim < transcript && transcript < finished,
        "listening, interim words, the final transcript, the reply: {events:?}"
    );
    assert_eq!(events[transcript]["text"], said);
    // The words grew toward what was said; the final transcript came at the release.
    let interims = common::of_type(&events[..transcript], "transcript_interim", "text");
    assert!(
        interims.len() >= 2 && interims.iter().all(|t| said.starts_with(t.as_str())),
        "{interims:?}"
    );
    assert_metrics(&events);
    assert_eq!(events.last().unwrap()["type"], "idle", "the session was ready again");
    assert!(out.join("turn-1.wav").exists(), "the reply was spoken");
}

/// Issue 20, offline: Moonshine's words while an espeak-ng clip of two questions plays
/// live, the first question before the final transcript, and the turn's figures.
#[test]
#[ignore = "needs the Moonshine model (scripts/test.sh fetches it)"]
fn moonshine_shows_the_words_of_a_wav_played_live_before_the_final_transcript() {
    let llm = FakeLlm::openai(None);
    let dir = tempfile::tempdir().unwrap();
    let wav = dir.path().join("questions.wav");
    espeak_wav(
        "What is the capital of France? What time does the train to London leave?",
        &wav,
    );
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hark"));
    cmd.arg("--db")
        .arg(dir.path().join("hark.db"))
        .args(["talk", "--json", "--live", "--stt", "moonshine", "--tts", "system"])
        .args(["--base-url", &llm.base_url(), "--model", "local"])
        .arg("--wav")
        .arg(&wav)
        .arg("--out")
        .arg(dir.path().join("out"));
    // A hang catcher: the clip plays for five seconds; loading the model takes one.
    let events = common::events_within(cmd, Duration::from_secs(300));

    let transcript = first(&events, "transcript_final").unwrap_or_else(|| panic!("{events:?}"));
    let interims = common::of_type(&events[..transcript], "transcript_interim", "text");
    assert!(
        interims.iter().any(|t| t.to_lowercase().contains("france")),
        "the first question was shown while the second played: {interims:?}"
    );
    let heard = events[transcript]["text"].as_str().unwrap().to_lowercase();
    assert!(heard.contains("france") && heard.contains("london"), "{heard}");
    assert_metrics(&events);
}

fn hound_spec() -> hound::WavSpec {
    hound::WavSpec {
        channels: 1,
        sample_rate: 16_000,
        bits_per_sample: 16,
        sample_format: hound::SampleFormat::Int,
    }
}

/// No audio device at all: ALSA with an empty configuration has none, whatever the
/// machine's hardware (so this runs everywhere, sound card or not).
#[test]
fn no_audio_devices_is_a_named_one_line_error() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("alsa.conf");
    std::fs::write(&empty, "").unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_hark"))
        .arg("--db")
        .arg(dir.path().join("hark.db"))
        .args(["talk", "--stt", "deepgram", "--base-url", "http://127.0.0.1:9/v1"])
        .env("ALSA_CONFIG_PATH", &empty)
        .env("PULSE_SERVER", "unix:/nonexistent/pulse")
        .env("DEEPGRAM_API_KEY", "unused")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    let last = err.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("hark: the speaker") && last.contains("cannot be used (") && last.ends_with(')'),
        "names the device and, in brackets, what the audio library said: {err}"
    );
}

/// Issue 23: `hark talk --hands-free --json` on the virtual microphone, which hears the
/// virtual speaker (scripts/virtual-audio.sh, started by scripts/test.sh). A question
/// played into the room, with no key pressed, is heard (`speech_started`, `speech_ended`),
/// answered and spoken into the same room; the reply starts no turn of its own; q quits.
#[test]
#[ignore = "needs virtual audio devices, Silero VAD and the whisper model (scripts/test.sh)"]
fn hands_free_hears_a_question_played_into_the_room_and_answers_it_once() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;
    assert!(
        std::env::var_os("PULSE_SERVER").is_some(),
        "no PulseAudio: run the tests through scripts/test.sh (virtual speaker and microphone)"
    );
    let model = whisper_model();
    let llm = FakeLlm::openai(None);
    let dir = tempfile::tempdir().unwrap();
    let question = dir.path().join("question.wav");
    espeak_wav("My name is Sam.", &question);
    let mut child = common::hark(&dir.path().join("hark.db"))
        .args(["talk", "--hands-free", "--json", "--tts", "system"])
        .args(["--base-url", &llm.base_url(), "--model", "local"])
        .arg("--whisper-model")
        .arg(&model)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<Value>();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(serde_json::from_str(&line).unwrap_or(Value::String(line)));
        }
    });
    let mut events = Vec::new();
    // A hang catcher: each wait is for a step of a turn that takes seconds.
    let until = |ty: &str, events: &mut Vec<Value>| loop {
        let e = rx
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("no {ty} event: {events:?}"));
        assert_ne!(e["type"], "failed", "{e}");
        let found = e["type"] == ty;
        events.push(e);
        if found {
            break;
        }
    };
    until("session", &mut events);
    // The microphone is open from the start: give it a moment, then speak into the room.
    std::thread::sleep(Duration::from_secs(1));
    let played = Command::new("paplay")
        .arg("--device=spk")
        .arg(&question)
        .status()
        .unwrap();
    assert!(played.success());
    until("speech_started", &mut events);
    until("speech_ended", &mut events);
    until("transcript_final", &mut events);
    until("turn_finished", &mut events);
    until("idle", &mut events);
    // The reply played into the room while Hark did not listen; after it, two quiet seconds.
    std::thread::sleep(Duration::from_secs(2));
    events.extend(rx.try_iter());
    child.stdin.take().unwrap().write_all(b"q\n").unwrap();
    let status = child.wait().unwrap();
    events.extend(rx.try_iter());
    assert!(status.success(), "{events:?}");

    let text = common::of_type(&events, "transcript_final", "text");
    assert_eq!(text.len(), 1, "one turn, not one for the reply too: {events:?}");
    assert!(text[0].to_lowercase().contains("my name is sam"), "{text:?}");
    assert_eq!(
        common::of_type(&events, "turn_finished", "reply"),
        ["Nice to meet you, Sam!"]
    );
    let started = events.iter().filter(|e| e["type"] == "speech_started").count();
    assert_eq!(started, 1, "Hark heard itself: {events:?}");
    let order: Vec<&str> = events
        .iter()
        .filter_map(|e| e["type"].as_str())
        .filter(|t| ["speech_started", "speech_ended", "transcript_final", "turn_finished"].contains(t))
        .collect();
    assert_eq!(
        order,
        ["speech_started", "speech_ended", "transcript_final", "turn_finished"]
    );
}
