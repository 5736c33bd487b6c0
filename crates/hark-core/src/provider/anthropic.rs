//! Anthropic Messages API: `POST {base}/v1/messages` with `stream: true`.
//!
//! The system prompt goes in the top-level `system` field; tool results travel as
//! `tool_result` blocks in a user message; consecutive same-role messages are merged into
//! one message of content blocks, as the API requires alternation.

use async_trait::async_trait;
use serde_json::{json, Value};

use super::http::{self, classify, error_fields, parse_data, EventReader, Sender};
use super::{
    endpoint, send_delta, whole_arguments, ChatModel, Completion, DeltaSink, Ending, ErrorKind, ProviderConfig,
    ProviderError,
};
use crate::conversation::{Prompt, PromptMessage, ToolCall};

const PROVIDER: &str = "anthropic";
/// The API version this client speaks.
pub const API_VERSION: &str = "2023-06-01";

/// A client for one Anthropic model.
pub struct Anthropic {
    config: ProviderConfig,
    client: reqwest::Client,
}

impl Anthropic {
    pub fn new(config: ProviderConfig) -> Result<Self, ProviderError> {
        let client = http::client(PROVIDER, config.connect_timeout, &config.base_url)?;
        Ok(Self { config, client })
    }
}

/// The request body for a prompt.
pub fn request_body(config: &ProviderConfig, prompt: &Prompt) -> Value {
    let mut body = json!({
        "model": config.model,
        "max_tokens": prompt.max_tokens.unwrap_or(config.max_tokens),
        "messages": if prompt.tools.is_empty() {
            encode_messages(&tool_blocks_as_text(&prompt.messages))
        } else {
            encode_messages(&prompt.messages)
        },
        "stream": true,
    });
    // Prompt caching (issue 12): a breakpoint after the system text (with the tools
    // before it) and one on the request's last block, as Anthropic documents for a
    // conversation — each turn writes its whole prompt to the cache and the next turn, the
    // same prompt plus the new exchange, reads it (the API looks for the longest prefix
    // written before). Prompts below the model's minimum (1,024 tokens for most) are simply
    // not cached; reads cost a tenth of input tokens, writes 1.25×.
    let system = prompt.system_with_recall();
    if !system.is_empty() {
        body["system"] = json!([{"type": "text", "text": system, "cache_control": cache_breakpoint()}]);
    }
    if let Some(last) = body["messages"].as_array_mut().and_then(|m| m.last_mut()) {
        mark_cache_breakpoint(last);
    }
    if let Some(t) = config.temperature {
        body["temperature"] = json!(t);
    }
    if !prompt.tools.is_empty() {
        body["tools"] = prompt
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
            .collect();
    }
    body
}

fn cache_breakpoint() -> Value {
    json!({"type": "ephemeral"})
}

/// Puts a cache breakpoint on a message's last content block (a plain-string content
/// becomes one text block to carry it).
fn mark_cache_breakpoint(message: &mut Value) {
    if let Some(text) = message["content"].as_str() {
        message["content"] = json!([{"type": "text", "text": text}]);
    }
    if let Some(block) = message["content"].as_array_mut().and_then(|b| b.last_mut()) {
        block["cache_control"] = cache_breakpoint();
    }
}

/// Input tokens from a `usage` object (`message_start`, and `message_delta` where the API
/// repeats them): the prompt is `input_tokens` (after the last cache breakpoint) plus what
/// was written to and read from the cache; reads are the cached tokens.
fn input_usage(u: &Value, usage: &mut super::ReportedUsage) {
    let Some(uncached) = u["input_tokens"].as_u64() else {
        return;
    };
    // A repeat without the cache figures would undercount: what came first stands.
    if usage.input_tokens.is_some() && u.get("cache_read_input_tokens").is_none() {
        return;
    }
    let written = u["cache_creation_input_tokens"].as_u64().unwrap_or(0);
    let read = u["cache_read_input_tokens"].as_u64().unwrap_or(0);
    usage.input_tokens = Some((uncached + written + read) as u32);
    usage.cached_input_tokens = Some(read as u32);
}

/// The Messages API refuses `tool_use`/`tool_result` blocks in a request that defines no
/// tools. With no tools offered (tools turned off, an imported history with function
/// calls), earlier calls and results are told as text instead, so nothing is lost.
fn tool_blocks_as_text(messages: &[PromptMessage]) -> Vec<PromptMessage> {
    messages
        .iter()
        .map(|m| match m {
            PromptMessage::Assistant { text, tool_calls } if !tool_calls.is_empty() => {
                let mut t = text.clone();
                for c in tool_calls {
                    if !t.is_empty() {
                        t.push('\n');
                    }
                    t.push_str(&format!("[called the tool {} with {}]", c.name, c.arguments));
                }
                PromptMessage::Assistant {
                    text: t,
                    tool_calls: Vec::new(),
                }
            }
            PromptMessage::ToolResult { name, content, .. } => PromptMessage::User {
                text: format!("[the tool {name} returned: {content}]"),
            },
            other => other.clone(),
        })
        .collect()
}

/// Encodes context messages as Anthropic messages (alternating roles, content blocks).
pub fn encode_messages(messages: &[PromptMessage]) -> Vec<Value> {
    let mut out: Vec<(String, Vec<Value>)> = Vec::new();
    for m in messages {
        let (role, blocks) = match m {
            PromptMessage::User { text } => ("user", vec![json!({"type": "text", "text": text})]),
            PromptMessage::Note { text } => ("user", vec![json!({"type": "text", "text": format!("[note] {text}")})]),
            PromptMessage::Assistant { text, tool_calls } => {
                let mut blocks = Vec::new();
                if !text.is_empty() {
                    blocks.push(json!({"type": "text", "text": text}));
                }
                blocks.extend(tool_calls.iter().map(|c| {
                    json!({"type": "tool_use", "id": c.id, "name": c.name, "input": arguments_object(&c.arguments)})
                }));
                ("assistant", blocks)
            }
            PromptMessage::ToolResult {
                call_id,
                content,
                is_error,
                ..
            } => (
                "user",
                vec![json!({"type": "tool_result", "tool_use_id": call_id, "content": content, "is_error": is_error})],
            ),
        };
        match out.last_mut() {
            Some((r, b)) if r == role => b.extend(blocks),
            _ => out.push((role.to_string(), blocks)),
        }
    }
    // The API wants the conversation to open with the user (an imported history may open
    // with the assistant's greeting).
    if out.first().is_some_and(|(r, _)| r == "assistant") {
        out.insert(
            0,
            (
                "user".to_string(),
                vec![json!({"type": "text", "text": "(conversation resumed)"})],
            ),
        );
    }
    out.into_iter()
        .map(|(role, blocks)| {
            // A single text block is sent as a plain string, the API's simplest form.
            if blocks.len() == 1 && blocks[0]["type"] == "text" {
                json!({"role": role, "content": blocks[0]["text"]})
            } else {
                json!({"role": role, "content": blocks})
            }
        })
        .collect()
}

/// Tool arguments are a JSON text in the record; Anthropic wants an object.
fn arguments_object(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(v @ Value::Object(_)) => v,
        _ if arguments.trim().is_empty() => json!({}),
        _ => json!({ "input": arguments }),
    }
}

#[async_trait]
impl ChatModel for Anthropic {
    fn provider(&self) -> &'static str {
        PROVIDER
    }

    fn model(&self) -> &str {
        &self.config.model
    }

    async fn stream(&self, prompt: &Prompt, on_delta: &DeltaSink) -> Result<Completion, ProviderError> {
        let Some(key) = self.config.api_key.as_deref() else {
            return Err(http::missing_key(PROVIDER));
        };
        let url = endpoint(&self.config.base_url, "v1/messages");
        let body = request_body(&self.config, prompt);
        let sender = Sender {
            provider: PROVIDER,
            retry: self.config.retry,
        };
        let resp = sender
            .send(|| {
                self.client
                    .post(&url)
                    .header("x-api-key", key)
                    .header("anthropic-version", API_VERSION)
                    .header("accept", "text/event-stream")
                    .json(&body)
            })
            .await?;
        read_stream(EventReader::new(resp, self.config.idle_timeout, PROVIDER), on_delta).await
    }
}

/// Tool-use blocks being streamed, by content-block index.
struct PendingTool {
    index: u64,
    call: ToolCall,
}

async fn read_stream(mut events: EventReader, on_delta: &DeltaSink) -> Result<Completion, ProviderError> {
    let mut done = Completion::default();
    let mut tools: Vec<PendingTool> = Vec::new();
    let mut stopped = false;
    // Blocks whose `content_block_stop` came: a tool input the length limit cut has none.
    let mut closed: Vec<u64> = Vec::new();
    let mut explanation = None;
    // Event, block and delta types Hark passes over, each logged once a reply.
    let mut passed_over: Vec<String> = Vec::new();
    let mut pass_over = |what: &str, kind: &str| {
        let seen = format!("{what} {kind}");
        if !passed_over.contains(&seen) {
            tracing::info!("{PROVIDER}: passed over a {what} of type {kind:?}");
            passed_over.push(seen);
        }
    };
    while let Some(ev) = events.next().await? {
        let name = ev.event.clone().unwrap_or_default();
        if name == "ping" {
            continue;
        }
        let data = parse_data(PROVIDER, &ev)?;
        let kind = data["type"].as_str().unwrap_or(name.as_str()).to_string();
        match kind.as_str() {
            "message_start" => {
                let m = &data["message"];
                done.model = m["model"].as_str().map(str::to_string);
                let u = &m["usage"];
                input_usage(u, &mut done.usage);
                done.usage.output_tokens = u["output_tokens"].as_u64().map(|n| n as u32);
            }
            "content_block_start" => {
                let b = &data["content_block"];
                if b["type"] == "tool_use" {
                    tools.push(PendingTool {
                        index: data["index"].as_u64().unwrap_or(0),
                        call: ToolCall {
                            id: b["id"].as_str().unwrap_or_default().to_string(),
                            name: b["name"].as_str().unwrap_or_default().to_string(),
                            arguments: String::new(),
                            client_side: true,
                        },
                    });
                } else if b["type"] == "text" {
                    if let Some(t) = b["text"].as_str().filter(|t| !t.is_empty()) {
                        done.text.push_str(t);
                        send_delta(on_delta, t);
                    }
                } else if b["type"] != "thinking" && b["type"] != "redacted_thinking" {
                    // Server tools' blocks, compaction, and blocks the API adds later.
                    pass_over("content block", b["type"].as_str().unwrap_or("?"));
                }
            }
            "content_block_stop" => closed.push(data["index"].as_u64().unwrap_or(0)),
            "content_block_delta" => {
                let d = &data["delta"];
                match d["type"].as_str() {
                    Some("text_delta") => {
                        let t = d["text"].as_str().ok_or_else(|| invalid("text_delta without text"))?;
                        done.text.push_str(t);
                        send_delta(on_delta, t);
                    }
                    Some("input_json_delta") => {
                        let index = data["index"].as_u64().unwrap_or(0);
                        if let Some(p) = tools.iter_mut().find(|p| p.index == index) {
                            p.call
                                .arguments
                                .push_str(d["partial_json"].as_str().unwrap_or_default());
                        }
                    }
                    // Thinking is not spoken.
                    Some("thinking_delta" | "signature_delta") => {}
                    other => pass_over("delta", other.unwrap_or("?")),
                }
            }
            "message_delta" => {
                if let Some(r) = data["delta"]["stop_reason"].as_str() {
                    done.stop_reason = Some(r.to_string());
                }
                // A refusal may say why (recorded: "This request was refused due to policy.").
                explanation = data["delta"]["stop_details"]["explanation"]
                    .as_str()
                    .filter(|t| !t.trim().is_empty())
                    .map(str::to_string)
                    .or(explanation);
                if let Some(n) = data["usage"]["output_tokens"].as_u64() {
                    done.usage.output_tokens = Some(n as u32);
                }
                input_usage(&data["usage"], &mut done.usage);
            }
            "message_stop" => {
                stopped = true;
                break;
            }
            "error" => {
                let (etype, code, message) = error_fields(&data);
                // A mid-stream error has no HTTP status of its own; overloaded/api errors
                // are server trouble.
                let status = match etype.as_deref() {
                    Some("overloaded_error") => 529,
                    Some("rate_limit_error") => 429,
                    Some("authentication_error") => 401,
                    Some("invalid_request_error") => 400,
                    _ => 500,
                };
                let mut e = ProviderError::new(
                    PROVIDER,
                    classify(status, etype.as_deref(), code.as_deref()),
                    message.unwrap_or_else(|| "error event without a message".to_string()),
                );
                e.status = Some(status);
                return Err(e);
            }
            other => pass_over("stream event", other),
        }
    }
    // `message_delta` carries the stop reason and the final usage: after it only
    // `message_stop` is to come, so a stream that ends there lost nothing. The SDK's own
    // streaming fixtures end so (`message_stop` with no blank line after it, an event SSE
    // never dispatches), and the SDK takes them as whole messages.
    if !stopped && done.stop_reason.is_none() {
        return Err(ProviderError::new(
            PROVIDER,
            ErrorKind::Connectivity,
            "the stream ended before message_stop: the reply is incomplete",
        ));
    }
    done.ending = match done.stop_reason.as_deref() {
        Some("refusal") => Ending::Refused,
        Some("max_tokens" | "model_context_window_exceeded") => Ending::CutOff,
        _ => Ending::Finished,
    };
    // The refusal's reason, when the API gives one, is said after whatever came before it.
    if let Some(t) = explanation.filter(|_| done.ending == Ending::Refused) {
        let said = if done.text.trim().is_empty() {
            t.clone()
        } else {
            format!(" {t}")
        };
        send_delta(on_delta, &said);
        done.text.push_str(&said);
        done.refusal = Some(t);
    }
    for p in tools.iter_mut() {
        if p.call.arguments.is_empty() {
            p.call.arguments = "{}".to_string();
        }
    }
    done.tool_calls = tools
        .into_iter()
        // A tool input the length limit cut off (recorded: `{"filename": "taxes.txt", ...`
        // with no `content_block_stop`) never runs.
        .filter(|p| done.ending != Ending::CutOff || (closed.contains(&p.index) && whole_arguments(&p.call.arguments)))
        .map(|p| p.call)
        .collect();
    Ok(done)
}

fn invalid(what: &str) -> ProviderError {
    ProviderError::new(PROVIDER, ErrorKind::InvalidResponse, what.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_alternating_roles_tool_blocks_and_top_level_system() {
        let prompt = Prompt {
            system: "Be brief.".into(),
            messages: vec![
                PromptMessage::User {
                    text: "weather?".into(),
                },
                PromptMessage::Assistant {
                    text: "Checking.".into(),
                    tool_calls: vec![ToolCall {
                        id: "toolu_1".into(),
                        name: "get_weather".into(),
                        arguments: r#"{"location":"Paris"}"#.into(),
                        client_side: true,
                    }],
                },
                PromptMessage::ToolResult {
                    call_id: "toolu_1".into(),
                    name: "get_weather".into(),
                    content: "sunny".into(),
                    is_error: false,
                },
                PromptMessage::Note { text: "late".into() },
            ],
            tools: vec![crate::conversation::ToolSpec {
                name: "get_weather".into(),
                description: "Weather at a place.".into(),
                parameters: json!({"type": "object", "properties": {"location": {"type": "string"}}}),
            }],
            ..Default::default()
        };
        let mut cfg = ProviderConfig::new(super::super::ProviderKind::Anthropic);
        cfg.model = "claude-haiku-4-5".into();
        let body = request_body(&cfg, &prompt);
        assert_eq!(
            body,
            json!({
                "model": "claude-haiku-4-5",
                "max_tokens": 1024,
                "stream": true,
                "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
                "tools": [{"name": "get_weather", "description": "Weather at a place.",
                           "input_schema": {"type": "object", "properties": {"location": {"type": "string"}}}}],
                "messages": [
                    {"role": "user", "content": "weather?"},
                    {"role": "assistant", "content": [
                        {"type": "text", "text": "Checking."},
                        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"location": "Paris"}}
                    ]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny", "is_error": false},
                        {"type": "text", "text": "[note] late", "cache_control": {"type": "ephemeral"}}
                    ]}
                ]
            })
        );
        // Without tools offered, the same history is told as text (the API would refuse
        // tool blocks in a request without tools).
        let plain = request_body(
            &cfg,
            &Prompt {
                tools: Vec::new(),
                ..prompt
            },
        );
        assert_eq!(
            plain["messages"][1],
            json!({"role": "assistant", "content": "Checking.\n[called the tool get_weather with {\"location\":\"Paris\"}]"})
        );
        assert_eq!(
            plain["messages"][2],
            json!({"role": "user", "content": [
                {"type": "text", "text": "[the tool get_weather returned: sunny]"},
                {"type": "text", "text": "[note] late", "cache_control": {"type": "ephemeral"}}
            ]})
        );
        assert!(plain.get("tools").is_none());
    }

    /// A one-message request: the plain-string content becomes a block to carry the
    /// breakpoint; no system text, no system field.
    #[test]
    fn the_last_message_carries_the_cache_breakpoint() {
        let prompt = Prompt {
            messages: vec![PromptMessage::User { text: "hi".into() }],
            ..Default::default()
        };
        let cfg = ProviderConfig::new(super::super::ProviderKind::Anthropic);
        let body = request_body(&cfg, &prompt);
        assert!(body.get("system").is_none());
        assert_eq!(
            body["messages"],
            json!([{"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]}])
        );
    }

    #[test]
    fn cache_reads_and_writes_count_as_input_and_reads_as_cached() {
        let mut u = crate::provider::ReportedUsage::default();
        input_usage(
            &json!({"input_tokens": 5, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 2000}),
            &mut u,
        );
        assert_eq!((u.input_tokens, u.cached_input_tokens), (Some(2105), Some(2000)));
        // message_delta without input figures, or without the cache's, leaves them as
        // message_start set them; a full repeat replaces them.
        input_usage(&json!({"output_tokens": 9}), &mut u);
        input_usage(&json!({"input_tokens": 5, "output_tokens": 9}), &mut u);
        assert_eq!((u.input_tokens, u.cached_input_tokens), (Some(2105), Some(2000)));
        input_usage(
            &json!({"input_tokens": 6, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 2000}),
            &mut u,
        );
        assert_eq!((u.input_tokens, u.cached_input_tokens), (Some(2106), Some(2000)));
    }

    #[test]
    fn a_history_opening_with_the_assistant_gets_a_user_turn_first() {
        let m = encode_messages(&[PromptMessage::Assistant {
            text: "Hi, how can I help?".into(),
            tool_calls: vec![],
        }]);
        assert_eq!(m[0]["role"], "user");
        assert_eq!(m[1]["role"], "assistant");
    }
}
