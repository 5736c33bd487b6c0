//! The offline models' download: start (or resume) and pause. Progress goes to the windows
//! as `download` events, with the manifest's totals, speed and time left.

use tauri::{AppHandle, State};

use crate::error::CmdResult;
use crate::state::{lock, AppState};

/// Fetches what the settings need (resuming what an earlier try left), then starts the
/// session. Returns at once; the status line and the progress bar follow it.
#[tauri::command]
#[specta::specta]
pub fn start_download(app: AppHandle, state: State<'_, AppState>) -> CmdResult<()> {
    if lock(&state.download).is_none() {
        let current = state.settings().last_session;
        crate::start_session(&app, current);
    }
    Ok(())
}

/// Pauses the download in progress; what was fetched stays for the next start.
#[tauri::command]
#[specta::specta]
pub fn pause_download(state: State<'_, AppState>) -> CmdResult<()> {
    if let Some(c) = lock(&state.download).take() {
        c.cancel();
    }
    Ok(())
}
