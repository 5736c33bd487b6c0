//! Updates (tauri-plugin-updater): on in a build whose Tauri configuration names the update
//! endpoint and the public key its updates are signed with, and makes the signed updater
//! archives — what `scripts/updater-config.sh` writes when `HARK_UPDATE_ENDPOINT` and
//! `HARK_UPDATE_PUBKEY` are set, and the Tauri CLI merges into the configuration it builds the
//! app and its installers with (README: Updates). The app reads its own configuration, so it
//! and its installers cannot disagree. A configuration that would stop the plugin at launch
//! (it needs a `pubkey`; it refuses an endpoint that is not https) is refused here instead:
//! logged, and the build runs without updates. Without one, the menu item and the Settings
//! button say so.
//!
//! On Windows, installing runs the installer and ends Hark at once (the plugin calls
//! `process::exit`); Hark says so first, in a dialog, and stops the offline model server so
//! the installer can replace it. Elsewhere the update applies at the next start.

use std::sync::OnceLock;

use hark_core::error::ErrorKind;
use serde_json::Value;
use tauri::AppHandle;

use crate::error::{CmdResult, CommandError};

/// What this build's configuration says about updates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Updates {
    Off,
    /// The plugin's configuration is complete: it may be registered.
    On {
        endpoints: Vec<String>,
    },
}

/// Why a configuration's updater settings cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UpdateConfigError {
    #[error("plugins.updater has no pubkey (the plugin would stop Hark at launch): set HARK_UPDATE_PUBKEY for scripts/updater-config.sh")]
    NoPubkey,
    #[error("plugins.updater names no endpoint: set HARK_UPDATE_ENDPOINT for scripts/updater-config.sh")]
    NoEndpoint,
    #[error("the update endpoint {0:?} is not an https:// URL (the plugin refuses it in a release build)")]
    Endpoint(String),
    #[error(
        "plugins.updater is set but bundle.createUpdaterArtifacts is off: no signed update would ever be published"
    )]
    NoArtifacts,
    #[error("bundle.createUpdaterArtifacts is on but plugins.updater is missing: the bundler needs its pubkey")]
    NoPlugin,
    #[error("plugins.updater is not an object: {0}")]
    NotAnObject(String),
}

/// Decides from the updater plugin's configuration (`plugins.updater`) and whether the
/// bundles include the signed updater archives (`bundle.createUpdaterArtifacts`) whether
/// this build looks for updates. Either both or neither: a key with no archives would look
/// for updates nobody can publish, archives with no key cannot be verified.
pub fn updates_in(plugin: Option<&Value>, artifacts: bool) -> Result<Updates, UpdateConfigError> {
    let plugin = match plugin {
        None | Some(Value::Null) if artifacts => return Err(UpdateConfigError::NoPlugin),
        None | Some(Value::Null) => return Ok(Updates::Off),
        Some(Value::Object(p)) => p,
        Some(other) => return Err(UpdateConfigError::NotAnObject(other.to_string())),
    };
    let pubkey = plugin.get("pubkey").and_then(Value::as_str).unwrap_or("");
    if pubkey.trim().is_empty() {
        return Err(UpdateConfigError::NoPubkey);
    }
    let endpoints: Vec<String> = plugin
        .get("endpoints")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|e| e.as_str().unwrap_or_default().to_string())
        .collect();
    if endpoints.is_empty() {
        return Err(UpdateConfigError::NoEndpoint);
    }
    // The plugin's own rule (tauri-plugin-updater config.rs validate_endpoints), unless its
    // configuration explicitly allows plain http.
    let insecure_allowed = plugin
        .get("dangerousInsecureTransportProtocol")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if let Some(bad) = endpoints
        .iter()
        .find(|e| !tauri::Url::parse(e).is_ok_and(|u| u.scheme() == "https" || insecure_allowed))
    {
        return Err(UpdateConfigError::Endpoint(bad.clone()));
    }
    if !artifacts {
        return Err(UpdateConfigError::NoArtifacts);
    }
    Ok(Updates::On { endpoints })
}

/// The same decision over a whole Tauri configuration as JSON (the merged files).
pub fn updates_in_config(config: &Value) -> Result<Updates, UpdateConfigError> {
    let artifacts = match &config["bundle"]["createUpdaterArtifacts"] {
        Value::Bool(b) => *b,
        // "v1Compatible": legacy archives, still archives.
        Value::String(_) => true,
        _ => false,
    };
    updates_in(config["plugins"].get("updater"), artifacts)
}

/// This build's decision, made once at start-up from its configuration.
static UPDATES: OnceLock<Updates> = OnceLock::new();

/// Reads the app's configuration (the one it was built with) and returns the plugin when it
/// is complete. Called once, before the app is built.
pub fn init(config: &tauri::Config) -> Option<tauri::plugin::TauriPlugin<tauri::Wry, tauri_plugin_updater::Config>> {
    let artifacts = config.bundle.create_updater_artifacts != tauri::utils::config::Updater::Bool(false);
    let updates = updates_in(config.plugins.0.get("updater"), artifacts).unwrap_or_else(|e| {
        tracing::error!("this build's updater configuration is unusable, so it does not look for updates: {e}");
        Updates::Off
    });
    tracing::info!(?updates, "updates");
    let on = matches!(updates, Updates::On { .. });
    let _ = UPDATES.set(updates);
    on.then(|| tauri_plugin_updater::Builder::new().build())
}

/// Whether this build can look for updates.
pub fn configured() -> bool {
    matches!(UPDATES.get(), Some(Updates::On { .. }))
}

/// Looks for an update; installs it and says what happened. On Windows, installing ends
/// Hark (the installer starts it again): a dialog says so first.
pub async fn check(app: &AppHandle) -> CmdResult<String> {
    if !configured() {
        // The plugin is not registered: asking it for an updater would panic.
        return Ok("This build of Hark does not look for updates (it was built without an update endpoint).".into());
    }
    use tauri_plugin_updater::UpdaterExt;
    let failed = |e: String| CommandError::new(ErrorKind::Connectivity, format!("cannot check for updates: {e}"));
    let before_exit = app.clone();
    let updater = app
        .updater_builder()
        // Windows only (the plugin calls it right before it starts the installer and
        // exits); it replaces the plugin's own hook, whose cleanup it keeps.
        .on_before_exit(move || before_windows_install(&before_exit))
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

/// Right before the Windows installer runs and the plugin ends the process: tell the user
/// (a blocking dialog: this runs on the task that checked, never the main thread), stop the
/// offline model server (the installer replaces hark-llm.exe, which a running server keeps
/// open), then the cleanup the plugin's own hook does.
fn before_windows_install(app: &AppHandle) {
    use tauri::Manager;
    use tauri_plugin_dialog::{DialogExt, MessageDialogKind};
    tracing::info!("an update is installed: Hark closes for its installer");
    app.dialog()
        .message("Hark closes now to install the update. The installer starts Hark again when it is done.")
        .title("Installing the update")
        .kind(MessageDialogKind::Info)
        .blocking_show();
    let state = app.state::<crate::state::AppState>();
    // The runtime's lock is only held while a session starts or stops; if one is doing so
    // now, the process ending closes hark-llm's stdin, which ends it too.
    if let Ok(mut runtime) = state.runtime.try_lock() {
        drop(runtime.take());
    }
    app.cleanup_before_exit();
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn updater(endpoints: Value, pubkey: &str) -> Value {
        json!({ "endpoints": endpoints, "pubkey": pubkey })
    }

    #[test]
    fn no_updater_configuration_means_no_updates_and_no_plugin() {
        assert_eq!(updates_in(None, false), Ok(Updates::Off));
        assert_eq!(updates_in(Some(&Value::Null), false), Ok(Updates::Off));
    }

    /// The launch crash of issue 22: the plugin was registered with no `plugins.updater`
    /// (so no pubkey), and tauri-plugin-updater refused to start.
    #[test]
    fn an_updater_without_a_pubkey_is_refused() {
        let u = updater(json!(["https://example.com/latest.json"]), "");
        assert_eq!(updates_in(Some(&u), true), Err(UpdateConfigError::NoPubkey));
        let u = json!({ "endpoints": ["https://example.com/latest.json"] });
        assert_eq!(updates_in(Some(&u), true), Err(UpdateConfigError::NoPubkey));
    }

    /// No `.sig`, `.app.tar.gz` or latest.json was ever made (issue 22): a build that looks for
    /// updates must also make them.
    #[test]
    fn an_updater_without_signed_artifacts_is_refused_and_artifacts_without_an_updater_too() {
        let u = updater(json!(["https://example.com/latest.json"]), "PUBKEY");
        assert_eq!(updates_in(Some(&u), false), Err(UpdateConfigError::NoArtifacts));
        assert_eq!(updates_in(None, true), Err(UpdateConfigError::NoPlugin));
    }

    #[test]
    fn an_endpoint_must_be_https_unless_the_configuration_allows_http() {
        let u = updater(json!([]), "PUBKEY");
        assert_eq!(updates_in(Some(&u), true), Err(UpdateConfigError::NoEndpoint));
        let u = updater(json!(["http://example.com/latest.json"]), "PUBKEY");
        assert!(matches!(
            updates_in(Some(&u), true),
            Err(UpdateConfigError::Endpoint(_))
        ));
        let u = updater(json!(["not a url"]), "PUBKEY");
        assert!(matches!(
            updates_in(Some(&u), true),
            Err(UpdateConfigError::Endpoint(_))
        ));
        let mut u = updater(json!(["http://127.0.0.1:8080/latest.json"]), "PUBKEY");
        u["dangerousInsecureTransportProtocol"] = json!(true);
        assert!(matches!(updates_in(Some(&u), true), Ok(Updates::On { .. })));
    }

    #[test]
    fn an_endpoint_a_key_and_signed_artifacts_turn_updates_on() {
        let config = json!({
            "bundle": { "createUpdaterArtifacts": true },
            "plugins": { "updater": updater(json!(["https://example.com/latest.json"]), "PUBKEY") }
        });
        assert_eq!(
            updates_in_config(&config),
            Ok(Updates::On {
                endpoints: vec!["https://example.com/latest.json".into()]
            })
        );
    }

    /// The repository's own configuration, as the app is built from it without
    /// scripts/updater-config.sh: no updater, and nothing that would stop the app.
    #[test]
    fn the_committed_configuration_has_no_updater() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        for file in ["tauri.conf.json", "tauri.bundle.conf.json"] {
            let config: Value = serde_json::from_str(&std::fs::read_to_string(dir.join(file)).unwrap()).unwrap();
            assert_eq!(updates_in_config(&config), Ok(Updates::Off), "{file}");
        }
    }
}
