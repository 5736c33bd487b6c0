//! Updates (tauri-plugin-updater): off unless this build was given an update endpoint and
//! the public key its updates are signed with, at build time:
//! `HARK_UPDATE_ENDPOINT=https://…/latest.json HARK_UPDATE_PUBKEY=… scripts/bundle.sh`
//! (README: Updates). Without them the menu item and the Settings button say so.

use hark_core::error::ErrorKind;
use tauri::AppHandle;

use crate::error::{CmdResult, CommandError};

const ENDPOINT: Option<&str> = option_env!("HARK_UPDATE_ENDPOINT");
const PUBKEY: Option<&str> = option_env!("HARK_UPDATE_PUBKEY");

/// Whether this build can look for updates.
pub fn configured() -> bool {
    ENDPOINT.is_some_and(|e| !e.is_empty()) && PUBKEY.is_some_and(|k| !k.is_empty())
}

/// The plugin, for builds that have an endpoint and a key.
pub fn plugin() -> Option<tauri::plugin::TauriPlugin<tauri::Wry, tauri_plugin_updater::Config>> {
    configured().then(|| tauri_plugin_updater::Builder::new().build())
}

/// Looks for an update; installs it (it applies at the next start) and says what happened.
pub async fn check(app: &AppHandle) -> CmdResult<String> {
    let (Some(endpoint), Some(pubkey)) = (ENDPOINT, PUBKEY) else {
        return Ok("This build of Hark does not look for updates (no update endpoint was configured).".into());
    };
    use tauri_plugin_updater::UpdaterExt;
    let failed = |e: String| CommandError::new(ErrorKind::Connectivity, format!("cannot check for updates: {e}"));
    let url = endpoint.parse().map_err(|e| failed(format!("{e}")))?;
    let updater = app
        .updater_builder()
        .endpoints(vec![url])
        .map_err(|e| failed(e.to_string()))?
        .pubkey(pubkey)
        .build()
        .map_err(|e| failed(e.to_string()))?;
    match updater.check().await.map_err(|e| failed(e.to_string()))? {
        None => Ok("Hark is up to date.".into()),
        Some(update) => {
            let version = update.version.clone();
            update
                .download_and_install(|_, _| {}, || {})
                .await
                .map_err(|e| failed(e.to_string()))?;
            Ok(format!(
                "Hark {version} is installed; it starts the next time Hark starts."
            ))
        }
    }
}
