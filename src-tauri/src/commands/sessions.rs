//! Sessions: list, search, open, start, rename, delete, export and import. Export and import choose their
//! file here, in the system's save and open dialogs: the page never names a path, so a
//! compromised page cannot write or read any file it likes (issue 9).

use std::path::PathBuf;

use hark_core::error::ErrorKind;
use hark_core::store::{export, import, SessionInfo};
use serde::Deserialize;
use tauri::{AppHandle, State};
use tauri_plugin_dialog::DialogExt;

use crate::error::{CmdResult, CommandError};
use crate::state::AppState;

#[tauri::command(async)]
#[specta::specta]
pub fn list_sessions(state: State<'_, AppState>) -> CmdResult<Vec<SessionInfo>> {
    Ok(state.store()?.list_sessions()?)
}

/// The sessions whose title or messages have every word of `query` (the sidebar's search;
/// an empty query lists them all), most recently used first.
#[tauri::command(async)]
#[specta::specta]
pub fn search_sessions(state: State<'_, AppState>, query: String) -> CmdResult<Vec<SessionInfo>> {
    Ok(state.store()?.search_sessions(&query)?)
}

/// Gives a session the title the user typed; returns the title as stored. An empty one is
/// refused and the old title stays.
#[tauri::command(async)]
#[specta::specta]
pub fn rename_session(state: State<'_, AppState>, id: String, title: String) -> CmdResult<String> {
    Ok(state.store()?.rename_session(&id, &title)?)
}

#[tauri::command]
#[specta::specta]
pub async fn open_session(app: AppHandle, state: State<'_, AppState>, id: String) -> CmdResult<String> {
    let id = state.store()?.resolve_session(&id)?;
    crate::runtime::switch(&app, Some(id)).await
}

#[tauri::command]
#[specta::specta]
pub async fn new_session(app: AppHandle) -> CmdResult<String> {
    crate::runtime::switch(&app, None).await
}

/// Deletes a session; deleting the open one moves to a new session first.
#[tauri::command]
#[specta::specta]
pub async fn delete_session(app: AppHandle, state: State<'_, AppState>, id: String) -> CmdResult<String> {
    let current = state.runtime.lock().await.as_ref().map(|r| r.session_id.clone());
    let now = if current.as_deref() == Some(id.as_str()) {
        crate::runtime::switch(&app, None).await?
    } else {
        current.unwrap_or_default()
    };
    state.store()?.delete_session(&id)?;
    Ok(now)
}

/// The export formats.
#[derive(Debug, Clone, Copy, Deserialize, specta::Type)]
#[serde(rename_all = "lowercase")]
pub enum ExportFormat {
    /// Hark's versioned JSON (imports back losslessly).
    Json,
    /// A readable transcript.
    Md,
    /// A Deepgram Voice Agent `Settings` message.
    Deepgram,
}

/// A file chosen in a save (or open) dialog; `None` when the user cancelled.
async fn choose(app: &AppHandle, save: bool, name: &str, filter: (&str, &[&str])) -> Option<PathBuf> {
    // Debug builds only: the WebDriver tests cannot click a native dialog, so they name the
    // file here. Shipped (release) builds always ask the user.
    #[cfg(debug_assertions)]
    if let Some(p) = std::env::var_os("HARK_TEST_DIALOG_PATH") {
        return Some(PathBuf::from(p));
    }
    let (tx, rx) = tokio::sync::oneshot::channel();
    let dialog = app.dialog().file().add_filter(filter.0, filter.1);
    if save {
        dialog.set_file_name(name).save_file(move |p| {
            let _ = tx.send(p);
        });
    } else {
        dialog.pick_file(move |p| {
            let _ = tx.send(p);
        });
    }
    rx.await.ok().flatten().and_then(|p| p.into_path().ok())
}

/// Exports a session (`None`: the open one) to a file the user chooses. Returns the file
/// written, or `None` when the user cancelled.
#[tauri::command]
#[specta::specta]
pub async fn export_session(
    app: AppHandle,
    state: State<'_, AppState>,
    id: Option<String>,
    format: ExportFormat,
) -> CmdResult<Option<String>> {
    let open = state.runtime.lock().await.as_ref().map(|r| r.session_id.clone());
    let id = id
        .or(open)
        .ok_or_else(|| CommandError::new(ErrorKind::NotReady, "no conversation is open"))?;
    let session = state.store()?.load_session(&id)?;
    let (name, text, filter) = match format {
        ExportFormat::Json => (
            "hark-conversation.json",
            export::to_json(&session),
            ("JSON", &["json"][..]),
        ),
        ExportFormat::Md => (
            "hark-conversation.md",
            export::to_markdown(&session),
            ("Markdown", &["md"][..]),
        ),
        ExportFormat::Deepgram => (
            "hark-deepgram-settings.json",
            export::to_deepgram(&session),
            ("JSON", &["json"][..]),
        ),
    };
    let Some(path) = choose(&app, true, name, filter).await else {
        return Ok(None);
    };
    tokio::fs::write(&path, text)
        .await
        .map_err(|e| CommandError::new(ErrorKind::File, format!("cannot write {}: {e}", path.display())))?;
    Ok(Some(path.display().to_string()))
}

/// Imports a conversation file the user chooses as a new session (or, JSON Lines, a session
/// for each conversation in it), and opens it (the first). `None` when the user cancelled.
#[tauri::command]
#[specta::specta]
pub async fn import_session(app: AppHandle, state: State<'_, AppState>) -> CmdResult<Option<String>> {
    let Some(path) = choose(&app, false, "", ("Conversation", &["json", "jsonc", "jsonl"])).await else {
        return Ok(None);
    };
    let p = path.clone();
    let text = tokio::task::spawn_blocking(move || import::read_file(&p))
        .await
        .map_err(|e| CommandError::new(ErrorKind::Internal, e.to_string()))?
        .map_err(|e| CommandError::new(ErrorKind::Import, format!("cannot read {}: {e}", path.display())))?;
    let imported = import::parse_file(&text)?;
    // A file of several conversations opens at its first; the rest are in the sidebar.
    let first = imported
        .sessions
        .first()
        .map(|s| s.meta.id.clone())
        .ok_or(import::ImportError::Empty)?;
    state.store()?.insert_sessions(&imported.sessions)?;
    crate::runtime::switch(&app, Some(first)).await.map(Some)
}
