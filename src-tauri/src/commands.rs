//! The commands the webview may call. Each is thin: take the state, call one core method,
//! map the error. None of them ever returns a key.

use std::path::PathBuf;

use hark_core::audio::{list_devices as audio_devices, DeviceInfo};
use hark_core::conversation::{HistorySettings, PanelView, Prompt, PromptMessage};
use hark_core::secrets::{self, KeySource};
use hark_core::session::voice::{VoiceCommand, VoiceEvent};
use hark_core::store::memory::{Fact, SearchHit};
use hark_core::store::{export, import, SessionInfo};
use serde::Serialize;
use tauri::ipc::Channel;
use tauri::State;

use crate::error::{CmdResult, CommandError};
use crate::settings::{self, AppSettings};
use crate::{lock, register_shortcut, AppState};

/// Whether a provider's key is there, and where from. Never the key itself.
#[derive(Debug, Clone, Serialize)]
pub struct KeyStatus {
    pub provider: &'static str,
    pub present: bool,
    pub source: Option<KeySource>,
    /// Why the keychain could not be asked, if it could not.
    pub error: Option<String>,
}

fn key_statuses(state: &AppState) -> Vec<KeyStatus> {
    secrets::PROVIDERS
        .iter()
        .map(|p| match state.keychain.get(p) {
            Ok(k) => KeyStatus {
                provider: p,
                present: k.is_some(),
                source: k.map(|(_, s)| s),
                error: None,
            },
            Err(e) => KeyStatus {
                provider: p,
                present: false,
                source: None,
                error: Some(e.to_string()),
            },
        })
        .collect()
}

/// What the window needs when it opens.
#[derive(Debug, Clone, Serialize)]
pub struct AppStateView {
    pub settings: AppSettings,
    pub keys: Vec<KeyStatus>,
    pub session_id: Option<String>,
    pub panel: Option<Box<PanelView>>,
    pub problems: Vec<CommandError>,
    /// A model download in progress (a `model_progress` event), if any.
    pub model_progress: Option<VoiceEvent>,
}

#[tauri::command]
pub fn subscribe(state: State<'_, AppState>, channel: Channel<VoiceEvent>) -> CmdResult<()> {
    *lock(&state.channel) = Some(channel);
    state.send(VoiceCommand::Refresh)
}

#[tauri::command]
pub async fn app_state(state: State<'_, AppState>) -> CmdResult<AppStateView> {
    let session_id = state.runtime.lock().await.as_ref().map(|r| r.session_id.clone());
    Ok(AppStateView {
        settings: lock(&state.settings).clone(),
        keys: key_statuses(&state),
        session_id,
        panel: lock(&state.panel).clone(),
        problems: lock(&state.problems).clone(),
        model_progress: lock(&state.progress).clone(),
    })
}

#[tauri::command]
pub fn refresh(state: State<'_, AppState>) -> CmdResult<()> {
    state.send(VoiceCommand::Refresh)
}

/// The push-to-talk button went down (`pressed`) or up.
#[tauri::command]
pub fn ptt(state: State<'_, AppState>, pressed: bool) -> CmdResult<()> {
    state.key(pressed)
}

#[tauri::command]
pub fn reset_context(state: State<'_, AppState>) -> CmdResult<()> {
    state.send(VoiceCommand::Edit(Box::new(|chat| Ok(chat.clear()?))))
}

/// Reshapes the context live (0 = unlimited).
#[tauri::command]
pub fn set_max_turns(state: State<'_, AppState>, max_turns: u32) -> CmdResult<()> {
    state.send(VoiceCommand::Edit(Box::new(move |chat| {
        let s = HistorySettings {
            max_turns,
            ..chat.conversation().settings()
        };
        Ok(chat.set_settings(s)?)
    })))
}

#[tauri::command]
pub fn set_system_prompt(state: State<'_, AppState>, text: String) -> CmdResult<()> {
    lock(&state.settings).system_prompt = text.clone();
    let _ = settings::save(&lock(&state.settings));
    state.send(VoiceCommand::Edit(Box::new(move |chat| {
        Ok(chat.set_system_prompt(&text)?)
    })))
}

/// The user edited (or cleared) the running summary in the history panel.
#[tauri::command]
pub fn set_summary(state: State<'_, AppState>, text: String) -> CmdResult<()> {
    state.send(VoiceCommand::Edit(Box::new(move |chat| {
        Ok(chat.edit_summary(Some(text))?)
    })))
}

/// Saves the settings and restarts the session with them (same conversation).
#[tauri::command]
pub async fn save_settings(
    app: tauri::AppHandle,
    state: State<'_, AppState>,
    settings: AppSettings,
) -> CmdResult<AppStateView> {
    settings::save(&settings).map_err(|e| CommandError::new("settings", e))?;
    let shortcut_problem = register_shortcut(&app, &settings.shortcut);
    let current = state.runtime.lock().await.as_ref().map(|r| r.session_id.clone());
    let system_prompt = settings.system_prompt.clone();
    *lock(&state.settings) = settings;
    state.switch(current).await?;
    state.send(VoiceCommand::Edit(Box::new(move |chat| {
        Ok(chat.set_system_prompt(&system_prompt)?)
    })))?;
    lock(&state.problems).extend(shortcut_problem);
    app_state(state).await
}

/// Stores a key in the OS keychain. Returns the statuses, never a key.
#[tauri::command]
pub async fn set_key(state: State<'_, AppState>, provider: String, key: String) -> CmdResult<Vec<KeyStatus>> {
    state.keychain.set(&provider, &key)?;
    restart_for_keys(&state).await?;
    Ok(key_statuses(&state))
}

#[tauri::command]
pub async fn delete_key(state: State<'_, AppState>, provider: String) -> CmdResult<Vec<KeyStatus>> {
    state.keychain.delete(&provider)?;
    restart_for_keys(&state).await?;
    Ok(key_statuses(&state))
}

/// Providers read keys when they are built: rebuild the session so a new key takes effect.
async fn restart_for_keys(state: &AppState) -> CmdResult<()> {
    let current = state.runtime.lock().await.as_ref().map(|r| r.session_id.clone());
    state.switch(current).await.map(|_| ())
}

/// Tries a provider with the stored key: a one-line request to the language model, or a
/// tiny transcription for Deepgram. Returns what it answered.
#[tauri::command]
pub async fn test_connection(state: State<'_, AppState>, provider: String) -> CmdResult<String> {
    let mut s = lock(&state.settings).clone();
    match provider.as_str() {
        "anthropic" | "openai" => {
            let kind: hark_core::provider::ProviderKind =
                provider.parse().map_err(|e: String| CommandError::new("settings", e))?;
            if crate::runtime::llm(&s, &state.keychain) != crate::settings::Llm::Cloud(kind) {
                // Test the provider's public endpoint and default model with its key.
                s.llm_model = String::new();
                s.llm_base_url = None;
            }
            s.max_tokens = 16;
            let model = crate::runtime::model(&s, &state.keychain, kind)?;
            let prompt = Prompt {
                system: String::new(),
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
            let mut c = hark_core::stt::deepgram::DeepgramConfig::new(
                state.keychain.get("deepgram")?.map(|(k, _)| k.expose().to_string()),
            );
            if let Some(url) = s.deepgram_base_url.filter(|u| !u.trim().is_empty()) {
                c.base_url = url;
            }
            let stt = hark_core::stt::deepgram::DeepgramStt::new(c, false)?;
            use hark_core::stt::Transcriber;
            stt.transcribe(&[0.0; 8000]).await?;
            Ok("Deepgram accepted the key".into())
        }
        other => Err(CommandError::new(
            "settings",
            format!("no connection test for {other:?}"),
        )),
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Devices {
    pub inputs: Vec<DeviceInfo>,
    pub outputs: Vec<DeviceInfo>,
}

#[tauri::command]
pub fn list_devices() -> CmdResult<Devices> {
    Ok(Devices {
        inputs: audio_devices(true)?,
        outputs: audio_devices(false)?,
    })
}

#[tauri::command]
pub fn list_sessions(state: State<'_, AppState>) -> CmdResult<Vec<SessionInfo>> {
    Ok(state.store.list_sessions()?)
}

#[tauri::command]
pub async fn open_session(state: State<'_, AppState>, id: String) -> CmdResult<String> {
    let id = state.store.resolve_session(&id)?;
    state.switch(Some(id)).await
}

#[tauri::command]
pub async fn new_session(state: State<'_, AppState>) -> CmdResult<String> {
    state.switch(None).await
}

/// Deletes a session; deleting the open one moves to a new session first.
#[tauri::command]
pub async fn delete_session(state: State<'_, AppState>, id: String) -> CmdResult<String> {
    let current = state.runtime.lock().await.as_ref().map(|r| r.session_id.clone());
    let now = if current.as_deref() == Some(id.as_str()) {
        state.switch(None).await?
    } else {
        current.unwrap_or_default()
    };
    state.store.delete_session(&id)?;
    Ok(now)
}

/// Writes the open session's export to `path` (chosen in the save dialog).
#[tauri::command]
pub async fn export_session(state: State<'_, AppState>, path: PathBuf, format: String) -> CmdResult<()> {
    let id = state
        .runtime
        .lock()
        .await
        .as_ref()
        .map(|r| r.session_id.clone())
        .ok_or_else(|| CommandError::new("session", "no session is open"))?;
    let session = state.store.load_session(&id)?;
    let text = match format.as_str() {
        "md" | "markdown" => export::to_markdown(&session),
        "deepgram" => export::to_deepgram(&session),
        _ => export::to_json(&session),
    };
    std::fs::write(&path, text)
        .map_err(|e| CommandError::new("export", format!("cannot write {}: {e}", path.display())))
}

/// Imports a file (chosen in the open dialog) as a new session and opens it.
#[tauri::command]
pub async fn import_session(state: State<'_, AppState>, path: PathBuf) -> CmdResult<String> {
    let text = std::fs::read_to_string(&path)
        .map_err(|e| CommandError::new("import", format!("cannot read {}: {e}", path.display())))?;
    let (_, session) = import::parse(&text)?;
    state.store.insert_session(&session)?;
    state.switch(Some(session.meta.id.clone())).await
}

// ---- the Memory view (rule 12) ---------------------------------------------------------------

/// Every remembered fact, oldest first.
#[tauri::command]
pub fn list_facts(state: State<'_, AppState>) -> CmdResult<Vec<Fact>> {
    Ok(state.store.facts()?)
}

/// Remembers a fact typed in the Memory view; returns the new list.
#[tauri::command]
pub fn add_fact(state: State<'_, AppState>, text: String) -> CmdResult<Vec<Fact>> {
    state.store.add_fact(&text, None)?;
    Ok(state.store.facts()?)
}

/// Rewrites a fact; returns the new list. The next turn recalls the new text.
#[tauri::command]
pub fn update_fact(state: State<'_, AppState>, id: String, text: String) -> CmdResult<Vec<Fact>> {
    state.store.update_fact(&id, &text)?;
    Ok(state.store.facts()?)
}

/// Forgets a fact; returns the new list.
#[tauri::command]
pub fn delete_fact(state: State<'_, AppState>, id: String) -> CmdResult<Vec<Fact>> {
    state.store.delete_fact(&id)?;
    Ok(state.store.facts()?)
}

/// Full-text search over every session's messages.
#[tauri::command]
pub fn search_memory(state: State<'_, AppState>, query: String) -> CmdResult<Vec<SearchHit>> {
    Ok(state.store.search_messages(&query, None, 30)?)
}
