//! One error taxonomy for everything Hark can fail at, from the provider's HTTP status to a
//! missing microphone. UIs, the CLI's `--json` and retries branch on the [`ErrorKind`],
//! never on message text; what the user can do about each kind is written here once
//! ([`ErrorKind::next_step`]).

use serde::{Deserialize, Serialize};

/// What went wrong, independent of which provider, device or file was involved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorKind {
    /// Missing, wrong or revoked key (401/403).
    Auth,
    /// Too many requests for now (429); retried with backoff.
    RateLimit,
    /// Out of credit or over the plan's quota; retrying will not help.
    Quota,
    /// The server could not be reached, timed out, or the connection dropped mid-reply.
    Connectivity,
    /// The provider failed (5xx, overloaded); retried with backoff.
    Server,
    /// The provider answered something that is not its documented format.
    InvalidResponse,
    /// The provider rejected the request (unknown model, bad parameter, too long).
    InvalidRequest,
    /// The turn was cancelled (barge-in or the user stopped it).
    Cancelled,
    /// No microphone, or the microphone failed or disappeared.
    Microphone,
    /// No speaker, or the speaker failed or stopped playing.
    Speaker,
    /// Another audio problem: an unreadable or implausible audio file, an unknown format.
    Audio,
    /// The database could not be read or written.
    Storage,
    /// The OS keychain is missing, locked or refused.
    Keychain,
    /// A setting is invalid or the settings file cannot be read or written.
    Settings,
    /// The offline engine (a local model, its server, whisper) is not available.
    LocalEngine,
    /// An offline model could not be downloaded or verified.
    ModelDownload,
    /// A file to import is not a conversation Hark can read.
    Import,
    /// A file could not be written or read (export, logs).
    File,
    /// The conversation refused the turn (empty utterance, a message larger than the budget).
    History,
    /// The push-to-talk shortcut could not be registered.
    Shortcut,
    /// A tool server the user added could not start, or stopped.
    ToolServer,
    /// Hark is still getting ready (a model download, the first start of the offline engine).
    NotReady,
    /// A bug in Hark: the turn failed, the conversation is kept.
    Internal,
}

impl ErrorKind {
    /// The kind's name, as in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Auth => "auth",
            ErrorKind::RateLimit => "rate_limit",
            ErrorKind::Quota => "quota",
            ErrorKind::Connectivity => "connectivity",
            ErrorKind::Server => "server",
            ErrorKind::InvalidResponse => "invalid_response",
            ErrorKind::InvalidRequest => "invalid_request",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::Microphone => "microphone",
            ErrorKind::Speaker => "speaker",
            ErrorKind::Audio => "audio",
            ErrorKind::Storage => "storage",
            ErrorKind::Keychain => "keychain",
            ErrorKind::Settings => "settings",
            ErrorKind::LocalEngine => "local_engine",
            ErrorKind::ModelDownload => "model_download",
            ErrorKind::Import => "import",
            ErrorKind::File => "file",
            ErrorKind::History => "history",
            ErrorKind::Shortcut => "shortcut",
            ErrorKind::ToolServer => "tool_server",
            ErrorKind::NotReady => "not_ready",
            ErrorKind::Internal => "internal",
        }
    }

    /// A short title for a banner.
    pub fn title(self) -> &'static str {
        match self {
            ErrorKind::Auth => "The API key was refused",
            ErrorKind::RateLimit => "Too many requests",
            ErrorKind::Quota => "Out of credit",
            ErrorKind::Connectivity => "Cannot reach the service",
            ErrorKind::Server => "The service is having trouble",
            ErrorKind::InvalidResponse => "Unexpected answer from the service",
            ErrorKind::InvalidRequest => "The service refused the request",
            ErrorKind::Cancelled => "Cancelled",
            ErrorKind::Microphone => "Microphone problem",
            ErrorKind::Speaker => "Speaker problem",
            ErrorKind::Audio => "Audio problem",
            ErrorKind::Storage => "Cannot save the conversation",
            ErrorKind::Keychain => "The keychain is not available",
            ErrorKind::Settings => "Settings problem",
            ErrorKind::LocalEngine => "The offline engine is not available",
            ErrorKind::ModelDownload => "Model download failed",
            ErrorKind::Import => "Cannot import the file",
            ErrorKind::File => "File problem",
            ErrorKind::History => "The message does not fit",
            ErrorKind::Shortcut => "Shortcut not available",
            ErrorKind::ToolServer => "A tool server is not working",
            ErrorKind::NotReady => "Hark is getting ready",
            ErrorKind::Internal => "Something went wrong inside Hark",
        }
    }

    /// What the user can do about it. The one place this text lives: the CLI, the app's
    /// banners and the `--json` events all read it from here.
    pub fn next_step(self) -> &'static str {
        match self {
            ErrorKind::Auth => "check the API key (Settings → API keys, or `hark keys set <provider>`)",
            ErrorKind::RateLimit => "wait a moment and try again",
            ErrorKind::Quota => "add credit or raise the plan's limit with the provider",
            ErrorKind::Connectivity => "check the network connection and the provider's base URL",
            ErrorKind::Server => "the provider is having trouble; try again shortly",
            ErrorKind::InvalidResponse => "the endpoint may not be the provider it is configured as; check the base URL",
            ErrorKind::InvalidRequest => "check the model name and settings",
            ErrorKind::Cancelled => "nothing to do",
            ErrorKind::Microphone => {
                "connect a microphone (or choose another in Settings → Speech), allow Hark to use it, then press again"
            }
            ErrorKind::Speaker => "connect a speaker or headphones (or choose another output in Settings → Speech)",
            ErrorKind::Audio => "use a PCM WAV file, or check the audio device in Settings → Speech",
            ErrorKind::Storage => "check that the database file is writable and the disk is not full",
            ErrorKind::Keychain => {
                "start or unlock the system keyring (gnome-keyring or KWallet on Linux), or set the key's environment variable"
            }
            ErrorKind::Settings => "fix the setting named above in Settings",
            ErrorKind::LocalEngine => {
                "check that hark-llm is installed next to Hark and the model is downloaded (Settings → Models)"
            }
            ErrorKind::ModelDownload => {
                "check the network connection and the free disk space, then try again: the download resumes where it stopped"
            }
            ErrorKind::Import => "export the conversation again, or fix the place named in the message",
            ErrorKind::File => "check that the folder exists and is writable",
            ErrorKind::History => "shorten the message or raise the context budget (max_context_tokens)",
            ErrorKind::Shortcut => "pick another shortcut in Settings, or use the button",
            ErrorKind::ToolServer => "check the server in Settings → Tools (Test shows what it said); its tools are left out until it works",
            ErrorKind::NotReady => "wait a moment: Hark says when it is ready",
            ErrorKind::Internal => "press again; the conversation is kept (the log has the details)",
        }
    }

    /// Whether a retry may succeed (HTTP 429 and 5xx only).
    pub fn is_retryable(self) -> bool {
        matches!(self, ErrorKind::RateLimit | ErrorKind::Server)
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Removes anything key-shaped from text that will be stored, shown or logged: provider
/// error bodies and transport errors can echo a key (`Incorrect API key provided:
/// sk-proj-…`) or carry URL credentials (`https://user:pass@host`).
pub fn redact(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(word_start) = rest.find(|c: char| !c.is_whitespace()) {
        out.push_str(&rest[..word_start]);
        rest = &rest[word_start..];
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        out.push_str(&redact_word(&rest[..end]));
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// One whitespace-free word: URL credentials and key-shaped runs are replaced.
fn redact_word(word: &str) -> String {
    let mut w = word.to_string();
    // URL credentials: scheme://user:pass@host → scheme://<redacted>@host
    if let Some(scheme_end) = w.find("://") {
        let after = scheme_end + 3;
        let authority_end = w[after..].find(['/', '?', '#']).map_or(w.len(), |i| after + i);
        if let Some(at) = w[after..authority_end].rfind('@') {
            w.replace_range(after..after + at, "<redacted>");
        }
    }
    // Key-shaped runs: a known key prefix, or a long run of key characters with digits and
    // letters mixed (API keys, bearer tokens). Ordinary words never look like that.
    let is_key_char = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.';
    let mut out = String::with_capacity(w.len());
    let mut run = String::new();
    let flush = |run: &mut String, out: &mut String| {
        // A sentence's full stop after a key is not part of it.
        let body = run.trim_end_matches('.');
        if looks_like_key(body) {
            out.push_str("<redacted>");
            out.push_str(&run[body.len()..]);
        } else {
            out.push_str(run);
        }
        run.clear();
    };
    for c in w.chars() {
        if is_key_char(c) {
            run.push(c);
        } else {
            flush(&mut run, &mut out);
            out.push(c);
        }
    }
    flush(&mut run, &mut out);
    out
}

fn looks_like_key(run: &str) -> bool {
    const PREFIXES: &[&str] = &["sk-", "sk_", "rk-", "gsk_", "xai-", "dg_", "key-"];
    let core = run.trim_matches(|c| c == '.' || c == '-' || c == '_');
    if PREFIXES.iter().any(|p| core.starts_with(p)) && core.len() >= 12 {
        return true;
    }
    // A long segment mixing digits and letters: tokens are random, names and dates are not
    // (`claude-3-5-sonnet-20241022` and UUIDs have no such segment).
    core.split(['-', '_', '.']).any(|seg| {
        seg.len() >= 20 && seg.chars().any(|c| c.is_ascii_digit()) && seg.chars().any(|c| c.is_ascii_alphabetic())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_its_own_next_step_and_a_microphone_failure_never_blames_the_network() {
        assert!(!ErrorKind::Microphone.next_step().contains("network"));
        assert!(ErrorKind::Microphone.next_step().contains("microphone"));
        assert!(ErrorKind::Speaker.next_step().contains("speaker"));
        assert_eq!(
            serde_json::to_string(&ErrorKind::LocalEngine).unwrap(),
            "\"local_engine\""
        );
        assert_eq!(ErrorKind::RateLimit.as_str(), "rate_limit");
    }

    /// Issue 9: provider error bodies and transport errors are stored and shown with
    /// anything key-shaped and URL credentials redacted.
    #[test]
    fn key_shaped_text_and_url_credentials_are_redacted() {
        let body = "Incorrect API key provided: sk-proj-abc123XYZ456def789. You can find your API key at https://platform.openai.com/account/api-keys.";
        let r = redact(body);
        assert!(!r.contains("sk-proj-abc123XYZ456def789"), "{r}");
        assert!(r.contains("Incorrect API key provided: <redacted>."), "{r}");
        assert!(r.contains("https://platform.openai.com/account/api-keys."), "{r}");
        let r = redact("cannot connect to https://bob:hunter2@proxy.example:8080/v1: refused");
        assert_eq!(r, "cannot connect to https://<redacted>@proxy.example:8080/v1: refused");
        let r = redact("token 3f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a was rejected");
        assert_eq!(r, "token <redacted> was rejected");
        let plain = "The model claude-3-5-sonnet-20241022 is overloaded (request 0190f3c2-5b7a-7cde-8f00-1a2b3c4d5e6f); try again in 30 seconds.";
        assert_eq!(redact(plain), plain, "ordinary text stays as it is");
        assert_eq!(redact("  two  spaces\n"), "  two  spaces\n");
    }
}
