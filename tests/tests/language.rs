//! The conversation language (issue 13) reaches every request of a spoken turn: built by
//! the composition root as the app and `hark talk` build it, against loopback Deepgram,
//! OpenAI speech and an OpenAI-compatible model server, with the keys in the real keychain.

use std::sync::Arc;
use std::time::Instant;

use hark_core::assembly::{LlmChoice, Profile};
use hark_core::audio::playback::ClockOut;
use hark_core::models::{Manifest, ModelStore};
use hark_core::secrets::{KeySlot, Keychain};
use hark_core::session::voice::{answer, Pipeline, Voice};
use hark_core::store::Store;
use hark_core::stt::SttKind;
use hark_core::tts::TtsKind;
use hark_e2e::keychain::require_secret_service;
use hark_e2e::speech::FakeSpeech;
use hark_e2e::{Behaviour, FakeLlm};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

const KEY: &str = "speech-key-lang-3c1d";

fn tone(secs: f32) -> Vec<f32> {
    (0..(16_000.0 * secs) as usize)
        .map(|i| (i as f32 * 0.07).sin() * 0.3)
        .collect()
}

/// What one spoken turn sent: the speech server's requests, the model's last request.
struct Sent {
    speech: Vec<hark_e2e::Recorded>,
    llm: hark_e2e::Recorded,
    reply: String,
}

/// One spoken turn with `language`, speech on `speech`, the model on a loopback
/// OpenAI-compatible server (no key: a loopback server needs none).
async fn spoken_turn(language: &str, stt: SttKind, tts: TtsKind, speech: &FakeSpeech, said: &str, reply: &str) -> Sent {
    let llm = FakeLlm::openai(None);
    llm.push(Behaviour::Text(reply.into()));
    speech.set_transcript(said);
    let kc = Keychain::with_service(format!("hark-test-language-{}", std::process::id()));
    let provider = if stt == SttKind::OpenAi { "openai" } else { "deepgram" };
    let slot = KeySlot::for_url(provider, &speech.base_url());
    kc.set(&slot, KEY).unwrap();
    let profile = Profile {
        llm_provider: LlmChoice::OpenAi,
        llm_base_url: Some(llm.base_url()),
        llm_model: "gpt-4o-mini".into(),
        stt,
        tts,
        deepgram_base_url: Some(speech.base_url()),
        speech_base_url: Some(speech.base_url()),
        language: language.into(),
        recall: false,
        tools: false,
        ..Default::default()
    };
    let voice = Voice {
        stt: profile.transcriber(&kc).unwrap(),
        tts: profile.synthesizer(&kc).unwrap(),
        out: Arc::new(ClockOut::new()),
    };
    let chat = profile
        .chat(&kc, &Manifest::builtin(), &ModelStore::default_dir())
        .await
        .unwrap();
    let store = Arc::new(Store::open_in_memory().unwrap());
    let (mut session, _) = profile.open_session(&store, chat, None).unwrap();
    let (tx, _rx) = mpsc::unbounded_channel();
    let spoken = answer(
        &mut session,
        &voice,
        &tone(1.0),
        None,
        Instant::now(),
        Pipeline::Sequential,
        &CancellationToken::new(),
        None,
        &tx,
    )
    .await
    .unwrap()
    .expect("the turn was answered");
    kc.delete(&slot).unwrap();
    Sent {
        speech: speech.requests(),
        llm: llm.last_turn(),
        reply: spoken.generated,
    }
}

/// The value of a multipart form field, if the body has it.
fn form_field(body: &str, name: &str) -> Option<String> {
    let head = format!("name=\"{name}\"\r\n\r\n");
    let start = body.find(&head)? + head.len();
    Some(body[start..].split("\r\n").next()?.to_string())
}

#[tokio::test]
#[ignore = "needs a Secret Service (scripts/test.sh starts one)"]
async fn a_german_turn_through_openai_speech_carries_the_language_to_every_request() {
    require_secret_service();
    let speech = FakeSpeech::openai(KEY);
    let sent = spoken_turn(
        "de",
        SttKind::OpenAi,
        TtsKind::OpenAi,
        &speech,
        "Wie heißt die Hauptstadt von Frankreich?",
        "Die Hauptstadt von Frankreich ist Paris.",
    )
    .await;
    let stt = sent
        .speech
        .iter()
        .find(|r| r.path.ends_with("/audio/transcriptions"))
        .unwrap();
    assert_eq!(form_field(&stt.raw_text(), "language").as_deref(), Some("de"));
    assert_eq!(
        sent.llm.messages().last().unwrap().1,
        "Wie heißt die Hauptstadt von Frankreich?"
    );
    let system = sent.llm.system().unwrap();
    assert!(system.contains("Always answer in German"), "{system}");
    assert_eq!(sent.reply, "Die Hauptstadt von Frankreich ist Paris.");
    let tts = sent.speech.iter().find(|r| r.path.ends_with("/audio/speech")).unwrap();
    assert_eq!(tts.body["input"], "Die Hauptstadt von Frankreich ist Paris.");
}

#[tokio::test]
#[ignore = "needs a Secret Service (scripts/test.sh starts one)"]
async fn a_spanish_turn_through_deepgram_asks_for_spanish_and_speaks_with_a_spanish_voice() {
    require_secret_service();
    let speech = FakeSpeech::deepgram(KEY);
    let sent = spoken_turn(
        "es",
        SttKind::DeepgramPrerecorded,
        TtsKind::Deepgram,
        &speech,
        "¿Cómo me llamo?",
        "Te llamas Sam.",
    )
    .await;
    let listen = sent.speech.iter().find(|r| r.path.starts_with("/v1/listen")).unwrap();
    assert!(listen.path.contains("language=es"), "{}", listen.path);
    assert!(sent.llm.system().unwrap().contains("Always answer in Spanish"));
    let speak = sent.speech.iter().find(|r| r.path.starts_with("/v1/speak")).unwrap();
    assert!(speak.path.contains("model=aura-2-celeste-es"), "{}", speak.path);
    assert_eq!(speak.body["text"], "Te llamas Sam.");
}

#[tokio::test]
#[ignore = "needs a Secret Service (scripts/test.sh starts one)"]
async fn automatic_lets_each_service_detect_the_language() {
    require_secret_service();
    let deepgram = FakeSpeech::deepgram(KEY);
    let sent = spoken_turn(
        "auto",
        SttKind::DeepgramPrerecorded,
        TtsKind::Deepgram,
        &deepgram,
        "Quelle heure est-il ?",
        "Il est midi.",
    )
    .await;
    let listen = sent.speech.iter().find(|r| r.path.starts_with("/v1/listen")).unwrap();
    assert!(
        listen.path.contains("language=multi"),
        "Nova-3 multilingual: {}",
        listen.path
    );
    assert!(!sent.llm.system().unwrap().contains("Always answer in"));

    let openai = FakeSpeech::openai(KEY);
    let sent = spoken_turn("auto", SttKind::OpenAi, TtsKind::OpenAi, &openai, "Hallo", "Hallo!").await;
    let stt = sent
        .speech
        .iter()
        .find(|r| r.path.ends_with("/audio/transcriptions"))
        .unwrap();
    assert_eq!(form_field(&stt.raw_text(), "language"), None, "OpenAI detects it");
}
