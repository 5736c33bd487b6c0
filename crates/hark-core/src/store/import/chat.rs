//! Plain OpenAI Chat Completions or Anthropic Messages arrays (one reader handles both):
//! string or block content, OpenAI `tool_calls` and `tool` messages, Anthropic `tool_use`
//! and `tool_result` blocks.

use serde_json::Value;

use super::{at, invalid, new_session, show_str, type_name, ImportError};
use crate::conversation::{AssistantMessage, Message, MessageKind, ToolCall, ToolResult, ToolState};
use crate::store::StoredSession;

/// Text of a `content` that is a string, or a list of blocks of which the text ones count.
fn content_text(content: &Value, path: &str) -> Result<String, ImportError> {
    match content {
        Value::String(s) => Ok(s.clone()),
        Value::Null => Ok(String::new()),
        Value::Array(blocks) => {
            let mut parts = Vec::new();
            for (k, b) in blocks.iter().enumerate() {
                match b.get("type").and_then(Value::as_str) {
                    Some("text") | Some("input_text") | Some("output_text") => parts.push(
                        b.get("text")
                            .and_then(Value::as_str)
                            .ok_or_else(|| invalid(format!("{path}[{k}].text"), "missing or not a string"))?
                            .to_string(),
                    ),
                    Some("image") | Some("image_url") | Some("input_image") => parts.push("[image]".to_string()),
                    Some("tool_use") | Some("tool_result") | Some("thinking") | Some("redacted_thinking") => {}
                    other => {
                        return Err(invalid(
                            format!("{path}[{k}].type"),
                            format!("unsupported content block {}", show_str(other)),
                        ))
                    }
                }
            }
            Ok(parts.join("\n"))
        }
        other => Err(invalid(
            path,
            format!("must be a string or a list of blocks, found {}", type_name(other)),
        )),
    }
}

pub(super) fn parse_chat(list: &Value, system: Option<&Value>, base: &str) -> Result<StoredSession, ImportError> {
    let items = list.as_array().ok_or_else(|| invalid(base, "is not a list"))?;
    let mut system_prompt = match system {
        Some(s) => content_text(s, "system")?,
        None => String::new(),
    };
    let mut session = new_session(String::new());
    let msgs = &mut session.messages;
    for (i, item) in items.iter().enumerate() {
        let path = at(base, i);
        if !item.is_object() {
            return Err(invalid(
                &path,
                format!("must be a message object, found {}", type_name(item)),
            ));
        }
        let role = item.get("role").and_then(Value::as_str);
        let content = item.get("content").unwrap_or(&Value::Null);
        let cpath = format!("{path}.content");
        match role {
            Some("system") | Some("developer") => {
                let text = content_text(content, &cpath)?;
                if msgs.is_empty() {
                    if !system_prompt.is_empty() {
                        system_prompt.push_str("\n\n");
                    }
                    system_prompt.push_str(&text);
                } else {
                    msgs.push(Message::new(MessageKind::Note { text }));
                }
            }
            Some("user") => {
                // Anthropic tool results arrive as blocks inside a user message.
                if let Some(blocks) = content.as_array() {
                    for (k, b) in blocks.iter().enumerate() {
                        if b.get("type").and_then(Value::as_str) == Some("tool_result") {
                            let id = b.get("tool_use_id").and_then(Value::as_str).ok_or_else(|| {
                                invalid(format!("{cpath}[{k}].tool_use_id"), "missing or not a string")
                            })?;
                            let text = content_text(
                                b.get("content").unwrap_or(&Value::Null),
                                &format!("{cpath}[{k}].content"),
                            )?;
                            let is_error = b.get("is_error").and_then(Value::as_bool).unwrap_or(false);
                            settle(msgs, id, text, is_error, &format!("{cpath}[{k}]"))?;
                        }
                    }
                }
                let text = content_text(content, &cpath)?;
                let only_tool_results = content.as_array().is_some_and(|b| {
                    b.iter()
                        .all(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
                });
                if text.trim().is_empty() {
                    if only_tool_results {
                        continue;
                    }
                    return Err(invalid(&cpath, "a user message has no text"));
                }
                msgs.push(Message::new(MessageKind::User { text }));
            }
            Some("assistant") => {
                let text = content_text(content, &cpath)?;
                let mut calls = Vec::new();
                // OpenAI: `tool_calls`.
                for (k, c) in item
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .enumerate()
                {
                    let tpath = format!("{path}.tool_calls[{k}]");
                    let id = c
                        .get("id")
                        .and_then(Value::as_str)
                        .ok_or_else(|| invalid(format!("{tpath}.id"), "missing"))?;
                    let f = c
                        .get("function")
                        .ok_or_else(|| invalid(format!("{tpath}.function"), "missing"))?;
                    let name = f
                        .get("name")
                        .and_then(Value::as_str)
                        .ok_or_else(|| invalid(format!("{tpath}.function.name"), "missing"))?;
                    let arguments = match f.get("arguments") {
                        Some(Value::String(s)) => s.clone(),
                        Some(v) => v.to_string(),
                        None => "{}".to_string(),
                    };
                    calls.push(ToolCall {
                        id: id.into(),
                        name: name.into(),
                        arguments,
                        client_side: true,
                    });
                }
                // Anthropic: `tool_use` blocks.
                for (k, b) in content.as_array().into_iter().flatten().enumerate() {
                    if b.get("type").and_then(Value::as_str) == Some("tool_use") {
                        let bpath = format!("{cpath}[{k}]");
                        let id = b
                            .get("id")
                            .and_then(Value::as_str)
                            .ok_or_else(|| invalid(format!("{bpath}.id"), "missing"))?;
                        let name = b
                            .get("name")
                            .and_then(Value::as_str)
                            .ok_or_else(|| invalid(format!("{bpath}.name"), "missing"))?;
                        let input = b.get("input").cloned().unwrap_or(Value::Object(Default::default()));
                        calls.push(ToolCall {
                            id: id.into(),
                            name: name.into(),
                            arguments: input.to_string(),
                            client_side: true,
                        });
                    }
                }
                let placeholders: Vec<ToolResult> = calls
                    .iter()
                    .map(|c| ToolResult {
                        call_id: c.id.clone(),
                        name: c.name.clone(),
                        state: ToolState::Error,
                        content: NO_RESULT.to_string(),
                    })
                    .collect();
                msgs.push(Message::new(MessageKind::Assistant(AssistantMessage {
                    generated: text,
                    tool_calls: calls,
                    ..Default::default()
                })));
                msgs.extend(
                    placeholders
                        .into_iter()
                        .map(|p| Message::new(MessageKind::ToolResult(p))),
                );
            }
            Some("tool") => {
                let id = item
                    .get("tool_call_id")
                    .and_then(Value::as_str)
                    .ok_or_else(|| invalid(format!("{path}.tool_call_id"), "missing or not a string"))?;
                let text = content_text(content, &cpath)?;
                settle(msgs, id, text, false, &path)?;
            }
            other => {
                return Err(invalid(
                    format!("{path}.role"),
                    format!(
                        "must be system, developer, user, assistant or tool; found {}",
                        show_str(other)
                    ),
                ))
            }
        }
    }
    session.meta.system_prompt = system_prompt;
    Ok(session)
}

/// The text of a placeholder for a call whose result the file has not given (yet).
const NO_RESULT: &str = "no result was recorded in the imported history";

/// Puts an imported tool result into its call's placeholder; a second result for the same
/// call is refused (which one would be true?).
fn settle(msgs: &mut [Message], call_id: &str, content: String, is_error: bool, path: &str) -> Result<(), ImportError> {
    let slot = msgs
        .iter_mut()
        .rev()
        .find_map(|m| match &mut m.kind {
            MessageKind::ToolResult(r) if r.call_id == call_id => Some(r),
            _ => None,
        })
        .ok_or_else(|| {
            invalid(
                path,
                format!("a tool result for call {call_id:?}, which no earlier assistant message made"),
            )
        })?;
    if !(slot.state == ToolState::Error && slot.content == NO_RESULT) {
        return Err(invalid(path, format!("a second result for tool call {call_id:?}")));
    }
    slot.state = if is_error { ToolState::Error } else { ToolState::Done };
    slot.content = content;
    Ok(())
}
