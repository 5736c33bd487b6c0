//! Deepgram Voice Agent `agent.context.messages`: `History` messages with `role` and
//! `content`, and `function_calls` with `id, name, client_side, arguments, response`.

use serde_json::Value;

use super::{at, invalid, new_session, show, show_str, ImportError};
use crate::conversation::{AssistantMessage, Message, MessageKind, ToolCall, ToolResult, ToolState};
use crate::store::StoredSession;

pub(super) fn parse_deepgram(list: &Value, base: &str) -> Result<StoredSession, ImportError> {
    let items = list.as_array().ok_or_else(|| invalid(base, "is not a list"))?;
    let mut session = new_session(String::new());
    let mut call_ids = std::collections::HashSet::new();
    for (i, item) in items.iter().enumerate() {
        let path = at(base, i);
        let ty = item.get("type").and_then(Value::as_str);
        if ty != Some("History") {
            return Err(invalid(
                &path,
                format!("type must be \"History\", found {}", show(item.get("type"))),
            ));
        }
        if let Some(calls) = item.get("function_calls") {
            let calls = calls
                .as_array()
                .ok_or_else(|| invalid(format!("{path}.function_calls"), "is not a list"))?;
            let mut tool_calls = Vec::new();
            let mut results = Vec::new();
            for (j, c) in calls.iter().enumerate() {
                let cpath = format!("{path}.function_calls[{j}]");
                let field = |name: &str| -> Result<String, ImportError> {
                    c.get(name)
                        .and_then(Value::as_str)
                        .map(str::to_string)
                        .ok_or_else(|| invalid(format!("{cpath}.{name}"), "missing or not a string"))
                };
                let id = field("id")?;
                if !call_ids.insert(id.clone()) {
                    return Err(invalid(
                        format!("{cpath}.id"),
                        format!("{id:?} was used by an earlier function call: a second result for one call"),
                    ));
                }
                let name = field("name")?;
                let arguments = field("arguments")?;
                let response = field("response")?;
                let client_side = c.get("client_side").and_then(Value::as_bool).unwrap_or(true);
                results.push(ToolResult {
                    call_id: id.clone(),
                    name: name.clone(),
                    state: ToolState::Done,
                    content: response,
                });
                tool_calls.push(ToolCall {
                    id,
                    name,
                    arguments,
                    client_side,
                });
            }
            session
                .messages
                .push(Message::new(MessageKind::Assistant(AssistantMessage {
                    tool_calls,
                    ..Default::default()
                })));
            session
                .messages
                .extend(results.into_iter().map(|r| Message::new(MessageKind::ToolResult(r))));
            continue;
        }
        let content = item
            .get("content")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid(format!("{path}.content"), "missing or not a string"))?;
        match item.get("role").and_then(Value::as_str) {
            Some("user") => session.messages.push(Message::new(MessageKind::User {
                text: content.to_string(),
            })),
            Some("assistant") => session
                .messages
                .push(Message::new(MessageKind::Assistant(AssistantMessage {
                    generated: content.to_string(),
                    ..Default::default()
                }))),
            other => {
                return Err(invalid(
                    format!("{path}.role"),
                    format!("must be \"user\" or \"assistant\", found {}", show_str(other)),
                ))
            }
        }
    }
    Ok(session)
}
