//! OpenAI-compatible Chat Completions: `POST {base}/chat/completions` with `stream: true`.
//!
//! Also serves Ollama, LM Studio, llama.cpp server, Groq and OpenRouter: the base URL
//! decides. Usage comes in a last chunk with empty `choices` thanks to
//! `stream_options.include_usage`; the stream ends with `data: [DONE]`.

use std::borrow::Cow;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::http::{self, classify, error_fields, parse_data, EventReader, Sender};
use super::{
    endpoint, send_delta, whole_arguments, ChatModel, Completion, DeltaSink, Ending, ErrorKind, ProviderConfig,
    ProviderError,
};
use crate::conversation::{Prompt, PromptMessage, ToolCall};

const PROVIDER: &str = "openai";

/// A client for one OpenAI-compatible model.
pub struct OpenAi {
    config: ProviderConfig,
    client: reqwest::Client,
}

impl OpenAi {
    pub fn new(config: ProviderConfig) -> Result<Self, ProviderError> {
        let client = http::client(PROVIDER, config.connect_timeout, &config.base_url)?;
        Ok(Self { config, client })
    }
}

/// Reasoning models take `max_completion_tokens`; everything else (and every compatible
/// server) takes `max_tokens`.
fn uses_max_completion_tokens(model: &str) -> bool {
    ["o1", "o3", "o4", "gpt-5"].iter().any(|p| model.starts_with(p))
}

/// The request body for a prompt.
pub fn request_body(config: &ProviderConfig, prompt: &Prompt) -> Value {
    let (system, context) = if config.keeps_prefix {
        let (system, context) = prompt.split_recall();
        (system, Cow::Owned(context))
    } else {
        (prompt.system_with_recall(), Cow::Borrowed(prompt.messages.as_slice()))
    };
    let mut messages = Vec::with_capacity(context.len() + 1);
    if !system.is_empty() {
        messages.push(json!({"role": "system", "content": system}));
    }
    messages.extend(encode_messages(&context));
    let mut body = json!({
        "model": config.model,
        "messages": messages,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    let limit = if uses_max_completion_tokens(&config.model) {
        "max_completion_tokens"
    } else {
        "max_tokens"
    };
    body[limit] = json!(prompt.max_tokens.unwrap_or(config.max_tokens));
    if let Some(t) = config.temperature {
        body["temperature"] = json!(t);
    }
    if prompt.ahead {
        // hark-llm's own field (see `Prompt::ahead`); no cloud request carries it.
        body["ahead"] = json!(true);
    }
    if prompt.open {
        // hark-llm's own field too (see `Prompt::open`).
        body["open"] = json!(true);
    }
    if !prompt.tools.is_empty() {
        body["tools"] = prompt
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}})
            })
            .collect();
    }
    body
}

/// Encodes context messages as Chat Completions messages.
pub fn encode_messages(messages: &[PromptMessage]) -> Vec<Value> {
    messages
        .iter()
        .map(|m| match m {
            PromptMessage::User { text } => json!({"role": "user", "content": text}),
            PromptMessage::Note { text } => json!({"role": "system", "content": text}),
            PromptMessage::Assistant { text, tool_calls } if tool_calls.is_empty() => {
                json!({"role": "assistant", "content": text})
            }
            PromptMessage::Assistant { text, tool_calls } => json!({
                "role": "assistant",
                "content": if text.is_empty() { Value::Null } else { json!(text) },
                "tool_calls": tool_calls.iter().map(|c| json!({
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                })).collect::<Vec<_>>(),
            }),
            PromptMessage::ToolResult { call_id, content, .. } => {
                json!({"role": "tool", "tool_call_id": call_id, "content": content})
            }
        })
        .collect()
}

#[async_trait]
impl ChatModel for OpenAi {
    fn provider(&self) -> &'static str {
        PROVIDER
    }

    fn model(&self) -> &str {
        &self.config.model
    }

    async fn stream(&self, prompt: &Prompt, on_delta: &DeltaSink) -> Result<Completion, ProviderError> {
        let key = self.config.api_key.as_deref();
        if key.is_none() && self.config.is_public_endpoint() {
            return Err(http::missing_key(PROVIDER));
        }
        let url = endpoint(&self.config.base_url, "chat/completions");
        let body = request_body(&self.config, prompt);
        let sender = Sender {
            provider: PROVIDER,
            retry: self.config.retry,
        };
        let resp = sender
            .send(|| {
                let req = self.client.post(&url).header("accept", "text/event-stream").json(&body);
                match key {
                    Some(k) => req.bearer_auth(k),
                    None => req, // local servers (Ollama, llama.cpp) need none
                }
            })
            .await?;
        read_stream(EventReader::new(resp, self.config.idle_timeout, PROVIDER), on_delta).await
    }
}

async fn read_stream(mut events: EventReader, on_delta: &DeltaSink) -> Result<Completion, ProviderError> {
    let mut done = Completion::default();
    // Tool calls stream as fragments keyed by `index`.
    let mut tools: Vec<(u64, ToolCall)> = Vec::new();
    let mut finished = false;
    while let Some(ev) = events.next().await? {
        if ev.data.trim() == "[DONE]" {
            finished = true;
            break;
        }
        let chunk = parse_data(PROVIDER, &ev)?;
        if chunk.get("error").is_some_and(|e| !e.is_null()) {
            let (etype, code, message) = error_fields(&chunk);
            let status = chunk["error"]["status"].as_u64().map(|s| s as u16).unwrap_or(500);
            let mut e = ProviderError::new(
                PROVIDER,
                classify(status, etype.as_deref(), code.as_deref()),
                message.unwrap_or_else(|| "error chunk without a message".into()),
            );
            e.status = Some(status);
            return Err(e);
        }
        if done.model.is_none() {
            done.model = chunk["model"].as_str().map(str::to_string);
        }
        if let Some(u) = chunk.get("usage").filter(|u| u.is_object()) {
            done.usage.input_tokens = u["prompt_tokens"].as_u64().map(|n| n as u32);
            done.usage.output_tokens = u["completion_tokens"].as_u64().map(|n| n as u32);
            // OpenAI caches long prompts by itself; llama.cpp's server and hark-llm report
            // their KV-cache reuse the same way.
            done.usage.cached_input_tokens = u["prompt_tokens_details"]["cached_tokens"].as_u64().map(|n| n as u32);
        }
        let Some(choices) = chunk["choices"].as_array() else {
            if chunk.get("usage").is_some() {
                continue;
            }
            return Err(ProviderError::new(
                PROVIDER,
                ErrorKind::InvalidResponse,
                format!(
                    "chunk without choices: {}",
                    ev.data.chars().take(200).collect::<String>()
                ),
            ));
        };
        for choice in choices.iter().filter(|c| c["index"].as_u64().unwrap_or(0) == 0) {
            let delta = &choice["delta"];
            if let Some(t) = delta["content"].as_str().filter(|t| !t.is_empty()) {
                done.text.push_str(t);
                send_delta(on_delta, t);
            }
            // A refusal streams as `delta.refusal` with no content (recorded: "I'm sorry, I
            // can't assist with that request."): the provider's words are the reply.
            if let Some(t) = delta["refusal"].as_str().filter(|t| !t.is_empty()) {
                done.refusal.get_or_insert_with(String::new).push_str(t);
                done.text.push_str(t);
                send_delta(on_delta, t);
            }
            for tc in delta["tool_calls"].as_array().into_iter().flatten() {
                let index = tc["index"].as_u64().unwrap_or(0);
                let slot = match tools.iter().position(|(i, _)| *i == index) {
                    Some(p) => p,
                    None => {
                        tools.push((
                            index,
                            ToolCall {
                                id: String::new(),
                                name: String::new(),
                                arguments: String::new(),
                                client_side: true,
                            },
                        ));
                        tools.len() - 1
                    }
                };
                let call = &mut tools[slot].1;
                if let Some(id) = tc["id"].as_str() {
                    call.id = id.to_string();
                }
                if let Some(n) = tc["function"]["name"].as_str() {
                    call.name.push_str(n);
                }
                if let Some(a) = tc["function"]["arguments"].as_str() {
                    call.arguments.push_str(a);
                }
            }
            if let Some(r) = choice["finish_reason"].as_str() {
                done.stop_reason = Some(r.to_string());
            }
        }
    }
    if !finished {
        return Err(ProviderError::new(
            PROVIDER,
            ErrorKind::Connectivity,
            "the stream ended before [DONE]: the reply is incomplete",
        ));
    }
    done.ending = match done.stop_reason.as_deref() {
        _ if done.refusal.is_some() => Ending::Refused,
        Some("content_filter") => Ending::Refused,
        Some("length") => Ending::CutOff,
        _ => Ending::Finished,
    };
    done.tool_calls = tools
        .into_iter()
        .map(|(_, c)| c)
        // A call the length limit cut mid-arguments never runs.
        .filter(|c| done.ending != Ending::CutOff || whole_arguments(&c.arguments))
        .collect();
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ProviderKind;

    #[test]
    fn encodes_system_first_tools_and_usage_option() {
        let prompt = Prompt {
            system: "Be brief.".into(),
            messages: vec![
                PromptMessage::User {
                    text: "weather?".into(),
                },
                PromptMessage::Assistant {
                    text: String::new(),
                    tool_calls: vec![ToolCall {
                        id: "call_1".into(),
                        name: "get_weather".into(),
                        arguments: "{}".into(),
                        client_side: true,
                    }],
                },
                PromptMessage::ToolResult {
                    call_id: "call_1".into(),
                    name: "get_weather".into(),
                    content: "sunny".into(),
                    is_error: false,
                },
            ],
            ..Default::default()
        };
        let mut cfg = ProviderConfig::new(ProviderKind::OpenAi);
        cfg.model = "gpt-4o-mini".into();
        assert_eq!(
            request_body(&cfg, &prompt),
            json!({
                "model": "gpt-4o-mini",
                "stream": true,
                "stream_options": {"include_usage": true},
                "max_tokens": 1024,
                "messages": [
                    {"role": "system", "content": "Be brief."},
                    {"role": "user", "content": "weather?"},
                    {"role": "assistant", "content": null, "tool_calls": [
                        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
                    ]},
                    {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}
                ]
            })
        );
        cfg.model = "gpt-5-mini".into();
        assert_eq!(request_body(&cfg, &prompt)["max_completion_tokens"], 1024);
        let with_tools = Prompt {
            tools: vec![crate::conversation::ToolSpec {
                name: "get_weather".into(),
                description: "Weather at a place.".into(),
                parameters: json!({"type": "object", "properties": {}}),
            }],
            ..prompt
        };
        assert_eq!(
            request_body(&cfg, &with_tools)["tools"],
            json!([{"type": "function", "function": {"name": "get_weather", "description": "Weather at a place.",
                    "parameters": {"type": "object", "properties": {}}}}])
        );
        // hark-llm's reply ahead (issue 12) only when the prompt asks for it; the exact
        // body above carries no such field.
        let ahead = Prompt {
            ahead: true,
            ..with_tools
        };
        assert_eq!(request_body(&cfg, &ahead)["ahead"], true);
        assert!(request_body(&cfg, &ahead).get("open").is_none());
        let open = Prompt {
            ahead: false,
            open: true,
            ..ahead
        };
        assert_eq!(request_body(&cfg, &open)["open"], true);
    }

    /// Rule 12 on the wire: a cloud model is told every recalled memory beside the system
    /// prompt; the offline one (`keeps_prefix`) the facts there and the earlier messages
    /// in a system message just before the user's words, after the turns and tool results
    /// of the history it has already evaluated.
    #[test]
    fn recall_goes_beside_the_system_prompt_or_just_before_the_words() {
        let prompt = Prompt {
            system: "Be brief.".into(),
            recall: Some(crate::conversation::Recall {
                facts: vec!["- likes tea".into()],
                earlier: vec!["- On 2026-12-01 the user said: \"I fly to Lisbon.\"".into()],
            }),
            messages: vec![
                PromptMessage::User { text: "hi".into() },
                PromptMessage::Assistant {
                    text: "Hello.".into(),
                    tool_calls: vec![],
                },
                PromptMessage::User {
                    text: "Where am I going?".into(),
                },
            ],
            ..Default::default()
        };
        let heading = "Things you remember about the user from earlier conversations:";
        let mut cfg = ProviderConfig::new(ProviderKind::OpenAi);
        assert_eq!(
            request_body(&cfg, &prompt)["messages"],
            json!([
                {"role": "system", "content": format!("Be brief.\n\n{heading}\n- likes tea\n- On 2026-12-01 the user said: \"I fly to Lisbon.\"")},
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "Hello."},
                {"role": "user", "content": "Where am I going?"}
            ])
        );
        cfg.keeps_prefix = true;
        assert_eq!(
            request_body(&cfg, &prompt)["messages"],
            json!([
                {"role": "system", "content": format!("Be brief.\n\n{heading}\n- likes tea")},
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "Hello."},
                {"role": "system", "content": format!("{heading}\n- On 2026-12-01 the user said: \"I fly to Lisbon.\"")},
                {"role": "user", "content": "Where am I going?"}
            ])
        );
    }
}
