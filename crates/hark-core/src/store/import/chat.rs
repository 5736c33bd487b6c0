//! Plain OpenAI Chat Completions or Anthropic Messages arrays (one reader handles both):
//! string or block content, OpenAI `tool_calls` and `tool` messages, Anthropic `tool_use`
//! and `tool_result` blocks, and Anthropic's server tools (`server_tool_use` or
//! `mcp_tool_use` with the `web_search_tool_result`, `mcp_tool_result` and like blocks that
//! answer them in the same message), which become a call that ran elsewhere and its
//! result. A block of a type Hark cannot show (the API adds new ones: `compaction`,
//! `container_upload`) is kept as a note after its message, never a reason to refuse the
//! file; malformed content still refuses it.

use serde_json::Value;

use super::{at, invalid, new_session, show_str, type_name, ImportError};
use crate::conversation::{AssistantMessage, Message, MessageKind, ToolCall, ToolResult, ToolState};
use crate::store::StoredSession;

/// A block that calls a tool: the client's own (`tool_use`), or one the API runs.
fn is_call(kind: &str) -> bool {
    matches!(kind, "tool_use" | "server_tool_use" | "mcp_tool_use")
}

/// A block that answers a server tool's call in the same assistant message
/// (`web_search_tool_result`, `web_fetch_tool_result`, `code_execution_tool_result`,
/// `mcp_tool_result`, ...). The client's own `tool_result` comes in a user message.
fn is_server_result(kind: &str) -> bool {
    kind != "tool_result" && kind.ends_with("_tool_result")
}

/// Text of a `content` that is a string, or a list of blocks of which the text ones count.
/// The types of blocks Hark cannot show are added to `unshown`.
fn content_text(content: &Value, path: &str, unshown: &mut Vec<String>) -> Result<String, ImportError> {
    match content {
        Value::String(s) => Ok(s.clone()),
        Value::Null => Ok(String::new()),
        Value::Array(blocks) => {
            let mut parts = Vec::new();
            for (k, b) in blocks.iter().enumerate() {
                let kind = b
                    .get("type")
                    .and_then(Value::as_str)
                    .ok_or_else(|| invalid(format!("{path}[{k}].type"), "a content block without a type"))?;
                match kind {
                    "text" | "input_text" | "output_text" => parts.push(
                        b.get("text")
                            .and_then(Value::as_str)
                            .ok_or_else(|| invalid(format!("{path}[{k}].text"), "missing or not a string"))?
                            .to_string(),
                    ),
                    "image" | "image_url" | "input_image" => parts.push("[image]".to_string()),
                    "tool_result" | "thinking" | "redacted_thinking" => {}
                    k if is_call(k) || is_server_result(k) => {}
                    other => unshown.push(other.to_string()),
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

/// A server tool's result as text: a search's titles and addresses, a tool's text blocks,
/// or the API's error code; anything else as its JSON. Whether it was an error.
fn server_result(block: &Value) -> (String, bool) {
    let content = block.get("content").unwrap_or(&Value::Null);
    if let Some(code) = content.get("error_code").and_then(Value::as_str) {
        return (format!("error: {code}"), true);
    }
    let is_error = block.get("is_error").and_then(Value::as_bool).unwrap_or(false);
    let text = match content {
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .map(|i| {
                match (
                    i.get("title").and_then(Value::as_str),
                    i.get("url").and_then(Value::as_str),
                ) {
                    (Some(t), Some(u)) => format!("{t} ({u})"),
                    (None, Some(u)) => u.to_string(),
                    _ => match i.get("text").and_then(Value::as_str) {
                        Some(t) => t.to_string(),
                        None => i.to_string(),
                    },
                }
            })
            .collect::<Vec<_>>()
            .join("\n"),
        other => other.to_string(),
    };
    (text, is_error)
}

/// The note that keeps what a message held and Hark cannot show.
fn unshown_note(role: &str, unshown: &[String]) -> Message {
    let mut kinds: Vec<&str> = unshown.iter().map(String::as_str).collect();
    kinds.sort_unstable();
    kinds.dedup();
    Message::new(MessageKind::Note {
        text: format!(
            "the imported {role} message also held content Hark cannot show: {}",
            kinds.join(", ")
        ),
    })
}

pub(super) fn parse_chat(list: &Value, system: Option<&Value>, base: &str) -> Result<StoredSession, ImportError> {
    let items = list.as_array().ok_or_else(|| invalid(base, "is not a list"))?;
    let mut unshown = Vec::new();
    let mut system_prompt = match system {
        Some(s) => content_text(s, "system", &mut unshown)?,
        None => String::new(),
    };
    let mut session = new_session(String::new());
    let msgs = &mut session.messages;
    if !unshown.is_empty() {
        msgs.push(unshown_note("system", &unshown));
    }
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
        let mut unshown = Vec::new();
        match role {
            Some("system") | Some("developer") => {
                let text = content_text(content, &cpath, &mut unshown)?;
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
                                &mut unshown,
                            )?;
                            let is_error = b.get("is_error").and_then(Value::as_bool).unwrap_or(false);
                            settle(msgs, id, text, is_error, &format!("{cpath}[{k}]"))?;
                        }
                    }
                }
                let text = content_text(content, &cpath, &mut unshown)?;
                let only_tool_results = content.as_array().is_some_and(|b| {
                    b.iter()
                        .all(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
                });
                if !text.trim().is_empty() {
                    msgs.push(Message::new(MessageKind::User { text }));
                } else if !only_tool_results && unshown.is_empty() {
                    return Err(invalid(&cpath, "a user message has no text"));
                }
            }
            Some("assistant") => {
                let text = content_text(content, &cpath, &mut unshown)?;
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
                // Anthropic: `tool_use` blocks, and the server tools' calls (run by the API)
                // with their results, which are in the same message: settled once the
                // calls' placeholders are in the record.
                let mut server_results = Vec::new();
                for (k, b) in content.as_array().into_iter().flatten().enumerate() {
                    let kind = b.get("type").and_then(Value::as_str).unwrap_or_default();
                    let bpath = format!("{cpath}[{k}]");
                    if is_server_result(kind) {
                        server_results.push((bpath, b));
                    } else if is_call(kind) {
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
                            client_side: kind == "tool_use",
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
                for (bpath, b) in server_results {
                    let id = b
                        .get("tool_use_id")
                        .and_then(Value::as_str)
                        .ok_or_else(|| invalid(format!("{bpath}.tool_use_id"), "missing or not a string"))?;
                    let (text, is_error) = server_result(b);
                    settle(msgs, id, text, is_error, &bpath)?;
                }
            }
            Some("tool") => {
                let id = item
                    .get("tool_call_id")
                    .and_then(Value::as_str)
                    .ok_or_else(|| invalid(format!("{path}.tool_call_id"), "missing or not a string"))?;
                let text = content_text(content, &cpath, &mut unshown)?;
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
        if !unshown.is_empty() {
            msgs.push(unshown_note(role.unwrap_or("imported"), &unshown));
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
