//! Sending a request with retries, and reading a streamed body as server-sent events.

use std::time::Duration;

use rand::Rng;
use reqwest::{RequestBuilder, Response};
use serde_json::Value;

use super::sse::{SseEvent, SseParser};
use super::{ErrorKind, ProviderError, RetryPolicy};

/// The largest error body read for a message; the rest is of no use to a person.
const MAX_ERROR_BODY: usize = 16 * 1024;

/// Maps an HTTP status plus the provider's error `type`/`code` to an [`ErrorKind`].
pub(crate) fn classify(status: u16, error_type: Option<&str>, code: Option<&str>) -> ErrorKind {
    let says = |names: &[&str]| names.iter().any(|n| Some(*n) == error_type || Some(*n) == code);
    if says(&["insufficient_quota", "billing_error", "billing_hard_limit_reached"]) {
        return ErrorKind::Quota;
    }
    match status {
        401 | 403 => ErrorKind::Auth,
        402 => ErrorKind::Quota,
        429 => ErrorKind::RateLimit,
        408 => ErrorKind::Connectivity,
        500..=599 => ErrorKind::Server,
        400..=499 => ErrorKind::InvalidRequest,
        _ => ErrorKind::InvalidResponse,
    }
}

/// Reads `{"error": {"type": .., "code": .., "message": ..}}` (OpenAI; Anthropic wraps it in
/// `{"type": "error", ...}`) or Deepgram's `{"err_code": .., "err_msg": ..}`.
/// Returns (type, code, message).
pub(crate) fn error_fields(body: &Value) -> (Option<String>, Option<String>, Option<String>) {
    let e = &body["error"];
    let s = |v: &Value| v.as_str().map(str::to_string);
    if e.is_null() && body.get("err_msg").is_some() {
        return (None, s(&body["err_code"]), s(&body["err_msg"]));
    }
    match e {
        Value::Object(_) => (s(&e["type"]), s(&e["code"]), s(&e["message"])),
        Value::String(m) => (None, None, Some(m.clone())),
        _ => (None, None, None),
    }
}

/// The HTTP client for a provider's endpoint, with its connect timeout. The endpoint is
/// checked first ([`check_endpoint`]), and the client follows no redirects: a redirect would
/// carry the key's header to another host (issue 9). A 3xx answer becomes an error that
/// names where it pointed.
pub(crate) fn client(
    provider: &'static str,
    connect_timeout: std::time::Duration,
    base_url: &str,
) -> Result<reqwest::Client, ProviderError> {
    check_endpoint(provider, base_url)?;
    reqwest::Client::builder()
        .connect_timeout(connect_timeout)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| ProviderError::new(provider, ErrorKind::Connectivity, format!("cannot set up HTTP: {e}")))
}

/// Whether a host name or address is this computer (loopback).
pub fn is_loopback_host(host: &str) -> bool {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    h.eq_ignore_ascii_case("localhost") || h.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// An endpoint Hark may send requests (and keys) to: `https://` anywhere, plain `http://`
/// only to this computer (a local model server), where nothing crosses a network.
pub fn check_endpoint(provider: &'static str, base_url: &str) -> Result<(), ProviderError> {
    let bad = |why: String| ProviderError::new(provider, ErrorKind::Settings, why);
    let url = reqwest::Url::parse(base_url.trim())
        .map_err(|e| bad(format!("the base URL {base_url:?} is not a URL ({e})")))?;
    let host = url.host_str().unwrap_or_default();
    match url.scheme() {
        "https" | "wss" => Ok(()),
        "http" | "ws" if is_loopback_host(host) => Ok(()),
        "http" | "ws" => Err(bad(format!(
            "the base URL {base_url} uses plain http:// to {host}: keys and conversations would cross the network unencrypted; use https:// (plain http is only for servers on this computer)"
        ))),
        other => Err(bad(format!(
            "the base URL {base_url} has scheme {other}: use https://"
        ))),
    }
}

/// The error for a request that needs a key and has none, saying where keys come from.
pub(crate) fn missing_key(provider: &'static str) -> ProviderError {
    let var = crate::endpoints::key_env_var(provider).unwrap_or("the provider's key variable");
    ProviderError::new(
        provider,
        ErrorKind::Auth,
        format!("no API key: set {var} or store one with `hark keys set {provider}`"),
    )
}

/// Sends with retries on 429 and 5xx (rate limit, server), honouring `retry-after`.
pub(crate) struct Sender {
    pub provider: &'static str,
    pub retry: RetryPolicy,
}

impl Sender {
    pub async fn send(&self, build: impl Fn() -> RequestBuilder) -> Result<Response, ProviderError> {
        let mut attempt = 0;
        loop {
            let err = match build().send().await {
                Ok(resp) if resp.status().is_success() => return Ok(resp),
                Ok(resp) if resp.status().is_redirection() => return Err(self.redirect_error(&resp)),
                Ok(resp) => self.http_error(resp).await,
                Err(e) => self.transport_error(&e),
            };
            if !err.kind.is_retryable() || attempt >= self.retry.max_retries {
                return Err(err);
            }
            let backoff = self.retry.base_delay.saturating_mul(1 << attempt.min(16));
            let jitter = rand::rng().random_range(0.8..1.2);
            let wait = err
                .retry_after
                .unwrap_or(backoff.mul_f64(jitter))
                .min(self.retry.max_delay);
            tracing::warn!(provider = self.provider, kind = %err.kind, attempt, ?wait, "retrying: {}", err.message);
            tokio::time::sleep(wait).await;
            attempt += 1;
        }
    }

    fn redirect_error(&self, resp: &Response) -> ProviderError {
        let to = resp
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("an address it did not give");
        ProviderError {
            status: Some(resp.status().as_u16()),
            ..ProviderError::new(
                self.provider,
                ErrorKind::InvalidResponse,
                format!(
                    "{} answered with a redirect (HTTP {}) to {to}; Hark follows no redirects, so a key never goes to another host: if you trust that address, set it as the base URL",
                    resp.url(),
                    resp.status().as_u16()
                ),
            )
        }
    }

    fn transport_error(&self, e: &reqwest::Error) -> ProviderError {
        let what = if e.is_timeout() {
            "timed out waiting for the server"
        } else if e.is_connect() {
            "cannot connect"
        } else {
            "request failed"
        };
        let mut source = String::new();
        let mut cur: Option<&dyn std::error::Error> = Some(e);
        while let Some(c) = cur {
            source = c.to_string();
            cur = c.source();
        }
        let url = e.url().map(|u| format!(" to {}", u.as_str())).unwrap_or_default();
        ProviderError::new(self.provider, ErrorKind::Connectivity, format!("{what}{url}: {source}"))
    }

    async fn http_error(&self, resp: Response) -> ProviderError {
        let status = resp.status().as_u16();
        let retry_after = resp
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s >= 0.0)
            .map(Duration::from_secs_f64);
        let body = read_limited(resp).await;
        let json: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let (etype, code, message) = error_fields(&json);
        let kind = classify(status, etype.as_deref(), code.as_deref());
        let message = message.unwrap_or_else(|| {
            let text = String::from_utf8_lossy(&body);
            let text = text.trim();
            if text.is_empty() {
                format!("HTTP {status}")
            } else {
                format!("HTTP {status}: {}", text.chars().take(300).collect::<String>())
            }
        });
        ProviderError {
            status: Some(status),
            retry_after,
            ..ProviderError::new(self.provider, kind, message)
        }
    }
}

async fn read_limited(mut resp: Response) -> Vec<u8> {
    let mut body = Vec::new();
    while let Ok(Some(chunk)) = resp.chunk().await {
        body.extend_from_slice(&chunk);
        if body.len() >= MAX_ERROR_BODY {
            body.truncate(MAX_ERROR_BODY);
            break;
        }
    }
    body
}

/// Reads a streamed response as events, failing when the server goes silent for too long.
pub(crate) struct EventReader {
    resp: Response,
    parser: SseParser,
    idle: Duration,
    provider: &'static str,
}

impl EventReader {
    pub fn new(resp: Response, idle: Duration, provider: &'static str) -> Self {
        Self {
            resp,
            parser: SseParser::new(),
            idle,
            provider,
        }
    }

    /// The next event, or `None` at the end of the body.
    pub async fn next(&mut self) -> Result<Option<SseEvent>, ProviderError> {
        loop {
            match self.parser.next_event() {
                Ok(Some(ev)) => return Ok(Some(ev)),
                Ok(None) => {}
                Err(e) => {
                    return Err(ProviderError::new(
                        self.provider,
                        ErrorKind::InvalidResponse,
                        e.to_string(),
                    ))
                }
            }
            match tokio::time::timeout(self.idle, self.resp.chunk()).await {
                Ok(Ok(Some(bytes))) => self.parser.push(&bytes),
                Ok(Ok(None)) => return Ok(None),
                Ok(Err(e)) => {
                    return Err(ProviderError::new(
                        self.provider,
                        ErrorKind::Connectivity,
                        format!("the connection dropped mid-reply: {e}"),
                    ))
                }
                Err(_) => {
                    return Err(ProviderError::new(
                        self.provider,
                        ErrorKind::Connectivity,
                        format!("no data from the server for {} s mid-reply", self.idle.as_secs_f32()),
                    ))
                }
            }
        }
    }
}

/// Parses one event's JSON data, naming the provider and event on failure.
pub(crate) fn parse_data(provider: &'static str, ev: &SseEvent) -> Result<Value, ProviderError> {
    serde_json::from_str(&ev.data).map_err(|e| {
        ProviderError::new(
            provider,
            ErrorKind::InvalidResponse,
            format!(
                "event {:?} is not valid JSON ({e}): {}",
                ev.event.as_deref().unwrap_or("message"),
                ev.data.chars().take(200).collect::<String>()
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 9: plain http carried keys over the network to any host.
    #[test]
    fn plain_http_is_only_for_loopback_endpoints() {
        for ok in [
            "https://api.openai.com/v1",
            "http://127.0.0.1:11434/v1",
            "http://localhost:1234/v1",
            "http://[::1]:8080",
            "http://127.3.4.5/v1",
        ] {
            assert!(check_endpoint("openai", ok).is_ok(), "{ok}");
        }
        for bad in [
            "http://192.168.1.20:11434/v1",
            "http://api.openai.com/v1",
            "ftp://x",
            "not a url",
        ] {
            let e = check_endpoint("openai", bad).unwrap_err();
            assert_eq!(e.kind, ErrorKind::Settings, "{bad}: {e}");
        }
        assert!(check_endpoint("openai", "http://example.com/v1")
            .unwrap_err()
            .message
            .contains("use https://"));
    }

    #[test]
    fn statuses_and_provider_types_map_to_kinds() {
        assert_eq!(classify(401, Some("authentication_error"), None), ErrorKind::Auth);
        assert_eq!(classify(403, Some("permission_error"), None), ErrorKind::Auth);
        assert_eq!(classify(429, Some("rate_limit_error"), None), ErrorKind::RateLimit);
        assert_eq!(
            classify(429, Some("insufficient_quota"), Some("insufficient_quota")),
            ErrorKind::Quota
        );
        assert_eq!(classify(400, Some("billing_error"), None), ErrorKind::Quota);
        assert_eq!(classify(529, Some("overloaded_error"), None), ErrorKind::Server);
        assert_eq!(classify(500, None, None), ErrorKind::Server);
        assert_eq!(classify(404, Some("not_found_error"), None), ErrorKind::InvalidRequest);
        assert_eq!(classify(302, None, None), ErrorKind::InvalidResponse);
        assert!(ErrorKind::RateLimit.is_retryable() && ErrorKind::Server.is_retryable());
        assert!(!ErrorKind::Quota.is_retryable() && !ErrorKind::Auth.is_retryable());
    }
}
