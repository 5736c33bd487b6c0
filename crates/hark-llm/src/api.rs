//! The OpenAI Chat Completions wire format, as far as a local chat model serves it: request
//! parsing and validation, streamed chunks, the final body, and error bodies.

use serde_json::{json, Value};

/// One chat message after parsing: a role the chat template knows, and plain text.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatMessage {
    pub role: String,
    pub content: String,
}

/// A parsed `POST /v1/chat/completions` request.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    pub messages: Vec<ChatMessage>,
    pub max_tokens: u32,
    /// 0 = greedy.
    pub temperature: f32,
    pub seed: u32,
    pub stream: bool,
    pub include_usage: bool,
    /// Hark's own field (`"ahead": true`), not OpenAI's: the reply is generated ahead of
    /// the request that will want it — a transcript made while push-to-talk is still held
    /// (issue 12). The same request without the field, arriving while it runs, takes the
    /// generation over; arriving after it ended, gets its reply at once (once). Any other
    /// request stops it.
    pub ahead: bool,
    /// Hark's own field (`"open": true`), not OpenAI's: the last message is still being
    /// spoken (the live words while push-to-talk is held, issue 20). The prompt is
    /// evaluated up to the end of its text — its turn not closed, no reply opened — and
    /// nothing is generated: the request that follows with more words, or the whole
    /// message, finds that much in the cache. The reply has no content and `finish_reason`
    /// `"length"`.
    pub open: bool,
}

impl ChatRequest {
    /// Whether `other` asks for the same reply: the same messages and sampling, neither left
    /// open (an open request asks for no reply: it must not take over or use up one made
    /// ahead for the finished message).
    pub fn same_reply(&self, other: &ChatRequest) -> bool {
        !self.open
            && !other.open
            && self.messages == other.messages
            && self.max_tokens == other.max_tokens
            && self.temperature == other.temperature
            && self.seed == other.seed
    }
}

/// A request the server refuses, with the OpenAI error fields.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub status: u16,
    pub message: String,
    pub param: Option<&'static str>,
    pub code: Option<&'static str>,
}

impl ApiError {
    pub fn invalid(message: impl Into<String>, param: &'static str) -> Self {
        Self {
            status: 400,
            message: message.into(),
            param: Some(param),
            code: None,
        }
    }

    /// A failure on the server's side (the model, the cache, a template).
    pub fn server(message: impl Into<String>) -> Self {
        Self {
            status: 500,
            message: message.into(),
            param: None,
            code: None,
        }
    }

    /// A request refused before it reached the model (404, 405, 413, 415, a foreign Host).
    pub fn refused(status: u16, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
            param: None,
            code: None,
        }
    }

    /// No or the wrong bearer token, in OpenAI's words and code.
    pub fn unauthorized() -> Self {
        Self {
            status: 401,
            message: "Incorrect API key provided. This server takes the token it was started with.".into(),
            param: None,
            code: Some("invalid_api_key"),
        }
    }

    /// The error body: `{"error": {"message", "type", "param", "code"}}`.
    pub fn body(&self) -> Value {
        let kind = match self.status {
            401 => "authentication_error",
            403 => "permission_error",
            404 => "not_found_error",
            s if s >= 500 => "server_error",
            _ => "invalid_request_error",
        };
        json!({"error": {"message": self.message, "type": kind, "param": self.param, "code": self.code}})
    }
}

/// Whether a `Host` header names this computer (with or without a port).
pub fn is_loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => host.rsplit_once(':').map_or(host, |(h, port)| {
            if port.chars().all(|c| c.is_ascii_digit()) {
                h
            } else {
                host
            }
        }),
    };
    name.eq_ignore_ascii_case("localhost") || name.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Compares two secrets in time that does not depend on where they differ.
pub fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The default reply budget when the request names none.
pub const DEFAULT_MAX_TOKENS: u32 = 512;

/// Text of a message's `content`: a string, an array of text parts, or null.
fn content_text(content: &Value, i: usize) -> Result<String, ApiError> {
    match content {
        Value::Null => Ok(String::new()),
        Value::String(s) => Ok(s.clone()),
        Value::Array(parts) => {
            let mut out = Vec::new();
            for (j, p) in parts.iter().enumerate() {
                match p["type"].as_str() {
                    Some("text") => out.push(p["text"].as_str().unwrap_or_default().to_string()),
                    other => {
                        return Err(ApiError::invalid(
                            format!(
                                "messages[{i}].content[{j}]: part type {:?} is not supported by this local model (text only)",
                                other.unwrap_or("missing")
                            ),
                            "messages",
                        ))
                    }
                }
            }
            Ok(out.join("\n"))
        }
        _ => Err(ApiError::invalid(
            format!("messages[{i}].content: must be a string, an array of parts, or null"),
            "messages",
        )),
    }
}

/// Parses and validates a request body.
pub fn parse_request(body: &[u8]) -> Result<ChatRequest, ApiError> {
    let v: Value = serde_json::from_slice(body).map_err(|e| {
        ApiError::invalid(
            format!("We could not parse the JSON body of your request ({e})"),
            "body",
        )
    })?;
    let Some(msgs) = v["messages"].as_array() else {
        return Err(ApiError::invalid(
            "messages: a list of messages is required",
            "messages",
        ));
    };
    if msgs.is_empty() {
        return Err(ApiError::invalid("messages: must not be empty", "messages"));
    }
    let mut messages = Vec::with_capacity(msgs.len());
    for (i, m) in msgs.iter().enumerate() {
        if !m.is_object() {
            return Err(ApiError::invalid(
                format!("messages[{i}]: must be a message object, not {m}"),
                "messages",
            ));
        }
        match &m["role"] {
            Value::String(_) => {}
            Value::Null => return Err(ApiError::invalid(format!("messages[{i}].role: missing"), "messages")),
            other => {
                return Err(ApiError::invalid(
                    format!("messages[{i}].role: must be a string, not {other}"),
                    "messages",
                ))
            }
        }
        let text = content_text(&m["content"], i)?;
        let role = match m["role"].as_str() {
            Some("system") | Some("developer") => "system",
            Some("user") => "user",
            Some("assistant") => "assistant",
            // The chat templates of small local models know no tool role: a tool result is
            // shown to the model as a user message saying so.
            Some("tool") => {
                messages.push(ChatMessage {
                    role: "user".into(),
                    content: format!("Tool result: {text}"),
                });
                continue;
            }
            other => {
                return Err(ApiError::invalid(
                    format!("messages[{i}].role: unknown role {:?}", other.unwrap_or("missing")),
                    "messages",
                ))
            }
        };
        let mut content = text;
        if let Some(calls) = m["tool_calls"].as_array() {
            for c in calls {
                let f = &c["function"];
                content.push_str(&format!(
                    "\n(called {}({}))",
                    f["name"].as_str().unwrap_or("?"),
                    f["arguments"].as_str().unwrap_or("")
                ));
            }
        }
        messages.push(ChatMessage {
            role: role.into(),
            content,
        });
    }
    // One assistant message at the end is the start of the reply (a prefill); two are no
    // conversation a chat template can render (llama.cpp's server refuses them the same way).
    if msgs.len() >= 2 && msgs[msgs.len() - 2..].iter().all(|m| m["role"] == "assistant") {
        return Err(ApiError::invalid(
            "messages: cannot end with 2 or more assistant messages",
            "messages",
        ));
    }
    let max_tokens = v["max_completion_tokens"]
        .as_u64()
        .or(v["max_tokens"].as_u64())
        .unwrap_or(DEFAULT_MAX_TOKENS as u64);
    if max_tokens == 0 {
        return Err(ApiError::invalid("max_tokens: must be at least 1", "max_tokens"));
    }
    let temperature = v["temperature"].as_f64().unwrap_or(0.7) as f32;
    if !(0.0..=2.0).contains(&temperature) {
        return Err(ApiError::invalid(
            format!("temperature: {temperature} is not between 0 and 2"),
            "temperature",
        ));
    }
    let open = hark_flag(&v, "open")?;
    let ahead = hark_flag(&v, "ahead")?;
    if open && ahead {
        return Err(ApiError::invalid(
            "open: a message still being spoken has no reply to generate ahead",
            "open",
        ));
    }
    Ok(ChatRequest {
        messages,
        max_tokens: max_tokens.min(u32::MAX as u64) as u32,
        temperature,
        seed: v["seed"].as_u64().unwrap_or(0x5eed) as u32,
        stream: v["stream"].as_bool().unwrap_or(false),
        include_usage: v["stream_options"]["include_usage"].as_bool().unwrap_or(false),
        ahead,
        open,
    })
}

/// One of Hark's own boolean fields (`ahead`, `open`): absent is false, anything but a
/// boolean is refused by name.
fn hark_flag(v: &Value, name: &'static str) -> Result<bool, ApiError> {
    match &v[name] {
        Value::Null => Ok(false),
        Value::Bool(b) => Ok(*b),
        other => Err(ApiError::invalid(format!("{name}: {other} is not a boolean"), name)),
    }
}

/// Identifies one completion in its chunks.
pub struct Completion<'a> {
    pub id: &'a str,
    pub created: u64,
    pub model: &'a str,
}

impl Completion<'_> {
    /// One `chat.completion.chunk` as an SSE event.
    pub fn chunk(&self, delta: Value, finish_reason: Option<&str>) -> String {
        let v = json!({
            "id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model,
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason}],
        });
        format!("data: {v}\n\n")
    }

    /// The usage chunk (`stream_options.include_usage`): no choices.
    pub fn usage_chunk(&self, usage: Usage) -> String {
        let v = json!({
            "id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model,
            "choices": [], "usage": usage.body(),
        });
        format!("data: {v}\n\n")
    }

    /// The non-streamed `chat.completion` body.
    pub fn body(&self, text: &str, finish_reason: &str, usage: Usage) -> Value {
        json!({
            "id": self.id, "object": "chat.completion", "created": self.created, "model": self.model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text, "refusal": null},
                         "logprobs": null, "finish_reason": finish_reason}],
            "usage": usage.body(),
        })
    }
}

/// A generation's token counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    pub prompt_tokens: u32,
    pub completion_tokens: u32,
    /// Prompt tokens served from the KV cache (not evaluated again).
    pub cached_tokens: u32,
}

impl Usage {
    /// OpenAI's `usage` object, cached tokens under `prompt_tokens_details` as OpenAI (and
    /// llama.cpp's server) report them.
    fn body(self) -> Value {
        json!({
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
            "prompt_tokens_details": {"cached_tokens": self.cached_tokens},
        })
    }
}

/// Turns token pieces (bytes) into text without splitting a UTF-8 character across deltas.
#[derive(Default)]
pub struct Utf8Stream {
    pending: Vec<u8>,
}

impl Utf8Stream {
    /// Adds bytes; returns the text that is complete so far.
    pub fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        match std::str::from_utf8(&self.pending) {
            Ok(s) => {
                let out = s.to_string();
                self.pending.clear();
                out
            }
            Err(e) if e.error_len().is_none() => {
                // An incomplete character at the end: keep it for the next piece.
                let n = e.valid_up_to();
                let out = String::from_utf8_lossy(&self.pending[..n]).to_string();
                self.pending.drain(..n);
                out
            }
            Err(_) => {
                let out = String::from_utf8_lossy(&self.pending).to_string();
                self.pending.clear();
                out
            }
        }
    }

    /// What is left at the end (an incomplete character becomes U+FFFD).
    pub fn finish(&mut self) -> String {
        let out = String::from_utf8_lossy(&self.pending).to_string();
        self.pending.clear();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request left open asks for no reply, so it is never the same reply as one with
    /// the same messages: it neither takes over a generation ahead nor uses up its reply.
    #[test]
    fn an_open_request_is_never_the_same_reply() {
        let body = |extra: &str| {
            format!(r#"{{"max_tokens":8,"temperature":0,"messages":[{{"role":"user","content":"hi"}}]{extra}}}"#)
        };
        let ahead = parse_request(body(r#","ahead":true"#).as_bytes()).unwrap();
        let turn = parse_request(body("").as_bytes()).unwrap();
        let open = parse_request(body(r#","open":true"#).as_bytes()).unwrap();
        assert!(open.open && !turn.open);
        assert!(ahead.same_reply(&turn));
        assert!(!ahead.same_reply(&open) && !open.same_reply(&ahead));
        assert!(!open.same_reply(&open));
    }

    #[test]
    fn parses_roles_content_forms_and_limits() {
        let r = parse_request(
            br#"{"model":"local","stream":true,"stream_options":{"include_usage":true},"max_tokens":64,"temperature":0,
                "messages":[{"role":"system","content":"Be brief."},
                            {"role":"user","content":[{"type":"text","text":"hi"}]},
                            {"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get_time","arguments":"{}"}}]},
                            {"role":"tool","tool_call_id":"c1","content":"noon"}]}"#,
        )
        .unwrap();
        assert!(r.stream && r.include_usage);
        assert_eq!((r.max_tokens, r.temperature), (64, 0.0));
        let roles: Vec<&str> = r.messages.iter().map(|m| m.role.as_str()).collect();
        assert_eq!(roles, ["system", "user", "assistant", "user"]);
        assert_eq!(r.messages[1].content, "hi");
        assert_eq!(r.messages[2].content, "\n(called get_time({}))");
        assert_eq!(r.messages[3].content, "Tool result: noon");
    }

    #[test]
    fn bad_requests_name_the_problem() {
        let e = |b: &str| parse_request(b.as_bytes()).unwrap_err().message;
        assert!(e("{").starts_with("We could not parse the JSON body"));
        assert_eq!(e(r#"{"messages":[]}"#), "messages: must not be empty");
        assert_eq!(
            e(r#"{"messages":[{"role":"narrator","content":"x"}]}"#),
            "messages[0].role: unknown role \"narrator\""
        );
        assert!(e(r#"{"messages":[{"role":"user","content":[{"type":"image_url"}]}]}"#).contains("text only"));
        assert_eq!(
            e(r#"{"messages":[123]}"#),
            "messages[0]: must be a message object, not 123"
        );
        assert_eq!(e(r#"{"messages":[{"content":"x"}]}"#), "messages[0].role: missing");
        assert_eq!(
            e(r#"{"messages":[{"role":123}]}"#),
            "messages[0].role: must be a string, not 123"
        );
        assert_eq!(
            e(
                r#"{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"assistant","content":"c"}]}"#
            ),
            "messages: cannot end with 2 or more assistant messages"
        );
        assert_eq!(
            e(r#"{"messages":[{"role":"user","content":"x"}],"temperature":3}"#),
            "temperature: 3 is not between 0 and 2"
        );
    }

    #[test]
    fn only_loopback_host_names_pass() {
        for ok in ["127.0.0.1:8080", "localhost", "LOCALHOST:1", "[::1]:9000", "127.0.0.2"] {
            assert!(is_loopback_host(ok), "{ok}");
        }
        for bad in [
            "",
            "evil.example",
            "evil.example:80",
            "192.168.0.2:8080",
            "127.0.0.1.evil.example",
            "[::2]:80",
        ] {
            assert!(!is_loopback_host(bad), "{bad}");
        }
        assert!(same_secret(b"abc", b"abc") && !same_secret(b"abc", b"abd") && !same_secret(b"abc", b"ab"));
    }

    #[test]
    fn utf8_characters_are_never_split_across_deltas() {
        let mut s = Utf8Stream::default();
        let e = "é".as_bytes();
        assert_eq!(s.push(b"caf"), "caf");
        assert_eq!(s.push(&e[..1]), "");
        assert_eq!(s.push(&e[1..]), "é");
        assert_eq!(s.push(&"😀".as_bytes()[..2]), "");
        assert_eq!(s.finish(), "\u{fffd}");
    }

    #[test]
    fn chunks_are_the_openai_format() {
        let c = Completion {
            id: "chatcmpl-1",
            created: 7,
            model: "m",
        };
        let ev = c.chunk(json!({"content": "Hi"}), None);
        assert!(ev.starts_with("data: {") && ev.ends_with("}\n\n"));
        let v: Value = serde_json::from_str(ev.trim_start_matches("data: ").trim()).unwrap();
        assert_eq!(v["choices"][0]["delta"]["content"], "Hi");
        assert_eq!(v["object"], "chat.completion.chunk");
        let usage = Usage {
            prompt_tokens: 3,
            completion_tokens: 4,
            cached_tokens: 2,
        };
        let u: Value = serde_json::from_str(c.usage_chunk(usage).trim_start_matches("data: ").trim()).unwrap();
        assert_eq!(u["usage"]["total_tokens"], 7);
        assert_eq!(u["usage"]["prompt_tokens_details"]["cached_tokens"], 2);
        assert_eq!(u["choices"], json!([]));
    }
}
