//! The history panel's view: exactly what the model will see next turn, with the record
//! around it (entries outside the context are marked, so the UI can dim them), and token
//! figures.

use serde::{Deserialize, Serialize};

use super::{Conversation, HistorySettings, Message, MessageKind, ReplyOutcome, Usage};

/// Session totals over a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Totals {
    pub turns: u32,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Of the input tokens, those served from the provider's prompt cache.
    pub cached_input_tokens: u64,
    pub estimated_input_tokens: u64,
    pub context_resets: u32,
}

/// Computes the totals of a record.
pub fn totals(messages: &[Message]) -> Totals {
    let mut t = Totals::default();
    for m in messages {
        match &m.kind {
            MessageKind::User { .. } => t.turns += 1,
            MessageKind::ContextReset => t.context_resets += 1,
            MessageKind::Assistant(a) => {
                if let Some(u) = &a.usage {
                    t.input_tokens += u.input_tokens.unwrap_or(0) as u64;
                    t.cached_input_tokens += u.cached_input_tokens.unwrap_or(0) as u64;
                    t.output_tokens += u.output_tokens.unwrap_or(0) as u64;
                    t.estimated_input_tokens += u.estimated_input_tokens as u64;
                }
            }
            _ => {}
        }
    }
    t
}

/// One record entry as the panel shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct PanelEntry {
    pub id: String,
    /// "user", "assistant", "tool_result", "note", "context_reset".
    pub kind: &'static str,
    /// What the model sees (heard text for an interrupted reply).
    pub text: String,
    /// Everything generated, when it differs from `text` (interrupted replies).
    pub generated: Option<String>,
    pub interrupted: bool,
    /// Why the reply failed, if it did.
    pub failed: Option<String>,
    /// A reply that ended short of an answer: "refused" (the model declined) or "cut_off"
    /// (the length limit).
    pub ended: Option<&'static str>,
    /// Whether the next request carries it.
    pub in_context: bool,
    /// For a tool result: the call it answers, as the model wrote it (`text` is the result).
    pub call: Option<PanelCall>,
}

/// A tool call as the panel shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct PanelCall {
    pub name: String,
    /// The arguments (JSON text).
    pub arguments: String,
}

/// The whole panel.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct PanelView {
    pub session_id: String,
    pub model: String,
    pub system_prompt: String,
    /// The conversation language's instruction, sent right after the system prompt.
    pub language_note: Option<String>,
    pub summary: Option<String>,
    pub recall: Option<String>,
    pub settings: HistorySettings,
    /// The newest record entries (at most [`PanelView::MAX_ENTRIES`]), oldest first.
    pub entries: Vec<PanelEntry>,
    /// Entries of the record not listed (older than the listed ones).
    pub hidden_entries: usize,
    pub context_turns: usize,
    pub dropped_turns: usize,
    /// Estimated tokens of the next request (system + summary + recall + context).
    pub context_tokens: u32,
    pub model_window: u32,
    pub budget: Option<u32>,
    /// Usage of the newest reply: provider-reported and estimated.
    pub last_usage: Option<Usage>,
    pub totals: Totals,
}

impl PanelView {
    /// How many of the newest entries the panel lists.
    pub const MAX_ENTRIES: usize = 200;

    /// The panel for a conversation as it stands.
    pub fn of(c: &Conversation) -> Self {
        let w = c.window();
        let record = c.record();
        let first = record.len().saturating_sub(Self::MAX_ENTRIES);
        let entries = record[first..]
            .iter()
            .enumerate()
            .map(|(k, m)| {
                let i = first + k;
                let ended = match &m.kind {
                    MessageKind::Assistant(a) => match a.outcome {
                        ReplyOutcome::Refused { .. } => Some("refused"),
                        ReplyOutcome::CutOff => Some("cut_off"),
                        _ => None,
                    },
                    _ => None,
                };
                let (text, generated, interrupted, failed) = match &m.kind {
                    MessageKind::Assistant(a) => (
                        a.context_text().to_string(),
                        (a.interrupted && a.context_text() != a.generated).then(|| a.generated.clone()),
                        a.interrupted,
                        match &a.outcome {
                            ReplyOutcome::Failed { error_kind, message } => Some(format!("{error_kind}: {message}")),
                            ReplyOutcome::Cancelled => Some("cancelled".into()),
                            ReplyOutcome::Complete | ReplyOutcome::Refused { .. } | ReplyOutcome::CutOff => None,
                        },
                    ),
                    MessageKind::ToolResult(r) => (r.context_text(), None, false, None),
                    _ => (m.text().to_string(), None, false, None),
                };
                PanelEntry {
                    id: m.id.clone(),
                    kind: m.kind_name(),
                    text,
                    generated,
                    interrupted,
                    failed,
                    ended,
                    in_context: c.settings().enabled && i >= w.start && i < w.end && m.in_context(),
                    call: match &m.kind {
                        // The call sits in an assistant message before its result.
                        MessageKind::ToolResult(r) => record[..i].iter().rev().find_map(|m| match &m.kind {
                            MessageKind::Assistant(a) => {
                                a.tool_calls.iter().find(|t| t.id == r.call_id).map(|t| PanelCall {
                                    name: t.name.clone(),
                                    arguments: t.arguments.clone(),
                                })
                            }
                            _ => None,
                        }),
                        _ => None,
                    },
                }
            })
            .collect();
        let last_usage = record.iter().rev().find_map(|m| match &m.kind {
            MessageKind::Assistant(a) => a.usage,
            _ => None,
        });
        Self {
            session_id: c.id().to_string(),
            model: c.model().to_string(),
            system_prompt: c.system_prompt().to_string(),
            language_note: c.language_note().map(str::to_string),
            summary: c.summary().map(str::to_string),
            recall: c.recall(),
            settings: c.settings(),
            entries,
            hidden_entries: first,
            context_turns: if c.settings().enabled { w.turns } else { 0 },
            dropped_turns: w.dropped_turns,
            context_tokens: w.tokens,
            model_window: c.model_window(),
            budget: c.budget(),
            last_usage,
            totals: totals(record),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::AssistantMessage;

    #[test]
    fn the_panel_marks_what_the_model_sees_and_counts_tokens() {
        let mut c = Conversation::new(
            "s",
            "gpt-4o",
            "Be brief.",
            HistorySettings {
                max_turns: 2,
                ..Default::default()
            },
        );
        for i in 1..=3 {
            c.push_user(&format!("u{i}")).unwrap();
            c.push_reply(AssistantMessage {
                generated: format!("a{i}"),
                usage: Some(Usage {
                    input_tokens: Some(10 * i),
                    output_tokens: Some(i),
                    ..Default::default()
                }),
                ..Default::default()
            });
        }
        let p = PanelView::of(&c);
        let shown: Vec<(&str, bool)> = p.entries.iter().map(|e| (e.text.as_str(), e.in_context)).collect();
        assert_eq!(
            shown,
            vec![
                ("u1", false),
                ("a1", false),
                ("u2", true),
                ("a2", true),
                ("u3", true),
                ("a3", true)
            ]
        );
        assert_eq!((p.context_turns, p.dropped_turns), (2, 1));
        assert_eq!(p.last_usage.unwrap().input_tokens, Some(30));
        assert_eq!(
            (p.totals.turns, p.totals.input_tokens, p.totals.output_tokens),
            (3, 60, 6)
        );
        assert_eq!(p.model_window, 128_000);
        c.clear();
        let p = PanelView::of(&c);
        assert!(p.entries.iter().all(|e| !e.in_context));
        assert_eq!(p.context_turns, 0);
    }
}
