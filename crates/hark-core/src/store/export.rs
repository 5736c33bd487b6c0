//! Export of a whole record (rule 14): versioned JSON that Hark imports back, Markdown
//! for people, and a Deepgram Voice Agent `Settings` message whose `agent.context.messages`
//! carries the conversation (`History` messages and `function_calls`). Keys are never part of a session, so they cannot be exported.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::{SessionMeta, StoredSession, Summary};
pub use crate::conversation::{totals, Totals};
use crate::conversation::{Message, MessageKind, ReplyOutcome, ToolState};

/// The `format` field of a Hark export.
pub const FORMAT: &str = "hark.conversation";
/// The export version this build writes and the newest it reads.
pub const VERSION: u32 = 1;

/// The export document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Export {
    pub format: String,
    pub version: u32,
    pub exported_at: DateTime<Utc>,
    /// The Hark version that wrote the file.
    pub app_version: String,
    pub session: SessionMeta,
    #[serde(default)]
    pub summary: Option<Summary>,
    /// The whole record: messages, tool calls and results, context resets.
    pub messages: Vec<Message>,
    /// Figures derived from the messages, for readers of the file.
    #[serde(default)]
    pub totals: Totals,
}

/// The export document of a session.
pub fn export(session: &StoredSession) -> Export {
    Export {
        format: FORMAT.to_string(),
        version: VERSION,
        exported_at: Utc::now(),
        app_version: env!("CARGO_PKG_VERSION").to_string(),
        session: session.meta.clone(),
        summary: session.summary.clone(),
        messages: session.messages.clone(),
        totals: totals(&session.messages),
    }
}

/// The export as pretty JSON.
pub fn to_json(session: &StoredSession) -> String {
    // Serialising plain data with string keys cannot fail.
    serde_json::to_string_pretty(&export(session)).unwrap_or_default()
}

/// The record as a Deepgram Voice Agent `Settings` message: the system prompt as
/// `agent.think.prompt`, and the conversation as `agent.context.messages` — user and
/// assistant `History` messages (an interrupted reply as heard) and each model response's
/// tool calls as `function_calls` with their `response`. Notes and reset markers have no
/// Deepgram form and are left out; a call without a final result exports its status text.
pub fn to_deepgram(session: &StoredSession) -> String {
    use serde_json::json;
    let record = &session.messages;
    let result_of = |call_id: &str| -> String {
        record
            .iter()
            .find_map(|m| match &m.kind {
                MessageKind::ToolResult(r) if r.call_id == call_id => Some(r.context_text()),
                _ => None,
            })
            .unwrap_or_default()
    };
    let mut messages = Vec::new();
    for m in record {
        match &m.kind {
            MessageKind::User { text } => {
                messages.push(json!({"type": "History", "role": "user", "content": text}));
            }
            MessageKind::Assistant(a) => {
                if !a.context_text().is_empty() {
                    messages.push(json!({"type": "History", "role": "assistant", "content": a.context_text()}));
                }
                if !a.tool_calls.is_empty() {
                    let calls: Vec<_> = a
                        .tool_calls
                        .iter()
                        .map(|c| {
                            json!({
                                "id": c.id,
                                "name": c.name,
                                "client_side": c.client_side,
                                "arguments": c.arguments,
                                "response": result_of(&c.id),
                            })
                        })
                        .collect();
                    messages.push(json!({"type": "History", "function_calls": calls}));
                }
            }
            MessageKind::ToolResult(_) | MessageKind::Note { .. } | MessageKind::ContextReset => {}
        }
    }
    let mut doc = json!({
        "type": "Settings",
        "agent": {"context": {"messages": messages}},
    });
    if !session.meta.system_prompt.is_empty() {
        doc["agent"]["think"] = json!({"prompt": session.meta.system_prompt});
    }
    serde_json::to_string_pretty(&doc).unwrap_or_default()
}

/// The record as Markdown: who said what and when, interruptions, tool calls, resets.
pub fn to_markdown(session: &StoredSession) -> String {
    use std::fmt::Write;
    let meta = &session.meta;
    let mut md = String::new();
    let _ = writeln!(md, "# {}\n", meta.title.as_deref().unwrap_or("Conversation"));
    let _ = writeln!(md, "- Session: `{}`", meta.id);
    let _ = writeln!(md, "- Started: {}", meta.created_at.format("%Y-%m-%d %H:%M UTC"));
    if let Some(model) = &meta.model {
        let _ = writeln!(md, "- Model: {} {}", meta.provider.as_deref().unwrap_or(""), model);
    }
    let s = meta.settings;
    let _ = writeln!(
        md,
        "- History: {}, max turns {}",
        if s.enabled { "on" } else { "off" },
        if s.max_turns == 0 {
            "unlimited".to_string()
        } else {
            s.max_turns.to_string()
        }
    );
    if !meta.system_prompt.is_empty() {
        let _ = writeln!(
            md,
            "\n> **System prompt:** {}",
            meta.system_prompt.replace('\n', "\n> ")
        );
    }
    if let Some(summary) = &session.summary {
        let _ = writeln!(md, "\n> **Summary so far:** {}", summary.text.replace('\n', "\n> "));
    }
    for m in &session.messages {
        let time = m.created_at.format("%H:%M:%S");
        match &m.kind {
            MessageKind::User { text } => {
                let _ = writeln!(md, "\n**You** · {time}\n\n{text}");
            }
            MessageKind::Assistant(a) => {
                let mut facts = vec![time.to_string()];
                if let Some(u) = &a.usage {
                    if let (Some(i), Some(o)) = (u.input_tokens, u.output_tokens) {
                        facts.push(format!("{i} in / {o} out tokens"));
                    }
                }
                if let Some(l) = &a.latency {
                    facts.push(format!("{} ms", l.total_ms));
                }
                let _ = writeln!(md, "\n**Hark** · {}\n", facts.join(" · "));
                if !a.generated.is_empty() {
                    let _ = writeln!(md, "{}", a.generated);
                }
                for c in &a.tool_calls {
                    let _ = writeln!(md, "\n- Tool call `{}` `{}`", c.name, c.arguments);
                }
                if a.interrupted {
                    let heard = a.heard.as_deref().unwrap_or("");
                    let _ = writeln!(md, "\n_Interrupted. Heard: “{heard}”_");
                }
                match &a.outcome {
                    ReplyOutcome::Complete => {}
                    ReplyOutcome::Failed { error_kind, message } => {
                        let _ = writeln!(md, "\n_The reply failed ({error_kind}): {message}_");
                    }
                    ReplyOutcome::Cancelled => {
                        let _ = writeln!(md, "\n_Cancelled._");
                    }
                    ReplyOutcome::Refused { .. } => {
                        let _ = writeln!(md, "\n_The model declined to answer._");
                    }
                    ReplyOutcome::CutOff => {
                        let _ = writeln!(md, "\n_Cut off by the length limit._");
                    }
                }
            }
            MessageKind::ToolResult(r) => {
                let state = match r.state {
                    ToolState::Done => "result",
                    ToolState::Error => "error",
                    ToolState::InProgress => "still running",
                    ToolState::Cancelled => "cancelled",
                };
                let _ = writeln!(md, "\n- Tool `{}` {state}: {}", r.name, r.content);
            }
            MessageKind::Note { text } => {
                let _ = writeln!(md, "\n_Note: {text}_");
            }
            MessageKind::ContextReset => {
                let _ = writeln!(
                    md,
                    "\n---\n\n_Context reset at {time}: the model starts fresh from here._"
                );
            }
        }
    }
    md
}
