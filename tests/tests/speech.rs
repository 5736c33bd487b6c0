//! Speech providers on their wire formats, against loopback Deepgram and OpenAI servers.

use std::time::Duration;

use hark_core::provider::{ProviderConfig, ProviderKind};
use hark_core::stt::deepgram::{DeepgramConfig, DeepgramStt};
use hark_core::stt::openai::OpenAiStt;
use hark_core::stt::Transcriber;
use hark_core::tts::remote::{DeepgramTts, OpenAiTts};
use hark_core::tts::{AudioChunk, Synthesizer};
use hark_e2e::speech::{FakeSpeech, TTS_RATE};
use tokio::sync::mpsc;

const KEY: &str = "dg-test-key-51a0";

fn tone(secs: f32) -> Vec<f32> {
    (0..(16_000.0 * secs) as usize)
        .map(|i| (i as f32 * 0.07).sin() * 0.3)
        .collect()
}

fn deepgram(server: &FakeSpeech, key: &str) -> DeepgramConfig {
    let mut c = DeepgramConfig::new(Some(key.to_string()));
    c.base_url = server.base_url();
    c.retry.base_delay = Duration::from_millis(5);
    c
}

fn openai(server: &FakeSpeech, key: &str, model: &str) -> ProviderConfig {
    let mut c = ProviderConfig::new(ProviderKind::OpenAi);
    c.base_url = server.base_url();
    c.api_key = Some(key.to_string());
    c.model = model.to_string();
    c
}

#[tokio::test]
async fn deepgram_prerecorded_uploads_a_wav_and_reads_the_transcript() {
    let server = FakeSpeech::deepgram(KEY);
    server.set_transcript("My name is Sam.");
    let stt = DeepgramStt::new(deepgram(&server, KEY), false).unwrap();
    assert_eq!(stt.transcribe(&tone(1.0)).await.unwrap(), "My name is Sam.");
    let req = &server.requests()[0];
    assert!(req.path.starts_with("/v1/listen?model=nova-3"), "{}", req.path);
    assert_eq!(req.header("authorization"), Some(format!("Token {KEY}").as_str()));
    let (audio, rate) = hark_core::audio::wav::decode_wav_bytes(&req.raw).unwrap();
    assert_eq!((audio.len(), rate), (16_000, 16_000));
    // A live session is not used in prerecorded mode.
    let (tx, _rx) = mpsc::unbounded_channel();
    assert!(stt.live(tx).await.unwrap().is_none());
}

#[tokio::test]
async fn deepgram_live_streams_linear16_shows_interim_text_and_finalizes_on_release() {
    let server = FakeSpeech::deepgram(KEY);
    server.set_transcript("my name is Sam and I live in Paris");
    let stt = DeepgramStt::new(deepgram(&server, KEY), true).unwrap();
    let (tx, mut interim) = mpsc::unbounded_channel();
    let mut live = stt.live(tx).await.unwrap().expect("live mode");
    let audio = tone(2.0);
    for chunk in audio.chunks(1600) {
        live.send(chunk).await.unwrap();
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let text = live.finish().await.unwrap();
    assert_eq!(text, "my name is Sam and I live in Paris", "final pieces joined");
    let mut shown = Vec::new();
    while let Ok(t) = interim.try_recv() {
        shown.push(t);
    }
    assert!(shown.len() >= 3, "interim updates: {shown:?}");
    assert_eq!(shown[0], "my", "interim text before any final piece");
    assert!(
        shown.iter().any(|t| t == "my name is Sam"),
        "the first final piece: {shown:?}"
    );
    assert_eq!(shown.last().unwrap(), "my name is Sam and I live in Paris");
    tokio::time::sleep(Duration::from_millis(100)).await;
    let log = &server.live_sessions()[0];
    assert_eq!(log.audio_bytes, 64_000, "2 s of 16 kHz linear16");
    assert_eq!(log.control, vec![r#"{"type":"Finalize"}"#, r#"{"type":"CloseStream"}"#]);
    assert!(log.path.contains("interim_results=true") && log.path.contains("sample_rate=16000"));
}

#[tokio::test]
async fn deepgram_rejects_a_wrong_key_over_http_and_websocket() {
    let server = FakeSpeech::deepgram(KEY);
    let stt = DeepgramStt::new(deepgram(&server, "wrong"), true).unwrap();
    let err = stt.transcribe(&tone(0.5)).await.unwrap_err();
    assert_eq!(err.kind.as_str(), "auth", "{err}");
    assert_eq!(err.message, "Invalid credentials.");
    let (tx, _rx) = mpsc::unbounded_channel();
    let Err(err) = stt.live(tx).await else {
        panic!("the handshake must fail")
    };
    assert_eq!(err.kind.as_str(), "auth", "{err}");
    assert_eq!(err.status, Some(401));
}

#[tokio::test]
async fn openai_transcription_posts_multipart_wav() {
    let server = FakeSpeech::openai(KEY);
    server.set_transcript("What's my name?");
    let stt = OpenAiStt::new(openai(&server, KEY, "gpt-4o-mini-transcribe")).unwrap();
    assert_eq!(stt.transcribe(&tone(1.5)).await.unwrap(), "What's my name?");
    let req = &server.requests()[0];
    assert_eq!(req.path, "/v1/audio/transcriptions");
    let body = String::from_utf8_lossy(&req.raw);
    assert!(body.contains("gpt-4o-mini-transcribe"));
    let bad = OpenAiStt::new(openai(&server, "nope", "whisper-1")).unwrap();
    assert_eq!(bad.transcribe(&tone(0.5)).await.unwrap_err().kind.as_str(), "auth");
}

async fn collect(s: &dyn Synthesizer, text: &str) -> Vec<AudioChunk> {
    let (tx, mut rx) = mpsc::unbounded_channel();
    s.synthesize(text, &tx).await.unwrap();
    drop(tx);
    let mut v = Vec::new();
    while let Some(c) = rx.recv().await {
        v.push(c);
    }
    v
}

fn check_tone(chunks: &[AudioChunk], expected: usize) {
    assert!(chunks.len() > 1, "streamed in pieces");
    assert!(chunks.iter().all(|c| c.rate == TTS_RATE));
    let all: Vec<f32> = chunks.iter().flat_map(|c| c.samples.clone()).collect();
    assert_eq!(all.len(), expected);
    // Samples reassembled across odd byte splits are the tone, not noise.
    for (i, s) in all.iter().enumerate().take(2000) {
        let want = (2.0 * std::f32::consts::PI * 440.0 * i as f32 / TTS_RATE as f32).sin() * 0.4;
        assert!((s - want).abs() < 0.01, "sample {i}: {s} vs {want}");
    }
}

#[tokio::test]
async fn deepgram_aura_streams_linear16() {
    let server = FakeSpeech::deepgram(KEY);
    let tts = DeepgramTts::new(deepgram(&server, KEY), "aura-2-thalia-en").unwrap();
    let chunks = collect(&tts, "Hello there, Sam.").await;
    check_tone(&chunks, server.tts_samples("Hello there, Sam."));
    let req = &server.requests()[0];
    assert!(req
        .path
        .starts_with("/v1/speak?model=aura-2-thalia-en&encoding=linear16&sample_rate=24000&container=none"));
    assert_eq!(req.body, serde_json::json!({"text": "Hello there, Sam."}));
}

#[tokio::test]
async fn openai_speech_streams_pcm() {
    let server = FakeSpeech::openai(KEY);
    let tts = OpenAiTts::new(openai(&server, KEY, "gpt-4o-mini-tts"), "alloy").unwrap();
    let chunks = collect(&tts, "Your name is Sam.").await;
    check_tone(&chunks, server.tts_samples("Your name is Sam."));
    let body = &server.requests()[0].body;
    assert_eq!(body["response_format"], "pcm");
    assert_eq!(body["voice"], "alloy");
    assert_eq!(body["input"], "Your name is Sam.");
    let bad = OpenAiTts::new(openai(&server, "nope", "tts-1"), "alloy").unwrap();
    let (tx, _rx) = mpsc::unbounded_channel();
    assert_eq!(bad.synthesize("x", &tx).await.unwrap_err().kind.as_str(), "auth");
}

/// A language the service does not have is its error, named, not a silent English turn.
#[tokio::test]
async fn a_language_the_service_does_not_have_is_its_error() {
    let dg = FakeSpeech::deepgram(KEY);
    let mut c = deepgram(&dg, KEY);
    c.language = "tlh".into();
    let err = DeepgramStt::new(c, false)
        .unwrap()
        .transcribe(&tone(0.5))
        .await
        .unwrap_err();
    assert_eq!(err.status, Some(400), "{err}");
    assert_eq!(err.message, "No such model/language/tier combination found.");

    let oa = FakeSpeech::openai(KEY);
    let stt = OpenAiStt::new(openai(&oa, KEY, "gpt-4o-mini-transcribe"))
        .unwrap()
        .with_language(Some("german"));
    let err = stt.transcribe(&tone(0.5)).await.unwrap_err();
    assert_eq!(err.status, Some(400), "{err}");
    assert!(err.message.contains("ISO-639-1"), "{err}");
}
