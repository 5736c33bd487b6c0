//! Settings: saving (and applying) them, the shortcut, keys (each bound to the endpoint
//! shown beside it), devices, and the choices Settings offers, fed from here so the window
//! never duplicates them.

use hark_core::audio::{list_devices as audio_devices, DeviceInfo};
use hark_core::conversation::{Prompt, PromptMessage};
use hark_core::error::ErrorKind;
use hark_core::provider::{check_endpoint, ProviderKind};
use hark_core::secrets::KeySlot;
use hark_core::stt::Transcriber;
use serde::Serialize;
use tauri::{AppHandle, State};
use tauri_plugin_autostart::ManagerExt;
use tauri_plugin_opener::OpenerExt;

use super::view::{key_statuses, snapshot, KeyStatus, Snapshot};
use crate::error::{CmdResult, CommandError};
use crate::settings::AppSettings;
use crate::state::{lock, AppState};

fn slot(provider: &str, endpoint: Option<&str>) -> CmdResult<KeySlot> {
    if let Some(url) = endpoint {
        check_endpoint("keys", url)?;
    }
    Ok(KeySlot::for_base_url(provider, endpoint))
}

/// Applies what takes effect without a new session: log level, overlay, start at login.
fn apply(app: &AppHandle, state: &AppState, s: &AppSettings) -> CmdResult<()> {
    state.logs.set_level(s.log_level);
    crate::tray::relabel(app);
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
    crate::shortcut::distinct(&settings)?;
    crate::shortcut::replace(&app, &settings.shortcut, Some(&old.shortcut))?;
    crate::shortcut::replace(&app, &settings.hands_free_shortcut, Some(&old.hands_free_shortcut))?;
    crate::shortcut::replace(&app, &settings.mute_shortcut, Some(&old.mute_shortcut))?;
    crate::settings::save(&settings).map_err(|e| CommandError::new(ErrorKind::Settings, e.to_string()))?;
    *lock(&state.settings) = settings.clone();
    crate::shortcut::rebound(&app, &old, &settings);
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
    crate::shortcut::distinct(&AppSettings {
        shortcut: accelerator.clone(),
        ..state.settings()
    })?;
    crate::shortcut::replace(&app, &accelerator, Some(&old))?;
    let before = state.settings();
    {
        let mut s = lock(&state.settings);
        s.shortcut = accelerator;
        crate::settings::save(&s).map_err(|e| CommandError::new(ErrorKind::Settings, e.to_string()))?;
    }
    crate::shortcut::rebound(&app, &before, &state.settings());
    Ok(snapshot(&state).await)
}

/// Changes the UI language (`None`: the system's), saved at once and apart from the other
/// settings: the window shows it as soon as this returns, and the tray's menu and tooltip
/// follow. A language Hark does not have is refused with the ones it has.
#[tauri::command]
#[specta::specta]
pub async fn set_ui_language(
    app: AppHandle,
    state: State<'_, AppState>,
    language: Option<String>,
) -> CmdResult<Snapshot> {
    if let Some(l) = &language {
        if !crate::i18n::UI_LANGUAGES.contains(&l.as_str()) {
            return Err(CommandError::new(
                ErrorKind::Settings,
                format!(
                    "Hark's window has no language \"{l}\"; it has {}",
                    crate::i18n::UI_LANGUAGES.join(", ")
                ),
            ));
        }
    }
    {
        let mut s = lock(&state.settings);
        let next = AppSettings {
            ui_language: language,
            ..s.clone()
        };
        crate::settings::save(&next).map_err(|e| CommandError::new(ErrorKind::Settings, e.to_string()))?;
        *s = next;
    }
    crate::tray::relabel(&app);
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
