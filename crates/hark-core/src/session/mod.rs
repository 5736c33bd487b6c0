//! Running a conversation turn end to end: record, request, stream, persist.
//!
//! # Layout
//! - this file: [`ChatSession`], which owns a conversation, its store and its model, and runs
//!   text turns.
//! - `voice`: the voice turn (transcript → reply → sentences → speech) and the session actor
//!   that owns capture and serialises push-to-talk, completions and barge-in.
//! - `sentences`: the streaming sentence splitter.
//! - `ptt`: push-to-talk decisions as pure functions.
//! - `summary`: folding turns that leave the context into the running summary.
//! - `recall`: what Hark remembers from earlier conversations, for one turn (rule 12).
//!
//! Tools (rule 10): when a reply calls tools, the call and its `in_progress` placeholders are
//! committed, the tools run, each result replaces its placeholder in place, and the model is
//! asked again (at most [`MAX_TOOL_ROUNDS`] times a turn). A barge-in while a tool runs marks
//! the pending calls `cancelled`; a tool still finishes (a result is uninterruptible) and its
//! late result is appended as a note before the next turn.
//!
//! Order of a turn: the user message is committed to SQLite before the request (rule 3), the
//! reply is committed when it is final (complete, cut by an error, or cancelled). A crash
//! mid-stream therefore loses only the reply still in flight.

pub mod ptt;
pub mod recall;
pub mod sentences;
pub mod summary;
pub mod voice;

use std::sync::Arc;
use std::time::Instant;

use futures_util::stream::{FuturesUnordered, StreamExt};
use tokio::sync::{mpsc, Notify};
use tokio_util::sync::CancellationToken;

use crate::audio::AudioError;
use crate::conversation::{
    AssistantMessage, Conversation, HistoryError, HistorySettings, Latency, Message, MessageKind, Prompt,
    PromptMessage, ReplyOutcome, ToolCall, ToolResolution, ToolState, Usage,
};
use crate::error::ErrorKind;
use crate::provider::{ChatModel, Completion, Ending, ProviderError};
use crate::store::{SessionMeta, Store, StoreError, StoredSession};
use crate::tools::{ToolContext, Toolbox};

/// Model requests a turn may make that end in tool calls; the calls of the last one are
/// answered with an error and the turn ends.
pub const MAX_TOOL_ROUNDS: usize = 4;

/// A tool's outcome: the call id, and its result text or error message.
type ToolOutcome = (String, Result<String, String>);

/// What happens during a turn, in order, for a UI or the CLI's `--json`.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnEvent {
    /// The user message is in the record and committed.
    UserRecorded(Box<Message>),
    /// A piece of the reply's text.
    Delta(String),
    /// The model called a tool; it is running.
    ToolStarted { call: ToolCall },
    /// A tool call settled (done, error, or cancelled by a barge-in).
    ToolFinished {
        call_id: String,
        name: String,
        state: ToolState,
        content: String,
    },
}

/// Why a turn failed. In every case the user message stays recorded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TurnError {
    #[error(transparent)]
    History(#[from] HistoryError),
    #[error(transparent)]
    Provider(#[from] ProviderError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Audio(#[from] AudioError),
    /// A bug: a panic inside the turn. The turn failed; the conversation is kept.
    #[error("an internal error stopped this turn ({0}); the conversation is kept")]
    Internal(String),
}

impl TurnError {
    /// Where the error sits in the taxonomy, for UIs and `--json`.
    pub fn kind(&self) -> ErrorKind {
        match self {
            TurnError::History(_) => ErrorKind::History,
            TurnError::Provider(e) => e.kind,
            TurnError::Store(_) => ErrorKind::Storage,
            TurnError::Audio(e) => e.kind(),
            TurnError::Internal(_) => ErrorKind::Internal,
        }
    }

    /// What the user can do about it.
    pub fn next_step(&self) -> &'static str {
        match self {
            TurnError::History(HistoryError::EmptyUtterance) => "say something and try again",
            _ => self.kind().next_step(),
        }
    }

    /// Technical detail for a "details" disclosure and the log, when there is some beyond
    /// the message.
    pub fn detail(&self) -> Option<String> {
        match self {
            TurnError::Audio(e) => e.detail().map(str::to_string),
            TurnError::Provider(e) => e.status.map(|s| format!("{} answered HTTP {s}", e.provider)),
            _ => None,
        }
    }
}

/// One conversation with its store and model.
pub struct ChatSession {
    conv: Conversation,
    meta: SessionMeta,
    store: Arc<Store>,
    /// Shared with background summary folds.
    model: Arc<dyn ChatModel>,
    /// Background summarisation, when on (rule 11).
    summaries: Option<summary::Summaries>,
    /// Tools offered to the model (rule 10).
    tools: Toolbox,
    /// Long-term recall on (rule 12).
    recall: bool,
    /// Results of tools that were still running when a barge-in cancelled their calls.
    late_tx: mpsc::UnboundedSender<ToolOutcome>,
    late_rx: mpsc::UnboundedReceiver<ToolOutcome>,
    late_pending: usize,
    /// A commit landed at another position than ours: someone else wrote to the session.
    stale: bool,
    /// Evaluate the next request's prefix ahead of time (a local model keeps it cached).
    prefill: bool,
    /// Woken when background work (a summary fold, a late tool result) has a result, so a
    /// waiting actor applies it without polling.
    background: Arc<Notify>,
}

/// Evaluates in a local model what a request will start with, before the turn sends it
/// (issue 12): the model keeps the evaluated prompt in its cache, and `hark-llm` answers a
/// request whose whole prompt is cached without evaluating anything. A snapshot of the
/// conversation: if it changes before the turn (an edit, another writer), the turn's
/// request shares less with it and evaluates the rest itself; nothing is ever recorded.
#[derive(Clone)]
pub struct Prefiller {
    conv: Arc<Conversation>,
    model: Arc<dyn ChatModel>,
    store: Arc<Store>,
    recall: bool,
}

impl Prefiller {
    /// Evaluates, in the background, the request the turn will make: with `utterance`,
    /// the whole request for it (recall included) as [`ChatSession::send`] builds it, and
    /// its reply generated ahead (`Prompt::ahead`: the model hands it to the turn's
    /// identical request); without, what comes before the utterance (its user turn opened
    /// with an empty message, so a chat template's turn header is evaluated too), one
    /// token asked for. A failure only means the turn evaluates everything itself.
    pub fn prefill(&self, utterance: Option<String>) -> tokio::task::JoinHandle<()> {
        self.prefill_until(utterance, CancellationToken::new())
    }

    /// [`Self::prefill`], dropped once `stop` is cancelled: the request ends, and the model
    /// stops generating at its next token.
    pub fn prefill_until(&self, utterance: Option<String>, stop: CancellationToken) -> tokio::task::JoinHandle<()> {
        let this = self.clone();
        tokio::spawn(async move {
            let prompt = match utterance {
                None => {
                    let mut p = this.conv.prefix_prompt();
                    // The facts, as they are now (the first turn has recalled nothing yet),
                    // without the earlier messages the last turn recalled: the words will
                    // recall their own, just before them (`Prompt::split_recall`).
                    p.recall = None;
                    if this.recall && this.conv.settings().enabled {
                        let store = this.store.clone();
                        let facts = tokio::task::spawn_blocking(move || recall::facts(&store)).await;
                        p.recall = facts.ok().and_then(Result::ok).flatten();
                    }
                    p.messages.push(PromptMessage::User { text: String::new() });
                    p
                }
                Some(text) => {
                    let Some(mut p) = this.turn_prompt(text).await else {
                        return;
                    };
                    // The turn's own budget: the reply is generated ahead, for the turn's
                    // identical request to take over (`Prompt::ahead`).
                    p.ahead = true;
                    p
                }
            };
            this.send(prompt, stop).await;
        })
    }

    /// Evaluates, in the background, the request for `words`, the user's words so far
    /// while they still speak (issue 20), left open (`Prompt::open`): the model evaluates
    /// it up to the end of their text and generates nothing, so the request for the
    /// finished words — [`Self::prefill_until`]'s at a pause, or the turn's — evaluates
    /// only what was said since. With recall on, the memories are those the words so far
    /// recall: the offline model has the earlier messages among them just before the
    /// user's message (`ProviderConfig::keeps_prefix`), so a change costs only them and
    /// the words, and the finished words, which mostly recall the same, find them
    /// evaluated.
    pub fn prefill_open(&self, words: String, stop: CancellationToken) -> tokio::task::JoinHandle<()> {
        let this = self.clone();
        tokio::spawn(async move {
            let Some(mut p) = this.turn_prompt(words).await else {
                return;
            };
            p.open = true;
            p.max_tokens = Some(1);
            this.send(p, stop).await;
        })
    }

    /// The request [`ChatSession::send`] would make for `words`, recall included; `None`
    /// when it cannot be built (the turn then reports why).
    async fn turn_prompt(&self, words: String) -> Option<Prompt> {
        let (conv, store, recall) = (self.conv.clone(), self.store.clone(), self.recall);
        // Recall reads SQLite: off the runtime's threads.
        tokio::task::spawn_blocking(move || -> Option<Prompt> {
            let mut conv = (*conv).clone();
            conv.push_user(&words).ok()?;
            if recall && conv.settings().enabled {
                conv.set_recall(recall::recall_text(&store, &conv, &words).ok()?);
            } else {
                conv.set_recall(None);
            }
            conv.prompt().ok()
        })
        .await
        .ok()
        .flatten()
    }

    /// Sends a prefill's request, until it ends or `stop`; what comes back is not used.
    async fn send(&self, prompt: Prompt, stop: CancellationToken) {
        let (tx, _rx) = mpsc::unbounded_channel();
        tokio::select! {
            _ = stop.cancelled() => {}
            done = self.model.stream(&prompt, &tx) => {
                if let Err(e) = done {
                    tracing::debug!("prefill failed (the turn evaluates everything itself): {e}");
                }
            }
        }
    }
}

impl ChatSession {
    /// Starts a new session and commits its row.
    pub fn create(
        store: Arc<Store>,
        model: Box<dyn ChatModel>,
        system_prompt: &str,
        settings: HistorySettings,
    ) -> Result<Self, StoreError> {
        let mut meta = SessionMeta::new(crate::conversation::new_id(), system_prompt, settings);
        meta.provider = Some(model.provider().to_string());
        meta.model = Some(model.model().to_string());
        store.create_session(&meta)?;
        let conv = Conversation::new(meta.id.clone(), model.model(), system_prompt, settings);
        Ok(Self::assemble(conv, meta, store, model))
    }

    fn assemble(conv: Conversation, meta: SessionMeta, store: Arc<Store>, model: Box<dyn ChatModel>) -> Self {
        let (late_tx, late_rx) = mpsc::unbounded_channel();
        Self {
            conv,
            meta,
            store,
            model: Arc::from(model),
            summaries: None,
            tools: Toolbox::none(),
            recall: false,
            late_tx,
            late_rx,
            late_pending: 0,
            background: Arc::new(Notify::new()),
            stale: false,
            prefill: false,
        }
    }

    /// Resumes a stored session with (possibly another) model.
    pub fn resume(store: Arc<Store>, id: &str, model: Box<dyn ChatModel>) -> Result<Self, StoreError> {
        let stored = store.load_session(id)?;
        let conv = stored.conversation(model.model());
        let mut meta = stored.meta;
        meta.provider = Some(model.provider().to_string());
        meta.model = Some(model.model().to_string());
        store.update_session(&meta)?;
        Ok(Self::assemble(conv, meta, store, model))
    }

    pub fn id(&self) -> &str {
        &self.meta.id
    }

    /// The provider name ("anthropic", "openai").
    pub fn provider(&self) -> &'static str {
        self.model.provider()
    }

    pub fn conversation(&self) -> &Conversation {
        &self.conv
    }

    /// The tools offered to the model from the next request on (none by default).
    pub fn set_tools(&mut self, tools: Toolbox) {
        self.conv.set_tools(tools.specs());
        self.tools = tools;
    }

    /// The tools offered to the model.
    pub fn tools(&self) -> &Toolbox {
        &self.tools
    }

    /// Turns long-term recall on or off (rule 12; off by default). When on, each turn
    /// carries remembered facts and matching earlier messages beside the system prompt.
    pub fn set_recall(&mut self, on: bool) {
        self.recall = on;
        if !on {
            self.conv.set_recall(None);
        }
    }

    /// The conversation language: its instruction goes right after the system prompt in
    /// every request (`None`, automatic: the model answers in what the user speaks).
    pub fn set_language(&mut self, language: Option<&crate::language::Language>) {
        self.conv.set_language_note(language.map(|l| l.instruction()));
    }

    /// The store this session writes to.
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// Applies whatever finished in the background, never waiting: a summary fold, and
    /// late results of cancelled tool calls (appended as notes). Returns whether the
    /// context changed.
    pub fn poll_background(&mut self) -> Result<bool, TurnError> {
        let mut changed = false;
        while let Ok((call_id, result)) = self.late_rx.try_recv() {
            self.late_pending = self.late_pending.saturating_sub(1);
            let (state, content) = recorded_as(result);
            changed |= self.settle(&call_id, state, &content)?;
        }
        Ok(self.poll_summary()? || changed)
    }

    /// Prefill on or off: for a local model, which keeps the evaluated prompt in its cache
    /// (a cloud provider would bill it, and caches on its own).
    pub fn set_prefill(&mut self, on: bool) {
        self.prefill = on;
    }

    /// Starts evaluating what the next request will start with (system text, summary,
    /// context turns, the user turn's opening), in the background, when prefill is on: at
    /// push-to-talk press, so that after the release only the new utterance is left to
    /// evaluate; and once at start-up, so the first turn is not a cold one. Nothing is
    /// recorded.
    pub fn prefill(&self) -> Option<tokio::task::JoinHandle<()>> {
        self.prefiller().map(|p| p.prefill(None))
    }

    /// What evaluates requests ahead of the turn, when prefill is on: a snapshot of the
    /// conversation, which the capture uses to evaluate a transcript while the key is
    /// still held (see [`Prefiller::prefill`]).
    pub fn prefiller(&self) -> Option<Prefiller> {
        self.prefill.then(|| Prefiller {
            conv: Arc::new(self.conv.clone()),
            model: self.model.clone(),
            store: self.store.clone(),
            recall: self.recall,
        })
    }

    /// Notified each time background work has a result for [`Self::poll_background`].
    pub fn background_signal(&self) -> Arc<Notify> {
        self.background.clone()
    }

    /// Whether background work (a summary fold, a cancelled tool) is still to come back.
    pub fn background_running(&self) -> bool {
        self.summary_running() || self.late_pending > 0
    }

    /// Overrides the model's context window (a local server started with its own size).
    pub fn set_model_window(&mut self, window: u32) {
        self.conv.set_model_window(window);
    }

    /// Sets the reply budget the context budget leaves room for.
    pub fn set_reply_budget(&mut self, max_tokens: u32) {
        let model = self.conv.model().to_string();
        self.conv.set_model(&model, max_tokens);
    }

    /// The session as stored (for export).
    pub fn stored(&self) -> Result<StoredSession, StoreError> {
        self.store.load_session(&self.meta.id)
    }

    /// Changes history settings; persisted, effective at once.
    pub fn set_settings(&mut self, settings: HistorySettings) -> Result<(), StoreError> {
        self.conv.set_settings(settings);
        self.meta.settings = settings;
        self.store.update_session(&self.meta)
    }

    /// Changes the system prompt; persisted, effective from the next request.
    pub fn set_system_prompt(&mut self, prompt: &str) -> Result<(), StoreError> {
        self.conv.set_system_prompt(prompt);
        self.meta.system_prompt = prompt.to_string();
        self.store.update_session(&self.meta)
    }

    /// Barge-in: records what was heard of a reply (rule 9) and commits it.
    pub fn mark_interrupted(&mut self, reply_id: &str, heard: &str, heard_ms: u64) -> Result<(), TurnError> {
        let i = self.conv.mark_interrupted(reply_id, heard, Some(heard_ms))?;
        Ok(self.save_at(i)?)
    }

    /// Edits a recorded reply (voice metrics) and commits it.
    pub fn edit_reply(&mut self, reply_id: &str, edit: impl FnOnce(&mut AssistantMessage)) -> Result<(), TurnError> {
        let i = self.conv.edit_reply(reply_id, edit)?;
        Ok(self.save_at(i)?)
    }

    /// Reset: clears the context, commits the marker.
    pub fn clear(&mut self) -> Result<(), StoreError> {
        self.conv.clear();
        self.save_last()
    }

    fn save_last(&mut self) -> Result<(), StoreError> {
        let i = self.conv.record().len() - 1;
        self.save_at(i)
    }

    /// Commits record entry `i`. Another process writing to the same session may have
    /// appended meanwhile; then the stored position differs from ours and the record is
    /// reloaded before the next turn (see [`Self::sync`]).
    fn save_at(&mut self, i: usize) -> Result<(), StoreError> {
        let seq = self.store.save_message(&self.meta.id, &self.conv.record()[i])?;
        if seq != i as i64 {
            self.stale = true;
        }
        Ok(())
    }

    /// Brings the conversation up to date with the store when another writer (a second
    /// `hark chat --session`, the app and the CLI) has added to this session: its messages
    /// join the record in the order they were committed, and positions agree again.
    pub fn sync(&mut self) -> Result<(), StoreError> {
        if self.stale || self.store.message_count(&self.meta.id)? != self.conv.record().len() {
            self.reload()?;
        }
        Ok(())
    }

    /// Rebuilds the conversation from the store, which holds everything committed, keeping
    /// the model, reply budget, window and tools. Used after another writer added to the
    /// session, and after a panic left the in-memory copy half-updated.
    pub fn reload(&mut self) -> Result<(), StoreError> {
        let stored = self.store.load_session(&self.meta.id)?;
        let mut conv = stored.conversation(self.conv.model());
        conv.set_model(self.conv.model(), self.conv.reply_budget());
        conv.set_model_window(self.conv.model_window());
        conv.set_tools(self.conv.tools().to_vec());
        conv.set_recall(self.conv.recalled().cloned());
        conv.set_language_note(self.conv.language_note().map(str::to_string));
        self.conv = conv;
        self.stale = false;
        // A fold in flight was computed over the old record's positions: let it go.
        if self.summaries.is_some() {
            self.set_summarization(true);
        }
        Ok(())
    }

    /// Runs one text turn. Returns the recorded reply (the last model response of the
    /// turn). On failure the user message is recorded and so is whatever part of the reply
    /// arrived, marked with the failure.
    pub async fn send(
        &mut self,
        text: &str,
        cancel: &CancellationToken,
        mut on_event: impl FnMut(TurnEvent),
    ) -> Result<Message, TurnError> {
        self.poll_background()?;
        self.sync()?;
        let user = self.conv.push_user(text)?.clone();
        self.save_last()?;
        on_event(TurnEvent::UserRecorded(Box::new(user)));
        // With history off a request carries only the system prompt and the utterance (rule 8).
        if self.recall && self.conv.settings().enabled {
            let recalled = recall::recall_text(&self.store, &self.conv, text)?;
            self.conv.set_recall(recalled);
        } else {
            self.conv.set_recall(None);
        }
        let mut round = 1;
        loop {
            // A tool server's list may have changed since the last request.
            self.conv.set_tools(self.tools.specs());
            let prompt = self.conv.prompt()?;
            let (reply, calls, error) = self.request(&prompt, cancel, &mut on_event).await;
            let range = self.conv.push_assistant(reply);
            for i in range.clone() {
                self.save_at(i)?;
            }
            let reply_msg = self.conv.record()[range.start].clone();
            if let Some(e) = error {
                // A failed stream reports no tool calls: a half-streamed call never runs.
                return Err(e.into());
            }
            if calls.is_empty() {
                self.start_summary();
                return Ok(reply_msg);
            }
            if round == MAX_TOOL_ROUNDS {
                for call in &calls {
                    self.settle(&call.id, ToolState::Error, "too many tool calls in one turn")?;
                }
                self.start_summary();
                return Ok(reply_msg);
            }
            self.run_tools(&calls, cancel, &mut on_event).await?;
            round += 1;
        }
    }

    /// One model request: streams the reply, returns it ready to record, with its tool
    /// calls and the error that ended it, if any.
    async fn request(
        &mut self,
        prompt: &Prompt,
        cancel: &CancellationToken,
        on_event: &mut impl FnMut(TurnEvent),
    ) -> (AssistantMessage, Vec<ToolCall>, Option<ProviderError>) {
        let (tx, mut rx) = mpsc::unbounded_channel::<String>();
        let started = Instant::now();
        let mut first_token = None;
        let mut partial = String::new();
        let result = {
            let stream = self.model.stream(prompt, &tx);
            tokio::pin!(stream);
            loop {
                tokio::select! {
                    // Control overtakes data: a cancel wins over queued deltas.
                    biased;
                    _ = cancel.cancelled() => {
                        break Err(ProviderError::new(self.model.provider(), ErrorKind::Cancelled, "the turn was cancelled"));
                    }
                    Some(delta) = rx.recv() => {
                        first_token.get_or_insert_with(|| started.elapsed());
                        partial.push_str(&delta);
                        on_event(TurnEvent::Delta(delta));
                    }
                    result = &mut stream => break result,
                }
            }
        };
        // Deltas sent just before the stream finished are still queued: deliver them.
        while let Ok(delta) = rx.try_recv() {
            first_token.get_or_insert_with(|| started.elapsed());
            partial.push_str(&delta);
            on_event(TurnEvent::Delta(delta));
        }
        let latency = Latency {
            first_token_ms: first_token.map(|d| d.as_millis() as u64),
            total_ms: started.elapsed().as_millis() as u64,
            ..Default::default()
        };
        let (completion, outcome, error) = match result {
            Ok(c) => {
                let outcome = match c.ending {
                    Ending::Finished => ReplyOutcome::Complete,
                    Ending::Refused => ReplyOutcome::Refused {
                        reason: c.refusal.clone(),
                    },
                    Ending::CutOff => ReplyOutcome::CutOff,
                };
                (c, outcome, None)
            }
            Err(e) => {
                let outcome = if e.kind == ErrorKind::Cancelled {
                    ReplyOutcome::Cancelled
                } else {
                    ReplyOutcome::Failed {
                        error_kind: e.kind.as_str().to_string(),
                        message: e.message.clone(),
                    }
                };
                (
                    Completion {
                        text: partial,
                        ..Default::default()
                    },
                    outcome,
                    Some(e),
                )
            }
        };
        if let Some(reported) = completion.usage.input_tokens {
            self.conv.calibrate(prompt.raw_tokens, reported);
        }
        let usage = Usage {
            input_tokens: completion.usage.input_tokens,
            output_tokens: completion.usage.output_tokens,
            cached_input_tokens: completion.usage.cached_input_tokens,
            estimated_input_tokens: prompt.estimated_tokens,
            estimated_output_tokens: self.conv.counter().count(&completion.text),
        };
        let reply = AssistantMessage {
            generated: completion.text,
            tool_calls: completion.tool_calls.clone(),
            outcome,
            model: Some(completion.model.unwrap_or_else(|| self.model.model().to_string())),
            usage: Some(usage),
            latency: Some(latency),
            ..Default::default()
        };
        (reply, completion.tool_calls, error)
    }

    /// Runs a reply's tool calls concurrently; each result replaces its placeholder as it
    /// arrives. A cancel (barge-in) marks the calls still running `cancelled` and returns
    /// at once; their results come back later as notes (see [`Self::poll_background`]).
    async fn run_tools(
        &mut self,
        calls: &[ToolCall],
        cancel: &CancellationToken,
        on_event: &mut impl FnMut(TurnEvent),
    ) -> Result<(), TurnError> {
        let ctx = ToolContext {
            store: self.store.clone(),
            session_id: self.meta.id.clone(),
            context_from: self.conv.window().start,
        };
        let mut running: FuturesUnordered<_> = calls
            .iter()
            .map(|call| {
                on_event(TurnEvent::ToolStarted { call: call.clone() });
                let (tools, ctx, call) = (self.tools.clone(), ctx.clone(), call.clone());
                // Its own task: a tool keeps running to the end even if the turn is cancelled.
                let task = tokio::spawn(async move { tools.run(&call.name, &call.arguments, &ctx).await });
                let id = call.id;
                async move {
                    let result = task.await.unwrap_or_else(|e| Err(format!("the tool failed: {e}")));
                    (id, result)
                }
            })
            .collect();
        while !running.is_empty() {
            tokio::select! {
                biased;
                _ = cancel.cancelled() => {
                    for i in self.conv.cancel_pending_tool_calls() {
                        self.save_at(i)?;
                        if let MessageKind::ToolResult(r) = &self.conv.record()[i].kind {
                            on_event(TurnEvent::ToolFinished {
                                call_id: r.call_id.clone(),
                                name: r.name.clone(),
                                state: ToolState::Cancelled,
                                content: String::new(),
                            });
                        }
                    }
                    self.late_pending += running.len();
                    let (late, wake) = (self.late_tx.clone(), self.background.clone());
                    tokio::spawn(async move {
                        while let Some(outcome) = running.next().await {
                            let _ = late.send(outcome);
                            wake.notify_one();
                        }
                    });
                    return Err(ProviderError::new(self.model.provider(), ErrorKind::Cancelled, "the turn was cancelled").into());
                }
                Some((id, result)) = running.next() => {
                    let (state, content) = recorded_as(result);
                    let name = calls.iter().find(|c| c.id == id).map(|c| c.name.clone()).unwrap_or_default();
                    self.settle(&id, state, &content)?;
                    on_event(TurnEvent::ToolFinished { call_id: id, name, state, content });
                }
            }
        }
        Ok(())
    }

    /// Records a tool call's result (in place, or as a late note) and commits it. Returns
    /// whether the record changed (not for a call already settled).
    fn settle(&mut self, call_id: &str, state: ToolState, content: &str) -> Result<bool, TurnError> {
        match self.conv.resolve_tool_call(call_id, state, content)? {
            ToolResolution::InPlace(i) | ToolResolution::LateNote(i) => {
                self.save_at(i)?;
                Ok(true)
            }
            ToolResolution::AlreadySettled(_) => Ok(false),
        }
    }
}

/// What Hark says after a reply, when the way it ended needs saying: a refusal the provider
/// gave no words for (the reply would be silence, or a sentence that stops midway), or a
/// reply the length limit cut off (it would pass for the whole answer). Nothing for a
/// message that is not a reply.
pub fn notice(reply: &Message) -> Option<&'static str> {
    let MessageKind::Assistant(a) = &reply.kind else {
        return None;
    };
    match a.outcome {
        ReplyOutcome::Refused { reason: None } => Some("The model declined to answer that."),
        ReplyOutcome::CutOff => Some("My answer was cut off there: it reached the length limit."),
        _ => None,
    }
}

/// How a tool's outcome is recorded: its text as `done`, or its error message as `error`.
fn recorded_as(result: Result<String, String>) -> (ToolState, String) {
    match result {
        Ok(content) => (ToolState::Done, content),
        Err(message) => (ToolState::Error, message),
    }
}
