//! Building a running session from the settings: the model, the speech pipeline, and the
//! voice actor from `hark-core`, whose events are forwarded to the webview.

use std::path::PathBuf;
use std::sync::Arc;

use hark_core::audio::playback::{AudioOut, ClockOut, Speaker};
use hark_core::provider::{ChatModel, ProviderConfig, ProviderKind};
use hark_core::secrets::Keychain;
use hark_core::session::voice::{self, Voice, VoiceCommand, VoiceEvent};
use hark_core::session::ChatSession;
use hark_core::store::Store;
use hark_core::stt::deepgram::{DeepgramConfig, DeepgramStt};
use hark_core::stt::openai::OpenAiStt;
use hark_core::stt::whisper::{models_dir, WhisperStt, DEFAULT_MODEL};
use hark_core::stt::{SttKind, Transcriber};
use hark_core::tts::remote::{DeepgramTts, OpenAiTts};
use hark_core::tts::system::SystemVoice;
use hark_core::tts::{Synthesizer, TtsKind};
use tokio::sync::mpsc;
use unavailable::UnavailableStt;

use crate::error::{CmdResult, CommandError};
use crate::settings::AppSettings;

/// A running session: the actor's command sender and task.
pub struct Runtime {
    pub session_id: String,
    pub commands: mpsc::UnboundedSender<VoiceCommand>,
    pub task: tokio::task::JoinHandle<ChatSession>,
}

/// The language model the settings describe.
pub fn model(s: &AppSettings, kc: &Keychain) -> CmdResult<Box<dyn ChatModel>> {
    let mut c = ProviderConfig::new(s.llm_provider);
    if let Some(url) = s.llm_base_url.as_ref().filter(|u| !u.trim().is_empty()) {
        c.base_url = url.trim().to_string();
    }
    c.model = s.llm_model.clone();
    c.max_tokens = s.max_tokens;
    c.api_key = kc.value(s.llm_provider.as_str());
    Ok(c.build()?)
}

fn deepgram(s: &AppSettings, kc: &Keychain) -> DeepgramConfig {
    let mut c = DeepgramConfig::new(kc.value("deepgram"));
    if let Some(url) = s.deepgram_base_url.as_ref().filter(|u| !u.trim().is_empty()) {
        c.base_url = url.trim().to_string();
    }
    c
}

fn openai_speech(s: &AppSettings, kc: &Keychain, model: &str) -> ProviderConfig {
    let mut c = ProviderConfig::new(ProviderKind::OpenAi);
    if let Some(url) = s.speech_base_url.as_ref().filter(|u| !u.trim().is_empty()) {
        c.base_url = url.trim().to_string();
    }
    c.api_key = kc.value("openai");
    c.model = model.to_string();
    c
}

fn whisper_path(s: &AppSettings) -> PathBuf {
    s.whisper_model
        .clone()
        .unwrap_or_else(|| models_dir().join(DEFAULT_MODEL))
}

/// The speech pipeline. What cannot be set up (no microphone model, no speaker) is replaced
/// by a stand-in that explains the problem when used, and the problem is returned so the UI
/// can show it; the conversation itself keeps working.
pub fn voice(s: &AppSettings, kc: &Keychain) -> (Voice, Vec<CommandError>) {
    let mut problems = Vec::new();
    let stt: Arc<dyn Transcriber> = match s.stt.parse::<SttKind>() {
        Ok(SttKind::Whisper) => match WhisperStt::load(&whisper_path(s)) {
            Ok(w) => Arc::new(w),
            Err(e) => {
                problems.push(CommandError::from(e.clone()));
                Arc::new(UnavailableStt(e.message))
            }
        },
        Ok(SttKind::Deepgram) | Ok(SttKind::DeepgramPrerecorded) => {
            let live = s.stt == "deepgram";
            match DeepgramStt::new(deepgram(s, kc), live) {
                Ok(d) => Arc::new(d),
                Err(e) => Arc::new(UnavailableStt(e.message)),
            }
        }
        Ok(SttKind::OpenAi) => match OpenAiStt::new(openai_speech(s, kc, "gpt-4o-mini-transcribe")) {
            Ok(o) => Arc::new(o),
            Err(e) => Arc::new(UnavailableStt(e.message)),
        },
        Err(e) => {
            problems.push(CommandError::new("settings", e.clone()));
            Arc::new(UnavailableStt(e))
        }
    };
    let tts: Arc<dyn Synthesizer> = match s.tts.parse::<TtsKind>() {
        Ok(TtsKind::Deepgram) => {
            match DeepgramTts::new(deepgram(s, kc), s.voice.clone().unwrap_or("aura-2-thalia-en".into())) {
                Ok(t) => Arc::new(t),
                Err(e) => {
                    problems.push(e.into());
                    Arc::new(SystemVoice::default())
                }
            }
        }
        Ok(TtsKind::OpenAi) => match OpenAiTts::new(
            openai_speech(s, kc, "gpt-4o-mini-tts"),
            s.voice.clone().unwrap_or("alloy".into()),
        ) {
            Ok(t) => Arc::new(t),
            Err(e) => {
                problems.push(e.into());
                Arc::new(SystemVoice::default())
            }
        },
        Ok(TtsKind::System) => Arc::new(SystemVoice {
            voice: s.voice.clone(),
            rate_wpm: None,
        }),
        Err(e) => {
            problems.push(CommandError::new("settings", e));
            Arc::new(SystemVoice::default())
        }
    };
    let out: Arc<dyn AudioOut> = match Speaker::open(s.output_device.as_deref()) {
        Ok(sp) => Arc::new(sp),
        Err(e) => {
            problems.push(e.into());
            // Replies still run (text, history); they are just not heard.
            Arc::new(ClockOut::new())
        }
    };
    (Voice { stt, tts, out }, problems)
}

/// Opens (or creates) the session and starts its actor.
pub fn start(
    store: &Arc<Store>,
    s: &AppSettings,
    kc: &Keychain,
    session: Option<&str>,
    events: mpsc::UnboundedSender<VoiceEvent>,
) -> CmdResult<(Runtime, Vec<CommandError>)> {
    let model = model(s, kc)?;
    let mut chat = match session {
        Some(id) => ChatSession::resume(store.clone(), id, model)?,
        None => ChatSession::create(store.clone(), model, &s.system_prompt, Default::default())?,
    };
    chat.set_reply_budget(s.max_tokens);
    chat.set_summarization(s.summarize);
    let (voice, problems) = voice(s, kc);
    let session_id = chat.id().to_string();
    let (commands, task) = voice::spawn(chat, voice, s.ptt_mode, s.input_device.clone(), events);
    Ok((
        Runtime {
            session_id,
            commands,
            task,
        },
        problems,
    ))
}

/// A transcriber stand-in for when speech-to-text could not be set up.
mod unavailable {
    use hark_core::provider::{ErrorKind, ProviderError};
    use hark_core::stt::Transcriber;

    pub struct UnavailableStt(pub String);

    #[async_trait::async_trait]
    impl Transcriber for UnavailableStt {
        fn name(&self) -> &'static str {
            "unavailable"
        }
        async fn transcribe(&self, _: &[f32]) -> Result<String, ProviderError> {
            Err(ProviderError::new(
                "speech-to-text",
                ErrorKind::InvalidRequest,
                self.0.clone(),
            ))
        }
    }
}
