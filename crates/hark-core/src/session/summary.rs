//! Summarisation (rule 11): turns that leave the context are folded into a running summary
//! by a model call that gets the prior summary and the dropped messages. It runs in the
//! background after a turn and never delays one; a result that arrives after the context
//! changed (reset, edited summary) is discarded by `Conversation::apply_summary`.
//!
//! The model call is [`fold`]; the session's side (one fold at a time in the background,
//! applied between turns, committed as a new summary version) is the `impl ChatSession`
//! at the end of this file.

use super::ChatSession;
use crate::conversation::{MessageKind, Prompt, PromptMessage, SummaryJob};
use crate::provider::{ChatModel, ErrorKind, ProviderError};
use crate::store::{StoreError, Summary};
use tokio::sync::mpsc;

/// The instruction the summarising call gets.
pub const SUMMARY_SYSTEM: &str = "You keep a running summary of a conversation between a user and Hark, a voice \
assistant. Fold the new messages into the prior summary. Keep every fact about the user (name, places, \
preferences, plans), decisions and open questions; drop small talk. At most 120 words, plain sentences, no preamble.";

/// The user message of the summarising call: the prior summary, then the new messages.
pub fn fold_request(job: &SummaryJob) -> String {
    let mut text = String::from("Prior summary:\n");
    text.push_str(job.prior.as_deref().unwrap_or("(none)"));
    text.push_str("\n\nNew messages:\n");
    for m in &job.messages {
        let line = match &m.kind {
            MessageKind::User { text } => format!("User: {text}"),
            MessageKind::Assistant(a) => {
                let mut l = format!("Hark: {}", a.context_text());
                for c in &a.tool_calls {
                    l.push_str(&format!(" [called {} {}]", c.name, c.arguments));
                }
                l
            }
            MessageKind::ToolResult(r) => format!("Tool {}: {}", r.name, r.context_text()),
            MessageKind::Note { text } => format!("Note: {text}"),
            MessageKind::ContextReset => continue,
        };
        text.push_str(&line);
        text.push('\n');
    }
    text
}

/// Runs one fold with `model`.
pub async fn fold(model: &dyn ChatModel, job: &SummaryJob) -> Result<String, ProviderError> {
    let prompt = Prompt {
        system: SUMMARY_SYSTEM.to_string(),
        messages: vec![PromptMessage::User {
            text: fold_request(job),
        }],
        ..Default::default()
    };
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let done = model.stream(&prompt, &tx).await?;
    let text = done.text.trim().to_string();
    if text.is_empty() {
        return Err(ProviderError::new(
            model.provider(),
            ErrorKind::InvalidResponse,
            "the summary came back empty",
        ));
    }
    Ok(text)
}

// ---- the session's side: folds in the background, applied between turns -----------------

/// The background summary fold: at most one at a time; its result comes back on `done`.
pub(super) struct Summaries {
    pub(super) running: bool,
    tx: mpsc::UnboundedSender<(SummaryJob, Result<String, ProviderError>)>,
    done: mpsc::UnboundedReceiver<(SummaryJob, Result<String, ProviderError>)>,
}

impl ChatSession {
    /// Turns background summarisation on or off (rule 11).
    pub fn set_summarization(&mut self, on: bool) {
        self.summaries = on.then(|| {
            let (tx, done) = mpsc::unbounded_channel();
            Summaries {
                running: false,
                tx,
                done,
            }
        });
    }

    /// Folds in a summary that has finished, if any; never waits. Returns whether one was
    /// applied (the context changed).
    pub(super) fn poll_summary(&mut self) -> Result<bool, StoreError> {
        let Some(s) = self.summaries.as_mut() else {
            return Ok(false);
        };
        let Ok((job, result)) = s.done.try_recv() else {
            return Ok(false);
        };
        s.running = false;
        let before = self.conv.summary().map(str::to_string);
        self.apply_summary(job, result)?;
        Ok(self.conv.summary() != before.as_deref())
    }

    /// Whether a summary fold is running in the background.
    pub fn summary_running(&self) -> bool {
        self.summaries.as_ref().is_some_and(|s| s.running)
    }

    fn apply_summary(&mut self, job: SummaryJob, result: Result<String, ProviderError>) -> Result<(), StoreError> {
        match result {
            Ok(text) => {
                if self.conv.apply_summary(&job, text.clone()) {
                    let through_seq = job.to as i64 - 1;
                    self.store.save_summary(
                        &self.meta.id,
                        &Summary {
                            text,
                            through_seq,
                            created_at: chrono::Utc::now(),
                        },
                    )?;
                }
            }
            Err(e) => tracing::warn!("summary fold failed (the turns stay in the record): {e}"),
        }
        Ok(())
    }

    /// Starts a fold in the background when turns have left the context.
    pub(super) fn start_summary(&mut self) {
        let Some(s) = self.summaries.as_mut() else { return };
        if s.running {
            return;
        }
        let Some(job) = self.conv.summary_due() else { return };
        s.running = true;
        let (model, tx, wake) = (self.model.clone(), s.tx.clone(), self.background.clone());
        tokio::spawn(async move {
            let result = fold(model.as_ref(), &job).await;
            let _ = tx.send((job, result));
            wake.notify_one();
        });
    }

    /// The user edited the summary (or cleared it): it replaces the running one, keeps its
    /// reach into the record, and is committed as a new version. A fold in flight is then
    /// discarded, since it was built on the old text.
    pub fn edit_summary(&mut self, text: Option<String>) -> Result<(), StoreError> {
        let text = text.map(|t| t.trim().to_string()).filter(|t| !t.is_empty());
        let reach = self.conv.summarized_to();
        self.conv.set_summary_through(text.clone(), reach);
        let summary = Summary {
            text: text.unwrap_or_default(),
            through_seq: reach as i64 - 1,
            created_at: chrono::Utc::now(),
        };
        self.store.save_summary(&self.meta.id, &summary)
    }

    /// Waits for the fold in flight (if any) and applies it; then folds whatever is still
    /// due. For shutdown, export, and tests that need the summary settled.
    pub async fn settle_summary(&mut self) -> Result<(), StoreError> {
        for _ in 0..2 {
            let Some(s) = self.summaries.as_mut() else {
                return Ok(());
            };
            if !s.running {
                self.start_summary();
            }
            let Some(s) = self.summaries.as_mut() else {
                return Ok(());
            };
            if !s.running {
                return Ok(());
            }
            if let Some((job, result)) = s.done.recv().await {
                s.running = false;
                self.apply_summary(job, result)?;
            }
        }
        Ok(())
    }
}
