//! The sentence splitter on any UTF-8 streamed in pieces the first byte chooses, whole
//! sentences or first clause first (the first byte's high bit): no panic, no empty
//! sentence, nothing lost but the whitespace between sentences.
#![no_main]

use hark_core::session::sentences::SentenceSplitter;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&step, body)) = data.split_first() else { return };
    let Ok(text) = std::str::from_utf8(body) else { return };
    let mut s = if step & 0x80 != 0 { SentenceSplitter::first_clause() } else { SentenceSplitter::new() };
    let step = (step as usize % 13) + 1;
    let mut out = Vec::new();
    let mut piece = String::new();
    for (i, c) in text.chars().enumerate() {
        piece.push(c);
        if i % step == 0 {
            out.extend(s.push(&piece));
            piece.clear();
        }
    }
    out.extend(s.push(&piece));
    out.extend(s.finish());
    assert!(out.iter().all(|x| !x.trim().is_empty()));
    let squash = |t: &str| t.chars().filter(|c| !c.is_whitespace()).collect::<String>();
    assert_eq!(squash(&out.concat()), squash(text));
});
