//! The offline models: the first-use download (start or resume, pause) with progress as
//! `download` events carrying the manifest's totals, speed and time left; and Settings →
//! Models, which lists every model of the manifest with its size on disk and state, and
//! fetches or deletes one.

use hark_core::models::{Manifest, ModelKind, ModelStore};
use serde::Serialize;
use tauri::{AppHandle, State};

use crate::error::{CmdResult, CommandError};
use crate::state::{lock, AppState};
use hark_core::error::ErrorKind;

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

/// A model as Settings → Models lists it. Sizes in bytes.
#[derive(Debug, Clone, Serialize, specta::Type)]
pub struct ModelInfo {
    pub id: String,
    pub kind: ModelKind,
    pub label: String,
    pub license: String,
    pub download_size: u64,
    /// Its file and whatever an unfinished download left.
    pub on_disk: u64,
    pub ready: bool,
    /// The current settings use it (it cannot be deleted while they do).
    pub in_use: bool,
    /// The default of its kind.
    pub default: bool,
    /// A speech model for other languages than English.
    pub multilingual: bool,
}

/// Settings → Models: every model, where they live and the disk they take.
#[derive(Debug, Clone, Serialize, specta::Type)]
pub struct ModelsView {
    pub dir: String,
    pub models: Vec<ModelInfo>,
    pub disk_use: u64,
}

/// The ids of the models the current settings use.
fn used_models(state: &AppState, manifest: &Manifest) -> CmdResult<Vec<String>> {
    Ok(state
        .settings()
        .profile
        .models_needed(&state.keychain, manifest)?
        .into_iter()
        .map(|m| m.id)
        .collect())
}

fn models_view(state: &AppState) -> CmdResult<ModelsView> {
    let manifest = Manifest::load()?;
    let store = ModelStore::default_dir();
    let used = used_models(state, &manifest)?;
    let models: Vec<ModelInfo> = manifest
        .models
        .iter()
        .map(|m| ModelInfo {
            id: m.id.clone(),
            kind: m.kind,
            label: m.label.clone(),
            license: m.license.clone(),
            download_size: m.download_size(),
            on_disk: store.size_on_disk(m),
            ready: store.is_ready(m),
            in_use: used.contains(&m.id),
            default: m.default,
            multilingual: m.multilingual,
        })
        .collect();
    Ok(ModelsView {
        dir: store.dir().display().to_string(),
        disk_use: models.iter().map(|m| m.on_disk).sum(),
        models,
    })
}

/// Every model of the manifest, with its state and size on disk.
#[tauri::command(async)]
#[specta::specta]
pub fn list_models(state: State<'_, AppState>) -> CmdResult<ModelsView> {
    models_view(&state)
}

/// Downloads one model (resuming what an earlier try left), with the progress bar; refused
/// while another download runs. Returns the list once it is in place.
#[tauri::command]
#[specta::specta]
pub async fn fetch_model(app: AppHandle, state: State<'_, AppState>, id: String) -> CmdResult<ModelsView> {
    let spec = Manifest::load()?.find(&id)?.clone();
    if lock(&state.download).is_some() {
        return Err(CommandError::new(ErrorKind::NotReady, "another download is running")
            .with_next_step("wait for it to finish, or pause it, then fetch this model"));
    }
    let what = format!("{} ({:.0} MB)", spec.id, spec.download_size() as f64 / 1e6);
    crate::runtime::download(&app, vec![spec], what).await?;
    models_view(&state)
}

/// Deletes a downloaded model to free the disk; refused for a model the current settings
/// use (choose another first) and while it is being downloaded.
#[tauri::command(async)]
#[specta::specta]
pub fn delete_model(state: State<'_, AppState>, id: String) -> CmdResult<ModelsView> {
    let manifest = Manifest::load()?;
    let spec = manifest.find(&id)?;
    if used_models(&state, &manifest)?.contains(&id) {
        return Err(
            CommandError::new(ErrorKind::Settings, format!("{id} is what the current settings use"))
                .with_next_step("choose another model (or a cloud provider) in Settings first, then delete it"),
        );
    }
    let freed = ModelStore::default_dir().delete(spec)?;
    tracing::info!("deleted the model {id} ({freed} bytes)");
    models_view(&state)
}
