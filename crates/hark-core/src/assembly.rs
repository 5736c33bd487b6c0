//! The composition root: from what the user chose ([`Profile`]) and the keys present to a
//! session's parts. `hark chat`, `hark talk` and the desktop app all build through here, so
//! every default (models, voices, base URLs, the system prompt, the reply budget, which
//! provider "automatic" means, tools only for models that can call them) is written once.

use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::audio::turn::{self, SmartTurnFiles};
use crate::audio::vad::{self, SileroFiles};
use crate::conversation::HistorySettings;
use crate::error::ErrorKind;
use crate::language::{self, Language};
use crate::local::{self, LocalLlm};
use crate::models::{Manifest, ModelError, ModelKind, ModelSpec, ModelStore};
use crate::provider::{ChatModel, ProviderConfig, ProviderError, ProviderKind};
use crate::secrets::{KeySlot, Keychain};
use crate::session::ChatSession;
use crate::store::{Store, StoreError};
use crate::stt::deepgram::{DeepgramConfig, DeepgramStt};
use crate::stt::moonshine::{self, MoonshineFiles, MoonshineStt};
use crate::stt::openai::OpenAiStt;
use crate::stt::{SttKind, Transcriber};
use crate::tools::Toolbox;
use crate::tts::hibari::{self, Hibari, HibariFiles};
use crate::tts::natural::{self, KokoroFiles, NaturalVoice};
use crate::tts::piper::{self, Piper, PiperFiles};
use crate::tts::quick::{PhonemeModel, QuickVoice, VoiceFiles};
use crate::tts::remote::{DeepgramTts, OpenAiTts};
use crate::tts::system::SystemVoice;
use crate::tts::{Synthesizer, TtsKind};

/// The system prompt of a new conversation.
pub const DEFAULT_SYSTEM_PROMPT: &str =
    "You are Hark, a helpful voice assistant. Answer in one to three short spoken sentences.";

/// Tokens a reply may use (the request's `max_tokens`).
pub const DEFAULT_REPLY_BUDGET: u32 = 1024;

/// OpenAI's transcription model.
pub const OPENAI_STT_MODEL: &str = "gpt-4o-mini-transcribe";
/// OpenAI's speech model and voice.
pub const OPENAI_TTS_MODEL: &str = "gpt-4o-mini-tts";
pub const OPENAI_TTS_VOICE: &str = "alloy";
/// Deepgram's Aura-2 voice.
pub const DEEPGRAM_TTS_VOICE: &str = "aura-2-thalia-en";

/// Which language model the user chose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "lowercase")]
pub enum LlmChoice {
    /// A cloud provider with a key (Anthropic first), an OpenAI-compatible server when a
    /// base URL is set, and otherwise the offline model.
    #[default]
    Auto,
    Anthropic,
    #[serde(rename = "openai")]
    OpenAi,
    /// The offline model (llama.cpp through `hark-llm`).
    Local,
}

/// What [`LlmChoice`] comes to once the keys are known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Llm {
    Cloud(ProviderKind),
    Local,
}

/// What the user chose for a conversation's model and speech: the part of the settings
/// the CLI and the app share (the app's settings file holds these fields as they are).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(default)]
pub struct Profile {
    pub llm_provider: LlmChoice,
    /// Model name for a cloud provider; empty: the provider's default.
    pub llm_model: String,
    /// The offline chat model (id in the models manifest); `None`: the manifest's default.
    pub local_model: Option<String>,
    /// Endpoint override (proxy, Ollama, LM Studio, llama.cpp server, OpenRouter).
    pub llm_base_url: Option<String>,
    /// Reply budget in tokens.
    pub max_tokens: u32,
    /// Sampling temperature; `None`: the provider's default.
    pub temperature: Option<f32>,
    pub system_prompt: String,
    /// Fold turns that leave the context into a running summary (rule 11).
    pub summarize: bool,
    /// Recall remembered facts and matching earlier conversations each turn (rule 12).
    pub recall: bool,
    /// Offer the model the built-in tools (time, remember/forget, search past conversations).
    pub tools: bool,
    pub stt: SttKind,
    /// The whisper model file; default: the manifest's speech model in the models directory.
    pub whisper_model: Option<PathBuf>,
    pub tts: TtsKind,
    /// Voice name for the chosen engine; `None`: the engine's default.
    pub voice: Option<String>,
    pub deepgram_base_url: Option<String>,
    /// OpenAI speech endpoint override.
    pub speech_base_url: Option<String>,
    /// The conversation language: `"auto"` (detected) or an ISO 639-1 code from
    /// [`language::LANGUAGES`]. It reaches speech-to-text, the system text and the OS voice.
    pub language: String,
    /// Free the offline models' memory (whisper, the local chat model) after this many
    /// minutes without a turn; 0 keeps them loaded while Hark runs, so no turn is a cold
    /// one. The next turn after an unload loads them again (a second or two).
    pub unload_after_minutes: u32,
}

impl Default for Profile {
    fn default() -> Self {
        Self {
            llm_provider: LlmChoice::Auto,
            llm_model: String::new(),
            local_model: None,
            llm_base_url: None,
            max_tokens: DEFAULT_REPLY_BUDGET,
            temperature: None,
            system_prompt: DEFAULT_SYSTEM_PROMPT.into(),
            summarize: false,
            recall: true,
            tools: true,
            stt: SttKind::Moonshine,
            whisper_model: None,
            // The quick Heart voice: Kokoro's Heart at about twenty-five times real time, so the
            // first sound comes with the reply's first words (issue 20); Kokoro speaks the
            // other languages.
            tts: TtsKind::Hibari,
            voice: None,
            deepgram_base_url: None,
            speech_base_url: None,
            language: language::AUTO.into(),
            unload_after_minutes: 0,
        }
    }
}

/// Why the natural voice, chosen, is not the one that speaks: a notice's text (the app
/// shows it, the CLI prints it), so the fallback to the OS voice is never silent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VoiceFallback {
    /// The models manifest has no natural voice for this system (its model, voices or ONNX
    /// Runtime library for this platform and OS version).
    #[error("The natural voice is not available on this computer ({0}), so Hark speaks with the system voice.")]
    NotOnThisComputer(String),
    /// espeak-ng, which makes its phonemes, is not installed (nothing is downloaded for
    /// the natural voice until it is).
    #[error("The natural voice needs espeak-ng for its pronunciation, and espeak-ng is not installed, so Hark speaks with the system voice. Install {0} and start a new conversation to hear the natural voice, or choose the system voice in Settings.")]
    NoEspeakNg(&'static str),
    /// Kokoro has no voice for the conversation language.
    #[error("The natural voice has no {0} voice, so Hark speaks {0} with the system voice.")]
    Language(&'static str),
}

/// The voice engine that speaks, and why it is not the one chosen when it is not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VoiceInEffect {
    pub kind: TtsKind,
    pub fallback: Option<VoiceFallback>,
}

/// Why a session's parts could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SetupError {
    #[error(transparent)]
    Provider(#[from] ProviderError),
    #[error(transparent)]
    Model(#[from] ModelError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl SetupError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            SetupError::Provider(e) => e.kind,
            SetupError::Model(ModelError::UnknownModel(..) | ModelError::Manifest(_)) => ErrorKind::Settings,
            SetupError::Model(_) => ErrorKind::ModelDownload,
            SetupError::Store(_) => ErrorKind::Storage,
        }
    }
}

/// A chat model ready to use, with the offline server it runs on when it is local
/// (dropping that stops the server).
pub struct ChatParts {
    pub model: Box<dyn ChatModel>,
    pub local: Option<LocalLlm>,
}

fn nonempty(s: &Option<String>) -> Option<&str> {
    s.as_deref().map(str::trim).filter(|s| !s.is_empty())
}

impl Profile {
    /// The conversation language; `None`: automatic. An unknown code is a settings error
    /// that names it.
    pub fn language(&self) -> Result<Option<&'static Language>, ProviderError> {
        language::parse(&self.language).map_err(|e| ProviderError::new("settings", ErrorKind::Settings, e))
    }

    /// What no session can be built from, said before anything starts: an unknown
    /// language, or another language than English offline when the models manifest has
    /// no multilingual speech model (a whisper file of one's own, `whisper_model`, is
    /// taken at its word).
    pub fn check(&self) -> Result<(), ProviderError> {
        if let Some(lang) = self.language()? {
            // Moonshine speaks English only: whisper takes the other languages.
            let offline = matches!(self.stt, SttKind::Whisper | SttKind::Moonshine) && self.whisper_model.is_none();
            let no_multilingual = Manifest::load().ok().is_none_or(|m| m.multilingual_stt().is_none());
            if lang.code != "en" && offline && no_multilingual {
                return Err(ProviderError::new(
                    "settings",
                    ErrorKind::Settings,
                    format!(
                        "offline speech-to-text understands English only with these models (the manifest has \
                         no multilingual speech model): to speak {}, choose Deepgram or OpenAI for \
                         speech-to-text, or set the language to automatic",
                        lang.name
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The language model this profile means, given the keys present: the explicit choice,
    /// else an OpenAI-compatible server for a custom base URL, else a keyed provider
    /// (Anthropic first), else the offline model.
    pub fn llm(&self, kc: &Keychain) -> Llm {
        match self.llm_provider {
            LlmChoice::Anthropic => Llm::Cloud(ProviderKind::Anthropic),
            LlmChoice::OpenAi => Llm::Cloud(ProviderKind::OpenAi),
            LlmChoice::Local => Llm::Local,
            LlmChoice::Auto => {
                if nonempty(&self.llm_base_url).is_some() {
                    return Llm::Cloud(ProviderKind::OpenAi);
                }
                [ProviderKind::Anthropic, ProviderKind::OpenAi]
                    .into_iter()
                    .find(|k| kc.value(&KeySlot::official(k.as_str())).is_some())
                    .map_or(Llm::Local, Llm::Cloud)
            }
        }
    }

    /// The configuration of a cloud (or OpenAI-compatible) model: endpoint, model, reply
    /// budget, and the key that belongs to exactly that endpoint.
    pub fn llm_config(&self, kind: ProviderKind, kc: &Keychain) -> ProviderConfig {
        let mut c = ProviderConfig::new(kind);
        if let Some(url) = nonempty(&self.llm_base_url) {
            c.base_url = url.to_string();
        }
        if !self.llm_model.trim().is_empty() {
            c.model = self.llm_model.trim().to_string();
        }
        c.max_tokens = self.max_tokens;
        c.temperature = self.temperature;
        c.api_key = kc.value(&KeySlot::for_url(kind.as_str(), &c.base_url));
        c
    }

    /// The offline chat model's manifest entry.
    pub fn local_spec<'m>(&self, manifest: &'m Manifest) -> Result<&'m ModelSpec, ModelError> {
        let spec = match nonempty(&self.local_model) {
            Some(id) => manifest.find(id)?,
            None => manifest
                .default_for(ModelKind::Llm)
                .ok_or_else(|| ModelError::Manifest("the model manifest has no default chat model".into()))?,
        };
        if spec.kind != ModelKind::Llm {
            return Err(ModelError::Manifest(format!(
                "{} is a speech model, not a chat model (see `hark models list`)",
                spec.id
            )));
        }
        Ok(spec)
    }

    /// The offline speech model's manifest entry, when this profile uses the manifest's:
    /// the default (English) one, or the multilingual one for a conversation in another
    /// language than English.
    pub fn whisper_spec<'m>(&self, manifest: &'m Manifest) -> Option<&'m ModelSpec> {
        let whisper = match self.stt {
            SttKind::Whisper => true,
            SttKind::Moonshine => !self.moonshine_in_effect(manifest),
            _ => false,
        };
        if !whisper || self.whisper_model.is_some() {
            return None;
        }
        match self.language().ok().flatten() {
            Some(lang) if lang.code != "en" => manifest.multilingual_stt(),
            _ => manifest.default_for(ModelKind::Stt),
        }
    }

    /// The whisper model file this profile uses.
    pub fn whisper_path(&self, manifest: &Manifest, store: &ModelStore) -> Option<PathBuf> {
        self.whisper_model
            .clone()
            .or_else(|| self.whisper_spec(manifest).map(|s| store.path(s)))
    }

    /// The offline models this profile needs (downloaded or not), with the voice in effect
    /// on this computer.
    pub fn models_needed(&self, kc: &Keychain, manifest: &Manifest) -> Result<Vec<ModelSpec>, ModelError> {
        self.models_needed_for(kc, manifest, self.tts_in_effect(manifest))
    }

    /// The offline models this profile needs when `voice` is the voice in effect: the
    /// natural voice's files only when it will speak (issue 22: they were fetched, 150 MB,
    /// where espeak-ng was missing and the OS voice spoke anyway).
    pub fn models_needed_for(
        &self,
        kc: &Keychain,
        manifest: &Manifest,
        voice: TtsKind,
    ) -> Result<Vec<ModelSpec>, ModelError> {
        let mut want = Vec::new();
        if self.llm(kc) == Llm::Local {
            want.push(self.local_spec(manifest)?.clone());
        }
        want.extend(self.whisper_spec(manifest).cloned());
        if self.moonshine_in_effect(manifest) {
            want.extend(self.moonshine_specs(manifest)?.into_iter().cloned());
        }
        if let Some(specs) = self.voice_specs(voice, manifest) {
            want.extend(specs?.into_iter().cloned());
        }
        // Recall finds meaning with the embedding model, where the manifest pins it (a
        // manifest without it leaves recall to the words).
        if self.recall {
            if let Ok(specs) = manifest.with_requirements(crate::store::embed::MODEL.id) {
                want.extend(specs.into_iter().cloned());
            }
        }
        // ONNX Runtime runs Moonshine, the natural voice and the embedding model.
        let mut seen = std::collections::HashSet::new();
        want.retain(|m| seen.insert(m.id.clone()));
        Ok(want)
    }

    /// Whether Moonshine transcribes: chosen, for English (automatic counts: offline it
    /// means English), where the manifest has its files for this platform. Otherwise
    /// whisper does (its multilingual model for another language).
    pub fn moonshine_in_effect(&self, manifest: &Manifest) -> bool {
        self.stt == SttKind::Moonshine
            && self.language().ok().flatten().is_none_or(|l| l.code == "en")
            && self.moonshine_specs(manifest).is_ok()
    }

    /// Moonshine's decoder and what it needs (its encoder and tokenizer, ONNX Runtime for
    /// this platform), requirements first.
    pub fn moonshine_specs<'m>(&self, manifest: &'m Manifest) -> Result<Vec<&'m ModelSpec>, ModelError> {
        manifest.with_requirements(moonshine::MODEL_ID)
    }

    /// Where Moonshine's files are (whether or not they are there yet).
    pub fn moonshine_files(&self, manifest: &Manifest, store: &ModelStore) -> Result<MoonshineFiles, ModelError> {
        let specs = self.moonshine_specs(manifest)?;
        let find = |found: Option<&&ModelSpec>, what: &str| {
            found.map(|s| store.path(s)).ok_or_else(|| {
                ModelError::Manifest(format!(
                    "Moonshine's entry lacks its {what} on this platform ({})",
                    crate::models::this_platform()
                ))
            })
        };
        let by_id = |id: &str| specs.iter().find(|s| s.id == id);
        Ok(MoonshineFiles {
            encoder: find(by_id(moonshine::ENCODER_ID), "encoder")?,
            decoder: find(by_id(moonshine::MODEL_ID), "decoder")?,
            tokenizer: find(by_id(moonshine::TOKENIZER_ID), "tokenizer")?,
            runtime: find(
                specs.iter().find(|s| s.kind == ModelKind::Runtime),
                "ONNX Runtime library",
            )?,
        })
    }

    /// Where Silero VAD's files are (whether or not they are there yet): hands-free
    /// listening's model and the ONNX Runtime it runs on.
    pub fn vad_files(&self, manifest: &Manifest, store: &ModelStore) -> Result<SileroFiles, ModelError> {
        let (model, runtime) = onnx_model(
            manifest,
            store,
            vad::MODEL_ID,
            ModelKind::Vad,
            "the voice activity model",
        )?;
        Ok(SileroFiles { model, runtime })
    }

    /// Where Smart Turn's files are (hands-free's end of turn; Silero VAD's entry requires
    /// it, so fetching one fetches both).
    pub fn turn_files(&self, manifest: &Manifest, store: &ModelStore) -> Result<SmartTurnFiles, ModelError> {
        let (model, runtime) = onnx_model(
            manifest,
            store,
            turn::MODEL_ID,
            ModelKind::Turn,
            "the end-of-turn model",
        )?;
        Ok(SmartTurnFiles { model, runtime })
    }

    /// The voice engine in effect and, when it is not the one chosen, why: a natural voice
    /// (Kokoro, or the quick one, Piper) falls back to the OS voice where the manifest has
    /// none for this system, where espeak-ng (`espeak_ng`: where it was found, if it was)
    /// is missing, and for a conversation language it does not speak (Kokoro: unless a
    /// voice is named; Piper's voice speaks English only).
    pub fn voice_in_effect(&self, manifest: &Manifest, espeak_ng: Option<&std::path::Path>) -> VoiceInEffect {
        let system = |why| VoiceInEffect {
            kind: TtsKind::System,
            fallback: Some(why),
        };
        if self.kokoro_speaks_instead() {
            // No notice for the hand-over itself (the voice is offered as English, and
            // Kokoro is the natural voice it came from); one only where Kokoro cannot
            // speak the language either.
            return self.with_tts(TtsKind::Natural).voice_in_effect(manifest, espeak_ng);
        }
        let Some(specs) = self.voice_specs(self.tts, manifest) else {
            return VoiceInEffect {
                kind: self.tts,
                fallback: None,
            };
        };
        if let Err(e) = specs {
            return system(VoiceFallback::NotOnThisComputer(e.to_string()));
        }
        if espeak_ng.is_none() {
            return system(VoiceFallback::NoEspeakNg(crate::tts::espeak::install_hint(
                std::env::consts::OS,
            )));
        }
        if let Ok(Some(lang)) = self.language() {
            let speaks = match self.tts {
                TtsKind::Piper | TtsKind::Hibari => lang.code == "en",
                _ => nonempty(&self.voice).is_some() || natural::voice_for(Some(lang)).is_some(),
            };
            if !speaks {
                return system(VoiceFallback::Language(lang.name));
            }
        }
        VoiceInEffect {
            kind: self.tts,
            fallback: None,
        }
    }

    /// Whether the quick Heart voice is chosen but Kokoro, whose Heart it was distilled
    /// from, must speak: the conversation language is set to one other than English, or
    /// another of Kokoro's voices is named (`hark talk --voice af_bella`; Settings clears
    /// the voice when the engine changes).
    fn kokoro_speaks_instead(&self) -> bool {
        let other_voice = nonempty(&self.voice).is_some_and(|v| v != natural::DEFAULT_VOICE);
        self.tts == TtsKind::Hibari && (other_voice || matches!(self.language(), Ok(Some(lang)) if lang.code != "en"))
    }

    fn with_tts(&self, tts: TtsKind) -> Profile {
        Profile { tts, ..self.clone() }
    }

    /// The voice engine in effect on this computer (see [`Self::voice_in_effect`]).
    pub fn tts_in_effect(&self, manifest: &Manifest) -> TtsKind {
        self.voice_in_effect(manifest, crate::tts::espeak::find().as_deref())
            .kind
    }

    /// The natural voice's model and what it needs (its voices, ONNX Runtime for this
    /// platform), requirements first.
    pub fn natural_specs<'m>(&self, manifest: &'m Manifest) -> Result<Vec<&'m ModelSpec>, ModelError> {
        manifest.with_requirements(natural::MODEL_ID)
    }

    /// The quick natural voice's model and ONNX Runtime for this platform, requirements
    /// first.
    pub fn piper_specs<'m>(&self, manifest: &'m Manifest) -> Result<Vec<&'m ModelSpec>, ModelError> {
        manifest.with_requirements(piper::MODEL_ID)
    }

    /// The quick Heart voice's model and ONNX Runtime for this platform, requirements first.
    pub fn hibari_specs<'m>(&self, manifest: &'m Manifest) -> Result<Vec<&'m ModelSpec>, ModelError> {
        manifest.with_requirements(hibari::MODEL_ID)
    }

    /// The files an offline voice engine speaks with, requirements first; `None` for a
    /// voice that needs none of the manifest's (the OS voice, the cloud voices).
    pub fn voice_specs<'m>(
        &self,
        kind: TtsKind,
        manifest: &'m Manifest,
    ) -> Option<Result<Vec<&'m ModelSpec>, ModelError>> {
        match kind {
            TtsKind::Natural => Some(self.natural_specs(manifest)),
            TtsKind::Piper => Some(self.piper_specs(manifest)),
            TtsKind::Hibari => Some(self.hibari_specs(manifest)),
            TtsKind::System | TtsKind::Deepgram | TtsKind::OpenAi => None,
        }
    }

    /// Where the quick Heart voice's files are (whether or not they are there yet).
    pub fn hibari_files(&self, manifest: &Manifest, store: &ModelStore) -> Result<HibariFiles, ModelError> {
        let (model, runtime) = onnx_model(
            manifest,
            store,
            hibari::MODEL_ID,
            ModelKind::Tts,
            "the quick Heart voice",
        )?;
        Ok(HibariFiles { model, runtime })
    }

    /// Where the quick natural voice's files are (whether or not they are there yet).
    pub fn piper_files(&self, manifest: &Manifest, store: &ModelStore) -> Result<PiperFiles, ModelError> {
        let (model, runtime) = onnx_model(
            manifest,
            store,
            piper::MODEL_ID,
            ModelKind::Tts,
            "the quick natural voice",
        )?;
        Ok(PiperFiles { model, runtime })
    }

    /// Where the natural voice's files are (whether or not they are there yet).
    pub fn natural_files(&self, manifest: &Manifest, store: &ModelStore) -> Result<KokoroFiles, ModelError> {
        let specs = self.natural_specs(manifest)?;
        let find = |kind: ModelKind, main: bool| {
            specs
                .iter()
                .find(|s| s.kind == kind && (s.id == natural::MODEL_ID) == main)
                .map(|s| store.path(s))
                .ok_or_else(|| {
                    ModelError::Manifest(format!(
                        "the natural voice's entry lacks its {} on this platform ({})",
                        match (kind, main) {
                            (ModelKind::Runtime, _) => "ONNX Runtime library",
                            (_, true) => "model",
                            _ => "voices",
                        },
                        crate::models::this_platform()
                    ))
                })
        };
        Ok(KokoroFiles {
            model: find(ModelKind::Tts, true)?,
            voices: find(ModelKind::Tts, false)?,
            runtime: find(ModelKind::Runtime, false)?,
        })
    }

    /// The chat model: a cloud client, or the offline model's server started (its model
    /// must be in place: see [`Self::models_needed`]).
    pub async fn chat(&self, kc: &Keychain, manifest: &Manifest, models: &ModelStore) -> Result<ChatParts, SetupError> {
        match self.llm(kc) {
            Llm::Cloud(kind) => {
                let config = self.llm_config(kind, kc);
                // An OpenAI model's tokenizer table builds while the rest starts up.
                crate::tokens::warm_up(&config.model);
                Ok(ChatParts {
                    model: config.build()?,
                    local: None,
                })
            }
            Llm::Local => {
                let spec = self.local_spec(manifest)?;
                let server = LocalLlm::start(
                    &models.path(spec),
                    &spec.id,
                    local::DEFAULT_CONTEXT,
                    self.unload_after(),
                )
                .await?;
                let mut c = server.config();
                c.max_tokens = self.max_tokens;
                c.temperature = self.temperature;
                Ok(ChatParts {
                    model: c.build()?,
                    local: Some(server),
                })
            }
        }
    }

    /// How long an unused offline model stays loaded; `None`: while Hark runs.
    pub fn unload_after(&self) -> Option<std::time::Duration> {
        (self.unload_after_minutes > 0)
            .then(|| std::time::Duration::from_secs(u64::from(self.unload_after_minutes) * 60))
    }

    /// Opens a conversation on a chat model: a new one (`session: None`) with this profile's
    /// system prompt, or a stored one resumed; then the profile's reply budget, summaries,
    /// recall and tools apply. Small local models get no tools: they do not call them
    /// reliably.
    pub fn open_session(
        &self,
        store: &Arc<Store>,
        chat: ChatParts,
        session: Option<&str>,
    ) -> Result<(ChatSession, Option<LocalLlm>), SetupError> {
        let ChatParts { model, local } = chat;
        let mut s = match session {
            Some(id) => ChatSession::resume(store.clone(), id, model)?,
            None => ChatSession::create(store.clone(), model, &self.system_prompt, HistorySettings::default())?,
        };
        s.set_reply_budget(self.max_tokens);
        s.set_language(self.language()?);
        s.set_summarization(self.summarize);
        s.set_recall(self.recall);
        if self.tools && local.is_none() {
            s.set_tools(Toolbox::builtin());
        }
        if let Some(l) = &local {
            s.set_model_window(l.context_window());
            s.set_prefill(true);
        }
        Ok((s, local))
    }

    /// Deepgram's configuration, with the key for its endpoint.
    pub fn deepgram(&self, kc: &Keychain) -> DeepgramConfig {
        let mut c = DeepgramConfig::new(None);
        if let Some(url) = nonempty(&self.deepgram_base_url) {
            c.base_url = url.to_string();
        }
        c.api_key = kc.value(&KeySlot::for_url("deepgram", &c.base_url));
        c
    }

    /// OpenAI speech's configuration (`model`: the speech or transcription model), with the
    /// key for its endpoint.
    pub fn openai_speech(&self, kc: &Keychain, model: &str) -> ProviderConfig {
        let mut c = ProviderConfig::new(ProviderKind::OpenAi);
        if let Some(url) = nonempty(&self.speech_base_url) {
            c.base_url = url.to_string();
        }
        c.api_key = kc.value(&KeySlot::for_url("openai", &c.base_url));
        c.model = model.to_string();
        c
    }

    /// The speech-to-text engine (the offline one needs its model file in place), told the conversation language: Deepgram's `language`
    /// (its multilingual model, `multi`, when automatic), OpenAI's `language` field
    /// (absent when automatic), whisper's (English-only models refuse others).
    pub fn transcriber(&self, kc: &Keychain) -> Result<Arc<dyn Transcriber>, ProviderError> {
        self.check()?;
        let lang = self.language()?;
        let deepgram = || {
            let mut c = self.deepgram(kc);
            c.language = lang.map_or("multi", |l| l.code).to_string();
            c
        };
        Ok(match self.stt {
            SttKind::Deepgram => Arc::new(DeepgramStt::new(deepgram(), true)?),
            SttKind::DeepgramPrerecorded => Arc::new(DeepgramStt::new(deepgram(), false)?),
            SttKind::OpenAi => {
                Arc::new(OpenAiStt::new(self.openai_speech(kc, OPENAI_STT_MODEL))?.with_language(lang.map(|l| l.code)))
            }
            SttKind::Whisper => self.whisper(lang)?,
            SttKind::Moonshine => self.moonshine(lang)?,
        })
    }

    /// Moonshine (its files must be in place: see [`Self::models_needed`]); whisper where
    /// Moonshine is not in effect (another language, no files for this platform).
    fn moonshine(&self, lang: Option<&'static Language>) -> Result<Arc<dyn Transcriber>, ProviderError> {
        let manifest =
            Manifest::load().map_err(|e| ProviderError::new("moonshine", ErrorKind::Settings, e.to_string()))?;
        if !self.moonshine_in_effect(&manifest) {
            tracing::info!(
                "Moonshine speaks English only and needs ONNX Runtime for {}: transcribing with whisper",
                crate::models::this_platform()
            );
            return self.whisper(lang);
        }
        let files = self
            .moonshine_files(&manifest, &ModelStore::default_dir())
            .map_err(|e| ProviderError::new("moonshine", ErrorKind::LocalEngine, e.to_string()))?;
        let stt = MoonshineStt::new(files)?;
        stt.set_unload_after(self.unload_after());
        Ok(Arc::new(stt))
    }

    #[cfg(feature = "whisper")]
    fn whisper(&self, lang: Option<&'static Language>) -> Result<Arc<dyn Transcriber>, ProviderError> {
        let manifest =
            Manifest::load().map_err(|e| ProviderError::new("whisper", ErrorKind::Settings, e.to_string()))?;
        let path = self
            .whisper_path(&manifest, &ModelStore::default_dir())
            .ok_or_else(|| {
                ProviderError::new(
                    "whisper",
                    ErrorKind::LocalEngine,
                    "the model manifest has no speech model",
                )
            })?;
        let whisper = crate::stt::whisper::WhisperStt::load(&path)?;
        whisper.set_unload_after(self.unload_after());
        whisper.set_language(lang.map(|l| l.code));
        Ok(Arc::new(whisper))
    }

    #[cfg(not(feature = "whisper"))]
    fn whisper(&self, _lang: Option<&'static Language>) -> Result<Arc<dyn Transcriber>, ProviderError> {
        Err(ProviderError::new(
            "whisper",
            ErrorKind::LocalEngine,
            "this build has no offline speech engine (built without the `whisper` feature): use deepgram or openai",
        ))
    }

    /// The manifest for an offline voice of `provider` (Kokoro or Piper), or `None` where
    /// the OS voice speaks instead. Their phonemes come from espeak-ng (installed with Hark's
    /// Linux packages; on macOS and Windows only if the user installed it). The callers show
    /// why the OS voice speaks (`voice_in_effect`); here it is logged.
    fn offline_voice_manifest(&self, provider: &'static str) -> Result<Option<Manifest>, ProviderError> {
        let manifest =
            Manifest::load().map_err(|e| ProviderError::new(provider, ErrorKind::Settings, e.to_string()))?;
        let effect = self.voice_in_effect(&manifest, crate::tts::espeak::find().as_deref());
        if let Some(why) = effect.fallback {
            tracing::warn!("{why}");
            return Ok(None);
        }
        Ok(Some(manifest))
    }

    /// The voice: the one named, else the engine's default for the conversation language
    /// (OpenAI's voices speak whatever language the text is in).
    pub fn synthesizer(&self, kc: &Keychain) -> Result<Arc<dyn Synthesizer>, ProviderError> {
        let voice = nonempty(&self.voice).map(str::to_string);
        let lang = self.language()?;
        let system = |voice| {
            Arc::new(SystemVoice {
                voice,
                rate_wpm: None,
                language: lang,
            })
        };
        Ok(match self.tts {
            TtsKind::System => system(voice),
            TtsKind::Natural => {
                let Some(manifest) = self.offline_voice_manifest("natural")? else {
                    return Ok(system(None));
                };
                // A named voice, else the natural voice of the conversation language (which
                // `voice_in_effect` found).
                let id = match (&voice, natural::voice_for(lang)) {
                    (Some(v), _) => v.clone(),
                    (None, Some(v)) => v.id.to_string(),
                    (None, None) => return Ok(system(None)),
                };
                let files = self
                    .natural_files(&manifest, &ModelStore::default_dir())
                    .map_err(|e| ProviderError::new("natural", ErrorKind::LocalEngine, e.to_string()))?;
                all_there(
                    "natural",
                    "the natural voice",
                    "kokoro-82m",
                    &[&files.model, &files.voices, &files.runtime],
                )?;
                let v = NaturalVoice::new(files, Some(&id))?;
                v.set_unload_after(self.unload_after());
                v.warm_up();
                Arc::new(v)
            }
            TtsKind::Piper => match self.offline_voice_manifest("piper")? {
                None => system(None),
                Some(m) => {
                    self.quick_voice::<Piper>(self.piper_files(&m, &ModelStore::default_dir()), piper::MODEL_ID)?
                }
            },
            TtsKind::Hibari if self.kokoro_speaks_instead() => {
                return self.with_tts(TtsKind::Natural).synthesizer(kc);
            }
            TtsKind::Hibari => match self.offline_voice_manifest("hibari")? {
                None => system(None),
                Some(m) => {
                    self.quick_voice::<Hibari>(self.hibari_files(&m, &ModelStore::default_dir()), hibari::MODEL_ID)?
                }
            },
            TtsKind::Deepgram => Arc::new(DeepgramTts::new(
                self.deepgram(kc),
                voice.unwrap_or_else(|| language::deepgram_voice(lang).unwrap_or(DEEPGRAM_TTS_VOICE).into()),
            )?),
            TtsKind::OpenAi => Arc::new(OpenAiTts::new(
                self.openai_speech(kc, OPENAI_TTS_MODEL),
                voice.unwrap_or_else(|| OPENAI_TTS_VOICE.into()),
            )?),
        })
    }
}

impl Profile {
    /// A quick voice (`M`: Piper's Joe or the quick Heart voice) from its files, which must
    /// be in place (the manifest's `id` fetches them), loading in the background.
    fn quick_voice<M: PhonemeModel>(
        &self,
        files: Result<VoiceFiles, ModelError>,
        id: &str,
    ) -> Result<Arc<dyn Synthesizer>, ProviderError> {
        let files = files.map_err(|e| ProviderError::new(M::PROVIDER, ErrorKind::LocalEngine, e.to_string()))?;
        all_there(
            M::PROVIDER,
            &format!("the {}", M::WHAT),
            id,
            &[&files.model, &files.runtime],
        )?;
        let v = QuickVoice::<M>::new(files)?;
        v.set_unload_after(self.unload_after());
        v.warm_up();
        Ok(Arc::new(v))
    }
}

/// An error of `provider` naming the first of `files` that is not there and the fetch of
/// `id` that brings it (`what`: "the natural voice").
fn all_there(provider: &'static str, what: &str, id: &str, files: &[&PathBuf]) -> Result<(), ProviderError> {
    match files.iter().find(|f| !f.exists()) {
        Some(f) => Err(ProviderError::new(
            provider,
            ErrorKind::LocalEngine,
            format!(
                "{what}'s file {} is not there: fetch it with `hark models fetch {id}`",
                f.display()
            ),
        )),
        None => Ok(()),
    }
}

/// The file of the `kind` model `id` and of the ONNX Runtime library it requires, from the
/// manifest's entries for this platform (whether or not they are there yet); `what` names
/// the model in errors.
fn onnx_model(
    manifest: &Manifest,
    store: &ModelStore,
    id: &str,
    kind: ModelKind,
    what: &str,
) -> Result<(PathBuf, PathBuf), ModelError> {
    let specs = manifest.with_requirements(id)?;
    let find = |kind: ModelKind, part: &str| {
        specs
            .iter()
            .find(|s| s.kind == kind)
            .map(|s| store.path(s))
            .ok_or_else(|| {
                ModelError::Manifest(format!(
                    "{what}'s entry lacks its {part} on this platform ({})",
                    crate::models::this_platform()
                ))
            })
    };
    Ok((find(kind, "model")?, find(ModelKind::Runtime, "ONNX Runtime library")?))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where espeak-ng was found, for the tests that need it found (the path is not run).
    fn espeak() -> Option<&'static std::path::Path> {
        Some(std::path::Path::new("/opt/homebrew/bin/espeak-ng"))
    }

    #[test]
    fn the_natural_voice_falls_back_to_the_os_voice_where_the_manifest_has_none() {
        let p = Profile {
            tts: TtsKind::Natural,
            ..Profile::default()
        };
        let linux = Manifest::parse(crate::models::MANIFEST_JSON)
            .unwrap()
            .for_platform("linux-x86_64");
        let effect = p.voice_in_effect(&linux, espeak());
        assert_eq!((effect.kind, effect.fallback), (TtsKind::Natural, None));
        let kc = Keychain::with_service(format!("hark-assembly-natural-{}", std::process::id()));
        let needed: Vec<String> = Profile {
            llm_provider: LlmChoice::Local,
            ..p.clone()
        }
        .models_needed_for(&kc, &linux, TtsKind::Natural)
        .unwrap()
        .into_iter()
        .map(|m| m.id)
        .collect();
        assert_eq!(
            needed,
            [
                "qwen2.5-coder-1.5b",
                "onnxruntime",
                "moonshine-tiny-encoder",
                "moonshine-tiny-tokenizer",
                "moonshine-tiny",
                "kokoro-voices",
                "kokoro-82m",
                "minilm-l6-tokenizer",
                "minilm-l6"
            ]
        );
        // No ONNX Runtime pinned for this platform: the OS voice, and nothing to fetch for it.
        let elsewhere = Manifest::parse(crate::models::MANIFEST_JSON)
            .unwrap()
            .for_platform("freebsd-x86_64");
        let effect = p.voice_in_effect(&elsewhere, espeak());
        assert_eq!(effect.kind, TtsKind::System);
        assert!(
            matches!(&effect.fallback, Some(VoiceFallback::NotOnThisComputer(why)) if why.contains("onnxruntime")),
            "{:?}",
            effect.fallback
        );
        let needed = p.models_needed_for(&kc, &elsewhere, effect.kind).unwrap();
        assert!(needed.iter().all(|m| m.kind != ModelKind::Tts), "{needed:?}");
        // A voice chosen explicitly stays, with nothing to explain.
        let os = Profile {
            tts: TtsKind::System,
            ..Profile::default()
        };
        assert_eq!(
            os.voice_in_effect(&linux, None),
            VoiceInEffect {
                kind: TtsKind::System,
                fallback: None
            }
        );
    }

    /// Issue 22: the natural voice's 150 MB were fetched where espeak-ng was missing, and
    /// then the OS voice spoke without a word. Now espeak-ng is looked for first: without
    /// it nothing is fetched for the natural voice, and the reason says how to get it.
    #[test]
    fn without_espeak_ng_the_natural_voice_is_not_fetched_and_the_reason_is_given() {
        let p = Profile::default();
        let kc = Keychain::with_service(format!("hark-assembly-espeak-{}", std::process::id()));
        for platform in ["linux-x86_64", "macos-aarch64", "windows-x86_64"] {
            let m = Manifest::parse(crate::models::MANIFEST_JSON)
                .unwrap()
                .for_platform(platform);
            let effect = p.voice_in_effect(&m, None);
            assert_eq!(effect.kind, TtsKind::System, "{platform}");
            let why = effect.fallback.expect("a reason to show");
            assert!(matches!(why, VoiceFallback::NoEspeakNg(_)), "{platform}: {why:?}");
            let text = why.to_string();
            assert!(
                text.contains("espeak-ng is not installed") && text.contains("system voice"),
                "{text}"
            );
            let needed = p.models_needed_for(&kc, &m, effect.kind).unwrap();
            // ONNX Runtime only for Moonshine, the default speech-to-text, where it runs.
            assert!(
                needed
                    .iter()
                    .all(|s| s.kind != ModelKind::Tts && (s.kind != ModelKind::Runtime || p.moonshine_in_effect(&m))),
                "{platform}: {needed:?}"
            );
            // Found: the default voice (the quick Heart voice), and its files are fetched.
            let effect = p.voice_in_effect(&m, espeak());
            assert_eq!(effect.kind, TtsKind::Hibari, "{platform}");
            let needed = p.models_needed_for(&kc, &m, effect.kind).unwrap();
            assert!(needed.iter().any(|s| s.id == hibari::MODEL_ID), "{platform}");
        }
        assert!(crate::tts::espeak::install_hint("macos").contains("brew install espeak-ng"));
    }

    /// ONNX Runtime's macOS library is built for macOS 14; on 11 to 13 it does not load, and
    /// every reply failed (issue 22). There the manifest has no natural voice, so the OS voice
    /// speaks, and says why.
    #[test]
    fn on_macos_before_14_the_natural_voice_gives_way_to_the_os_voice() {
        let m = Manifest::parse(crate::models::MANIFEST_JSON)
            .unwrap()
            .for_platform("macos-aarch64");
        let old = m.clone().for_os_version(Some("13.6"));
        let effect = Profile::default().voice_in_effect(&old, espeak());
        assert_eq!(effect.kind, TtsKind::System);
        assert!(matches!(effect.fallback, Some(VoiceFallback::NotOnThisComputer(_))));
        let new = m.for_os_version(Some("14.2"));
        assert_eq!(Profile::default().voice_in_effect(&new, espeak()).kind, TtsKind::Hibari);
    }

    /// The default voice is the quick Heart voice (issue 20): in English, or with the
    /// language left to be detected, it speaks and only its files are fetched (a 14 MB
    /// download, not Kokoro's 90 MB); in another language Kokoro, whose Heart it is, speaks,
    /// with nothing to explain (and its files are fetched then).
    #[test]
    fn the_default_voice_is_the_quick_heart_voice_and_kokoro_speaks_the_other_languages() {
        let m = Manifest::parse(crate::models::MANIFEST_JSON)
            .unwrap()
            .for_platform("linux-x86_64");
        let kc = Keychain::with_service(format!("hark-assembly-hibari-{}", std::process::id()));
        for language in [language::AUTO, "en"] {
            let p = Profile {
                language: language.into(),
                ..Profile::default()
            };
            assert_eq!(
                p.voice_in_effect(&m, espeak()),
                VoiceInEffect {
                    kind: TtsKind::Hibari,
                    fallback: None
                },
                "{language}"
            );
            let needed: Vec<String> = p
                .models_needed_for(&kc, &m, TtsKind::Hibari)
                .unwrap()
                .into_iter()
                .map(|s| s.id)
                .collect();
            assert!(needed.contains(&hibari::MODEL_ID.to_string()), "{needed:?}");
            assert!(needed.contains(&"onnxruntime".to_string()), "{needed:?}");
            assert!(!needed.iter().any(|id| id.starts_with("kokoro")), "{needed:?}");
        }
        let files = Profile::default()
            .hibari_files(&m, &ModelStore::new(PathBuf::from("/models")))
            .unwrap();
        assert!(files.model.ends_with("hibari-heart.onnx"), "{files:?}");
        let spanish = Profile {
            language: "es".into(),
            ..Profile::default()
        };
        assert_eq!(
            spanish.voice_in_effect(&m, espeak()),
            VoiceInEffect {
                kind: TtsKind::Natural,
                fallback: None
            }
        );
        assert!(spanish
            .models_needed_for(&kc, &m, TtsKind::Natural)
            .unwrap()
            .iter()
            .any(|s| s.id == natural::MODEL_ID));
        // Another of Kokoro's voices named: Kokoro speaks it; the Heart named: the quick one.
        for (voice, kind) in [("af_bella", TtsKind::Natural), ("af_heart", TtsKind::Hibari)] {
            let named = Profile {
                voice: Some(voice.into()),
                ..Profile::default()
            };
            assert_eq!(named.voice_in_effect(&m, espeak()).kind, kind, "{voice}");
        }
        // Where Kokoro has no voice for the language either, the OS voice, and why.
        let german = Profile {
            language: "de".into(),
            ..Profile::default()
        };
        let effect = german.voice_in_effect(&m, espeak());
        assert_eq!(effect.kind, TtsKind::System);
        assert_eq!(effect.fallback, Some(VoiceFallback::Language("German")));
        // And without espeak-ng, which makes its phonemes too, the OS voice, and why.
        assert!(matches!(
            Profile::default().voice_in_effect(&m, None).fallback,
            Some(VoiceFallback::NoEspeakNg(_))
        ));
    }

    #[test]
    fn a_language_kokoro_does_not_speak_gets_the_os_voice_unless_a_voice_is_named() {
        let m = Manifest::parse(crate::models::MANIFEST_JSON)
            .unwrap()
            .for_platform("linux-x86_64");
        let german = Profile {
            language: "de".into(),
            ..Profile::default()
        };
        let effect = german.voice_in_effect(&m, espeak());
        assert_eq!(effect.kind, TtsKind::System);
        assert_eq!(effect.fallback, Some(VoiceFallback::Language("German")));
        let spanish = Profile {
            language: "es".into(),
            ..Profile::default()
        };
        assert_eq!(spanish.voice_in_effect(&m, espeak()).kind, TtsKind::Natural);
        let named = Profile {
            voice: Some("af_heart".into()),
            ..german
        };
        assert_eq!(named.voice_in_effect(&m, espeak()).kind, TtsKind::Natural);
    }

    /// The quick natural voice (Piper) speaks English: its model and ONNX Runtime are
    /// fetched only when it speaks; another language, a missing espeak-ng or a manifest
    /// without it for this system give the OS voice, with the reason.
    #[test]
    fn the_quick_natural_voice_speaks_english_and_says_why_when_it_cannot() {
        let m = Manifest::parse(crate::models::MANIFEST_JSON)
            .unwrap()
            .for_platform("linux-x86_64");
        let quick = Profile {
            tts: TtsKind::Piper,
            llm_provider: LlmChoice::Local,
            ..Profile::default()
        };
        let effect = quick.voice_in_effect(&m, espeak());
        assert_eq!((effect.kind, effect.fallback), (TtsKind::Piper, None));
        let kc = Keychain::with_service(format!("hark-assembly-piper-{}", std::process::id()));
        let ids = |voice| -> Vec<String> {
            quick
                .models_needed_for(&kc, &m, voice)
                .unwrap()
                .into_iter()
                .map(|s| s.id)
                .collect()
        };
        let needed = ids(TtsKind::Piper);
        assert!(needed.contains(&piper::MODEL_ID.to_string()), "{needed:?}");
        assert!(needed.contains(&"onnxruntime".to_string()), "{needed:?}");
        assert!(!needed.iter().any(|id| id.starts_with("kokoro")), "{needed:?}");
        assert!(!ids(TtsKind::System).contains(&piper::MODEL_ID.to_string()));
        let files = quick
            .piper_files(&m, &ModelStore::new(PathBuf::from("/models")))
            .unwrap();
        assert!(files.model.ends_with("en_US-joe-medium.onnx"), "{files:?}");

        let german = Profile {
            language: "de".into(),
            ..quick.clone()
        };
        let effect = german.voice_in_effect(&m, espeak());
        assert_eq!(effect.kind, TtsKind::System);
        assert_eq!(effect.fallback, Some(VoiceFallback::Language("German")));
        let english = Profile {
            language: "en".into(),
            ..quick.clone()
        };
        assert_eq!(english.voice_in_effect(&m, espeak()).kind, TtsKind::Piper);
        assert!(matches!(
            quick.voice_in_effect(&m, None).fallback,
            Some(VoiceFallback::NoEspeakNg(_))
        ));
        let elsewhere = Manifest::parse(crate::models::MANIFEST_JSON)
            .unwrap()
            .for_platform("freebsd-riscv64");
        assert!(matches!(
            quick.voice_in_effect(&elsewhere, espeak()).fallback,
            Some(VoiceFallback::NotOnThisComputer(_))
        ));
    }

    #[test]
    fn automatic_picks_a_base_url_server_else_a_keyed_provider_else_offline() {
        // A keychain service nobody uses: no keys stored; the test environment sets none.
        let kc = Keychain::with_service(format!("hark-assembly-test-{}", std::process::id()));
        let mut p = Profile::default();
        if std::env::var_os("ANTHROPIC_API_KEY").is_none() && std::env::var_os("OPENAI_API_KEY").is_none() {
            assert_eq!(p.llm(&kc), Llm::Local, "no key at all: offline");
        }
        p.llm_base_url = Some("http://127.0.0.1:11434/v1".into());
        assert_eq!(p.llm(&kc), Llm::Cloud(ProviderKind::OpenAi));
        p.llm_provider = LlmChoice::Local;
        assert_eq!(p.llm(&kc), Llm::Local);
    }

    #[test]
    fn settings_files_from_before_the_typed_engines_still_read() {
        let p: Profile = serde_json::from_str(
            r#"{"llm_provider": "openai", "llm_model": "gpt-4o", "stt": "deepgram-prerecorded", "tts": "os"}"#,
        )
        .unwrap();
        assert_eq!(p.llm_provider, LlmChoice::OpenAi);
        assert_eq!(p.stt, SttKind::DeepgramPrerecorded);
        assert_eq!(p.tts, TtsKind::System);
        assert_eq!(p.max_tokens, DEFAULT_REPLY_BUDGET, "absent fields take their defaults");
        assert_eq!(
            Profile::default().tts,
            TtsKind::Hibari,
            "the quick Heart voice is the default"
        );
        assert!(serde_json::from_str::<Profile>(r#"{"stt": "carrier-pigeon"}"#).is_err());
    }

    #[test]
    fn another_language_offline_takes_the_multilingual_speech_model_and_unknown_ones_are_refused() {
        let m = Manifest::builtin();
        // The default engine, Moonshine, hands another language to whisper's multilingual model.
        let mut p = Profile::default();
        assert!(p.whisper_spec(&m).is_none(), "automatic: English offline, by Moonshine");
        p.language = "de".into();
        assert_eq!(p.whisper_spec(&m).unwrap().id, "whisper-base");
        let mut p = Profile {
            stt: SttKind::Whisper,
            ..Profile::default()
        };
        assert_eq!(p.language, "auto");
        assert!(p.check().is_ok());
        assert_eq!(
            p.whisper_spec(&m).unwrap().id,
            "whisper-tiny.en",
            "automatic: English offline"
        );
        p.language = "de".into();
        assert!(p.check().is_ok());
        let spec = p.whisper_spec(&m).unwrap();
        assert!(spec.multilingual && spec.id == "whisper-base", "{}", spec.id);
        p.language = "en".into();
        assert_eq!(p.whisper_spec(&m).unwrap().id, "whisper-tiny.en");
        p.language = "xx".into();
        let e = p.check().unwrap_err();
        assert_eq!(e.kind, ErrorKind::Settings);
        assert!(e.message.contains("\"xx\""), "{e}");
        p.language = "de".into();
        p.stt = SttKind::OpenAi;
        assert!(
            p.whisper_spec(&m).is_none(),
            "a cloud transcriber needs no speech model"
        );
    }

    #[test]
    fn moonshine_transcribes_english_and_whisper_the_other_languages() {
        let linux = Manifest::parse(crate::models::MANIFEST_JSON)
            .unwrap()
            .for_platform("linux-x86_64");
        let kc = Keychain::with_service(format!("hark-assembly-moonshine-{}", std::process::id()));
        let mut p = Profile {
            llm_provider: LlmChoice::Anthropic,
            stt: SttKind::Moonshine,
            tts: TtsKind::System,
            ..Profile::default()
        };
        let ids = |p: &Profile, m: &Manifest| -> Vec<String> {
            p.models_needed(&kc, m).unwrap().into_iter().map(|m| m.id).collect()
        };
        assert!(p.moonshine_in_effect(&linux), "automatic means English offline");
        assert!(p.whisper_spec(&linux).is_none());
        assert_eq!(
            ids(&p, &linux),
            [
                "onnxruntime",
                "moonshine-tiny-encoder",
                "moonshine-tiny-tokenizer",
                "moonshine-tiny",
                "minilm-l6-tokenizer",
                "minilm-l6"
            ]
        );
        // With the natural voice, ONNX Runtime is fetched once for all three.
        p.tts = TtsKind::Natural;
        assert_eq!(
            ids(&p, &linux),
            [
                "onnxruntime",
                "moonshine-tiny-encoder",
                "moonshine-tiny-tokenizer",
                "moonshine-tiny",
                "kokoro-voices",
                "kokoro-82m",
                "minilm-l6-tokenizer",
                "minilm-l6"
            ]
        );
        // Without recall, no embedding model.
        p.recall = false;
        assert!(!ids(&p, &linux).iter().any(|id| id.starts_with("minilm")));
        p.recall = true;
        let files = p.moonshine_files(&linux, &ModelStore::new("/m")).unwrap();
        assert_eq!(files.encoder, PathBuf::from("/m/moonshine-tiny-encoder.onnx"));
        assert_eq!(files.decoder, PathBuf::from("/m/moonshine-tiny-decoder.onnx"));
        assert_eq!(files.tokenizer, PathBuf::from("/m/moonshine-tiny-tokenizer.json"));
        assert_eq!(files.runtime, PathBuf::from("/m/libonnxruntime.so.1.32.0"));
        // Another language: whisper's multilingual model.
        p.language = "de".into();
        assert!(!p.moonshine_in_effect(&linux));
        assert_eq!(p.whisper_spec(&linux).unwrap().id, "whisper-base");
        assert!(p.check().is_ok());
        // No ONNX Runtime pinned for the platform: whisper, as for the natural voice.
        p.language = "en".into();
        let elsewhere = Manifest::parse(crate::models::MANIFEST_JSON)
            .unwrap()
            .for_platform("freebsd-x86_64");
        assert!(!p.moonshine_in_effect(&elsewhere));
        assert_eq!(p.whisper_spec(&elsewhere).unwrap().id, "whisper-tiny.en");
        // Settings and the command line name it "moonshine", and it is the default (a
        // settings file without "stt" gets it too; one that names whisper keeps whisper).
        let read: Profile = serde_json::from_str(r#"{"stt": "moonshine"}"#).unwrap();
        assert_eq!(read.stt, SttKind::Moonshine);
        assert_eq!("moonshine".parse::<SttKind>(), Ok(SttKind::Moonshine));
        assert_eq!(Profile::default().stt, SttKind::Moonshine);
        let unset: Profile = serde_json::from_str("{}").unwrap();
        assert_eq!(unset.stt, SttKind::Moonshine);
        let kept: Profile = serde_json::from_str(r#"{"stt": "whisper"}"#).unwrap();
        assert_eq!(kept.stt, SttKind::Whisper);
    }

    #[test]
    fn a_custom_endpoint_gets_its_own_key_slot() {
        let kc = Keychain::with_service(format!("hark-assembly-test-{}", std::process::id()));
        let p = Profile {
            llm_base_url: Some("https://openrouter.ai/api/v1".into()),
            ..Default::default()
        };
        let c = p.llm_config(ProviderKind::OpenAi, &kc);
        assert_eq!(c.base_url, "https://openrouter.ai/api/v1");
        assert_eq!(c.model, ProviderKind::OpenAi.default_model());
    }
}
