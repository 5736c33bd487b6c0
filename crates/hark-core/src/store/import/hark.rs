//! Hark's own export (`"format": "hark.conversation"`), read back message by message so an
//! error names the message.

use serde_json::Value;

use super::{at, invalid, show, ImportError};
use crate::conversation::{new_id, Message};
use crate::store::export::{Export, FORMAT, VERSION};
use crate::store::StoredSession;

pub(super) fn parse_hark(value: &Value) -> Result<StoredSession, ImportError> {
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
