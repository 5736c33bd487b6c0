//! Language-model providers behind one capability trait, [`ChatModel`].
//!
//! # Layout
//! - `sse`: the server-sent-events parser both providers stream through.
//! - `http`: sending with retries (429/5xx only), reading a streamed body with an idle timeout.
//! - `anthropic`: Anthropic Messages (`/v1/messages`, top-level `system`, SSE events).
//! - `openai`: OpenAI-compatible Chat Completions (OpenAI, Ollama, llama.cpp server, Groq, ...).
//! - this file: configuration, the provider-independent error taxonomy, the trait.

pub mod anthropic;
pub(crate) mod http;
pub use http::{check_endpoint, is_loopback_host};
pub mod openai;
pub mod sse;

use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::conversation::{Prompt, ToolCall};
pub use crate::error::ErrorKind;

/// Which wire format a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    Anthropic,
    #[serde(rename = "openai")]
    OpenAi,
}

impl ProviderKind {
    /// The name used in settings, the keychain and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::OpenAi => "openai",
        }
    }

    /// The public endpoint, used when no base URL is configured.
    pub fn default_base_url(self) -> &'static str {
        match self {
            ProviderKind::Anthropic => crate::endpoints::ANTHROPIC,
            ProviderKind::OpenAi => crate::endpoints::OPENAI,
        }
    }

    /// The environment variable that overrides the base URL (development, proxies, tests).
    pub fn base_url_env(self) -> &'static str {
        match self {
            ProviderKind::Anthropic => "HARK_ANTHROPIC_BASE_URL",
            ProviderKind::OpenAi => "HARK_OPENAI_BASE_URL",
        }
    }

    /// A sensible default model.
    pub fn default_model(self) -> &'static str {
        match self {
            ProviderKind::Anthropic => "claude-haiku-4-5",
            ProviderKind::OpenAi => "gpt-4o-mini",
        }
    }
}

impl std::str::FromStr for ProviderKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "anthropic" | "claude" => Ok(ProviderKind::Anthropic),
            "openai" | "openai-compatible" => Ok(ProviderKind::OpenAi),
            other => Err(format!("unknown LLM provider {other:?}: use anthropic or openai")),
        }
    }
}

/// When and how often a failed request is retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (0 = none).
    pub max_retries: u32,
    /// First backoff; doubled each retry, with jitter.
    pub base_delay: Duration,
    /// Upper bound of one wait, also for a server's `retry-after`.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 3,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(20),
        }
    }
}

/// Everything needed to talk to one model.
#[derive(Clone)]
pub struct ProviderConfig {
    pub kind: ProviderKind,
    /// Endpoint root, e.g. `https://api.anthropic.com` or `http://127.0.0.1:11434/v1`.
    pub base_url: String,
    pub model: String,
    /// `None` for local servers that need no key.
    pub api_key: Option<String>,
    /// The reply budget (`max_tokens`).
    pub max_tokens: u32,
    pub temperature: Option<f32>,
    /// Connecting and waiting for response headers.
    pub connect_timeout: Duration,
    /// Longest silence allowed between two chunks of a streamed reply.
    pub idle_timeout: Duration,
    pub retry: RetryPolicy,
    /// The server keeps the prompt it last evaluated and reuses what a new request shares
    /// with it (the offline model, `hark-llm`): the recalled memories, which change from
    /// turn to turn, go in a system note just before the user's message instead of beside
    /// the system prompt, so the history after the system prompt stays evaluated (rule 12).
    pub keeps_prefix: bool,
}

impl std::fmt::Debug for ProviderConfig {
    // Hand-written so that a key can never reach a log through `{:?}`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderConfig")
            .field("kind", &self.kind)
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("max_tokens", &self.max_tokens)
            .finish_non_exhaustive()
    }
}

impl ProviderConfig {
    /// Defaults for a provider: public endpoint (or the `HARK_*_BASE_URL` override), default
    /// model, 1,024-token replies, 30 s to connect, 60 s of allowed silence mid-stream.
    pub fn new(kind: ProviderKind) -> Self {
        let base_url = std::env::var(kind.base_url_env())
            .ok()
            .filter(|s| !s.trim().is_empty())
            .unwrap_or_else(|| kind.default_base_url().to_string());
        Self {
            kind,
            base_url,
            model: kind.default_model().to_string(),
            api_key: None,
            max_tokens: 1024,
            temperature: None,
            connect_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(60),
            retry: RetryPolicy::default(),
            keeps_prefix: false,
        }
    }

    /// Whether the base URL is the provider's public endpoint (which always needs a key).
    pub fn is_public_endpoint(&self) -> bool {
        self.base_url.trim_end_matches('/') == self.kind.default_base_url()
    }

    /// Builds the model client for this configuration.
    pub fn build(self) -> Result<Box<dyn ChatModel>, ProviderError> {
        Ok(match self.kind {
            ProviderKind::Anthropic => Box::new(anthropic::Anthropic::new(self)?),
            ProviderKind::OpenAi => Box::new(openai::OpenAi::new(self)?),
        })
    }
}

/// A classified provider failure.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{provider}: {kind}: {message}")]
pub struct ProviderError {
    pub kind: ErrorKind,
    /// Which provider failed ("anthropic", "openai").
    pub provider: &'static str,
    /// The provider's own message, or ours; key-shaped text redacted (see [`Self::new`]).
    pub message: String,
    /// The HTTP status, when there was one.
    pub status: Option<u16>,
    /// The server's `retry-after`, when it sent one.
    pub retry_after: Option<Duration>,
}

impl ProviderError {
    /// A failure of `provider`. The message is redacted here, once for every path: a
    /// provider's error body or a transport error can echo a key or URL credentials, and
    /// the message is stored with the reply, shown and logged.
    pub fn new(provider: &'static str, kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            provider,
            message: crate::error::redact(&message.into()),
            status: None,
            retry_after: None,
        }
    }
}

/// Token counts the provider reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ReportedUsage {
    pub input_tokens: Option<u32>,
    pub output_tokens: Option<u32>,
    /// Input tokens the provider served from its prompt cache (included in `input_tokens`).
    pub cached_input_tokens: Option<u32>,
}

/// A finished model response.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Completion {
    /// The whole text (also delivered piecewise to `on_delta`).
    pub text: String,
    /// Tool calls the model made, arguments complete.
    pub tool_calls: Vec<ToolCall>,
    pub usage: ReportedUsage,
    /// The provider's stop reason (`end_turn`, `stop`, `max_tokens`, `tool_use`, ...).
    pub stop_reason: Option<String>,
    /// How the reply ended, in Hark's terms (from the stop reason and a refusal's words).
    pub ending: Ending,
    /// A refusal's own words, as the provider sent them (OpenAI's `refusal` text,
    /// Anthropic's `stop_details.explanation`): they end `text` too, and are spoken.
    pub refusal: Option<String>,
    /// The model that answered, as the provider names it.
    pub model: Option<String>,
}

/// How a reply ended, whatever the provider calls it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Ending {
    /// The model finished (or stopped to call tools).
    #[default]
    Finished,
    /// The model declined: OpenAI's `refusal` words or `finish_reason: "content_filter"`,
    /// Anthropic's `stop_reason: "refusal"`. Its words, if any, are the reply's text.
    Refused,
    /// The length limit cut the reply off: `finish_reason: "length"`, `stop_reason:
    /// "max_tokens"` (or the context window's end). A tool call it cut is not returned.
    CutOff,
}

/// Whether a tool call's arguments are whole: a JSON object (or nothing, for a tool with no
/// parameters). A call the length limit cut off mid-arguments is not.
pub(crate) fn whole_arguments(arguments: &str) -> bool {
    arguments.trim().is_empty() || serde_json::from_str::<serde_json::Value>(arguments).is_ok_and(|v| v.is_object())
}

/// A language model that streams a reply to a prompt.
#[async_trait]
pub trait ChatModel: Send + Sync {
    /// Provider name ("anthropic", "openai").
    fn provider(&self) -> &'static str;

    /// The configured model name.
    fn model(&self) -> &str;

    /// Streams one reply. Text arrives through `on_delta` as it is generated; the returned
    /// [`Completion`] repeats it whole. Cancel by dropping the future: the connection closes.
    /// A channel rather than a callback, so the caller's task owns what happens to each delta.
    async fn stream(&self, prompt: &Prompt, on_delta: &DeltaSink) -> Result<Completion, ProviderError>;
}

/// Where a streaming reply's text deltas go, in order.
pub type DeltaSink = tokio::sync::mpsc::UnboundedSender<String>;

/// Forwards one delta; a receiver that went away (the turn was abandoned) is not an error
/// of the provider, so the send result is ignored on purpose.
fn send_delta(sink: &DeltaSink, text: &str) {
    let _ = sink.send(text.to_string());
}

/// Joins a base URL and a path without doubling or losing the slash.
pub(crate) fn endpoint(base: &str, path: &str) -> String {
    format!("{}/{}", base.trim_end_matches('/'), path.trim_start_matches('/'))
}
