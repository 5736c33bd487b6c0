//! The conversation-history engine: the record, and the context as a view over it.
//!
//! # Layout
//! - `message`: the record's data model (user, assistant, tool result, note, reset marker).
//! - `prompt`: the provider-neutral request built from the context window.
//! - `panel`: the history panel's view (what the model sees next, token figures, totals).
//! - this file: [`Conversation`], which appends to the record and computes the window of
//!   whole turns the model sees (rules 2-10 of docs/ARCHITECTURE.md).
//!
//! # Record and context
//! The record only grows. The context is the longest suffix of whole turns after the last
//! reset marker that fits `max_turns` and the token budget, so changing `max_turns` reshapes
//! it live and nothing trimmed is ever lost. Per-message token counts are cached when a
//! message enters the record, with prefix sums, so finding the window is a binary search.

pub mod message;
pub mod panel;
pub mod prompt;

use serde::{Deserialize, Serialize};

use crate::tokens::{self, TokenCounter, MESSAGE_OVERHEAD, REQUEST_OVERHEAD};
pub use message::{
    new_id, AssistantMessage, Latency, Message, MessageId, MessageKind, ReplyOutcome, ToolCall, ToolResult, ToolState,
    Usage,
};
pub use panel::{totals, PanelView, Totals};
pub use prompt::{merge_adjacent_users, Prompt, PromptMessage, Recall, ToolSpec};

/// History settings (rule 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(default)]
pub struct HistorySettings {
    /// Keep a context across turns; when off each request carries only the current utterance.
    pub enabled: bool,
    /// Whole turns kept in the context, counting the current one; 0 = unlimited.
    pub max_turns: u32,
    /// Token budget for system + summary + recall + context. `None`: the model's window minus
    /// the reply budget; `Some(0)`: no budget.
    pub max_context_tokens: Option<u32>,
}

impl Default for HistorySettings {
    fn default() -> Self {
        Self {
            enabled: true,
            max_turns: 10,
            max_context_tokens: None,
        }
    }
}

/// Errors of the history engine. Each leaves the record as it was, or, for
/// [`HistoryError::ContextTooSmall`], with the user message kept.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum HistoryError {
    #[error("nothing was said: the utterance is empty")]
    EmptyUtterance,
    #[error(
        "the current message needs about {needed} tokens with the system prompt, but the context budget is {budget}; \
         shorten the message or raise max_context_tokens (the message is kept in the record)"
    )]
    ContextTooSmall { needed: u32, budget: u32 },
    #[error("no tool call with id {0:?} in this conversation")]
    UnknownToolCall(String),
    #[error("no message with id {0:?} in this conversation")]
    UnknownMessage(String),
    #[error("message {0:?} is not an assistant reply")]
    NotAReply(String),
}

/// Turns to fold into the running summary: the prior summary plus the messages that left
/// the context (rule 11: summaries fold, never rebuild).
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryJob {
    pub prior: Option<String>,
    pub messages: Vec<Message>,
    /// Record range `[from, to)` the job covers.
    pub from: usize,
    pub to: usize,
}

/// Where a tool result went (rule 10).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolResolution {
    /// The placeholder at this record index now holds the result.
    InPlace(usize),
    /// The conversation had moved past the call; a note was appended at this index.
    LateNote(usize),
    /// The call had already been settled (a result is uninterruptible and final); nothing changed.
    AlreadySettled(usize),
}

/// The part of the record the model sees: `record[start..end]` (markers and unheard empty
/// replies inside it are skipped when the prompt is built).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// First record index in the context.
    pub start: usize,
    /// One past the last record index in the context.
    pub end: usize,
    /// Whole turns in the context.
    pub turns: usize,
    /// Turns after the last reset that `max_turns` or the budget left out.
    pub dropped_turns: usize,
    /// Calibrated estimate of system + summary + recall + context tokens.
    pub tokens: u32,
    /// The newest turn alone does not fit the budget.
    pub over_budget: bool,
}

/// One conversation: its append-only record, settings and the context view over it.
#[derive(Debug, Clone)]
pub struct Conversation {
    /// Session id (also the SQLite key).
    id: String,
    /// Every message, in order; only appended to, except in-place tool results and heard text.
    record: Vec<Message>,
    /// Uncalibrated context cost of each record message (0 for those the model never sees).
    cost: Vec<u32>,
    /// `prefix[i]` = sum of `cost[..i]`, so any range's cost is one subtraction.
    prefix: Vec<u64>,
    /// Record index where each turn starts, ascending.
    turn_starts: Vec<usize>,
    /// Record index just after the last reset marker: the context never reaches below it.
    floor: usize,
    /// Always sent, never trimmed, not a turn (rule 6).
    system_prompt: String,
    /// Running summary of turns that left the context (rule 11), if any.
    summary: Option<String>,
    /// Record index up to which (exclusive) the summary covers the record.
    summarized_to: usize,
    /// Recalled long-term memory (rule 12), if any: facts and earlier messages apart.
    recall: Option<Recall>,
    /// The conversation language's instruction, right after the system prompt (a setting,
    /// not part of the stored prompt, so changing the language changes the next request).
    language_note: Option<String>,
    /// Tools offered with each request; their definitions count in the fixed cost.
    tools: Vec<ToolSpec>,
    /// Cached cost of system + summary + recall + tool definitions + request framing.
    fixed_cost: u32,
    settings: HistorySettings,
    /// Model name, which decides the tokenizer and window.
    model: String,
    counter: TokenCounter,
    /// The model's context window.
    model_window: u32,
    /// Tokens reserved for the reply (the request's max_tokens).
    reply_budget: u32,
    /// Bumped on every change of the record, settings or system text; background work such
    /// as summarisation compares it to detect that the context changed under it.
    generation: u64,
}

impl Conversation {
    /// A new, empty conversation.
    pub fn new(
        id: impl Into<String>,
        model: &str,
        system_prompt: impl Into<String>,
        settings: HistorySettings,
    ) -> Self {
        let counter = TokenCounter::for_model(model);
        let mut c = Self {
            id: id.into(),
            record: Vec::new(),
            cost: Vec::new(),
            prefix: vec![0],
            turn_starts: Vec::new(),
            floor: 0,
            system_prompt: system_prompt.into(),
            summary: None,
            summarized_to: 0,
            recall: None,
            language_note: None,
            tools: Vec::new(),
            fixed_cost: 0,
            settings,
            model: model.to_string(),
            counter,
            model_window: tokens::context_window(model),
            reply_budget: 1024,
            generation: 0,
        };
        c.refresh_fixed_cost();
        c
    }

    /// Rebuilds a conversation from a stored record (resume, import).
    pub fn from_record(
        id: impl Into<String>,
        model: &str,
        system_prompt: impl Into<String>,
        settings: HistorySettings,
        record: Vec<Message>,
    ) -> Self {
        let mut c = Self::new(id, model, system_prompt, settings);
        c.record.reserve(record.len());
        for m in record {
            c.append(m);
        }
        c
    }

    // ---- read side -------------------------------------------------------------------------

    pub fn id(&self) -> &str {
        &self.id
    }

    /// The whole record, oldest first.
    pub fn record(&self) -> &[Message] {
        &self.record
    }

    pub fn settings(&self) -> HistorySettings {
        self.settings
    }

    pub fn system_prompt(&self) -> &str {
        &self.system_prompt
    }

    pub fn summary(&self) -> Option<&str> {
        self.summary.as_deref()
    }

    /// The recalled memories, a line each (facts first), as the user sees them.
    pub fn recall(&self) -> Option<String> {
        self.recall.as_ref().map(Recall::text)
    }

    /// The recalled memories, facts and earlier messages apart.
    pub fn recalled(&self) -> Option<&Recall> {
        self.recall.as_ref()
    }

    pub fn model(&self) -> &str {
        &self.model
    }

    pub fn counter(&self) -> &TokenCounter {
        &self.counter
    }

    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Turns in the whole record.
    pub fn turn_count(&self) -> usize {
        self.turn_starts.len()
    }

    /// The effective token budget: `None` when there is none.
    pub fn budget(&self) -> Option<u32> {
        match self.settings.max_context_tokens {
            Some(0) => None,
            Some(n) => Some(n),
            None => Some(self.model_window.saturating_sub(self.reply_budget)),
        }
    }

    /// The model's context window, for the "context fill" figure.
    pub fn model_window(&self) -> u32 {
        self.model_window
    }

    /// Tokens reserved for the reply.
    pub fn reply_budget(&self) -> u32 {
        self.reply_budget
    }

    /// The context window as it stands now (for the history panel and for requests).
    pub fn window(&self) -> Window {
        let end = self.record.len();
        let first = self.turn_starts.partition_point(|&s| s < self.floor);
        let last = self.turn_starts.len();
        let eligible = last - first;
        let empty = Window {
            start: end,
            end,
            turns: 0,
            dropped_turns: eligible,
            tokens: self.counter.calibrated(self.fixed_cost),
            over_budget: false,
        };
        if eligible == 0 {
            return empty;
        }
        // Lowest turn the turn limit allows. History off = only the newest (current) turn.
        let mut lo = first;
        if !self.settings.enabled {
            lo = last - 1;
        } else if self.settings.max_turns > 0 {
            lo = lo.max(last.saturating_sub(self.settings.max_turns as usize));
        }
        let cost_from = |k: usize| -> u32 {
            let raw = self.fixed_cost as u64 + self.prefix[end] - self.prefix[self.turn_starts[k]];
            self.counter.calibrated(raw.min(u32::MAX as u64) as u32)
        };
        // Drop the oldest whole turns while over budget: the cost only falls as k rises,
        // so the first k that fits is found by binary search over [lo, last).
        let mut k = lo;
        let mut over_budget = false;
        if let Some(budget) = self.budget() {
            let (mut a, mut b) = (lo, last);
            while a < b {
                let mid = a + (b - a) / 2;
                if cost_from(mid) <= budget {
                    b = mid;
                } else {
                    a = mid + 1;
                }
            }
            k = a;
            if k == last {
                // Rule 5: the current turn is never dropped; it alone is too big.
                k = last - 1;
                over_budget = true;
            }
        }
        // What came before the first user message (an imported greeting, replies after a
        // reset) is no turn of the user's: a request never starts with it, since the APIs
        // refuse a conversation that opens with the assistant.
        if !self.record[self.turn_starts[k]].is_user() {
            k += 1;
            if k == last {
                return Window {
                    dropped_turns: k - first,
                    ..empty
                };
            }
        }
        Window {
            start: self.turn_starts[k],
            end,
            turns: last - k,
            dropped_turns: k - first,
            tokens: cost_from(k),
            over_budget,
        }
    }

    /// A copy of the context messages the model would see now (rule 7). Empty when history
    /// is disabled (rule 8): only the request itself carries the current utterance then.
    pub fn history(&self) -> Vec<Message> {
        if !self.settings.enabled {
            return Vec::new();
        }
        let w = self.window();
        self.record[w.start..w.end]
            .iter()
            .filter(|m| m.in_context())
            .cloned()
            .collect()
    }

    /// The request for the newest turn: system text plus the context window (rules 3-9).
    pub fn prompt(&self) -> Result<Prompt, HistoryError> {
        let w = self.window();
        if w.over_budget {
            return Err(HistoryError::ContextTooSmall {
                needed: w.tokens,
                budget: self.budget().unwrap_or(0),
            });
        }
        let messages = self.record[w.start..w.end]
            .iter()
            .filter_map(to_prompt_message)
            .collect();
        let raw = (self.fixed_cost as u64 + self.prefix[w.end] - self.prefix[w.start]).min(u32::MAX as u64) as u32;
        Ok(Prompt {
            system: self.system_base(),
            recall: self.recall.clone(),
            messages: merge_adjacent_users(messages),
            estimated_tokens: w.tokens,
            raw_tokens: raw,
            tools: self.tools.clone(),
            max_tokens: None,
            ahead: false,
            open: false,
        })
    }

    /// What the next request will start with before the user has said anything: the
    /// system text (with summary and recall) and the context turns that will still be in
    /// the window. A local model evaluates it while the user speaks, so after the release
    /// only the new utterance is left to evaluate (issue 12). Asks for one token.
    pub fn prefix_prompt(&self) -> Prompt {
        let w = self.window();
        let mut messages: Vec<PromptMessage> = self.record[w.start..w.end]
            .iter()
            .filter_map(to_prompt_message)
            .collect();
        // The turn the next utterance starts is not here yet; what the window would drop to
        // make room for it is left out too (max_turns counts the coming turn).
        if self.settings.enabled && self.settings.max_turns > 0 && w.turns >= self.settings.max_turns as usize {
            let first_turn_end = self.record[w.start + 1..w.end]
                .iter()
                .position(Message::is_user)
                .map_or(w.end, |i| w.start + 1 + i);
            messages = self.record[first_turn_end..w.end]
                .iter()
                .filter_map(to_prompt_message)
                .collect();
        }
        if !self.settings.enabled {
            messages.clear();
        }
        Prompt {
            system: self.system_base(),
            recall: self.recall.clone(),
            messages: merge_adjacent_users(messages),
            estimated_tokens: w.tokens,
            raw_tokens: 0,
            tools: self.tools.clone(),
            max_tokens: Some(1),
            ahead: false,
            open: false,
        }
    }

    /// The system text with everything beside it: the prompt and the language's
    /// instruction, then the summary and recall (what a request that puts recall beside
    /// the system prompt sends first, and what `/history` shows).
    pub fn system_text(&self) -> String {
        Recall::beside_system(&self.system_base(), self.recall.as_ref())
    }

    /// The system text without the recalled memories: the prompt and the language's
    /// instruction, then the summary.
    fn system_base(&self) -> String {
        let mut s = self.system_prompt.clone();
        if let Some(note) = self.language_note.as_deref().filter(|s| !s.trim().is_empty()) {
            if !s.is_empty() {
                s.push(' ');
            }
            s.push_str(note);
        }
        if let Some(summary) = self.summary.as_deref().filter(|s| !s.trim().is_empty()) {
            if !s.is_empty() {
                s.push_str("\n\n");
            }
            s.push_str("Summary of the earlier conversation:\n");
            s.push_str(summary);
        }
        s
    }

    // ---- write side ------------------------------------------------------------------------

    /// Records the user's utterance; it is part of the next request (rule 3).
    pub fn push_user(&mut self, text: &str) -> Result<&Message, HistoryError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(HistoryError::EmptyUtterance);
        }
        Ok(self.append(Message::new(MessageKind::User { text: text.to_string() })))
    }

    /// Records a model response (complete, cut short, or cancelled). Returns the reply.
    pub fn push_reply(&mut self, reply: AssistantMessage) -> &Message {
        let i = self.push_assistant(reply).start;
        &self.record[i]
    }

    /// Records tool calls with the text said alongside them. Returns the record range written.
    pub fn push_tool_calls(&mut self, text: &str, calls: Vec<ToolCall>) -> std::ops::Range<usize> {
        let model = Some(self.model.clone());
        self.push_assistant(AssistantMessage {
            generated: text.to_string(),
            tool_calls: calls,
            model,
            ..Default::default()
        })
    }

    /// Records a model response; every tool call in it gets an `in_progress` placeholder
    /// result appended together with it, so no request ever sees a call without an answer
    /// (rule 10). Returns the record range written (the reply, then the placeholders).
    pub fn push_assistant(&mut self, reply: AssistantMessage) -> std::ops::Range<usize> {
        let start = self.record.len();
        let placeholders: Vec<ToolResult> = reply
            .tool_calls
            .iter()
            .map(|c| ToolResult {
                call_id: c.id.clone(),
                name: c.name.clone(),
                state: ToolState::InProgress,
                content: String::new(),
            })
            .collect();
        self.append(Message::new(MessageKind::Assistant(reply)));
        for p in placeholders {
            self.append(Message::new(MessageKind::ToolResult(p)));
        }
        start..self.record.len()
    }

    /// Settles a tool call (rule 10): in place while nothing but the model's own output
    /// follows the placeholder; otherwise as a note where the conversation has got to.
    pub fn resolve_tool_call(
        &mut self,
        call_id: &str,
        state: ToolState,
        content: &str,
    ) -> Result<ToolResolution, HistoryError> {
        let idx = self.placeholder_index(call_id)?;
        let MessageKind::ToolResult(r) = &self.record[idx].kind else {
            return Err(HistoryError::UnknownToolCall(call_id.to_string()));
        };
        if matches!(r.state, ToolState::Done | ToolState::Error) {
            return Ok(ToolResolution::AlreadySettled(idx));
        }
        // A cancelled call (barge-in) is one the conversation has moved past by definition.
        let moved_on = r.state == ToolState::Cancelled
            || self.record[idx + 1..]
                .iter()
                .any(|m| matches!(m.kind, MessageKind::User { .. } | MessageKind::Note { .. }));
        if moved_on {
            let name = r.name.clone();
            let verdict = if state == ToolState::Error {
                "failed"
            } else {
                "finished"
            };
            let note = format!(
                "The earlier call to `{name}` (id {call_id}) {verdict} after the conversation moved on: {content}"
            );
            self.append(Message::new(MessageKind::Note { text: note }));
            return Ok(ToolResolution::LateNote(self.record.len() - 1));
        }
        self.replace(idx, |m| {
            if let MessageKind::ToolResult(r) = &mut m.kind {
                r.state = state;
                r.content = content.to_string();
            }
        });
        Ok(ToolResolution::InPlace(idx))
    }

    /// Barge-in during tool calls: every placeholder still in progress becomes `cancelled`,
    /// in place. Settled results are final and stay. Returns the indices changed.
    pub fn cancel_pending_tool_calls(&mut self) -> Vec<usize> {
        let pending: Vec<usize> = self
            .record
            .iter()
            .enumerate()
            .filter(|(_, m)| matches!(&m.kind, MessageKind::ToolResult(r) if r.state == ToolState::InProgress))
            .map(|(i, _)| i)
            .collect();
        for &i in &pending {
            self.replace(i, |m| {
                if let MessageKind::ToolResult(r) = &mut m.kind {
                    r.state = ToolState::Cancelled;
                }
            });
        }
        pending
    }

    /// Barge-in: the reply was cut after `heard` was played (rule 9). The context then carries
    /// only the heard text; an empty heard text leaves the reply out of the context.
    pub fn mark_interrupted(
        &mut self,
        message_id: &str,
        heard: &str,
        heard_ms: Option<u64>,
    ) -> Result<usize, HistoryError> {
        self.edit_reply(message_id, |a| {
            a.interrupted = true;
            a.heard = Some(heard.to_string());
            a.heard_ms = heard_ms;
        })
    }

    /// Edits an assistant reply in place (heard text, voice metrics); counts are kept right.
    pub fn edit_reply(
        &mut self,
        message_id: &str,
        edit: impl FnOnce(&mut AssistantMessage),
    ) -> Result<usize, HistoryError> {
        let idx = self.index_of(message_id)?;
        if !matches!(self.record[idx].kind, MessageKind::Assistant(_)) {
            return Err(HistoryError::NotAReply(message_id.to_string()));
        }
        self.replace(idx, |m| {
            if let MessageKind::Assistant(a) = &mut m.kind {
                edit(a);
            }
        });
        Ok(idx)
    }

    /// The id of the newest assistant reply.
    pub fn last_reply_id(&self) -> Option<&str> {
        self.record
            .iter()
            .rev()
            .find(|m| matches!(m.kind, MessageKind::Assistant(_)))
            .map(|m| m.id.as_str())
    }

    /// Reset: empties the context; settings and system prompt stay; the record keeps
    /// everything and gets a marker (rule 7).
    pub fn clear(&mut self) -> &Message {
        self.append(Message::new(MessageKind::ContextReset))
    }

    /// Changes the system prompt; effective from the next request (rule 6).
    pub fn set_system_prompt(&mut self, prompt: impl Into<String>) {
        self.system_prompt = prompt.into();
        self.refresh_fixed_cost();
    }

    /// Changes the history settings; the context reshapes at once (it is a view).
    pub fn set_settings(&mut self, settings: HistorySettings) {
        self.settings = settings;
        self.generation += 1;
    }

    /// Sets or clears the running summary.
    pub fn set_summary(&mut self, summary: Option<String>) {
        self.summary = summary;
        self.refresh_fixed_cost();
    }

    /// Sets the summary together with how far into the record it reaches (resume, import).
    pub fn set_summary_through(&mut self, summary: Option<String>, summarized_to: usize) {
        self.summarized_to = summarized_to.min(self.record.len());
        self.set_summary(summary);
    }

    /// Record index just after the last reset marker (0 when never reset).
    pub fn floor(&self) -> usize {
        self.floor
    }

    /// How far (record index, exclusive) the summary covers.
    pub fn summarized_to(&self) -> usize {
        self.summarized_to
    }

    /// Whole turns that have left the context and are not folded into the summary yet
    /// (rule 11). The window starts at a turn boundary, so a tool call never leaves without
    /// its result. Turns before a reset are never summarised: the reset forgot them.
    pub fn summary_due(&self) -> Option<SummaryJob> {
        if !self.settings.enabled {
            return None;
        }
        let from = self.summarized_to.max(self.floor);
        let to = self.window().start;
        if to <= from {
            return None;
        }
        let messages: Vec<Message> = self.record[from..to]
            .iter()
            .filter(|m| m.in_context())
            .cloned()
            .collect();
        (!messages.is_empty()).then(|| SummaryJob {
            prior: self.summary.clone(),
            messages,
            from,
            to,
        })
    }

    /// Folds a finished summary in, unless the context changed under it (a reset, an edited
    /// summary, another fold): then it is discarded and `false` returned.
    pub fn apply_summary(&mut self, job: &SummaryJob, text: String) -> bool {
        if self.summarized_to.max(self.floor) != job.from || self.summary != job.prior || job.to > self.record.len() {
            return false;
        }
        self.summarized_to = job.to;
        self.set_summary(Some(text));
        true
    }

    /// Sets or clears the conversation language's instruction (see `language`).
    pub fn set_language_note(&mut self, note: Option<String>) {
        if self.language_note != note {
            self.language_note = note;
            self.refresh_fixed_cost();
        }
    }

    pub fn language_note(&self) -> Option<&str> {
        self.language_note.as_deref()
    }

    /// Sets or clears the recalled memories.
    pub fn set_recall(&mut self, recall: Option<Recall>) {
        let recall = recall.and_then(Recall::some);
        if self.recall != recall {
            self.recall = recall;
            self.refresh_fixed_cost();
        }
    }

    /// The tools offered with each request (rule 10); their definitions count in the budget.
    pub fn set_tools(&mut self, tools: Vec<ToolSpec>) {
        self.tools = tools;
        self.refresh_fixed_cost();
    }

    pub fn tools(&self) -> &[ToolSpec] {
        &self.tools
    }

    /// Switches model (tokenizer and window) and reply budget; every cached count is redone.
    pub fn set_model(&mut self, model: &str, reply_budget: u32) {
        self.model = model.to_string();
        self.counter = TokenCounter::for_model(model);
        self.model_window = tokens::context_window(model);
        self.reply_budget = reply_budget;
        for i in 0..self.record.len() {
            self.cost[i] = message_cost(&self.counter, &self.record[i]);
            self.prefix[i + 1] = self.prefix[i] + self.cost[i] as u64;
        }
        self.refresh_fixed_cost();
    }

    /// Overrides the model's context window (a local server started with its own `n_ctx`).
    pub fn set_model_window(&mut self, window: u32) {
        self.model_window = window;
        self.generation += 1;
    }

    /// Learns from the provider's reported input tokens for a prompt (see `tokens`).
    pub fn calibrate(&mut self, prompt_raw_tokens: u32, reported_input_tokens: u32) {
        self.counter.calibrate(prompt_raw_tokens, reported_input_tokens);
    }

    /// Appends a message whatever its kind (used by `from_record` and import as well).
    fn append(&mut self, m: Message) -> &Message {
        let i = self.record.len();
        let starts_turn = m.is_user()
            || (!matches!(m.kind, MessageKind::ContextReset)
                && self.turn_starts.last().is_none_or(|&s| s < self.floor));
        if starts_turn {
            self.turn_starts.push(i);
        }
        if matches!(m.kind, MessageKind::ContextReset) {
            // A reset forgets: the summary of what came before goes with the context.
            self.floor = i + 1;
            self.summarized_to = i + 1;
            if self.summary.take().is_some() {
                self.refresh_fixed_cost();
            }
        }
        let cost = message_cost(&self.counter, &m);
        self.cost.push(cost);
        self.prefix.push(self.prefix[i] + cost as u64);
        self.record.push(m);
        self.generation += 1;
        &self.record[i]
    }

    /// Edits a message in place and keeps the cached counts right.
    fn replace(&mut self, idx: usize, edit: impl FnOnce(&mut Message)) {
        edit(&mut self.record[idx]);
        let cost = message_cost(&self.counter, &self.record[idx]);
        if cost != self.cost[idx] {
            self.cost[idx] = cost;
            for i in idx..self.record.len() {
                self.prefix[i + 1] = self.prefix[i] + self.cost[i] as u64;
            }
        }
        self.generation += 1;
    }

    fn refresh_fixed_cost(&mut self) {
        let system = self.system_text();
        let tools: u32 = self
            .tools
            .iter()
            .map(|t| {
                self.counter.count(&t.name)
                    + self.counter.count(&t.description)
                    + self.counter.count(&t.parameters.to_string())
            })
            .sum();
        self.fixed_cost = REQUEST_OVERHEAD
            + tools
            + if system.is_empty() {
                0
            } else {
                self.counter.count(&system) + MESSAGE_OVERHEAD
            };
        self.generation += 1;
    }

    fn index_of(&self, id: &str) -> Result<usize, HistoryError> {
        // Searches from the end: edits almost always concern the latest messages.
        self.record
            .iter()
            .rposition(|m| m.id == id)
            .ok_or_else(|| HistoryError::UnknownMessage(id.to_string()))
    }

    fn placeholder_index(&self, call_id: &str) -> Result<usize, HistoryError> {
        self.record
            .iter()
            .rposition(|m| matches!(&m.kind, MessageKind::ToolResult(r) if r.call_id == call_id))
            .ok_or_else(|| HistoryError::UnknownToolCall(call_id.to_string()))
    }
}

/// What a message costs in the context (0 for what the model never sees).
fn message_cost(counter: &TokenCounter, m: &Message) -> u32 {
    if !m.in_context() {
        return 0;
    }
    match &m.kind {
        MessageKind::User { text } | MessageKind::Note { text } => counter.count(text) + MESSAGE_OVERHEAD,
        MessageKind::Assistant(a) => {
            counter.count(a.context_text())
                + MESSAGE_OVERHEAD
                + a.tool_calls
                    .iter()
                    .map(|c| counter.count(&c.name) + counter.count(&c.arguments) + MESSAGE_OVERHEAD)
                    .sum::<u32>()
        }
        MessageKind::ToolResult(r) => counter.count(&r.context_text()) + MESSAGE_OVERHEAD,
        MessageKind::ContextReset => 0,
    }
}

fn to_prompt_message(m: &Message) -> Option<PromptMessage> {
    if !m.in_context() {
        return None;
    }
    Some(match &m.kind {
        MessageKind::User { text } => PromptMessage::User { text: text.clone() },
        MessageKind::Assistant(a) => PromptMessage::Assistant {
            text: a.context_text().to_string(),
            tool_calls: a.tool_calls.clone(),
        },
        MessageKind::ToolResult(r) => PromptMessage::ToolResult {
            call_id: r.call_id.clone(),
            name: r.name.clone(),
            content: r.context_text(),
            is_error: r.state == ToolState::Error,
        },
        MessageKind::Note { text } => PromptMessage::Note { text: text.clone() },
        MessageKind::ContextReset => return None,
    })
}

#[cfg(test)]
mod tests;
