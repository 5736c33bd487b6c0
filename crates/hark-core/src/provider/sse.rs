//! Server-sent events, parsed as a pure function over a byte buffer.
//!
//! Feed bytes as they arrive with [`SseParser::push`], then take events with
//! [`SseParser::next_event`] until it returns `Ok(None)`: "need more bytes" is a value, not
//! an error. Follows the WHATWG event-stream rules: `\n`, `\r\n` and `\r` line ends, `:`
//! comments, multi-line `data`, one optional space after the colon, a leading BOM.

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The `event:` field, if any (Anthropic names every event; OpenAI never does).
    pub event: Option<String>,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

/// The stream is not valid UTF-8 text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the event stream is not valid UTF-8 at byte {offset}")]
pub struct SseError {
    pub offset: usize,
}

/// Incremental SSE parser.
#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes received but not yet consumed as whole lines.
    buf: Vec<u8>,
    /// Bytes consumed so far, for error offsets.
    consumed: usize,
    /// Whether the first bytes were checked for a BOM.
    started: bool,
    /// The last chunk ended in `\r`: a `\n` starting the next chunk belongs to that line end.
    skip_lf: bool,
    /// The event being assembled.
    event: Option<String>,
    data: String,
    has_data: bool,
}

impl SseParser {
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends received bytes.
    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The next complete event, or `Ok(None)` when more bytes are needed.
    pub fn next_event(&mut self) -> Result<Option<SseEvent>, SseError> {
        if !self.started {
            if self.buf.len() < 3 && b"\xEF\xBB\xBF".starts_with(&self.buf) {
                return Ok(None);
            }
            if self.buf.starts_with(b"\xEF\xBB\xBF") {
                self.buf.drain(..3);
                self.consumed += 3;
            }
            self.started = true;
        }
        let mut pos = 0;
        let result = loop {
            if self.skip_lf {
                let Some(&b) = self.buf.get(pos) else {
                    break None;
                };
                if b == b'\n' {
                    pos += 1;
                }
                self.skip_lf = false;
            }
            let Some(rel) = self.buf[pos..].iter().position(|&b| b == b'\n' || b == b'\r') else {
                break None;
            };
            let end = pos + rel;
            let next = match (self.buf[end], self.buf.get(end + 1)) {
                (b'\r', Some(b'\n')) => end + 2,
                (b'\r', None) => {
                    // A `\n` may still come with the next chunk; skip it then.
                    self.skip_lf = true;
                    end + 1
                }
                _ => end + 1,
            };
            let line = std::str::from_utf8(&self.buf[pos..end])
                .map_err(|e| SseError {
                    offset: self.consumed + pos + e.valid_up_to(),
                })?
                .to_string();
            pos = next;
            if let Some(ev) = self.process_line(&line) {
                break Some(ev);
            }
        };
        self.buf.drain(..pos);
        self.consumed += pos;
        Ok(result)
    }

    fn process_line(&mut self, line: &str) -> Option<SseEvent> {
        if line.is_empty() {
            let event = self.event.take();
            if !self.has_data {
                return None;
            }
            self.has_data = false;
            return Some(SseEvent {
                event,
                data: std::mem::take(&mut self.data),
            });
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "event" => self.event = Some(value.to_string()),
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            _ => {} // id, retry and unknown fields do not matter to a one-shot request
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(p: &mut SseParser) -> Vec<SseEvent> {
        let mut v = Vec::new();
        while let Some(e) = p.next_event().unwrap() {
            v.push(e);
        }
        v
    }

    const STREAM: &[u8] = b"\xEF\xBB\xBFevent: message_start\r\ndata: {\"a\":1}\r\n\r\n: ping comment\n\nevent: delta\ndata: line1\ndata:line2\n\ndata: [DONE]\r\r";

    fn expected() -> Vec<SseEvent> {
        vec![
            SseEvent {
                event: Some("message_start".into()),
                data: "{\"a\":1}".into(),
            },
            SseEvent {
                event: Some("delta".into()),
                data: "line1\nline2".into(),
            },
            SseEvent {
                event: None,
                data: "[DONE]".into(),
            },
        ]
    }

    #[test]
    fn parses_a_whole_buffer() {
        let mut p = SseParser::new();
        p.push(STREAM);
        assert_eq!(all(&mut p), expected());
    }

    #[test]
    fn gives_the_same_events_whatever_the_chunking() {
        for split in 0..=STREAM.len() {
            let mut p = SseParser::new();
            let mut got = Vec::new();
            p.push(&STREAM[..split]);
            got.extend(all(&mut p));
            p.push(&STREAM[split..]);
            got.extend(all(&mut p));
            assert_eq!(got, expected(), "split at {split}");
        }
        // Byte by byte.
        let mut p = SseParser::new();
        let mut got = Vec::new();
        for b in STREAM {
            p.push(&[*b]);
            got.extend(all(&mut p));
        }
        assert_eq!(got, expected());
    }

    #[test]
    fn incomplete_event_is_not_dispatched() {
        let mut p = SseParser::new();
        p.push(b"data: half");
        assert_eq!(p.next_event().unwrap(), None);
        p.push(b"\n");
        assert_eq!(p.next_event().unwrap(), None, "no blank line yet");
        p.push(b"\n");
        assert_eq!(p.next_event().unwrap().unwrap().data, "half");
    }

    #[test]
    fn invalid_utf8_is_an_error_with_its_offset() {
        let mut p = SseParser::new();
        p.push(b"data: ok\n\ndata: \xff\n\n");
        assert_eq!(p.next_event().unwrap().unwrap().data, "ok");
        assert_eq!(p.next_event().unwrap_err(), SseError { offset: 16 });
    }
}
