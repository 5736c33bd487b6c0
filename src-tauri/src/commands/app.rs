//! What a window needs at start, subscribing to events, and the app-level actions: the log
//! folder, the recovery from a fatal start-up problem, updates, the introduction, quitting.

use hark_core::error::ErrorKind;
use tauri::ipc::Channel;
use tauri::{AppHandle, State, Window};
use tauri_plugin_opener::OpenerExt;

use super::view::snapshot;
pub use super::view::Snapshot;
use crate::error::{CmdResult, CommandError};
use crate::events::{Numbered, Status};
use crate::settings::AppSettings;
use crate::state::{lock, AppState, Fatal};

/// The window listens here from now on; a fresh history panel follows.
#[tauri::command]
#[specta::specta]
pub fn subscribe(window: Window, state: State<'_, AppState>, channel: Channel<Numbered>) -> CmdResult<()> {
    state.subscribe(window.label(), channel);
    if let Some(h) = lock(&state.voice).clone() {
        let _ = h.refresh();
    }
    Ok(())
}

#[tauri::command]
#[specta::specta]
pub async fn app_state(state: State<'_, AppState>) -> CmdResult<Snapshot> {
    Ok(snapshot(&state).await)
}

/// Opens the folder with the log files in the system's file manager.
#[tauri::command(async)]
#[specta::specta]
pub fn open_logs_folder(app: AppHandle, state: State<'_, AppState>) -> CmdResult<()> {
    let dir = state.logs.dir().to_path_buf();
    std::fs::create_dir_all(&dir).map_err(|e| CommandError::new(ErrorKind::File, format!("{}: {e}", dir.display())))?;
    app.opener()
        .open_path(dir.display().to_string(), None::<&str>)
        .map_err(|e| CommandError::new(ErrorKind::File, format!("cannot open {}: {e}", dir.display())))
}

/// The fatal start-up problem's way on: the unreadable database (or settings file) is kept,
/// renamed, and Hark starts fresh. Returns where the old file now is.
#[tauri::command]
#[specta::specta]
pub async fn start_fresh(app: AppHandle, state: State<'_, AppState>) -> CmdResult<String> {
    let fatal = lock(&state.fatal).clone();
    let kept = match fatal {
        None => {
            return Err(CommandError::new(
                ErrorKind::Settings,
                "Hark started normally: nothing to start fresh",
            ))
        }
        Some(Fatal::Settings(_)) => {
            let aside = crate::settings::set_aside()
                .map_err(|e| CommandError::new(ErrorKind::Settings, format!("cannot rename the settings file: {e}")))?;
            *lock(&state.settings) = AppSettings::default();
            aside
        }
        Some(Fatal::Database(path)) => {
            let aside = crate::set_aside(&path)
                .map_err(|e| CommandError::new(ErrorKind::Storage, format!("cannot rename {}: {e}", path.display())))?;
            let store = hark_core::store::Store::open(&path)?;
            *lock(&state.store) = Some(std::sync::Arc::new(store));
            aside
        }
    };
    *lock(&state.fatal) = None;
    state.set_status(Status::Preparing {
        stage: crate::events::Stage::Starting,
    });
    crate::start_session(&app, None);
    Ok(kept.display().to_string())
}

/// Opens the folder of the file a fatal start-up problem is about.
#[tauri::command(async)]
#[specta::specta]
pub fn open_fatal_folder(app: AppHandle, state: State<'_, AppState>) -> CmdResult<()> {
    let path = match lock(&state.fatal).clone() {
        Some(Fatal::Database(p) | Fatal::Settings(p)) => p,
        None => return Err(CommandError::new(ErrorKind::Settings, "Hark started normally")),
    };
    let dir = path.parent().map(std::path::Path::to_path_buf).unwrap_or_default();
    app.opener()
        .open_path(dir.display().to_string(), None::<&str>)
        .map_err(|e| CommandError::new(ErrorKind::File, format!("cannot open {}: {e}", dir.display())))
}

#[tauri::command]
#[specta::specta]
pub async fn check_for_updates(app: AppHandle) -> CmdResult<String> {
    crate::update::check(&app).await
}

/// The introduction is done (or skipped): it does not show again.
#[tauri::command(async)]
#[specta::specta]
pub fn finish_onboarding(app: AppHandle, state: State<'_, AppState>) -> CmdResult<()> {
    let mut s = lock(&state.settings);
    s.onboarded = true;
    crate::settings::save(&s).map_err(|e| CommandError::new(ErrorKind::Settings, e.to_string()))?;
    let last = s.last_session.clone();
    drop(s);
    tracing::info!("the introduction is done");
    match lock(&state.voice).clone() {
        Some(h) => {
            let _ = h.practice(false);
        }
        // Skipped before choosing: start with the settings as they are.
        None if matches!(state.status(), Status::Waiting) => crate::start_session(&app, last),
        None => {}
    }
    Ok(())
}

/// Shows the introduction again (Settings).
#[tauri::command(async)]
#[specta::specta]
pub fn restart_onboarding(state: State<'_, AppState>) -> CmdResult<()> {
    let mut s = lock(&state.settings);
    s.onboarded = false;
    crate::settings::save(&s).map_err(|e| CommandError::new(ErrorKind::Settings, e.to_string()))
}

/// Ends Hark (the window's menu; the tray has its own).
#[tauri::command]
#[specta::specta]
pub fn quit(app: AppHandle) -> CmdResult<()> {
    app.exit(0);
    Ok(())
}
