//! Import (rule 13): Hark's own export, Deepgram Voice Agent `agent.context.messages`,
//! plain OpenAI or Anthropic message arrays, and JSON Lines of conversations (OpenAI's chat
//! fine-tuning format: a `{"messages": [...]}` on each line, each a conversation of its own).
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
    /// JSON Lines: a conversation (`{"messages": [...]}`, read as [`ImportFormat::ChatMessages`])
    /// on each line, as OpenAI's chat fine-tuning files hold them; each a session of its own.
    ChatLines,
}

/// What an import file held: its format and its conversations, each a new session (one,
/// but for [`ImportFormat::ChatLines`]).
#[derive(Debug, Clone)]
pub struct Imported {
    pub format: ImportFormat,
    pub sessions: Vec<StoredSession>,
}

impl Imported {
    /// Every message of every conversation.
    pub fn messages(&self) -> usize {
        self.sessions.iter().map(|s| s.messages.len()).sum()
    }
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
    /// A JSON Lines file with a line that is no conversation (a dataset of another kind:
    /// texts to classify, embedding requests, eval cases).
    #[error(
        "line {line} is not a conversation ({found}): Hark imports JSON Lines files that hold a \
         conversation on each line, a \"messages\" list as in OpenAI's chat fine-tuning files"
    )]
    NotConversation { line: usize, found: String },
    #[error("the file holds {count} conversations; Hark imports up to {limit} from one file, so split it")]
    TooMany { count: usize, limit: usize },
}

/// The most conversations Hark takes from one file: each becomes a conversation in the
/// sidebar, and a file of more is a dataset, not someone's conversations.
pub const MAX_CONVERSATIONS: usize = 1_000;

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

/// Parses an import file into its conversations, each a new session (fresh ids, never an
/// existing one's): one, or one per line of a JSON Lines file ([`ImportFormat::ChatLines`]).
/// A file of several JSON values one after another is read as JSON Lines, however its
/// values are laid out; one line that is not a conversation refuses the whole file.
pub fn parse_file(text: &str) -> Result<Imported, ImportError> {
    let cleaned = prepared(text)?;
    let mut values: Vec<(usize, Value)> = Vec::new();
    let mut stream = serde_json::Deserializer::from_str(&cleaned).into_iter::<Value>();
    // The line where the next value starts (after the whitespace before it), counted on
    // from where the last one started.
    let (mut counted, mut line) = (0, 1);
    loop {
        let from = stream.byte_offset();
        let start = from + (cleaned[from..].len() - cleaned[from..].trim_start().len());
        line += cleaned[counted..start].matches('\n').count();
        counted = start;
        match stream.next() {
            Some(Ok(v)) => values.push((line, v)),
            // One value or none: the single-conversation reader says what is wrong.
            Some(Err(_)) | None if values.len() <= 1 => break,
            None => break,
            Some(Err(e)) => return Err(syntax(&e)),
        }
    }
    if values.len() <= 1 {
        let (format, session) = parse(text)?;
        return Ok(Imported {
            format,
            sessions: vec![session],
        });
    }
    // A dataset of another kind is said to be so, however long.
    conversation_line(values[0].0, &values[0].1)?;
    if values.len() > MAX_CONVERSATIONS {
        return Err(ImportError::TooMany {
            count: values.len(),
            limit: MAX_CONVERSATIONS,
        });
    }
    let sessions = values
        .iter()
        .map(|(line, value)| conversation_line(*line, value))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Imported {
        format: ImportFormat::ChatLines,
        sessions,
    })
}

/// One line of a JSON Lines file: a conversation, `{"messages": [...]}` (with the line's
/// other keys, `tools` and `parallel_tool_calls` of a fine-tuning file, not Hark's to keep).
/// A problem in it is named with its line.
fn conversation_line(line: usize, value: &Value) -> Result<StoredSession, ImportError> {
    let on_line = |e: ImportError| match e {
        ImportError::Invalid { path, problem } => invalid(format!("line {line}: {path}"), problem),
        ImportError::Empty => invalid(format!("line {line}"), "holds no messages"),
        other => other,
    };
    let msgs = match value {
        Value::Object(o) if o.get("messages").is_some_and(Value::is_array) => &o["messages"],
        Value::Object(o) => {
            let keys: Vec<&str> = o.keys().map(String::as_str).take(6).collect();
            return Err(ImportError::NotConversation {
                line,
                found: format!("an object with keys {keys:?}"),
            });
        }
        other => {
            return Err(ImportError::NotConversation {
                line,
                found: type_name(other).to_string(),
            })
        }
    };
    let mut session = parse_chat(msgs, value.get("system"), "messages").map_err(on_line)?;
    if session.messages.is_empty() {
        return Err(on_line(ImportError::Empty));
    }
    check_record(&session).map_err(on_line)?;
    session.meta.title = session
        .messages
        .iter()
        .find(|m| m.is_user())
        .map(|m| title_of(m.text()));
    Ok(session)
}

/// Parses an import file of one conversation into a new session (fresh session id, never
/// an existing one). [`parse_file`] reads files of several as well.
pub fn parse(text: &str) -> Result<(ImportFormat, StoredSession), ImportError> {
    let cleaned = prepared(text)?;
    let value: Value = serde_json::from_str(&cleaned).map_err(|e| syntax(&e))?;
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

/// An import file's text as it is parsed: refused over [`MAX_BYTES`], without a byte-order
/// mark (editors on Windows save JSON with one; it is not part of the text) or comments.
fn prepared(text: &str) -> Result<String, ImportError> {
    if text.len() as u64 > MAX_BYTES {
        return Err(ImportError::TooLarge {
            size: text.len() as u64,
            limit: MAX_BYTES,
        });
    }
    Ok(strip_json_comments(text.strip_prefix('\u{feff}').unwrap_or(text)))
}

/// A JSON syntax error, with its line and column.
fn syntax(e: &serde_json::Error) -> ImportError {
    ImportError::Syntax {
        line: e.line(),
        column: e.column(),
        message: e.to_string().split(" at line").next().unwrap_or_default().to_string(),
    }
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
