//! The providers' official endpoints and the environment variables that carry their keys:
//! facts that the keychain (`secrets`, which binds a key to an endpoint), the language-model
//! providers and Deepgram's speech all need. Kept here, below all three, so that none of
//! them imports another for them.

/// Anthropic's Messages API.
pub const ANTHROPIC: &str = "https://api.anthropic.com";
/// OpenAI's API (Chat Completions, transcriptions, speech).
pub const OPENAI: &str = "https://api.openai.com/v1";
/// Deepgram's API (live and prerecorded speech-to-text, Aura voices).
pub const DEEPGRAM: &str = "https://api.deepgram.com";

/// The providers that take a key.
pub const PROVIDERS: &[&str] = &["anthropic", "openai", "deepgram"];

/// A provider's official endpoint (where a key saved without a base URL goes).
pub fn official(provider: &str) -> Option<&'static str> {
    match provider {
        "anthropic" => Some(ANTHROPIC),
        "openai" => Some(OPENAI),
        "deepgram" => Some(DEEPGRAM),
        _ => None,
    }
}

/// The environment variable that overrides a provider's key.
pub fn key_env_var(provider: &str) -> Option<&'static str> {
    match provider {
        "anthropic" => Some("ANTHROPIC_API_KEY"),
        "openai" => Some("OPENAI_API_KEY"),
        "deepgram" => Some("DEEPGRAM_API_KEY"),
        _ => None,
    }
}
