//! Import (rule 13): Hark's own export, Deepgram Voice Agent `agent.context.messages`,
//! and plain OpenAI or Anthropic message arrays.
//!
//! Parsing is pure: it builds a new [`StoredSession`] or fails with an [`ImportError`] that
//! names the problem and where it is. Imported messages without timestamps of their own are
//! stamped with the import time. Nothing is written until the whole file is understood,
//! and then in one transaction (`Store::insert_session`), so a bad file changes nothing.

use serde_json::Value;

use super::export::{Export, FORMAT, VERSION};
use super::{title_of, SessionMeta, StoredSession};
use crate::conversation::{
    new_id, AssistantMessage, HistorySettings, Message, MessageKind, ToolCall, ToolResult, ToolState,
};

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

// ---- Hark --------------------------------------------------------------------------------

fn parse_hark(value: &Value) -> Result<StoredSession, ImportError> {
    let format = value["format"].as_str().unwrap_or_default();
    if format != FORMAT {
        return Err(ImportError::UnknownFormat(format!(
            "format is {format:?}, not {FORMAT:?}"
        )));
    }
    let version = value["version"]
        .as_u64()
        .ok_or_else(|| invalid("version", "missing or not a number"))?;
    if version > VERSION as u64 || version == 0 {
        return Err(ImportError::UnsupportedVersion {
            found: version,
            supported: VERSION,
        });
    }
    // Messages one by one, so an error names the message.
    let raw = value["messages"]
        .as_array()
        .ok_or_else(|| invalid("messages", "missing or not a list"))?;
    let mut messages = Vec::with_capacity(raw.len());
    for (i, m) in raw.iter().enumerate() {
        let msg: Message = serde_json::from_value(m.clone()).map_err(|e| invalid(at("messages", i), e.to_string()))?;
        messages.push(msg);
    }
    let mut stripped = value.clone();
    stripped["messages"] = Value::Array(Vec::new());
    if let Some(s) = value.get("summary").filter(|s| !s.is_null()) {
        let through = s.get("through_seq").and_then(Value::as_i64);
        match through {
            Some(t) if (-1..messages.len() as i64).contains(&t) => {}
            _ => {
                return Err(invalid(
                    "summary.through_seq",
                    format!(
                        "must be the position of a message of this file (-1 to {}), found {}",
                        messages.len() as i64 - 1,
                        show(s.get("through_seq"))
                    ),
                ))
            }
        }
    }
    let export: Export = serde_json::from_value(stripped).map_err(|e| invalid("session", e.to_string()))?;
    let mut meta = export.session;
    meta.id = new_id(); // an import is a new session; the original is never overwritten
    Ok(StoredSession {
        meta,
        summary: export.summary,
        messages,
    })
}

// ---- Deepgram ----------------------------------------------------------------------------

fn parse_deepgram(list: &Value, base: &str) -> Result<StoredSession, ImportError> {
    let items = list.as_array().ok_or_else(|| invalid(base, "is not a list"))?;
    let mut session = new_session(String::new());
    let mut call_ids = std::collections::HashSet::new();
    for (i, item) in items.iter().enumerate() {
        let path = at(base, i);
        let ty = item.get("type").and_then(Value::as_str);
        if ty != Some("History") {
            return Err(invalid(
                &path,
                format!("type must be \"History\", found {}", show(item.get("type"))),
            ));
        }
        if let Some(calls) = item.get("function_calls") {
            let calls = calls
                .as_array()
                .ok_or_else(|| invalid(format!("{path}.function_calls"), "is not a list"))?;
            let mut tool_calls = Vec::new();
            let mut results = Vec::new();
            for (j, c) in calls.iter().enumerate() {
                let cpath = format!("{path}.function_calls[{j}]");
                let field = |name: &str| -> Result<String, ImportError> {
                    c.get(name)
                        .and_then(Value::as_str)
                        .map(str::to_string)
                        .ok_or_else(|| invalid(format!("{cpath}.{name}"), "missing or not a string"))
                };
                let id = field("id")?;
                if !call_ids.insert(id.clone()) {
                    return Err(invalid(
                        format!("{cpath}.id"),
                        format!("{id:?} was used by an earlier function call: a second result for one call"),
                    ));
                }
                let name = field("name")?;
                let arguments = field("arguments")?;
                let response = field("response")?;
                let client_side = c.get("client_side").and_then(Value::as_bool).unwrap_or(true);
                results.push(ToolResult {
                    call_id: id.clone(),
                    name: name.clone(),
                    state: ToolState::Done,
                    content: response,
                });
                tool_calls.push(ToolCall {
                    id,
                    name,
                    arguments,
                    client_side,
                });
            }
            session
                .messages
                .push(Message::new(MessageKind::Assistant(AssistantMessage {
                    tool_calls,
                    ..Default::default()
                })));
            session
                .messages
                .extend(results.into_iter().map(|r| Message::new(MessageKind::ToolResult(r))));
            continue;
        }
        let content = item
            .get("content")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid(format!("{path}.content"), "missing or not a string"))?;
        match item.get("role").and_then(Value::as_str) {
            Some("user") => session.messages.push(Message::new(MessageKind::User {
                text: content.to_string(),
            })),
            Some("assistant") => session
                .messages
                .push(Message::new(MessageKind::Assistant(AssistantMessage {
                    generated: content.to_string(),
                    ..Default::default()
                }))),
            other => {
                return Err(invalid(
                    format!("{path}.role"),
                    format!("must be \"user\" or \"assistant\", found {}", show_str(other)),
                ))
            }
        }
    }
    Ok(session)
}

fn show(v: Option<&Value>) -> String {
    v.map(|v| v.to_string()).unwrap_or_else(|| "nothing".to_string())
}

fn show_str(v: Option<&str>) -> String {
    v.map(|s| format!("{s:?}")).unwrap_or_else(|| "nothing".to_string())
}

// ---- OpenAI / Anthropic ------------------------------------------------------------------

/// Text of a `content` that is a string, or a list of blocks of which the text ones count.
fn content_text(content: &Value, path: &str) -> Result<String, ImportError> {
    match content {
        Value::String(s) => Ok(s.clone()),
        Value::Null => Ok(String::new()),
        Value::Array(blocks) => {
            let mut parts = Vec::new();
            for (k, b) in blocks.iter().enumerate() {
                match b.get("type").and_then(Value::as_str) {
                    Some("text") | Some("input_text") | Some("output_text") => parts.push(
                        b.get("text")
                            .and_then(Value::as_str)
                            .ok_or_else(|| invalid(format!("{path}[{k}].text"), "missing or not a string"))?
                            .to_string(),
                    ),
                    Some("image") | Some("image_url") | Some("input_image") => parts.push("[image]".to_string()),
                    Some("tool_use") | Some("tool_result") | Some("thinking") | Some("redacted_thinking") => {}
                    other => {
                        return Err(invalid(
                            format!("{path}[{k}].type"),
                            format!("unsupported content block {}", show_str(other)),
                        ))
                    }
                }
            }
            Ok(parts.join("\n"))
        }
        other => Err(invalid(
            path,
            format!("must be a string or a list of blocks, found {}", type_name(other)),
        )),
    }
}

fn parse_chat(list: &Value, system: Option<&Value>, base: &str) -> Result<StoredSession, ImportError> {
    let items = list.as_array().ok_or_else(|| invalid(base, "is not a list"))?;
    let mut system_prompt = match system {
        Some(s) => content_text(s, "system")?,
        None => String::new(),
    };
    let mut session = new_session(String::new());
    let msgs = &mut session.messages;
    for (i, item) in items.iter().enumerate() {
        let path = at(base, i);
        if !item.is_object() {
            return Err(invalid(
                &path,
                format!("must be a message object, found {}", type_name(item)),
            ));
        }
        let role = item.get("role").and_then(Value::as_str);
        let content = item.get("content").unwrap_or(&Value::Null);
        let cpath = format!("{path}.content");
        match role {
            Some("system") | Some("developer") => {
                let text = content_text(content, &cpath)?;
                if msgs.is_empty() {
                    if !system_prompt.is_empty() {
                        system_prompt.push_str("\n\n");
                    }
                    system_prompt.push_str(&text);
                } else {
                    msgs.push(Message::new(MessageKind::Note { text }));
                }
            }
            Some("user") => {
                // Anthropic tool results arrive as blocks inside a user message.
                if let Some(blocks) = content.as_array() {
                    for (k, b) in blocks.iter().enumerate() {
                        if b.get("type").and_then(Value::as_str) == Some("tool_result") {
                            let id = b.get("tool_use_id").and_then(Value::as_str).ok_or_else(|| {
                                invalid(format!("{cpath}[{k}].tool_use_id"), "missing or not a string")
                            })?;
                            let text = content_text(
                                b.get("content").unwrap_or(&Value::Null),
                                &format!("{cpath}[{k}].content"),
                            )?;
                            let is_error = b.get("is_error").and_then(Value::as_bool).unwrap_or(false);
                            settle(msgs, id, text, is_error, &format!("{cpath}[{k}]"))?;
                        }
                    }
                }
                let text = content_text(content, &cpath)?;
                let only_tool_results = content.as_array().is_some_and(|b| {
                    b.iter()
                        .all(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
                });
                if text.trim().is_empty() {
                    if only_tool_results {
                        continue;
                    }
                    return Err(invalid(&cpath, "a user message has no text"));
                }
                msgs.push(Message::new(MessageKind::User { text }));
            }
            Some("assistant") => {
                let text = content_text(content, &cpath)?;
                let mut calls = Vec::new();
                // OpenAI: `tool_calls`.
                for (k, c) in item
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .enumerate()
                {
                    let tpath = format!("{path}.tool_calls[{k}]");
                    let id = c
                        .get("id")
                        .and_then(Value::as_str)
                        .ok_or_else(|| invalid(format!("{tpath}.id"), "missing"))?;
                    let f = c
                        .get("function")
                        .ok_or_else(|| invalid(format!("{tpath}.function"), "missing"))?;
                    let name = f
                        .get("name")
                        .and_then(Value::as_str)
                        .ok_or_else(|| invalid(format!("{tpath}.function.name"), "missing"))?;
                    let arguments = match f.get("arguments") {
                        Some(Value::String(s)) => s.clone(),
                        Some(v) => v.to_string(),
                        None => "{}".to_string(),
                    };
                    calls.push(ToolCall {
                        id: id.into(),
                        name: name.into(),
                        arguments,
                        client_side: true,
                    });
                }
                // Anthropic: `tool_use` blocks.
                for (k, b) in content.as_array().into_iter().flatten().enumerate() {
                    if b.get("type").and_then(Value::as_str) == Some("tool_use") {
                        let bpath = format!("{cpath}[{k}]");
                        let id = b
                            .get("id")
                            .and_then(Value::as_str)
                            .ok_or_else(|| invalid(format!("{bpath}.id"), "missing"))?;
                        let name = b
                            .get("name")
                            .and_then(Value::as_str)
                            .ok_or_else(|| invalid(format!("{bpath}.name"), "missing"))?;
                        let input = b.get("input").cloned().unwrap_or(Value::Object(Default::default()));
                        calls.push(ToolCall {
                            id: id.into(),
                            name: name.into(),
                            arguments: input.to_string(),
                            client_side: true,
                        });
                    }
                }
                let placeholders: Vec<ToolResult> = calls
                    .iter()
                    .map(|c| ToolResult {
                        call_id: c.id.clone(),
                        name: c.name.clone(),
                        state: ToolState::Error,
                        content: NO_RESULT.to_string(),
                    })
                    .collect();
                msgs.push(Message::new(MessageKind::Assistant(AssistantMessage {
                    generated: text,
                    tool_calls: calls,
                    ..Default::default()
                })));
                msgs.extend(
                    placeholders
                        .into_iter()
                        .map(|p| Message::new(MessageKind::ToolResult(p))),
                );
            }
            Some("tool") => {
                let id = item
                    .get("tool_call_id")
                    .and_then(Value::as_str)
                    .ok_or_else(|| invalid(format!("{path}.tool_call_id"), "missing or not a string"))?;
                let text = content_text(content, &cpath)?;
                settle(msgs, id, text, false, &path)?;
            }
            other => {
                return Err(invalid(
                    format!("{path}.role"),
                    format!(
                        "must be system, developer, user, assistant or tool; found {}",
                        show_str(other)
                    ),
                ))
            }
        }
    }
    session.meta.system_prompt = system_prompt;
    Ok(session)
}

/// The text of a placeholder for a call whose result the file has not given (yet).
const NO_RESULT: &str = "no result was recorded in the imported history";

/// Puts an imported tool result into its call's placeholder; a second result for the same
/// call is refused (which one would be true?).
fn settle(msgs: &mut [Message], call_id: &str, content: String, is_error: bool, path: &str) -> Result<(), ImportError> {
    let slot = msgs
        .iter_mut()
        .rev()
        .find_map(|m| match &mut m.kind {
            MessageKind::ToolResult(r) if r.call_id == call_id => Some(r),
            _ => None,
        })
        .ok_or_else(|| {
            invalid(
                path,
                format!("a tool result for call {call_id:?}, which no earlier assistant message made"),
            )
        })?;
    if !(slot.state == ToolState::Error && slot.content == NO_RESULT) {
        return Err(invalid(path, format!("a second result for tool call {call_id:?}")));
    }
    slot.state = if is_error { ToolState::Error } else { ToolState::Done };
    slot.content = content;
    Ok(())
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
