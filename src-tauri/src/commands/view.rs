//! What the window is shown: the snapshot it starts from, the options Settings offers and
//! where each key stands. Both `app` and `settings` return it, so it sits below both.

use hark_core::assembly::{LlmChoice, DEEPGRAM_TTS_VOICE, OPENAI_TTS_VOICE};
use hark_core::conversation::PanelView;
use hark_core::language;
use hark_core::models::{Manifest, ModelKind, ModelStore};
use hark_core::secrets::{self, KeySlot, KeySource};
use hark_core::stt::SttKind;
use hark_core::tts::TtsKind;
use serde::Serialize;

use crate::error::CommandError;
use crate::events::{Download, Status};
use crate::settings::{AppSettings, LogLevel, Theme};
use crate::shortcut::{label, Platform};
use crate::state::{lock, AppState};

/// Everything a window shows, as it is now.
#[derive(Debug, Clone, Serialize, specta::Type)]
pub struct Snapshot {
    /// The number of the last event sent before this was read (see [`crate::events::Numbered`]):
    /// everything here is at least as new as that event.
    pub seq: u64,
    pub settings: AppSettings,
    pub keys: Vec<KeyStatus>,
    pub session_id: Option<String>,
    pub panel: Option<Box<PanelView>>,
    pub status: Status,
    /// Banners that still stand (setup problems).
    pub problems: Vec<CommandError>,
    /// The model download in progress, if any.
    pub download: Option<Download>,
    /// The push-to-talk shortcut as this platform writes it (`Ctrl+Shift+Space`, `⌘⇧Space`).
    pub shortcut_label: String,
    /// The desktop gives Hark no global shortcut: what to bind instead (issue 48).
    pub no_global_shortcuts: Option<crate::events::NoGlobalShortcuts>,
    /// "linux", "macos" or "windows".
    pub platform: String,
    /// The UI language in effect: the setting, else the system's (`i18n::resolve`).
    pub ui_language: String,
    /// Where the log files are.
    pub log_dir: String,
    /// Whether this build can look for updates.
    pub updates: bool,
    /// Show the introduction (first run, or asked for again).
    pub onboarding: bool,
    /// The options Settings offers.
    pub choices: Choices,
}

pub async fn snapshot(state: &AppState) -> Snapshot {
    // Read first: what is read after it is at least as new as its last event.
    let latest = state.latest();
    let settings = state.settings();
    let session_id = state.runtime.lock().await.as_ref().map(|r| r.session_id.clone());
    Snapshot {
        seq: latest.seq,
        keys: key_statuses(state, &settings),
        shortcut_label: lock(&state.assigned_shortcut)
            .clone()
            .unwrap_or_else(|| label(&settings.shortcut, Platform::current())),
        no_global_shortcuts: lock(&state.no_global_shortcuts).clone(),
        onboarding: !settings.onboarded && !matches!(state.status(), Status::Fatal { .. }),
        session_id,
        panel: latest.panel,
        status: state.status(),
        problems: latest.problems,
        download: latest.download,
        platform: std::env::consts::OS.into(),
        ui_language: crate::i18n::resolve(settings.ui_language.as_deref()).into(),
        log_dir: state.logs.dir().display().to_string(),
        updates: crate::update::configured(),
        choices: choices(),
        settings,
    }
}

/// A key's place (a provider at an endpoint), whether a key is there and where from.
/// Never the key itself.
#[derive(Debug, Clone, Serialize, specta::Type)]
pub struct KeyStatus {
    pub provider: String,
    /// The base URL the key belongs to; `None`: the provider's official endpoint.
    pub endpoint: Option<String>,
    /// How Settings names the slot ("OpenAI (official)", "OpenAI-compatible at …").
    pub label: String,
    pub present: bool,
    pub source: Option<KeySource>,
    /// Why the keychain could not be asked, if it could not.
    pub error: Option<String>,
}

fn provider_name(p: &str) -> &'static str {
    match p {
        "anthropic" => "Anthropic",
        "openai" => "OpenAI",
        "deepgram" => "Deepgram",
        _ => "Provider",
    }
}

/// The key slots these settings use: every provider's official endpoint, and the custom
/// endpoints the settings point at.
pub fn slots(s: &AppSettings) -> Vec<KeySlot> {
    let p = &s.profile;
    let mut out: Vec<KeySlot> = secrets::PROVIDERS.iter().map(|p| KeySlot::official(p)).collect();
    let llm = match p.llm_provider {
        LlmChoice::Anthropic => Some("anthropic"),
        LlmChoice::OpenAi | LlmChoice::Auto => Some("openai"),
        LlmChoice::Local => None,
    };
    let custom = [
        (llm, p.llm_base_url.as_deref()),
        (Some("openai"), p.speech_base_url.as_deref()),
        (Some("deepgram"), p.deepgram_base_url.as_deref()),
    ];
    for (provider, url) in custom {
        if let (Some(provider), Some(url)) = (provider, url.map(str::trim).filter(|u| !u.is_empty())) {
            let slot = KeySlot::for_url(provider, url);
            if !out.contains(&slot) {
                out.push(slot);
            }
        }
    }
    out
}

pub fn key_statuses(state: &AppState, s: &AppSettings) -> Vec<KeyStatus> {
    slots(s)
        .into_iter()
        .map(|slot| {
            let label = match &slot.endpoint {
                None => format!("{} (official endpoint)", provider_name(&slot.provider)),
                Some(e) => format!("{} at {e}", provider_name(&slot.provider)),
            };
            let (present, source, error) = match state.keychain.get(&slot) {
                Ok(k) => (k.is_some(), k.map(|(_, s)| s), None),
                Err(e) => (false, None, Some(e.to_string())),
            };
            KeyStatus {
                provider: slot.provider,
                endpoint: slot.endpoint,
                label,
                present,
                source,
                error,
            }
        })
        .collect()
}

/// One option of a choice list.
#[derive(Debug, Clone, Serialize, specta::Type)]
pub struct Choice {
    pub value: String,
    pub label: String,
}

fn choice(value: impl Serialize, label: &str) -> Choice {
    Choice {
        value: serde_json::to_value(value)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default(),
        label: label.into(),
    }
}

/// An offline model, for the model choices.
#[derive(Debug, Clone, Serialize, specta::Type)]
pub struct ModelChoice {
    pub id: String,
    pub label: String,
    pub download_mb: u32,
    pub ready: bool,
    pub default: bool,
}

/// What Settings offers.
#[derive(Debug, Clone, Serialize, specta::Type)]
pub struct Choices {
    pub llm_providers: Vec<Choice>,
    pub local_models: Vec<ModelChoice>,
    pub stt: Vec<Choice>,
    pub tts: Vec<Choice>,
    pub themes: Vec<Choice>,
    pub log_levels: Vec<Choice>,
    /// The default voice of each cloud engine (the field's placeholder).
    pub default_voices: Vec<Choice>,
    /// What "everything on this computer" downloads: the default chat and speech models.
    pub offline_models: Vec<ModelChoice>,
    /// The conversation languages: automatic first.
    pub languages: Vec<Choice>,
    /// The natural voice's voices (Kokoro's, those Hark can phonemise).
    pub natural_voices: Vec<Choice>,
}

pub fn choices() -> Choices {
    let manifest = Manifest::load().unwrap_or_else(|_| Manifest::builtin());
    let store = ModelStore::default_dir();
    let model_choice = |m: &hark_core::models::ModelSpec| ModelChoice {
        id: m.id.clone(),
        label: m.label.clone(),
        download_mb: (m.download_size() / 1_000_000) as u32,
        ready: store.is_ready(m),
        default: m.default,
    };
    // The offline voice's files count when it is in effect for the default settings.
    let default = hark_core::assembly::Profile::default();
    let voice_files = default
        .voice_specs(default.tts_in_effect(&manifest), &manifest)
        .and_then(Result::ok)
        .unwrap_or_default();
    Choices {
        offline_models: [ModelKind::Llm, ModelKind::Stt]
            .into_iter()
            .filter_map(|k| manifest.default_for(k))
            .chain(voice_files)
            .map(model_choice)
            .collect(),
        llm_providers: vec![
            choice(LlmChoice::Auto, "Automatic (a provider with a key, else offline)"),
            choice(LlmChoice::Anthropic, "Anthropic"),
            choice(LlmChoice::OpenAi, "OpenAI-compatible"),
            choice(LlmChoice::Local, "Offline (on this computer)"),
        ],
        local_models: manifest
            .models
            .iter()
            .filter(|m| m.kind == ModelKind::Llm)
            .map(model_choice)
            .collect(),
        stt: vec![
            choice(
                SttKind::Moonshine,
                "Offline, words while you speak (Moonshine; whisper for other languages)",
            ),
            choice(SttKind::Whisper, "Offline (whisper, words after you speak)"),
            choice(SttKind::Deepgram, "Deepgram live"),
            choice(SttKind::DeepgramPrerecorded, "Deepgram prerecorded"),
            choice(SttKind::OpenAi, "OpenAI"),
        ],
        tts: vec![
            choice(
                TtsKind::Hibari,
                "Quick Heart voice (offline, English; Kokoro's Heart distilled)",
            ),
            choice(TtsKind::Natural, "Natural voice (offline)"),
            choice(TtsKind::Piper, "Quick natural voice (offline, English; Piper)"),
            choice(TtsKind::System, "System voice (offline)"),
            choice(TtsKind::Deepgram, "Deepgram Aura-2"),
            choice(TtsKind::OpenAi, "OpenAI"),
        ],
        themes: vec![
            choice(Theme::System, "Like the system"),
            choice(Theme::Light, "Light"),
            choice(Theme::Dark, "Dark"),
        ],
        log_levels: vec![
            choice(LogLevel::Error, "Errors only"),
            choice(LogLevel::Warn, "Warnings"),
            choice(LogLevel::Info, "Normal"),
            choice(LogLevel::Debug, "Detailed (for a bug report)"),
        ],
        default_voices: vec![
            choice(TtsKind::Deepgram, DEEPGRAM_TTS_VOICE),
            choice(TtsKind::OpenAi, OPENAI_TTS_VOICE),
        ],
        languages: std::iter::once(choice(language::AUTO, "Automatic (the language you speak)"))
            .chain(language::LANGUAGES.iter().map(|l| choice(l.code, &l.label())))
            .collect(),
        natural_voices: hark_core::tts::natural::offered_voices()
            .map(|v| choice(v.id, v.label))
            .collect(),
    }
}
