//! The app's settings file (JSON in the config directory). Never holds keys: those live in
//! the OS keychain only.

use std::path::PathBuf;

use hark_core::provider::ProviderKind;
use hark_core::session::ptt::PttMode;
use serde::{Deserialize, Serialize};

/// Which language model the app uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LlmChoice {
    /// A cloud provider with a key (Anthropic first), an OpenAI-compatible server when a
    /// base URL is set, and otherwise the offline model.
    #[default]
    Auto,
    Anthropic,
    #[serde(rename = "openai")]
    OpenAi,
    /// The offline model (llama.cpp through `hark-llm`).
    Local,
}

/// What [`LlmChoice`] comes to once keys are known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Llm {
    Cloud(ProviderKind),
    Local,
}

impl AppSettings {
    /// The language model these settings mean, given which keys are present.
    pub fn llm(&self, has_key: impl Fn(ProviderKind) -> bool) -> Llm {
        match self.llm_provider {
            LlmChoice::Anthropic => Llm::Cloud(ProviderKind::Anthropic),
            LlmChoice::OpenAi => Llm::Cloud(ProviderKind::OpenAi),
            LlmChoice::Local => Llm::Local,
            LlmChoice::Auto => {
                if self.llm_base_url.as_ref().is_some_and(|u| !u.trim().is_empty()) {
                    return Llm::Cloud(ProviderKind::OpenAi);
                }
                [ProviderKind::Anthropic, ProviderKind::OpenAi]
                    .into_iter()
                    .find(|&k| has_key(k))
                    .map_or(Llm::Local, Llm::Cloud)
            }
        }
    }
}

/// Everything the Settings view edits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AppSettings {
    pub llm_provider: LlmChoice,
    /// Model name for a cloud provider; empty: the provider's default.
    pub llm_model: String,
    /// The offline chat model (id in the models manifest); `None`: the manifest's default.
    pub local_model: Option<String>,
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
    /// Recall remembered facts and matching earlier conversations each turn (rule 12).
    pub recall: bool,
    /// Offer the model the built-in tools (time, remember/forget, search past conversations).
    pub tools: bool,
    /// The session to reopen at start.
    pub last_session: Option<String>,
}

impl Default for AppSettings {
    fn default() -> Self {
        Self {
            llm_provider: LlmChoice::Auto,
            llm_model: String::new(),
            local_model: None,
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
            recall: true,
            tools: true,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_picks_a_keyed_provider_else_a_base_url_else_offline() {
        let mut s = AppSettings::default();
        assert_eq!(s.llm(|_| false), Llm::Local, "no key at all: offline");
        assert_eq!(s.llm(|k| k == ProviderKind::OpenAi), Llm::Cloud(ProviderKind::OpenAi));
        assert_eq!(s.llm(|_| true), Llm::Cloud(ProviderKind::Anthropic));
        s.llm_base_url = Some("http://127.0.0.1:11434/v1".into());
        assert_eq!(s.llm(|_| false), Llm::Cloud(ProviderKind::OpenAi));
        s.llm_provider = LlmChoice::Local;
        assert_eq!(s.llm(|_| true), Llm::Local);
        // Settings files from before "auto" existed still read.
        let old: AppSettings = serde_json::from_str(r#"{"llm_provider": "openai", "llm_model": "gpt-4o"}"#).unwrap();
        assert_eq!(old.llm_provider, LlmChoice::OpenAi);
    }
}
