//! `hark talk --wav` end to end with real speech: espeak-ng speaks the user's lines, the
//! offline whisper engine transcribes them, a loopback OpenAI-compatible server answers, the
//! OS voice speaks the replies into WAV files, and whisper reads those back.

mod common;

use std::path::Path;
use std::process::Command;

use hark_e2e::{espeak_wav, whisper_model, FakeLlm};
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
    let hark = |db: &str| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_hark"));
        c.arg("--db").arg(dir.path().join(db));
        c
    };
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
