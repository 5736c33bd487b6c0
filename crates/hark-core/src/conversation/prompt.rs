//! What one request carries: the provider-neutral prompt built from the context window.

use serde::{Deserialize, Serialize};

use super::message::ToolCall;

/// The provider-neutral request content: the system text and the context messages, in order.
/// Providers translate it to their wire formats (`provider::anthropic`, `provider::openai`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Prompt {
    /// The system prompt with the summary appended (rules 6, 11).
    pub system: String,
    /// The memories recalled for this turn (rule 12), never in the context list: beside
    /// the system prompt ([`Prompt::system_with_recall`]), or, for a model that keeps the
    /// prompt it evaluated (the offline one, `ProviderConfig::keeps_prefix`), the facts
    /// beside it and the earlier messages, which change from turn to turn, in a system
    /// note just before the user's message ([`Prompt::split_recall`]), so a change of what
    /// is recalled leaves the evaluated history usable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recall: Option<Recall>,
    /// The context messages, oldest first; never two user messages in a row.
    pub messages: Vec<PromptMessage>,
    /// Hark's calibrated estimate of the input tokens of this prompt.
    pub estimated_tokens: u32,
    /// The same estimate before calibration (what calibration learns from).
    pub raw_tokens: u32,
    /// Tools offered to the model (none: the request carries no tool definitions).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolSpec>,
    /// A reply budget for this request only (a prefill asks for one token); `None`: the
    /// model's configured budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Generate the reply ahead of the turn that will want it (a transcript made while the
    /// key is still held, issue 12): `hark-llm` hands it to the same request when the turn
    /// sends it, and drops it for any other. Only a local model is ever asked.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ahead: bool,
    /// The last message is the user's words so far, still being spoken (issue 20): `hark-llm`
    /// evaluates the prompt up to the end of their text and generates nothing, so the
    /// request with the finished words evaluates only what was said since. Only a local
    /// model is ever asked.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub open: bool,
}

/// What rule 12 recalls for one turn, a line for each memory.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Recall {
    /// The facts the user asked Hark to remember: the same every turn until one is
    /// remembered, edited or forgotten.
    pub facts: Vec<String>,
    /// The earlier messages that best match what was just said: the turn's own.
    pub earlier: Vec<String>,
}

/// What the model is told before the recalled memories.
const RECALL_HEADING: &str = "Things you remember about the user from earlier conversations:";

impl Recall {
    /// Nothing recalled: `None`.
    pub fn some(self) -> Option<Self> {
        (!self.facts.is_empty() || !self.earlier.is_empty()).then_some(self)
    }

    /// Every memory, the facts first, a line each.
    pub fn text(&self) -> String {
        self.lines().join("\n")
    }

    fn lines(&self) -> Vec<String> {
        self.facts.iter().chain(&self.earlier).cloned().collect()
    }

    /// `system` with every memory of `recall` after it, under their heading, a blank line
    /// between: what goes first in a request that puts recall beside the system prompt.
    pub fn beside_system(system: &str, recall: Option<&Recall>) -> String {
        beside(system, recall.and_then(|r| Recall::block(&r.lines())))
    }

    fn block(lines: &[String]) -> Option<String> {
        (!lines.is_empty()).then(|| format!("{RECALL_HEADING}\n{}", lines.join("\n")))
    }
}

/// `system`, then `block` after a blank line.
fn beside(system: &str, block: Option<String>) -> String {
    match block {
        Some(b) if system.is_empty() => b,
        Some(b) => format!("{system}\n\n{b}"),
        None => system.to_string(),
    }
}

impl Prompt {
    /// The system text with every recalled memory after it, a blank line between: what a
    /// request that puts recall beside the system prompt sends first.
    pub fn system_with_recall(&self) -> String {
        Recall::beside_system(&self.system, self.recall.as_ref())
    }

    /// For a model that keeps the prompt it evaluated: the system text with the facts
    /// after it (they change only when the user changes them), and the messages with the
    /// earlier messages recalled for this turn as a system note just before the last
    /// user message (the turn's own words). Everything before that note stays as the
    /// model evaluated it for the turn before, whatever this turn recalls.
    pub fn split_recall(&self) -> (String, Vec<PromptMessage>) {
        let Some(recall) = &self.recall else {
            return (self.system.clone(), self.messages.clone());
        };
        let mut messages = self.messages.clone();
        if let Some(text) = Recall::block(&recall.earlier) {
            let at = messages
                .iter()
                .rposition(|m| matches!(m, PromptMessage::User { .. }))
                .unwrap_or(messages.len());
            messages.insert(at, PromptMessage::Note { text });
        }
        (beside(&self.system, Recall::block(&recall.facts)), messages)
    }
}

/// A tool offered to the model: providers send it as Anthropic `tools[]`
/// (`name`, `description`, `input_schema`) or OpenAI `tools[].function`
/// (`name`, `description`, `parameters`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: serde_json::Value,
}

/// One message of a [`Prompt`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum PromptMessage {
    /// A user message.
    User { text: String },
    /// An assistant message, with the tool calls it made.
    Assistant {
        text: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    /// The answer to the tool call `call_id`.
    ToolResult {
        call_id: String,
        name: String,
        content: String,
        is_error: bool,
    },
    /// A developer/system note placed in the conversation.
    Note { text: String },
}

impl PromptMessage {
    /// The message's main text.
    pub fn text(&self) -> &str {
        match self {
            PromptMessage::User { text } | PromptMessage::Assistant { text, .. } | PromptMessage::Note { text } => text,
            PromptMessage::ToolResult { content, .. } => content,
        }
    }
}

/// Joins adjacent user messages into one. An unanswered user turn (a failed request, or a
/// reply interrupted before anything was heard) would otherwise put two user messages in a
/// row, which Anthropic's Messages API and several OpenAI-compatible servers reject (rule 9).
pub fn merge_adjacent_users(messages: Vec<PromptMessage>) -> Vec<PromptMessage> {
    let mut out: Vec<PromptMessage> = Vec::with_capacity(messages.len());
    for m in messages {
        if let (Some(PromptMessage::User { text: prev }), PromptMessage::User { text }) = (out.last_mut(), &m) {
            prev.push_str("\n\n");
            prev.push_str(text);
            continue;
        }
        out.push(m);
    }
    out
}
