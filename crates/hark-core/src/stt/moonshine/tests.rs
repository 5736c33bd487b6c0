use super::*;

/// The pieces of Moonshine's real `tokenizer.json` (useful-moonshine-onnx 20251121) for
/// the ids below, as its `model.vocab` lists them. The ids and the texts they decode to
/// come from the Hugging Face `tokenizers` library (0.23.3) on that file:
/// `Tokenizer.encode(text).ids` and `decode(ids, skip_special_tokens=True)`.
const VOCAB: &str = r#"{
  "version": "1.0",
  "added_tokens": [{"id": 32000, "content": "<<ST_0>>", "special": true}],
  "model": {
    "type": "BPE",
    "byte_fallback": true,
    "vocab": {
      "<unk>": 0, "<s>": 1, "</s>": 2, "<0x00>": 3,
      "▁What": 1724, "▁is": 338, "▁the": 278, "▁capital": 7483, "▁of": 310,
      "▁France": 3444, "?": 29973,
      "▁C": 315, "afé": 28059, "▁": 29871, "<0xF0>": 243, "<0x9F>": 162, "<0xA6>": 169,
      "<0x99>": 156, "▁na": 1055, "ï": 30085, "ve": 345,
      "▁It": 739, "▁costs": 21544, "3": 29941, ",": 29892, "5": 29945, "0": 29900, "▁€": 25540
    },
    "merges": ["▁ t", "e r"]
  }
}"#;

fn vocab() -> Vocabulary {
    Vocabulary::from_tokenizer_json(VOCAB).unwrap()
}

#[test]
fn token_ids_decode_as_the_tokenizer_decodes_them() {
    let v = vocab();
    // "What is the capital of France?" as Moonshine said it (the notes' espeak clip).
    assert_eq!(
        v.decode(&[1, 1724, 338, 278, 7483, 310, 3444, 29973, 2]),
        "What is the capital of France?"
    );
    // Byte fallback: the llama is four byte pieces of UTF-8; "▁" alone is a space.
    assert_eq!(
        v.decode(&[1, 315, 28059, 29871, 243, 162, 169, 156, 1055, 30085, 345]),
        "Café 🦙 naïve"
    );
    assert_eq!(
        v.decode(&[1, 739, 21544, 29871, 29941, 29892, 29945, 29900, 25540]),
        "It costs 3,50 €"
    );
    // Special ids are not text: <s>, </s>, <unk>, and the added tokens past the vocabulary.
    assert_eq!(v.decode(&[1, 1724, 32000, 338, 0, 2]), "What is");
    assert_eq!(v.decode(&[]), "");
    assert_eq!(v.decode(&[-5, 99_999]), "", "ids out of range are skipped");
}

/// The draft's last word (still being heard) is where its margin ends: the last token
/// that starts a word, with the pieces after it (the rest of the word, punctuation).
#[test]
fn the_last_word_begins_at_the_last_piece_that_starts_a_word() {
    let v = vocab();
    // "What is the capital of France?": "▁France" then "?".
    assert_eq!(v.last_word_start(&[1724, 338, 278, 7483, 310, 3444, 29973]), 5);
    // "It costs 3,50 €": "▁€" ends it; "▁" alone starts a word too.
    assert_eq!(
        v.last_word_start(&[739, 21544, 29871, 29941, 29892, 29945, 29900, 25540]),
        7
    );
    assert_eq!(v.last_word_start(&[739, 21544, 29871, 29941, 29892, 29945, 29900]), 2);
    // No piece that starts a word, an id out of range, nothing: from the start.
    assert_eq!(v.last_word_start(&[29973, 29892]), 0);
    assert_eq!(v.last_word_start(&[99_999, -1]), 0);
    assert_eq!(v.last_word_start(&[]), 0);
}

#[test]
fn a_broken_byte_run_becomes_a_replacement_character_not_a_panic() {
    let v = vocab();
    // The first two bytes of the llama's four, then a word. (The tokenizers library
    // writes one U+FFFD per byte piece here, "\u{fffd}\u{fffd} is"; a decoder never
    // stops mid-character in practice, and either way nothing is lost but a broken
    // character.)
    assert_eq!(v.decode(&[243, 162, 338]), "\u{fffd} is");
    assert_eq!(byte_piece("<0x0A>"), Some(b'\n'));
    assert_eq!(byte_piece("<0x+A>"), None);
    assert_eq!(byte_piece("<0x0AB>"), None);
}

/// Live words (issue 20): a draft token (the word on screen) is kept where the decoder
/// finds it about as likely as its own choice, within [`DRAFT_MARGIN`], so a word shown
/// does not flip between two readings as the phrase's audio grows; one clearly less
/// likely, or with no score to compare (NaN, an id out of range), gives way to the
/// decoder's choice; rows past the draft take the best.
#[test]
fn a_draft_token_about_as_likely_as_the_best_is_kept() {
    let m = DRAFT_MARGIN;
    #[rustfmt::skip]
    let rows = [
        0.0, 3.0, 3.0 - m / 2.0, // the draft's 2, a little behind: kept
        0.0, 3.0, 3.0 - m * 1.5, // the draft's 2, well behind: the best, 1
        f32::NAN, 1.0, 0.0, //      the draft's 0 has no score: 1
        0.0, 1.0, 0.0, //           the draft's 7 is no id of the row: 1
        0.0, 1.0, 0.0, //           nor is -1: 1
        5.0, 0.0, 4.9, //           past the draft: the best, 0
    ];
    assert_eq!(choose_rows(&rows, 3, &[2, 2, 0, 7, -1]), vec![2, 1, 1, 1, 1, 0]);
    // With no draft, the best of each row (a NaN never wins).
    assert_eq!(choose_rows(&rows, 3, &[]), vec![1, 1, 1, 1, 1, 0]);
}

#[test]
fn a_file_that_is_not_a_tokenizer_says_so() {
    let e = Vocabulary::from_tokenizer_json("{}").unwrap_err();
    assert!(e.contains("model.vocab"), "{e}");
    let e = Vocabulary::from_tokenizer_json(r#"{"model": {"vocab": {}}}"#).unwrap_err();
    assert!(e.contains("0 ids"), "{e}");
    let e = Vocabulary::from_tokenizer_json(r#"{"model": {"vocab": {"x": 4000000000}}}"#).unwrap_err();
    assert!(e.contains("ids"), "{e}");
}

#[test]
fn the_token_cap_follows_the_clip_with_a_floor() {
    assert_eq!(max_tokens(0), 8);
    assert_eq!(max_tokens(8_000), 8, "half a second: the floor");
    assert_eq!(max_tokens(16_000 * 2), 13);
    assert_eq!(max_tokens(16_000 * 8), 52);
}

#[test]
fn the_cache_names_follow_the_models_order() {
    let past = cache_names("past_key_values");
    assert_eq!(past.len(), 24);
    assert_eq!(past[0], "past_key_values.0.decoder.key");
    assert_eq!(past[1], "past_key_values.0.decoder.value");
    assert_eq!(past[2], "past_key_values.0.encoder.key");
    assert_eq!(past[23], "past_key_values.5.encoder.value");
    let present = cache_names("present");
    for (i, name) in present.iter().enumerate() {
        assert_eq!(is_self_attention(i), name.contains(".decoder."), "{name}");
    }
}

#[test]
fn a_missing_file_is_named_with_the_way_to_fetch_it() {
    let dir = tempfile::tempdir().unwrap();
    let files = MoonshineFiles {
        encoder: dir.path().join("moonshine-tiny-encoder.onnx"),
        decoder: dir.path().join("moonshine-tiny-decoder.onnx"),
        tokenizer: dir.path().join("moonshine-tiny-tokenizer.json"),
        runtime: dir.path().join("libonnxruntime.so"),
    };
    let Err(e) = MoonshineStt::new(files) else {
        panic!("no files, no engine")
    };
    assert_eq!(e.kind, ErrorKind::LocalEngine);
    assert!(
        e.message.contains("moonshine-tiny-encoder.onnx") && e.message.contains("hark models fetch moonshine-tiny"),
        "{e}"
    );
}

/// The real model and an espeak-ng clip of `text` (16 kHz).
fn model_and_clip(text: &str) -> (Moonshine, Vec<f32>) {
    use crate::models::{Manifest, ModelStore};
    assert!(
        std::env::var_os("HARK_MODELS_DIR").is_some(),
        "HARK_MODELS_DIR is not set: run the tests through scripts/test.sh"
    );
    let files = crate::assembly::Profile::default()
        .moonshine_files(&Manifest::load().unwrap(), &ModelStore::default_dir())
        .unwrap();
    let model = Moonshine::load(&files).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let wav = dir.path().join("clip.wav");
    let ok = std::process::Command::new("espeak-ng")
        .arg("-w")
        .arg(&wav)
        .arg(text)
        .status()
        .expect("espeak-ng (scripts/install-deps.sh installs it)");
    assert!(ok.success());
    (model, crate::audio::wav::read_16k_mono(&wav).unwrap())
}

/// Live words (issue 20): an interim decode reads the last decode's tokens as a draft in
/// one pass. The draft's words that the decoder agrees with are kept, and it goes on from
/// the first it does not: the words of a longer clip from the decode of its first part,
/// in fewer passes than a decode from nothing; a wrong draft costs passes, not words.
#[test]
#[ignore = "needs the Moonshine model (scripts/test.sh fetches it) and espeak-ng"]
fn a_decode_from_a_draft_keeps_what_the_decoder_agrees_with_and_goes_on_from_there() {
    let (model, clip) = model_and_clip("What time does the train to London leave tomorrow morning?");
    let whole = model.transcribe_from(&clip, &[], None).unwrap();
    assert!(whole.text.to_lowercase().contains("london"), "{whole:?}");
    assert_eq!(
        whole.passes,
        whole.tokens.len() + 1,
        "one pass a token, and one for </s>"
    );

    // Its own tokens: one pass.
    let again = model.transcribe_from(&clip, &whole.tokens, None).unwrap();
    assert_eq!((&again.tokens, again.passes), (&whole.tokens, 1));

    // The first part's tokens: a draft that stops short and ends in a word the rest of
    // the clip changes ("…London lead?", "leave" in the whole). The draft's last word must
    // be the decoder's own choice, so it goes on from there to the clip's end.
    let mut part = clip[..clip.len() * 3 / 5].to_vec();
    part.extend(std::iter::repeat_n(0.0, 3_200));
    let first = model.transcribe_from(&part, &[], None).unwrap();
    let from_first = model.transcribe_from(&clip, &first.tokens, None).unwrap();
    assert_eq!(from_first.text, whole.text);
    let shared = first
        .tokens
        .iter()
        .zip(&whole.tokens)
        .take_while(|(a, b)| a == b)
        .count();
    assert!(shared >= 3, "the first part's words begin the whole's: {first:?}");
    assert_eq!(
        from_first.passes,
        whole.passes - shared,
        "the tokens they share were read in one pass"
    );

    // A draft wrong from its third token on: other words, which the decoder must forget
    // (its cache is cut back to the tokens it agreed with).
    let mut wrong = whole.tokens[..2].to_vec();
    wrong.extend([338, 278, 7483, 310, 3444]); // " is the capital of France"
    let from_wrong = model.transcribe_from(&clip, &wrong, None).unwrap();
    assert_eq!(from_wrong.text, whole.text);
    assert_eq!(
        from_wrong.passes,
        whole.passes - 2,
        "the first two tokens were read at once"
    );
}
