//! Cuts streamed reply text into sentences, so speech can start after the first one.

/// Words that end with a period without ending a sentence.
const ABBREVIATIONS: &[&str] = &[
    "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "vs", "etc", "e.g", "i.e", "approx", "no", "fig", "inc", "ltd",
    "co", "mt", "ave",
];

/// A sentence longer than this is cut at its last comma or semicolon, to keep the first
/// audio early when the model writes long sentences.
const LONG: usize = 220;

/// Incremental sentence splitter over a token stream.
#[derive(Debug, Default)]
pub struct SentenceSplitter {
    buf: String,
}

impl SentenceSplitter {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds streamed text; returns the sentences it completed.
    pub fn push(&mut self, delta: &str) -> Vec<String> {
        self.buf.push_str(delta);
        let mut out = Vec::new();
        while let Some(end) = self.boundary() {
            let sentence: String = self.buf.drain(..end).collect();
            let sentence = sentence.trim();
            if !sentence.is_empty() {
                out.push(sentence.to_string());
            }
        }
        out
    }

    /// The end of the stream: whatever is left is the last sentence.
    pub fn finish(&mut self) -> Option<String> {
        let rest = std::mem::take(&mut self.buf);
        let rest = rest.trim();
        (!rest.is_empty()).then(|| rest.to_string())
    }

    /// Byte index just past the first complete sentence in the buffer, if any.
    fn boundary(&self) -> Option<usize> {
        let b = &self.buf;
        let chars: Vec<(usize, char)> = b.char_indices().collect();
        for (k, &(i, c)) in chars.iter().enumerate() {
            if c == '\n' {
                return Some(i + 1);
            }
            let terminal = matches!(c, '.' | '!' | '?' | '…' | '。' | '！' | '？');
            if !terminal {
                continue;
            }
            // Closing quotes and brackets stay with their sentence.
            let mut j = k + 1;
            while j < chars.len() && matches!(chars[j].1, '"' | '\'' | ')' | ']' | '”' | '’' | '.' | '!' | '?') {
                j += 1;
            }
            let Some(&(next_i, next)) = chars.get(j) else {
                return None; // the stream may continue the sentence ("3." → "3.5")
            };
            if matches!(c, '。' | '！' | '？') || next.is_whitespace() {
                if c == '.' && self.is_abbreviation(i) {
                    continue;
                }
                return Some(next_i);
            }
        }
        if b.len() > LONG {
            if let Some(p) = b[..LONG].rfind([',', ';']) {
                return Some(p + 1);
            }
        }
        None
    }

    /// Whether the period at byte `dot` ends an abbreviation or an initial ("J.").
    fn is_abbreviation(&self, dot: usize) -> bool {
        let before = &self.buf[..dot];
        let word = before
            .rsplit(|c: char| c.is_whitespace() || c == '(')
            .next()
            .unwrap_or_default();
        let lower = word.to_lowercase();
        (word.chars().count() == 1 && word.chars().all(char::is_uppercase)) || ABBREVIATIONS.contains(&lower.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split_stream(pieces: &[&str]) -> Vec<String> {
        let mut s = SentenceSplitter::new();
        let mut out = Vec::new();
        for p in pieces {
            out.extend(s.push(p));
        }
        out.extend(s.finish());
        out
    }

    #[test]
    fn sentences_come_out_as_soon_as_they_end() {
        let mut s = SentenceSplitter::new();
        assert!(s.push("Hello").is_empty());
        assert!(s.push(" there.").is_empty(), "a period alone may be a decimal point");
        assert_eq!(s.push(" How"), vec!["Hello there."]);
        assert_eq!(s.push(" are you? Fine"), vec!["How are you?"]);
        assert_eq!(s.finish().as_deref(), Some("Fine"));
        assert_eq!(s.finish(), None);
    }

    #[test]
    fn the_same_sentences_whatever_the_token_boundaries() {
        let text =
            "Dr. Smith paid $3.50 for tea. \"Really?\" she asked. Yes! See J. R. R. Tolkien, e.g. his books.\nDone";
        let expected = vec![
            "Dr. Smith paid $3.50 for tea.",
            "\"Really?\"",
            "she asked.",
            "Yes!",
            "See J. R. R. Tolkien, e.g. his books.",
            "Done",
        ];
        let chars: Vec<String> = text.chars().map(|c| c.to_string()).collect();
        let pieces: Vec<&str> = chars.iter().map(String::as_str).collect();
        assert_eq!(split_stream(&pieces), expected);
        assert_eq!(split_stream(&[text]), expected);
    }

    #[test]
    fn very_long_sentences_are_cut_at_a_comma() {
        let long = format!("{}, and then it went on {}", "word ".repeat(40), "and on ".repeat(5));
        let out = split_stream(&[&long]);
        assert_eq!(out.len(), 2);
        assert!(out[0].ends_with(','));
    }
}
