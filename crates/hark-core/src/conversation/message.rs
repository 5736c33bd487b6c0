//! The record's data model: one [`Message`] per thing said or done in a conversation.
//!
//! A message is never deleted from the record. What the model sees is decided elsewhere
//! ([`super::Conversation::window`]); here we only describe what happened.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// A message id: a UUID v7 string, so ids sort by creation time.
pub type MessageId = String;

/// Creates a fresh, time-ordered message or session id.
pub fn new_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// One entry of the record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Stable id, kept across export and import so a re-import can be recognised.
    pub id: MessageId,
    /// When the message became final (user: transcript final; assistant: reply finished or cut).
    pub created_at: DateTime<Utc>,
    /// What kind of entry this is, with its payload.
    #[serde(flatten)]
    pub kind: MessageKind,
}

/// The payload of a [`Message`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum MessageKind {
    /// What the user said (final transcript) or typed.
    User { text: String },
    /// Everything the assistant produced in one model response.
    Assistant(AssistantMessage),
    /// The answer to one tool call. Appended together with its call as an `in_progress`
    /// placeholder and replaced in place when the result arrives (rule 10).
    ToolResult(ToolResult),
    /// A developer/system note placed in the conversation, e.g. a tool result that arrived
    /// after the conversation had moved past its call.
    Note { text: String },
    /// The user pressed Reset: the context starts empty after this marker; the record goes on.
    ContextReset,
}

/// An assistant reply with everything needed to replay, audit and export it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct AssistantMessage {
    /// Everything the model generated (streamed text, possibly cut short).
    pub generated: String,
    /// What the user actually heard before a barge-in; `None` when the reply was not
    /// interrupted (the whole `generated` text counts as heard, or the reply was text only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heard: Option<String>,
    /// The user cut the reply off (barge-in); `heard` says how much got through.
    #[serde(default)]
    pub interrupted: bool,
    /// Playback offset at the cut, in milliseconds of reply audio played.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heard_ms: Option<u64>,
    /// Tools the model asked to call in this response.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// How the response ended.
    #[serde(default)]
    pub outcome: ReplyOutcome,
    /// Provider and model that produced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Token usage of the request that produced this reply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Latency figures of the turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<Latency>,
}

impl AssistantMessage {
    /// The text the model should see next turn: the heard part of an interrupted reply,
    /// otherwise everything generated (rule 9).
    pub fn context_text(&self) -> &str {
        match (&self.heard, self.interrupted) {
            (Some(heard), true) => heard,
            _ => &self.generated,
        }
    }
}

/// How a model response ended.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum ReplyOutcome {
    /// The stream finished normally.
    #[default]
    Complete,
    /// The stream failed; `generated` holds what arrived before the failure.
    Failed { error_kind: String, message: String },
    /// The turn was cancelled (barge-in or the user stopped it).
    Cancelled,
    /// The model declined to answer. `reason`: the provider's own words saying so (they end
    /// `generated`), when it sent any; `generated` may also hold what came before.
    Refused {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// The length limit cut the reply off; `generated` holds what came before the cut.
    CutOff,
}

/// A tool call requested by the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Provider-issued call id; results are matched to calls by it.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Arguments as a JSON text, exactly as the model produced them.
    pub arguments: String,
    /// Whether the tool ran on this machine (Deepgram's `client_side`).
    #[serde(default = "default_true")]
    pub client_side: bool,
}

fn default_true() -> bool {
    true
}

/// The answer to a tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The id of the call this answers.
    pub call_id: String,
    /// The tool's name, repeated so the result is readable on its own.
    pub name: String,
    /// Where the call stands.
    pub state: ToolState,
    /// The result text (empty while in progress).
    #[serde(default)]
    pub content: String,
}

impl ToolResult {
    /// The text the model sees for this result: the content, or a status line for a
    /// placeholder, so that no request ever carries a call without an answer.
    pub fn context_text(&self) -> String {
        match self.state {
            ToolState::Done => self.content.clone(),
            ToolState::Error => format!("error: {}", self.content),
            ToolState::InProgress => r#"{"status":"in_progress"}"#.to_string(),
            ToolState::Cancelled => r#"{"status":"cancelled","reason":"interrupted by the user"}"#.to_string(),
        }
    }
}

/// Where a tool call stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolState {
    InProgress,
    Done,
    Error,
    Cancelled,
}

/// Token usage of one request, provider-reported next to Hark's own estimate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Usage {
    /// Input tokens as reported by the provider, when it reported them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u32>,
    /// Output tokens as reported by the provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u32>,
    /// Of the input tokens, those the provider served from its prompt cache (Anthropic's
    /// cache reads, OpenAI's cached tokens, the local model's KV cache), when reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input_tokens: Option<u32>,
    /// Hark's estimate of the request's input tokens (system + summary + recall + context).
    pub estimated_input_tokens: u32,
    /// Hark's estimate of the reply's tokens.
    pub estimated_output_tokens: u32,
}

/// Latency figures of one turn, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Latency {
    /// Request sent → first token received.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_token_ms: Option<u64>,
    /// Request sent → stream finished.
    pub total_ms: u64,
    /// Voice: push-to-talk release → final transcript.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript_ms: Option<u64>,
    /// Voice: first sentence ready → first byte of its audio from the synthesiser.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_audio_byte_ms: Option<u64>,
    /// Voice: push-to-talk release → first reply sample handed to the speaker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_audio_out_ms: Option<u64>,
}

impl Message {
    /// Builds a message stamped now with a fresh id.
    pub fn new(kind: MessageKind) -> Self {
        Self {
            id: new_id(),
            created_at: Utc::now(),
            kind,
        }
    }

    /// The short name of the kind, as stored in SQLite and shown in listings.
    pub fn kind_name(&self) -> &'static str {
        match self.kind {
            MessageKind::User { .. } => "user",
            MessageKind::Assistant(_) => "assistant",
            MessageKind::ToolResult(_) => "tool_result",
            MessageKind::Note { .. } => "note",
            MessageKind::ContextReset => "context_reset",
        }
    }

    /// The main human-readable text (used for search, titles and Markdown).
    pub fn text(&self) -> &str {
        match &self.kind {
            MessageKind::User { text } | MessageKind::Note { text } => text,
            MessageKind::Assistant(a) => &a.generated,
            MessageKind::ToolResult(r) => &r.content,
            MessageKind::ContextReset => "",
        }
    }

    /// Whether this message starts a turn (only user messages do).
    pub fn is_user(&self) -> bool {
        matches!(self.kind, MessageKind::User { .. })
    }

    /// Whether the model should see this message when it is inside the context window.
    /// Markers never; an assistant reply only if something of it was heard or it called tools
    /// (rule 9: an empty interrupted reply is left out).
    pub fn in_context(&self) -> bool {
        match &self.kind {
            MessageKind::ContextReset => false,
            MessageKind::Assistant(a) => !a.context_text().is_empty() || !a.tool_calls.is_empty(),
            _ => true,
        }
    }
}
