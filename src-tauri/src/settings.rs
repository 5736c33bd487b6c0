//! The app's settings file (JSON in the config directory): the conversation profile the CLI
//! shares (`hark_core::assembly::Profile`, its fields as they are) and what only the app
//! has (devices, shortcut, theme, tray and start-up behaviour). Never holds keys: those
//! live in the OS keychain only.

use std::path::PathBuf;

use hark_core::assembly::Profile;
use hark_core::session::ptt::PttMode;
use serde::{Deserialize, Serialize};

/// Light, dark, or whatever the system uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "lowercase")]
pub enum Theme {
    #[default]
    System,
    Light,
    Dark,
}

/// How much goes into the log file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    Error,
    Warn,
    #[default]
    Info,
    Debug,
}

impl LogLevel {
    pub fn directive(self) -> &'static str {
        match self {
            LogLevel::Error => "error",
            LogLevel::Warn => "warn",
            LogLevel::Info => "info",
            LogLevel::Debug => "debug",
        }
    }
}

/// Everything the Settings view edits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, specta::Type)]
#[serde(default)]
pub struct AppSettings {
    /// The model, speech and conversation choices (shared with the CLI).
    #[serde(flatten)]
    pub profile: Profile,
    pub input_device: Option<String>,
    pub output_device: Option<String>,
    /// Global push-to-talk shortcut, as the shortcut plugin reads it (e.g.
    /// `CommandOrControl+Shift+Space`); the window shows it per platform.
    pub shortcut: String,
    pub ptt_mode: PttMode,
    /// Conversation mode (issue 23): no key; the microphone stays open while it is on
    /// (and only then), and Hark hears where the user starts and stops speaking.
    pub hands_free: bool,
    /// Cancel Hark's own voice from the microphone, so it listens while it speaks and a
    /// voice can interrupt it; off, hands-free is half-duplex.
    pub echo_cancellation: bool,
    /// Global shortcut that turns conversation mode on and off.
    pub hands_free_shortcut: String,
    /// Global shortcut that pauses hands-free listening and resumes it.
    pub mute_shortcut: String,
    /// Short sounds when listening starts and stops.
    pub sound_cues: bool,
    /// A small always-on-top window while listening or speaking.
    pub overlay: bool,
    pub theme: Theme,
    /// The language of the window, the tray and the introduction (issue 45), apart from the
    /// conversation language: one of `i18n::UI_LANGUAGES`, or `None` to follow the system's.
    pub ui_language: Option<String>,
    /// Start in the tray, without showing the window.
    pub start_hidden: bool,
    /// Start with the computer (in the tray).
    pub start_at_login: bool,
    pub log_level: LogLevel,
    /// The first-run introduction was completed or skipped. A settings file from before
    /// the introduction existed counts as done: its user has used Hark already.
    #[serde(default = "done")]
    pub onboarded: bool,
    /// The session to reopen at start.
    pub last_session: Option<String>,
}

fn done() -> bool {
    true
}

/// The default push-to-talk shortcut.
pub const DEFAULT_SHORTCUT: &str = "CommandOrControl+Shift+Space";
/// The default shortcuts of conversation mode and its mute. Three modifiers: with two, a
/// global shortcut would take keys other apps use while Hark runs (⌘⇧H is Finder's Home,
/// Ctrl+Shift+M and ⌘⇧M mute a Teams call).
pub const DEFAULT_HANDS_FREE_SHORTCUT: &str = "CommandOrControl+Alt+Shift+H";
pub const DEFAULT_MUTE_SHORTCUT: &str = "CommandOrControl+Alt+Shift+M";

impl Default for AppSettings {
    fn default() -> Self {
        Self {
            profile: Profile::default(),
            input_device: None,
            output_device: None,
            shortcut: DEFAULT_SHORTCUT.into(),
            ptt_mode: PttMode::Hold,
            hands_free: false,
            echo_cancellation: true,
            hands_free_shortcut: DEFAULT_HANDS_FREE_SHORTCUT.into(),
            mute_shortcut: DEFAULT_MUTE_SHORTCUT.into(),
            sound_cues: true,
            overlay: false,
            theme: Theme::System,
            ui_language: None,
            start_hidden: false,
            start_at_login: false,
            log_level: LogLevel::Info,
            onboarded: false,
            last_session: None,
        }
    }
}

/// The config directory: `HARK_CONFIG_DIR`, or the platform's (e.g. `~/.config/hark`).
pub fn config_dir() -> PathBuf {
    hark_core::dirs::config_dir()
}

pub fn path() -> PathBuf {
    config_dir().join("settings.json")
}

/// Why the settings could not be read.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SettingsError {
    #[error("cannot read {path}: {message}")]
    Unreadable { path: PathBuf, message: String },
    #[error("{path} is not valid settings: {message}")]
    Invalid { path: PathBuf, message: String },
    #[error("cannot save the settings to {path}: {message}")]
    Write { path: PathBuf, message: String },
}

/// Loads the settings; a missing file gives the defaults (a first run).
pub fn load() -> Result<AppSettings, SettingsError> {
    let p = path();
    match std::fs::read_to_string(&p) {
        Ok(text) => serde_json::from_str(&text).map_err(|e| SettingsError::Invalid {
            path: p,
            message: e.to_string(),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(AppSettings::default()),
        Err(e) => Err(SettingsError::Unreadable {
            path: p,
            message: e.to_string(),
        }),
    }
}

/// Writes the settings atomically (temp file, then rename).
pub fn save(s: &AppSettings) -> Result<(), SettingsError> {
    let dir = config_dir();
    let write = |path: &std::path::Path, e: std::io::Error| SettingsError::Write {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    std::fs::create_dir_all(&dir).map_err(|e| write(&dir, e))?;
    let tmp = dir.join("settings.json.tmp");
    let text = serde_json::to_string_pretty(s).unwrap_or_default();
    std::fs::write(&tmp, text).map_err(|e| write(&tmp, e))?;
    std::fs::rename(&tmp, path()).map_err(|e| write(&path(), e))
}

/// Moves an unreadable settings file aside (kept, renamed) so Hark starts with defaults.
pub fn set_aside() -> Result<PathBuf, std::io::Error> {
    let p = path();
    let aside = p.with_extension(format!("json.broken-{}", chrono::Utc::now().format("%Y%m%d-%H%M%S")));
    std::fs::rename(&p, &aside)?;
    Ok(aside)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_old_settings_file_keeps_its_choices_and_skips_the_introduction() {
        let old: AppSettings = serde_json::from_str(
            r#"{"llm_provider": "openai", "llm_model": "gpt-4o", "stt": "deepgram", "shortcut": "Ctrl+F9"}"#,
        )
        .unwrap();
        assert_eq!(old.profile.llm_model, "gpt-4o");
        assert_eq!(old.shortcut, "Ctrl+F9");
        assert!(old.onboarded, "a user who has used Hark before is not introduced again");
        assert!(!AppSettings::default().onboarded, "a first run is");
        let round: AppSettings = serde_json::from_str(&serde_json::to_string(&old).unwrap()).unwrap();
        assert_eq!(round, old);
    }
}
