//! Summarisation (rule 11): turns that leave the context are folded into a running summary
//! by a model call that gets the prior summary and the dropped messages. It runs in the
//! background after a turn and never delays one; a result that arrives after the context
//! changed (reset, edited summary) is discarded by `Conversation::apply_summary`.

use crate::conversation::{MessageKind, Prompt, PromptMessage, SummaryJob};
use crate::provider::{ChatModel, ErrorKind, ProviderError};

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
