//! Cuts streamed reply text into sentences, so speech can start after the first one, or,
//! with [`SentenceSplitter::first_clause`], into a short first piece (a clause or a few
//! words) and then sentences: the first audio comes sooner and the rest keeps whole
//! sentences' prosody.

/// Words that end with a period without ending a sentence.
const ABBREVIATIONS: &[&str] = &[
    "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "vs", "etc", "e.g", "i.e", "approx", "no", "fig", "inc", "ltd",
    "co", "mt", "ave",
];

/// A sentence longer than this (in bytes) is cut at its last comma or semicolon, to keep the
/// first audio early when the model writes long sentences; one of twice this length with no
/// comma is cut at its last space (or anywhere, in scripts without spaces).
const LONG: usize = 220;

/// Characters that end a clause: where a long sentence may be cut.
const CLAUSE_ENDS: &[char] = &[',', ';', '，', '；', '、', '،'];

/// The largest character boundary of `s` at or below `i`.
fn floor_char_boundary(s: &str, i: usize) -> usize {
    if i >= s.len() {
        return s.len();
    }
    (0..=i).rev().find(|&k| s.is_char_boundary(k)).unwrap_or(0)
}

/// Characters after which the first piece may end (followed by a space, for the Latin
/// ones: "1,000" is no clause end), besides a sentence end.
const FIRST_CLAUSE_ENDS: &[char] = &[',', ';', ':', '—', '，', '；', '、', '،', '：'];

/// How many words the first piece holds at most, when no clause ends sooner.
pub const FIRST_WORDS: usize = 4;

/// Incremental sentence splitter over a token stream.
#[derive(Debug, Default)]
pub struct SentenceSplitter {
    buf: String,
    /// Until the first piece is out: it ends at a clause end or after this many words.
    first_words: Option<usize>,
}

impl SentenceSplitter {
    /// Whole sentences only.
    pub fn new() -> Self {
        Self::default()
    }

    /// The first piece ends at the first clause end or after [`FIRST_WORDS`] words,
    /// whichever comes first (or at a sentence end, if sooner); sentences after that.
    pub fn first_clause() -> Self {
        Self {
            buf: String::new(),
            first_words: Some(FIRST_WORDS),
        }
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
                self.first_words = None;
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

    /// Byte index just past the next piece in the buffer, if one is complete.
    fn boundary(&self) -> Option<usize> {
        let sentence = self.sentence_boundary();
        let Some(words) = self.first_words else {
            return sentence;
        };
        [sentence, self.first_piece_boundary(words)].into_iter().flatten().min()
    }

    /// The end of a first piece: just past a clause end followed by a space (any of the
    /// CJK ones as they are), or past the space after the `words`-th word.
    fn first_piece_boundary(&self, words: usize) -> Option<usize> {
        let b = &self.buf;
        let start = b.len() - b.trim_start().len();
        let mut seen = 0;
        let mut in_word = false;
        let mut prev: Option<char> = None;
        for (i, c) in b[start..].char_indices() {
            let i = i + start;
            if c.is_whitespace() {
                if prev.is_some_and(|p| FIRST_CLAUSE_ENDS.contains(&p)) {
                    return Some(i + c.len_utf8());
                }
                if in_word {
                    seen += 1;
                    in_word = false;
                    if seen >= words {
                        return Some(i + c.len_utf8());
                    }
                }
            } else {
                if matches!(c, '，' | '；' | '、' | '：') {
                    return Some(i + c.len_utf8());
                }
                in_word = true;
            }
            prev = Some(c);
        }
        None
    }

    /// Byte index just past the first complete sentence in the buffer, if any.
    fn sentence_boundary(&self) -> Option<usize> {
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
            // Byte offsets only at character boundaries: a reply in Chinese, Japanese or
            // Russian has multi-byte characters everywhere (see issue 9).
            let head = &b[..floor_char_boundary(b, LONG)];
            if let Some((p, c)) = head.char_indices().rev().find(|&(_, c)| CLAUSE_ENDS.contains(&c)) {
                return Some(p + c.len_utf8());
            }
            if b.len() > 2 * LONG {
                // No clause end at all: cut at the last space, or, in scripts written without
                // spaces, at a character boundary, so speech never waits for the whole reply.
                let cut = floor_char_boundary(b, 2 * LONG);
                let at = b[..cut]
                    .char_indices()
                    .rev()
                    .find(|&(_, c)| c.is_whitespace())
                    .map_or(cut, |(p, c)| p + c.len_utf8());
                return Some(at);
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

    fn split_with(mut s: SentenceSplitter, pieces: &[&str]) -> Vec<String> {
        let mut out = Vec::new();
        for p in pieces {
            out.extend(s.push(p));
        }
        out.extend(s.finish());
        out
    }

    fn split_stream(pieces: &[&str]) -> Vec<String> {
        split_with(SentenceSplitter::new(), pieces)
    }

    fn split_first_clause(pieces: &[&str]) -> Vec<String> {
        split_with(SentenceSplitter::first_clause(), pieces)
    }

    /// `text` cut at (the character boundaries nearest) `cuts`, as a stream arrives.
    fn pieces(text: &str, cuts: Vec<usize>) -> Vec<&str> {
        let mut bounds: Vec<usize> = cuts.into_iter().map(|c| floor_char_boundary(text, c)).collect();
        bounds.push(text.len());
        bounds.sort_unstable();
        let mut out = Vec::new();
        let mut from = 0;
        for b in bounds {
            out.push(&text[from..b]);
            from = b;
        }
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

    /// Issue 9: a long reply in a script of multi-byte characters with no sentence end
    /// sliced the buffer at byte 220, inside a character, and panicked `hark talk`.
    #[test]
    fn a_long_multibyte_reply_with_no_sentence_end_does_not_panic() {
        for text in [
            "这是一个很长的句子没有任何标点符号".repeat(40),
            "これは句読点のない長い文です".repeat(40),
            "это очень длинное предложение без точки ".repeat(20),
            "这是一个很长的句子，有逗号但是没有句号".repeat(30),
        ] {
            let pieces: Vec<String> = text.chars().map(String::from).collect();
            let refs: Vec<&str> = pieces.iter().map(String::as_str).collect();
            let out = split_stream(&refs);
            assert!(out.len() > 1, "a long reply is cut so speech can start: {out:?}");
            assert_eq!(squash(&out.concat()), squash(&text));
        }
    }

    fn squash(s: &str) -> String {
        s.chars().filter(|c| !c.is_whitespace()).collect()
    }

    proptest::proptest! {
        /// Any UTF-8, streamed in any pieces: no panic, no empty sentence, and the sentences
        /// join back to the input (up to the whitespace between them).
        #[test]
        fn any_text_in_any_pieces_splits_without_loss(
            text in "(?s:.){0,600}",
            cuts in proptest::collection::vec(0usize..600, 0..12),
        ) {
            let out = split_stream(&pieces(&text, cuts));
            proptest::prop_assert!(out.iter().all(|s| !s.trim().is_empty()));
            proptest::prop_assert_eq!(squash(&out.concat()), squash(&text));
        }
    }

    #[test]
    fn the_first_piece_ends_at_a_clause_or_after_a_few_words_then_sentences() {
        // A clause end first.
        assert_eq!(
            split_first_clause(&["Sure, your name is Sam. ", "You told me earlier, in fact. Bye"]),
            vec!["Sure,", "your name is Sam.", "You told me earlier, in fact.", "Bye"]
        );
        // Four words before any clause end.
        assert_eq!(
            split_first_clause(&["The capital of France is Paris, a city. It is big."]),
            vec!["The capital of France", "is Paris, a city.", "It is big."]
        );
        // A sentence end sooner than both.
        assert_eq!(
            split_first_clause(&["Yes. That is right, Sam."]),
            vec!["Yes.", "That is right, Sam."]
        );
        // "1,000" is no clause end; the piece is cut as soon as it is there, token by token.
        let mut s = SentenceSplitter::first_clause();
        assert!(s.push("About 1,000").is_empty());
        assert!(s.push(" people came").is_empty());
        assert_eq!(s.push(" today"), vec!["About 1,000 people came"]);
        // CJK: a clause mark ends the first piece without a space.
        assert_eq!(
            split_first_clause(&["好的，你的名字是山姆。谢谢。"]),
            vec!["好的，", "你的名字是山姆。", "谢谢。"]
        );
    }

    proptest::proptest! {
        /// The first-clause mode loses nothing either, for any text in any pieces.
        #[test]
        fn first_clause_mode_splits_without_loss(
            text in "(?s:.){0,300}",
            cuts in proptest::collection::vec(0usize..300, 0..8),
        ) {
            let out = split_first_clause(&pieces(&text, cuts));
            proptest::prop_assert!(out.iter().all(|s| !s.trim().is_empty()));
            proptest::prop_assert_eq!(squash(&out.concat()), squash(&text));
        }
    }

    #[test]
    fn very_long_sentences_are_cut_at_a_comma() {
        let long = format!("{}, and then it went on {}", "word ".repeat(40), "and on ".repeat(5));
        let out = split_stream(&[&long]);
        assert_eq!(out.len(), 2);
        assert!(out[0].ends_with(','));
    }
}
