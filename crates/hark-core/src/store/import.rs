//! Import (rule 13): Hark's own export, Deepgram Voice Agent `agent.context.messages`,
//! and plain OpenAI or Anthropic message arrays.
//!
//! Parsing is pure: it builds a new [`StoredSession`] or fails with an [`ImportError`] that
//! names the problem and where it is. Imported messages without timestamps of their own are
//! stamped with the import time. Nothing is written until the whole file is understood,
//! and then in one transaction (`Store::insert_session`), so a bad file changes nothing.

use serde_json::Value;

use super::{title_of, SessionMeta, StoredSession};
use crate::conversation::{new_id, HistorySettings, MessageKind};

mod chat;
mod deepgram;
mod hark;

use chat::parse_chat;
use deepgram::parse_deepgram;
use hark::parse_hark;

/// Which format a file was read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImportFormat {
    Hark,
    Deepgram,
    /// OpenAI Chat Completions or Anthropic Messages arrays (one reader handles both).
    ChatMessages,
}

/// Why a file cannot be imported.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ImportError {
    #[error("the file is not valid JSON: {message} at line {line}, column {column}")]
    Syntax {
        line: usize,
        column: usize,
        message: String,
    },
    #[error(
        "unrecognised file: expected a Hark export, a Deepgram agent.context.messages list, \
         or an OpenAI/Anthropic messages array ({0})"
    )]
    UnknownFormat(String),
    #[error("this Hark export is version {found}; this Hark reads versions up to {supported}")]
    UnsupportedVersion { found: u64, supported: u32 },
    #[error("{path}: {problem}")]
    Invalid { path: String, problem: String },
    #[error("the file holds no messages")]
    Empty,
    #[error("the file is {size} bytes; Hark imports conversations of up to {limit} bytes")]
    TooLarge { size: u64, limit: u64 },
}

/// The largest file Hark imports: a conversation of 10,000 turns exports to about 9 MB, so
/// this leaves room for seven times that while a stray video or disk image is refused
/// before it is read into memory.
pub const MAX_BYTES: u64 = 64 * 1024 * 1024;

/// Reads an import file, refusing one over [`MAX_BYTES`] before reading it.
pub fn read_file(path: &std::path::Path) -> Result<String, std::io::Error> {
    use std::io::Read;
    let file = std::fs::File::open(path)?;
    let size = file.metadata()?.len();
    if size > MAX_BYTES {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            ImportError::TooLarge { size, limit: MAX_BYTES },
        ));
    }
    let mut text = String::new();
    // `take`: a file that grows while it is read still stops at the limit (+1 to notice).
    file.take(MAX_BYTES + 1).read_to_string(&mut text)?;
    if text.len() as u64 > MAX_BYTES {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            ImportError::TooLarge {
                size: text.len() as u64,
                limit: MAX_BYTES,
            },
        ));
    }
    Ok(text)
}

fn invalid(path: impl Into<String>, problem: impl Into<String>) -> ImportError {
    ImportError::Invalid {
        path: path.into(),
        problem: problem.into(),
    }
}

/// Parses an import file into a new session (fresh session id, never an existing one).
pub fn parse(text: &str) -> Result<(ImportFormat, StoredSession), ImportError> {
    if text.len() as u64 > MAX_BYTES {
        return Err(ImportError::TooLarge {
            size: text.len() as u64,
            limit: MAX_BYTES,
        });
    }
    // Editors on Windows save JSON with a byte-order mark; it is not part of the text.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let cleaned = strip_json_comments(text);
    let value: Value = serde_json::from_str(&cleaned).map_err(|e| ImportError::Syntax {
        line: e.line(),
        column: e.column(),
        message: e.to_string().split(" at line").next().unwrap_or_default().to_string(),
    })?;
    let (format, mut session) = match &value {
        Value::Object(o) if o.get("format").is_some() => (ImportFormat::Hark, parse_hark(&value)?),
        Value::Object(o) if o.get("agent").is_some() => {
            let msgs = value
                .pointer("/agent/context/messages")
                .ok_or_else(|| invalid("agent", "has no context.messages list"))?;
            (ImportFormat::Deepgram, parse_deepgram(msgs, "agent.context.messages")?)
        }
        Value::Object(o) if o.get("messages").is_some() => {
            let msgs = &value["messages"];
            if is_deepgram_list(msgs) {
                (ImportFormat::Deepgram, parse_deepgram(msgs, "messages")?)
            } else {
                (
                    ImportFormat::ChatMessages,
                    parse_chat(msgs, value.get("system"), "messages")?,
                )
            }
        }
        Value::Array(_) if is_deepgram_list(&value) => (ImportFormat::Deepgram, parse_deepgram(&value, "")?),
        Value::Array(_) => (ImportFormat::ChatMessages, parse_chat(&value, None, "")?),
        Value::Object(o) => {
            let keys: Vec<&str> = o.keys().map(String::as_str).take(6).collect();
            return Err(ImportError::UnknownFormat(format!(
                "found an object with keys {keys:?}"
            )));
        }
        other => return Err(ImportError::UnknownFormat(format!("found {}", type_name(other)))),
    };
    if session.messages.is_empty() {
        return Err(ImportError::Empty);
    }
    check_record(&session)?;
    if session.meta.title.is_none() {
        session.meta.title = session
            .messages
            .iter()
            .find(|m| m.is_user())
            .map(|m| title_of(m.text()));
    }
    Ok((format, session))
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn is_deepgram_list(v: &Value) -> bool {
    v.as_array().is_some_and(|a| {
        a.iter()
            .any(|m| m.get("type").and_then(Value::as_str) == Some("History"))
    })
}

fn new_session(system_prompt: String) -> StoredSession {
    StoredSession {
        meta: SessionMeta::new(new_id(), system_prompt, HistorySettings::default()),
        summary: None,
        messages: Vec::new(),
    }
}

fn at(base: &str, i: usize) -> String {
    if base.is_empty() {
        format!("[{i}]")
    } else {
        format!("{base}[{i}]")
    }
}

fn show(v: Option<&Value>) -> String {
    v.map(|v| v.to_string()).unwrap_or_else(|| "nothing".to_string())
}

fn show_str(v: Option<&str>) -> String {
    v.map(|s| format!("{s:?}")).unwrap_or_else(|| "nothing".to_string())
}

/// What every imported record must satisfy, whatever its format: message ids are unique,
/// call ids are unique, and every tool result answers exactly one earlier call.
fn check_record(session: &StoredSession) -> Result<(), ImportError> {
    use std::collections::HashMap;
    let mut ids: HashMap<&str, usize> = HashMap::new();
    let mut calls: HashMap<&str, (usize, bool)> = HashMap::new();
    for (i, m) in session.messages.iter().enumerate() {
        if let Some(first) = ids.insert(&m.id, i) {
            return Err(invalid(
                format!("messages[{i}].id"),
                format!("{:?} is also the id of messages[{first}]; ids must be unique", m.id),
            ));
        }
        match &m.kind {
            MessageKind::Assistant(a) => {
                for c in &a.tool_calls {
                    if calls.insert(&c.id, (i, false)).is_some() {
                        return Err(invalid(
                            format!("messages[{i}]"),
                            format!("the tool call id {:?} is used twice", c.id),
                        ));
                    }
                }
            }
            MessageKind::ToolResult(r) => match calls.get_mut(r.call_id.as_str()) {
                None => {
                    return Err(invalid(
                        format!("messages[{i}]"),
                        format!("a tool result for call {:?}, which no earlier message made", r.call_id),
                    ))
                }
                Some((_, answered)) if *answered => {
                    return Err(invalid(
                        format!("messages[{i}]"),
                        format!("a second result for tool call {:?}", r.call_id),
                    ))
                }
                Some((_, answered)) => *answered = true,
            },
            _ => {}
        }
    }
    Ok(())
}

/// Removes `//` and `/* */` comments outside strings, so documentation samples (JSON with
/// comments, like Deepgram's) import as they are. Positions of what remains are unchanged
/// (comments become spaces), so syntax errors still point at the right line and column.
pub fn strip_json_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            match c {
                '\\' => {
                    if let Some(n) = chars.next() {
                        out.push(n);
                    }
                }
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match (c, chars.peek()) {
            ('"', _) => {
                in_string = true;
                out.push(c);
            }
            ('/', Some('/')) => {
                for n in chars.by_ref() {
                    if n == '\n' {
                        out.push('\n');
                        break;
                    }
                    out.push(' ');
                }
            }
            ('/', Some('*')) => {
                chars.next();
                out.push_str("  ");
                let mut prev = ' ';
                for n in chars.by_ref() {
                    out.push(if n == '\n' { '\n' } else { ' ' });
                    if prev == '*' && n == '/' {
                        break;
                    }
                    prev = n;
                }
            }
            _ => out.push(c),
        }
    }
    out
}
