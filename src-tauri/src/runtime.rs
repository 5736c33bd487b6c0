//! Building a running session from the settings: the model, the speech pipeline, and the
//! voice actor from `hark-core`, whose events are forwarded to the webview.

use std::path::PathBuf;
use std::sync::Arc;

use hark_core::audio::playback::{AudioOut, ClockOut, Speaker};
use hark_core::local::LocalLlm;
use hark_core::models::{Manifest, ModelKind, ModelSpec, ModelStore, Progress};
use hark_core::provider::{ChatModel, ProviderConfig, ProviderKind};
use hark_core::secrets::Keychain;
use hark_core::session::voice::{self, Voice, VoiceCommand, VoiceEvent};
use hark_core::session::ChatSession;
use hark_core::store::Store;
use hark_core::stt::deepgram::{DeepgramConfig, DeepgramStt};
use hark_core::stt::openai::OpenAiStt;
use hark_core::stt::whisper::{models_dir, WhisperStt, DEFAULT_MODEL};
use hark_core::stt::{SttKind, Transcriber};
use hark_core::tools::Toolbox;
use hark_core::tts::remote::{DeepgramTts, OpenAiTts};
use hark_core::tts::system::SystemVoice;
use hark_core::tts::{Synthesizer, TtsKind};
use tokio::sync::mpsc;
use unavailable::UnavailableStt;

use crate::error::{CmdResult, CommandError};
use crate::settings::{AppSettings, Llm};

/// A running session: the actor's command sender and task, and the offline model's
/// server when the session uses it (stopped when the runtime is dropped).
pub struct Runtime {
    pub session_id: String,
    pub commands: mpsc::UnboundedSender<VoiceCommand>,
    pub task: tokio::task::JoinHandle<ChatSession>,
    /// Held for its lifetime: dropping it stops the server.
    pub _local: Option<LocalLlm>,
}

/// What the settings mean, given the keys present.
pub fn llm(s: &AppSettings, kc: &Keychain) -> Llm {
    s.llm(|k| kc.value(k.as_str()).is_some())
}

/// A cloud (or OpenAI-compatible server) language model from the settings.
pub fn model(s: &AppSettings, kc: &Keychain, kind: ProviderKind) -> CmdResult<Box<dyn ChatModel>> {
    let mut c = ProviderConfig::new(kind);
    if let Some(url) = s.llm_base_url.as_ref().filter(|u| !u.trim().is_empty()) {
        c.base_url = url.trim().to_string();
    }
    if !s.llm_model.trim().is_empty() {
        c.model = s.llm_model.trim().to_string();
    }
    c.max_tokens = s.max_tokens;
    c.api_key = kc.value(kind.as_str());
    Ok(c.build()?)
}

/// Progress of a model fetch, as an event for the window's progress banner.
fn progress_events(events: &mpsc::UnboundedSender<VoiceEvent>) -> impl Fn(Progress) + Send + Sync {
    let events = events.clone();
    let last = std::sync::Mutex::new((String::new(), u64::MAX));
    move |p: Progress| {
        // At most one event per percent.
        let pct = p.percent();
        let mut l = last.lock().unwrap_or_else(|e| e.into_inner());
        if l.0 == p.model && l.1 == pct {
            return;
        }
        *l = (p.model.clone(), pct);
        let _ = events.send(VoiceEvent::ModelProgress {
            model: p.model,
            phase: p.phase,
            done: p.done,
            total: p.total,
        });
    }
}

/// The offline models these settings need and that are not downloaded yet.
pub fn missing_models(s: &AppSettings, kc: &Keychain) -> Vec<ModelSpec> {
    // An unreadable manifest override is reported when the session starts.
    let Ok(manifest) = Manifest::load() else {
        return Vec::new();
    };
    let store = ModelStore::default_dir();
    let mut want = Vec::new();
    if llm(s, kc) == Llm::Local {
        want.extend(local_spec(s, &manifest).ok().cloned());
    }
    if s.stt == "whisper" && s.whisper_model.is_none() {
        want.extend(manifest.default_for(ModelKind::Stt).cloned());
    }
    want.retain(|m| !store.is_ready(m));
    want
}

fn local_spec<'m>(s: &AppSettings, manifest: &'m Manifest) -> CmdResult<&'m ModelSpec> {
    let spec = match &s.local_model {
        Some(id) => manifest
            .find(id)
            .map_err(|e| CommandError::new("settings", e.to_string()))?,
        None => manifest
            .default_for(ModelKind::Llm)
            .ok_or_else(|| CommandError::new("settings", "the model manifest has no default chat model"))?,
    };
    Ok(spec)
}

/// Fetches the models the settings need (first use), reporting progress as events.
pub async fn fetch_models(s: &AppSettings, kc: &Keychain, events: &mpsc::UnboundedSender<VoiceEvent>) -> CmdResult<()> {
    let store = ModelStore::default_dir();
    let progress = progress_events(events);
    for spec in missing_models(s, kc) {
        store
            .ensure(&spec, &progress)
            .await
            .map_err(|e| CommandError::new("model", e.to_string()))?;
    }
    Ok(())
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

/// Opens (or creates) the session and starts its actor. The offline models the settings
/// need must be in place ([`fetch_models`]).
pub async fn start(
    store: &Arc<Store>,
    s: &AppSettings,
    kc: &Keychain,
    session: Option<&str>,
    events: mpsc::UnboundedSender<VoiceEvent>,
) -> CmdResult<(Runtime, Vec<CommandError>)> {
    let (model, local) = match llm(s, kc) {
        Llm::Cloud(kind) => (model(s, kc, kind)?, None),
        Llm::Local => {
            let manifest = Manifest::load().map_err(|e| CommandError::new("model", e.to_string()))?;
            let spec = local_spec(s, &manifest)?;
            let path = ModelStore::default_dir().path(spec);
            let local = LocalLlm::start(&path, &spec.id, hark_core::local::DEFAULT_CONTEXT).await?;
            let mut c = local.config();
            c.max_tokens = s.max_tokens;
            (c.build()?, Some(local))
        }
    };
    let mut chat = match session {
        Some(id) => ChatSession::resume(store.clone(), id, model)?,
        None => ChatSession::create(store.clone(), model, &s.system_prompt, Default::default())?,
    };
    chat.set_reply_budget(s.max_tokens);
    chat.set_summarization(s.summarize);
    chat.set_recall(s.recall);
    // Small local models do not call tools reliably: they get none.
    if s.tools && local.is_none() {
        chat.set_tools(Toolbox::builtin());
    }
    if let Some(l) = &local {
        chat.set_model_window(l.context_window());
    }
    let (voice, problems) = voice(s, kc);
    let session_id = chat.id().to_string();
    let (commands, task) = voice::spawn(chat, voice, s.ptt_mode, s.input_device.clone(), events);
    Ok((
        Runtime {
            session_id,
            commands,
            task,
            _local: local,
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
