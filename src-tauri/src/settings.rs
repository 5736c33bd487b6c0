//! The app's settings file (JSON in the config directory). Never holds keys: those live in
//! the OS keychain only.

use std::path::PathBuf;

use hark_core::provider::ProviderKind;
use hark_core::session::ptt::PttMode;
use serde::{Deserialize, Serialize};

/// Everything the Settings view edits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AppSettings {
    pub llm_provider: ProviderKind,
    pub llm_model: String,
    /// Endpoint override (proxy, Ollama, LM Studio, llama.cpp server).
    pub llm_base_url: Option<String>,
    /// Reply budget in tokens.
    pub max_tokens: u32,
    pub system_prompt: String,
    /// "whisper" (offline), "deepgram", "deepgram-prerecorded", "openai".
    pub stt: String,
    /// The whisper model file; default `<models dir>/ggml-tiny.en.bin`.
    pub whisper_model: Option<PathBuf>,
    /// "system" (the OS voice), "deepgram", "openai".
    pub tts: String,
    /// Voice name for the chosen engine.
    pub voice: Option<String>,
    pub deepgram_base_url: Option<String>,
    /// OpenAI speech endpoint override.
    pub speech_base_url: Option<String>,
    pub input_device: Option<String>,
    pub output_device: Option<String>,
    /// Global push-to-talk shortcut, e.g. "CommandOrControl+Shift+Space".
    pub shortcut: String,
    pub ptt_mode: PttMode,
    /// Fold turns that leave the context into a running summary (rule 11).
    pub summarize: bool,
    /// The session to reopen at start.
    pub last_session: Option<String>,
}

impl Default for AppSettings {
    fn default() -> Self {
        Self {
            llm_provider: ProviderKind::Anthropic,
            llm_model: ProviderKind::Anthropic.default_model().into(),
            llm_base_url: None,
            max_tokens: 1024,
            system_prompt: "You are Hark, a helpful voice assistant. Answer in one to three short spoken sentences."
                .into(),
            stt: "whisper".into(),
            whisper_model: None,
            tts: "system".into(),
            voice: None,
            deepgram_base_url: None,
            speech_base_url: None,
            input_device: None,
            output_device: None,
            shortcut: "CommandOrControl+Shift+Space".into(),
            ptt_mode: PttMode::Hold,
            summarize: false,
            last_session: None,
        }
    }
}

/// The config directory: `HARK_CONFIG_DIR`, or the platform's (e.g. `~/.config/hark`).
pub fn config_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("HARK_CONFIG_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    directories::ProjectDirs::from("app", "hark", "hark")
        .map(|d| d.config_dir().to_path_buf())
        .unwrap_or_else(|| PathBuf::from("."))
}

fn path() -> PathBuf {
    config_dir().join("settings.json")
}

/// Loads the settings; a missing file gives the defaults, an unreadable one is reported.
pub fn load() -> Result<AppSettings, String> {
    match std::fs::read_to_string(path()) {
        Ok(text) => serde_json::from_str(&text).map_err(|e| format!("{} is not valid settings: {e}", path().display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(AppSettings::default()),
        Err(e) => Err(format!("cannot read {}: {e}", path().display())),
    }
}

/// Writes the settings atomically (temp file, then rename).
pub fn save(s: &AppSettings) -> Result<(), String> {
    let dir = config_dir();
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let tmp = dir.join("settings.json.tmp");
    let text = serde_json::to_string_pretty(s).map_err(|e| e.to_string())?;
    std::fs::write(&tmp, text).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path()).map_err(|e| format!("cannot save settings: {e}"))
}
