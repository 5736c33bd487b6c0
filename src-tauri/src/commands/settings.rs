//! Settings: saving (and applying) them, the shortcut, keys (each bound to the endpoint
//! shown beside it), devices, and the choices Settings offers, fed from here so the window
//! never duplicates them.

use hark_core::assembly::{LlmChoice, DEEPGRAM_TTS_VOICE, OPENAI_TTS_VOICE};
use hark_core::audio::{list_devices as audio_devices, DeviceInfo};
use hark_core::conversation::{Prompt, PromptMessage};
use hark_core::error::ErrorKind;
use hark_core::language;
use hark_core::models::{Manifest, ModelKind, ModelStore};
use hark_core::provider::{check_endpoint, ProviderKind};
use hark_core::secrets::{self, KeySlot, KeySource};
use hark_core::stt::{SttKind, Transcriber};
use hark_core::tts::TtsKind;
use serde::Serialize;
use tauri::{AppHandle, State};
use tauri_plugin_autostart::ManagerExt;
use tauri_plugin_opener::OpenerExt;

use super::app::{snapshot, Snapshot};
use crate::error::{CmdResult, CommandError};
use crate::settings::{AppSettings, LogLevel, Theme};
use crate::state::{lock, AppState};

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

fn slot(provider: &str, endpoint: Option<&str>) -> CmdResult<KeySlot> {
    if let Some(url) = endpoint {
        check_endpoint("keys", url)?;
    }
    Ok(KeySlot::for_base_url(provider, endpoint))
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
    // The natural voice's files count when it is in effect for the default settings.
    let natural = hark_core::assembly::Profile::default();
    let voice_files = match natural.tts_in_effect(&manifest) {
        TtsKind::Natural => natural.natural_specs(&manifest).unwrap_or_default(),
        _ => Vec::new(),
    };
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
            choice(TtsKind::Natural, "Natural voice (offline)"),
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

/// Applies what takes effect without a new session: log level, overlay, start at login.
fn apply(app: &AppHandle, state: &AppState, s: &AppSettings) -> CmdResult<()> {
    state.logs.set_level(s.log_level);
    crate::overlay::set(app, s.overlay);
    let autostart = app.autolaunch();
    let result = if s.start_at_login {
        autostart.enable()
    } else if autostart.is_enabled().unwrap_or(false) {
        autostart.disable()
    } else {
        Ok(())
    };
    result.map_err(|e| CommandError::new(ErrorKind::Settings, format!("cannot change starting at login: {e}")))
}

/// Saves the settings and restarts the session with them (same conversation). A base URL
/// a key could not safely go to, or a shortcut the system refuses, is refused here with
/// the reason, and nothing is saved.
#[tauri::command]
#[specta::specta]
pub async fn save_settings(app: AppHandle, state: State<'_, AppState>, settings: AppSettings) -> CmdResult<Snapshot> {
    for url in [
        &settings.profile.llm_base_url,
        &settings.profile.speech_base_url,
        &settings.profile.deepgram_base_url,
    ]
    .into_iter()
    .flatten()
    .filter(|u| !u.trim().is_empty())
    {
        check_endpoint("settings", url)?;
    }
    // An unknown language, or one the offline speech model cannot hear, is refused here.
    settings.profile.check()?;
    let old = state.settings();
    crate::shortcut::replace(&app, &settings.shortcut, Some(&old.shortcut))?;
    crate::settings::save(&settings).map_err(|e| CommandError::new(ErrorKind::Settings, e.to_string()))?;
    *lock(&state.settings) = settings.clone();
    apply(&app, &state, &settings)?;
    let current = state.runtime.lock().await.as_ref().map(|r| r.session_id.clone());
    // The window stays responsive: a first-use download shows its progress meanwhile.
    let system_prompt = settings.profile.system_prompt.clone();
    crate::runtime::switch(&app, current).await?;
    // The open conversation takes the new system prompt too.
    let handle = lock(&state.voice).clone();
    if let Some(h) = handle {
        h.edit(move |chat| Ok(chat.set_system_prompt(&system_prompt)?)).await?;
    }
    Ok(snapshot(&state).await)
}

/// Changes the push-to-talk shortcut (the key recorder). Refused with the reason when the
/// system will not register it; the previous one then stays active.
#[tauri::command]
#[specta::specta]
pub async fn set_shortcut(app: AppHandle, state: State<'_, AppState>, accelerator: String) -> CmdResult<Snapshot> {
    let old = state.settings().shortcut;
    crate::shortcut::replace(&app, &accelerator, Some(&old))?;
    {
        let mut s = lock(&state.settings);
        s.shortcut = accelerator;
        crate::settings::save(&s).map_err(|e| CommandError::new(ErrorKind::Settings, e.to_string()))?;
    }
    Ok(snapshot(&state).await)
}

#[tauri::command(async)]
#[specta::specta]
pub fn key_status(state: State<'_, AppState>) -> CmdResult<Vec<KeyStatus>> {
    Ok(key_statuses(&state, &state.settings()))
}

/// Stores a key in the OS keychain for one endpoint. Returns the statuses, never a key.
#[tauri::command]
#[specta::specta]
pub async fn set_key(
    app: AppHandle,
    state: State<'_, AppState>,
    provider: String,
    endpoint: Option<String>,
    key: String,
) -> CmdResult<Vec<KeyStatus>> {
    state.keychain.set(&slot(&provider, endpoint.as_deref())?, &key)?;
    restart_for_keys(&app, &state).await;
    Ok(key_statuses(&state, &state.settings()))
}

#[tauri::command]
#[specta::specta]
pub async fn delete_key(
    app: AppHandle,
    state: State<'_, AppState>,
    provider: String,
    endpoint: Option<String>,
) -> CmdResult<Vec<KeyStatus>> {
    state.keychain.delete(&slot(&provider, endpoint.as_deref())?)?;
    restart_for_keys(&app, &state).await;
    Ok(key_statuses(&state, &state.settings()))
}

/// Providers read keys when they are built: rebuild the session so a new key takes effect.
/// A failure shows as a banner and the status; the key is stored either way.
async fn restart_for_keys(app: &AppHandle, state: &AppState) {
    if state.store().is_err() {
        return;
    }
    let current = state.runtime.lock().await.as_ref().map(|r| r.session_id.clone());
    if let Err(e) = crate::runtime::switch(app, current).await {
        state.problem(e);
    }
}

/// Tries a key on its endpoint: a one-line request to the language model, or a tiny
/// transcription for Deepgram. Returns what it answered.
#[tauri::command]
#[specta::specta]
pub async fn test_connection(
    state: State<'_, AppState>,
    provider: String,
    endpoint: Option<String>,
) -> CmdResult<String> {
    let mut profile = state.settings().profile;
    match provider.as_str() {
        "anthropic" | "openai" => {
            let kind: ProviderKind = provider
                .parse()
                .map_err(|e: String| CommandError::new(ErrorKind::Settings, e))?;
            if endpoint.is_none() {
                // The official endpoint with the provider's default model.
                profile.llm_model = String::new();
            }
            profile.llm_base_url = endpoint;
            profile.max_tokens = 16;
            let model = profile.llm_config(kind, &state.keychain).build()?;
            let prompt = Prompt {
                messages: vec![PromptMessage::User {
                    text: "Reply with the single word OK.".into(),
                }],
                ..Default::default()
            };
            let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
            let done = model.stream(&prompt, &tx).await?;
            Ok(format!("{} answered: {}", model.model(), done.text.trim()))
        }
        "deepgram" => {
            profile.deepgram_base_url = endpoint;
            let stt = hark_core::stt::deepgram::DeepgramStt::new(profile.deepgram(&state.keychain), false)?;
            stt.transcribe(&[0.0; 8000]).await?;
            Ok("Deepgram accepted the key".into())
        }
        other => Err(CommandError::new(
            ErrorKind::Settings,
            format!("no connection test for {other:?}"),
        )),
    }
}

#[derive(Debug, Clone, Serialize, specta::Type)]
pub struct Devices {
    pub inputs: Vec<DeviceInfo>,
    pub outputs: Vec<DeviceInfo>,
}

#[tauri::command]
#[specta::specta]
pub async fn list_devices() -> CmdResult<Devices> {
    // Enumerating audio devices can take a moment (ALSA probes each): off the runtime.
    tokio::task::spawn_blocking(|| {
        Ok(Devices {
            inputs: audio_devices(true)?,
            outputs: audio_devices(false)?,
        })
    })
    .await
    .map_err(|e| CommandError::new(ErrorKind::Internal, e.to_string()))?
}

/// Opens the system's microphone privacy settings (macOS; elsewhere the sound settings are
/// the desktop's own, and the window explains instead).
#[tauri::command]
#[specta::specta]
pub fn open_privacy_settings(app: AppHandle) -> CmdResult<()> {
    if cfg!(target_os = "macos") {
        app.opener()
            .open_url(
                "x-apple.systempreferences:com.apple.preference.security?Privacy_Microphone",
                None::<&str>,
            )
            .map_err(|e| CommandError::new(ErrorKind::Settings, e.to_string()))
    } else if cfg!(target_os = "windows") {
        app.opener()
            .open_url("ms-settings:privacy-microphone", None::<&str>)
            .map_err(|e| CommandError::new(ErrorKind::Settings, e.to_string()))
    } else {
        Err(CommandError::new(
            ErrorKind::Microphone,
            "this desktop manages microphone access in its own sound settings",
        ))
    }
}
