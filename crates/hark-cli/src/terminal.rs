//! Text from a model or a transcriber, made safe to print on a terminal.
//!
//! A reply can contain escape sequences (by accident, or because a prompt injection asked
//! for them) that recolour, retitle or rewrite the user's terminal. Plain output strips them
//! (issue 9); `--json` output is JSON-escaped and needs nothing.

use std::borrow::Cow;

/// `text` without terminal control: escape sequences (CSI `ESC [ … final`, OSC `ESC ] …
/// BEL|ESC \`, and two-byte `ESC x`) are removed whole, and every other control character
/// but newline and tab is dropped. Without its ESC no sequence can act, so a sequence cut
/// between two streamed pieces is harmless too.
pub fn printable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(|c| c.is_control() && c != '\n' && c != '\t') {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.next() {
                // CSI: parameters and intermediates up to a final byte in @..~
                Some('[') => {
                    for n in chars.by_ref() {
                        if ('@'..='~').contains(&n) {
                            break;
                        }
                    }
                }
                // OSC (and DCS, PM, APC strings): up to BEL or ST (ESC \)
                Some(']' | 'P' | '^' | '_') => {
                    while let Some(n) = chars.next() {
                        if n == '\u{7}' || (n == '\u{1b}' && chars.next_if_eq(&'\\').is_some()) {
                            break;
                        }
                    }
                }
                _ => {}
            },
            '\n' | '\t' => out.push(c),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 9: model text printed as is could drive the terminal.
    #[test]
    fn terminal_control_sequences_are_stripped_from_model_text() {
        assert_eq!(printable("plain text\nline two\tok"), "plain text\nline two\tok");
        assert_eq!(printable("\u{1b}[31mred\u{1b}[0m text"), "red text");
        assert_eq!(printable("\u{1b}]0;pwned title\u{7}hello"), "hello");
        assert_eq!(printable("\u{1b}]8;;http://evil\u{1b}\\link\u{1b}]8;;\u{1b}\\"), "link");
        assert_eq!(
            printable("bell\u{7} back\u{8}space\r carriage"),
            "bell backspace carriage"
        );
        assert_eq!(
            printable("c1 \u{9b}31m csi"),
            "c1 31m csi",
            "an 8-bit CSI loses its introducer"
        );
        assert_eq!(printable("cut \u{1b}"), "cut ");
        assert_eq!(printable("Ünïcödé ✓ 日本語"), "Ünïcödé ✓ 日本語");
    }
}
