//! Moonshine tiny (English): offline speech-to-text through ONNX Runtime, with live words.
//!
//! Four files, manifest entries tied by `requires`: the encoder and the merged decoder
//! (`moonshine-tiny-encoder`, `moonshine-tiny`: the int8 ONNX models of the npm package
//! `@moonshine-ai/moonshine-js` 0.1.29, MIT), the tokenizer (`moonshine-tiny-tokenizer`:
//! `tokenizer.json` of the PyPI package `useful-moonshine-onnx`, MIT) and ONNX Runtime's
//! library (`onnxruntime`, shared with the natural voice; see `crate::onnx`).
//!
//! The encoder takes the raw 16 kHz samples and its cost grows with the clip (whisper
//! always encodes 30 s), so decoding the phrase being spoken again every few hundred
//! milliseconds is cheap: [`Transcriber::live`] does that through `stt::segment`, which
//! commits a phrase at each pause so the release decodes only the last one.
//!
//! One decode ([`Moonshine::transcribe`]), as the reference code does it: the encoder
//! once; then the decoder one token at a time from `<s>`, greedy, until `</s>` or a cap
//! of [`TOKENS_PER_SECOND`] per second of audio. The first step computes the
//! cross-attention keys and values from the encoder's output and later steps return
//! them empty, so the first step's are kept; each step's self-attention cache is fed to
//! the next. The ids become text by the tokenizer's vocabulary alone ([`detokenize`]): no
//! tokenizer crate, as nothing is ever encoded.
//!
//! A rough interim decode (`segment::Job::may_be_rough`) reads the last decode's tokens of
//! the same phrase as a draft, all in the first step, and goes on one token at a time
//! from the first the decoder disagrees with ([`Moonshine::transcribe_from`]): a long
//! phrase's interim decode then costs a step or a few instead of one per token. A draft
//! token before the draft's last word that is about as likely as the decoder's own choice
//! is kept ([`DRAFT_MARGIN`]), so a word shown does not flip back and forth between two
//! readings.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use ort::session::{Session, SessionInputValue};
use ort::value::{DynValue, Tensor};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::segment::{self, Decoder, Job};
use super::{LiveTranscription, Transcriber};
use crate::idle::IdleSlot;
use crate::provider::{ErrorKind, ProviderError};

const PROVIDER: &str = "moonshine";

/// The decoder's manifest entry: the one to fetch (it requires the others).
pub const MODEL_ID: &str = "moonshine-tiny";
/// The encoder's manifest entry.
pub const ENCODER_ID: &str = "moonshine-tiny-encoder";
/// The tokenizer's manifest entry.
pub const TOKENIZER_ID: &str = "moonshine-tiny-tokenizer";

/// Decoder layers, attention heads and head size of the tiny model (hidden size 288).
const LAYERS: usize = 6;
const HEADS: usize = 8;
const HEAD_DIM: usize = 36;

/// `<s>`, the first token of every decode, and `</s>`, the last.
const START: i64 = 1;
const END: i64 = 2;
/// Ids below this are `<unk>`, `<s>` and `</s>`: never text.
const FIRST_TEXT_ID: i64 = 3;

/// The shortest clip the encoder makes a frame of (about 56 ms); shorter ones hold no word.
pub const MIN_SAMPLES: usize = 900;

/// Most tokens a decode may make per second of audio. The reference allows 6, which cut
/// a half-second interim clip off mid-sentence ("What is this" for "What is the capital
/// of France?"); speech runs at 2-5 tokens a second.
pub const TOKENS_PER_SECOND: f64 = 6.5;
/// Most tokens of the shortest clips: a word or two can take several.
const MIN_TOKEN_CAP: usize = 8;

/// Threads per session. One each: a decoder step is a few small products (hidden size
/// 288) whose cost is mostly per-operator overhead a second thread does not share, and
/// the encoder gets at most a segment (8 s, about 100 ms). On a 2-core laptop the other
/// core stays with the local chat model, which evaluates the request while the user
/// speaks. Measured with one thread on the 2-core test machine: 12-15 ms a decoder step,
/// about 12 ms per second of audio for the encoder.
const THREADS: usize = 1;

/// Where Moonshine's files are.
#[derive(Debug, Clone, PartialEq)]
pub struct MoonshineFiles {
    pub encoder: PathBuf,
    pub decoder: PathBuf,
    pub tokenizer: PathBuf,
    /// ONNX Runtime's library.
    pub runtime: PathBuf,
}

fn err(kind: ErrorKind, m: impl Into<String>) -> ProviderError {
    ProviderError::new(PROVIDER, kind, m)
}

fn engine_err(m: impl Into<String>) -> ProviderError {
    err(ErrorKind::LocalEngine, m)
}

fn run_err(e: ort::Error) -> ProviderError {
    engine_err(format!("Moonshine failed: {e}"))
}

fn stopped() -> ProviderError {
    err(ErrorKind::Cancelled, "the transcription was stopped")
}

/// A poisoned lock here only means a panic elsewhere mid-decode; the sessions hold no
/// state between runs, so they are as good as before.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Most tokens a decode of `samples` (16 kHz) may make.
pub fn max_tokens(samples: usize) -> usize {
    let secs = samples as f64 / f64::from(crate::audio::resample::STT_RATE);
    ((secs * TOKENS_PER_SECOND).ceil() as usize).max(MIN_TOKEN_CAP)
}

/// The text of token ids, with `pieces[id]` the vocabulary's piece for each id (`▁` for
/// a space, `<0xNN>` for a raw byte of UTF-8): what the tokenizer's decoder does
/// (Replace `▁`, ByteFallback, Fuse, Strip one leading space). Special ids (`<s>`,
/// `</s>`, `<unk>`, and the added tokens past the vocabulary) are left out.
pub fn detokenize(pieces: &[String], ids: &[i64]) -> String {
    let mut bytes = Vec::new();
    for &id in ids {
        if id < FIRST_TEXT_ID {
            continue;
        }
        let Some(piece) = usize::try_from(id).ok().and_then(|i| pieces.get(i)) else {
            continue;
        };
        match byte_piece(piece) {
            Some(b) => bytes.push(b),
            None => bytes.extend_from_slice(piece.replace('\u{2581}', " ").as_bytes()),
        }
    }
    let text = String::from_utf8_lossy(&bytes);
    text.strip_prefix(' ').unwrap_or(&text).to_string()
}

/// The byte of a byte piece (`<0x0A>`).
fn byte_piece(piece: &str) -> Option<u8> {
    let hex = piece.strip_prefix("<0x")?.strip_suffix('>')?;
    if hex.len() != 2 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u8::from_str_radix(hex, 16).ok()
}

/// The tokenizer's vocabulary by id: `model.vocab` of a Hugging Face `tokenizer.json`
/// (piece → id), inverted.
#[derive(Debug, Clone, PartialEq)]
pub struct Vocabulary {
    pieces: Vec<String>,
}

impl Vocabulary {
    /// The vocabulary of a `tokenizer.json`; an error says what is wrong with it.
    pub fn from_tokenizer_json(json: &str) -> Result<Self, String> {
        #[derive(serde::Deserialize)]
        struct File {
            model: Model,
        }
        #[derive(serde::Deserialize)]
        struct Model {
            vocab: HashMap<String, u32>,
        }
        let file: File =
            serde_json::from_str(json).map_err(|e| format!("it is not a tokenizer.json with a model.vocab ({e})"))?;
        let len = file.model.vocab.values().max().map_or(0, |m| *m as usize + 1);
        // Moonshine's has 32,000 pieces; a bound keeps a corrupt id from taking gigabytes.
        if len == 0 || len > 1 << 20 {
            return Err(format!("its model.vocab has {len} ids"));
        }
        let mut pieces = vec![String::new(); len];
        for (piece, id) in file.model.vocab {
            pieces[id as usize] = piece;
        }
        Ok(Self { pieces })
    }

    /// The text of token ids (see [`detokenize`]).
    pub fn decode(&self, ids: &[i64]) -> String {
        detokenize(&self.pieces, ids)
    }

    /// Where the last word of `ids` begins: the index of the last token whose piece
    /// starts a word ("▁…"; the tokens after it, the rest of the word and punctuation,
    /// are that word's), or 0 when none does.
    pub fn last_word_start(&self, ids: &[i64]) -> usize {
        ids.iter()
            .rposition(|&id| {
                usize::try_from(id)
                    .ok()
                    .and_then(|i| self.pieces.get(i))
                    .is_some_and(|p| p.starts_with('\u{2581}'))
            })
            .unwrap_or(0)
    }
}

/// The decoder's cache inputs (`past_key_values.…`) or outputs (`present.…`), in the
/// model's order: for each layer, its self-attention (`decoder`) then cross-attention
/// (`encoder`) key and value.
fn cache_names(prefix: &str) -> Vec<String> {
    let mut names = Vec::with_capacity(LAYERS * 4);
    for layer in 0..LAYERS {
        for attention in ["decoder", "encoder"] {
            for part in ["key", "value"] {
                names.push(format!("{prefix}.{layer}.{attention}.{part}"));
            }
        }
    }
    names
}

/// Whether the cache entry at `index` (of [`cache_names`]) is self-attention, which
/// grows each step, rather than cross-attention, computed once: each layer's four
/// entries start with its self-attention key and value.
fn is_self_attention(index: usize) -> bool {
    index % 4 < 2
}

/// How far behind the decoder's first choice a draft token before the draft's last word
/// may score and still be kept ([`Moonshine::transcribe_from`]), in nats of
/// log-probability (the difference of two logits): a token at least e⁻¹ (37 %) as likely
/// as the best. Moonshine's reading of a word wavers as a phrase's audio grows, and
/// interim decodes that took the best each time showed words flip back and forth ("will"
/// / "we'll" seven times over one 5 s prompt, "tap" / "check" three times). A word shown
/// stays while the decoder finds it about as likely; the exact decode at the pause has the
/// last word. The draft's last word is still being heard, and ends where its audio ended
/// (a full stop there says only that), so it must be the decoder's own choice: with the
/// margin on it, a decode of a whole espeak-ng clip from the decode of its first 3/5 kept
/// that part's last word ("…London lead?") where the whole clip reads "leave". In a replay
/// of the benchmark's human clips with Python's onnxruntime (a decode every 220 ms of a
/// phrase), words already shown were changed 14 times without a margin, 10 at 0.5, 9 at 1
/// and 11 at 2 (2026-12-06).
const DRAFT_MARGIN: f32 = 1.0;

/// The token the decoder reads after each input token, from `logits`
/// (`[1, steps, vocabulary]`) ([`choose_rows`]).
fn read_rows(logits: &DynValue, draft: &[i64]) -> Result<Vec<i64>, ProviderError> {
    let (shape, scores) = logits.try_extract_tensor::<f32>().map_err(run_err)?;
    let width = shape.last().and_then(|w| usize::try_from(*w).ok()).unwrap_or(0);
    if width == 0 || scores.is_empty() || scores.len() % width != 0 {
        return Err(engine_err(format!(
            "Moonshine's decoder returned logits of shape {:?}",
            &shape[..]
        )));
    }
    Ok(choose_rows(scores, width, draft))
}

/// For each row of `scores` (`width` a row): the id with the highest score (a NaN score
/// never wins), or `draft`'s token for that row where it scores within [`DRAFT_MARGIN`]
/// of it (rows past `draft`: the best).
fn choose_rows(scores: &[f32], width: usize, draft: &[i64]) -> Vec<i64> {
    scores
        .chunks(width)
        .enumerate()
        .map(|(r, row)| {
            let (best, top) =
                row.iter().enumerate().fold(
                    (0, f32::NEG_INFINITY),
                    |(bi, bv), (i, &v)| if v > bv { (i, v) } else { (bi, bv) },
                );
            let close = |&d: &i64| {
                usize::try_from(d)
                    .ok()
                    .and_then(|d| row.get(d))
                    .is_some_and(|&v| v >= top - DRAFT_MARGIN)
            };
            match draft.get(r) {
                Some(d) if close(d) => *d,
                _ => best as i64,
            }
        })
        .collect()
}

/// A self-attention cache entry (`[1, heads, positions, head size]`) cut to its first
/// `keep` positions: what the decoder holds after reading only those tokens (each
/// position's key and value depend on the tokens up to it alone).
fn first_positions(value: &DynValue, keep: usize) -> Result<DynValue, ProviderError> {
    let (shape, data) = value.try_extract_tensor::<f32>().map_err(run_err)?;
    let positions = shape.get(2).and_then(|p| usize::try_from(*p).ok()).unwrap_or(0);
    if shape.len() != 4 || data.len() != HEADS * positions * HEAD_DIM || keep > positions {
        return Err(engine_err(format!(
            "Moonshine's decoder returned a cache of shape {:?}",
            &shape[..]
        )));
    }
    let kept: Vec<f32> = data
        .chunks(positions * HEAD_DIM)
        .flat_map(|head| &head[..keep * HEAD_DIM])
        .copied()
        .collect();
    Ok(Tensor::from_array(([1usize, HEADS, keep, HEAD_DIM], kept))
        .map_err(run_err)?
        .into_dyn())
}

/// One decode's result.
#[derive(Debug, Clone, PartialEq)]
pub struct Decoded {
    pub text: String,
    /// Its token ids, `<s>` and `</s>` left out: the draft of the next decode of the
    /// same phrase ([`Moonshine::transcribe_from`]).
    pub tokens: Vec<i64>,
    /// How many times the decoder ran.
    pub passes: usize,
}

/// The two sessions; one decode uses both in turn.
struct Sessions {
    encoder: Session,
    decoder: Session,
}

/// The loaded model.
pub struct Moonshine {
    /// Behind one lock: a decode runs the encoder, then the decoder, with nothing awaited
    /// while it is held (it runs on a blocking thread).
    sessions: Mutex<Sessions>,
    vocab: Vocabulary,
    /// The decoder's cache inputs and outputs, in the same order.
    past_names: Vec<String>,
    present_names: Vec<String>,
}

/// An error unless `session` (loaded from `path`, Moonshine's `what`) has these inputs
/// and outputs: a file that is not the model named says so at load, not at the first decode.
fn check_model(
    session: &Session,
    path: &std::path::Path,
    what: &str,
    inputs: &[&str],
    outputs: &[&str],
) -> Result<(), ProviderError> {
    let has = |list: &[ort::value::Outlet], name: &str| list.iter().any(|o| o.name() == name);
    let missing = inputs
        .iter()
        .find(|n| !has(session.inputs(), n))
        .map(|n| format!("input {n}"))
        .or_else(|| {
            outputs
                .iter()
                .find(|n| !has(session.outputs(), n))
                .map(|n| format!("output {n}"))
        });
    match missing {
        None => Ok(()),
        Some(m) => Err(engine_err(format!(
            "{} is not Moonshine's {what}: it has no {m}; fetch it again with `hark models fetch {MODEL_ID}`",
            path.display()
        ))),
    }
}

impl Moonshine {
    /// Loads ONNX Runtime (once per process), the tokenizer's vocabulary and both models;
    /// blocking (about two thirds of a second on two cores).
    pub fn load(files: &MoonshineFiles) -> Result<Self, ProviderError> {
        crate::onnx::load_runtime(PROVIDER, &files.runtime, MODEL_ID)?;
        let json = std::fs::read_to_string(&files.tokenizer).map_err(|e| {
            engine_err(format!(
                "cannot read Moonshine's tokenizer {}: {e}",
                files.tokenizer.display()
            ))
        })?;
        let vocab = Vocabulary::from_tokenizer_json(&json).map_err(|m| {
            engine_err(format!(
                "{} is not Moonshine's tokenizer: {m}; fetch it again with `hark models fetch {TOKENIZER_ID}`",
                files.tokenizer.display()
            ))
        })?;
        let encoder = crate::onnx::session(PROVIDER, &files.encoder, THREADS, "Moonshine's encoder")?;
        check_model(
            &encoder,
            &files.encoder,
            "encoder",
            &["input_values"],
            &["last_hidden_state"],
        )?;
        let decoder = crate::onnx::session(PROVIDER, &files.decoder, THREADS, "Moonshine's decoder")?;
        let past_names = cache_names("past_key_values");
        let present_names = cache_names("present");
        let mut inputs = vec!["input_ids", "encoder_hidden_states", "use_cache_branch"];
        inputs.extend(past_names.iter().map(String::as_str));
        let mut outputs = vec!["logits"];
        outputs.extend(present_names.iter().map(String::as_str));
        check_model(&decoder, &files.decoder, "decoder", &inputs, &outputs)?;
        Ok(Self {
            sessions: Mutex::new(Sessions { encoder, decoder }),
            vocab,
            past_names,
            present_names,
        })
    }

    /// The text of a clip (16 kHz mono; blocking). A clip too short to hold a word
    /// ([`MIN_SAMPLES`]) is no text; a non-finite sample counts as silence. With `stop`,
    /// gives up (a `Cancelled` error) at the next decoder step once it is cancelled.
    pub fn transcribe(&self, audio: &[f32], stop: Option<&CancellationToken>) -> Result<String, ProviderError> {
        Ok(self.transcribe_from(audio, &[], stop)?.text)
    }

    /// [`transcribe`](Self::transcribe), reading `draft` (the tokens of an earlier decode
    /// of the same phrase, shorter) in one decoder pass: the tokens the decoder agrees
    /// with, or before the draft's last word finds about as likely as its own choice
    /// ([`DRAFT_MARGIN`]), are kept, and it goes on one token at a time from the first
    /// it does not. A phrase's words so far seldom change, so an interim decode of a 4 s
    /// phrase takes one pass and a few steps instead of twenty-odd steps; and a word shown
    /// does not flip back and forth while the decoder wavers between two readings of it.
    ///
    /// Not exactly greedy decoding: the int8 model quantizes each pass's activations with
    /// the range of all its rows, so a pass over many tokens can score a row a little
    /// differently from a pass over one (4 of 19 interim decodes of a 4 s prompt, in a
    /// check with Python's onnxruntime, each another reading of the same speech), and a
    /// draft token kept as about as likely may be one a decode from nothing would not
    /// choose. So it is for interim words only; a segment's final text comes from an
    /// empty draft.
    pub fn transcribe_from(
        &self,
        audio: &[f32],
        draft: &[i64],
        stop: Option<&CancellationToken>,
    ) -> Result<Decoded, ProviderError> {
        if audio.len() < MIN_SAMPLES {
            return Ok(Decoded {
                text: String::new(),
                tokens: Vec::new(),
                passes: 0,
            });
        }
        let audio: Vec<f32> = audio.iter().map(|s| if s.is_finite() { *s } else { 0.0 }).collect();
        let (tokens, passes) = self.tokens(audio, draft, stop)?;
        Ok(Decoded {
            text: self.vocab.decode(&tokens).trim().to_string(),
            tokens,
            passes,
        })
    }

    /// The token ids of a clip, `<s>` and `</s>` left out, and how many decoder passes
    /// they took.
    fn tokens(
        &self,
        audio: Vec<f32>,
        draft: &[i64],
        stop: Option<&CancellationToken>,
    ) -> Result<(Vec<i64>, usize), ProviderError> {
        let stopped_now = || stop.is_some_and(CancellationToken::is_cancelled);
        if stopped_now() {
            return Err(stopped());
        }
        let cap = max_tokens(audio.len());
        let mut sessions = lock(&self.sessions);
        let Sessions { encoder, decoder } = &mut *sessions;

        let input = Tensor::from_array(([1usize, audio.len()], audio)).map_err(run_err)?;
        let hidden: DynValue = encoder
            .run(ort::inputs!["input_values" => input])
            .map_err(run_err)?
            .remove("last_hidden_state")
            .ok_or_else(|| engine_err("Moonshine's encoder returned no last_hidden_state"))?;

        // The first pass takes no cache (its branch reads none): empty tensors stand in,
        // as in the reference code. It reads `<s>` and the draft.
        let mut past: Vec<DynValue> = (0..self.past_names.len())
            .map(|_| {
                Tensor::from_array(([1usize, HEADS, 0, HEAD_DIM], Vec::<f32>::new()))
                    .map(|t| t.into_dyn())
                    .map_err(run_err)
            })
            .collect::<Result<_, _>>()?;
        let draft = &draft[..draft.len().min(cap)];
        let mut ids = Vec::with_capacity(1 + draft.len());
        ids.push(START);
        ids.extend_from_slice(draft);
        // The draft's tokens up to the first the decoder finds clearly less likely than
        // its own choice (DRAFT_MARGIN; in its last word, any other than its choice);
        // after them, its own.
        let settled = &draft[..self.vocab.last_word_start(draft)];
        let predicted = self.pass(decoder, ids, settled, &hidden, &mut past, true)?;
        let agreed = draft.iter().zip(&predicted).take_while(|(d, p)| d == p).count();
        if agreed < draft.len() {
            for (i, value) in past.iter_mut().enumerate() {
                if is_self_attention(i) {
                    *value = first_positions(value, agreed + 1)?;
                }
            }
        }
        let mut tokens = draft[..agreed].to_vec();
        let mut next = *predicted
            .get(agreed)
            .ok_or_else(|| engine_err("Moonshine's decoder returned too few rows of logits"))?;
        let mut passes = 1;
        while next != END && tokens.len() < cap {
            tokens.push(next);
            if tokens.len() == cap {
                break;
            }
            if stopped_now() {
                return Err(stopped());
            }
            next = *self
                .pass(decoder, vec![next], &[], &hidden, &mut past, false)?
                .last()
                .ok_or_else(|| engine_err("Moonshine's decoder returned no logits"))?;
            passes += 1;
        }
        Ok((tokens, passes))
    }

    /// One decoder pass over `ids` after the tokens `past` holds: the token it predicts
    /// after each of them, or `draft`'s for that row where it is about as likely
    /// ([`choose_rows`]). The self-attention cache grows by `ids`; cross-attention comes
    /// whole from the `first` pass only (later ones return it empty).
    fn pass(
        &self,
        decoder: &mut Session,
        ids: Vec<i64>,
        draft: &[i64],
        hidden: &DynValue,
        past: &mut [DynValue],
        first: bool,
    ) -> Result<Vec<i64>, ProviderError> {
        let mut inputs: Vec<(Cow<'_, str>, SessionInputValue<'_>)> = Vec::with_capacity(3 + past.len());
        inputs.push((
            "input_ids".into(),
            Tensor::from_array(([1usize, ids.len()], ids)).map_err(run_err)?.into(),
        ));
        inputs.push(("encoder_hidden_states".into(), hidden.into()));
        inputs.push((
            "use_cache_branch".into(),
            Tensor::from_array(([1usize], vec![!first])).map_err(run_err)?.into(),
        ));
        for (name, value) in self.past_names.iter().zip(past.iter()) {
            inputs.push((name.as_str().into(), value.into()));
        }
        let outputs = decoder.run(inputs).map_err(run_err)?;
        let mut predicted = None;
        let mut present = Vec::new();
        for (name, value) in outputs {
            if name == "logits" {
                predicted = Some(read_rows(&value, draft)?);
            } else if let Some(i) = self.present_names.iter().position(|p| p.as_str() == name) {
                if first || is_self_attention(i) {
                    present.push((i, value));
                }
            }
        }
        for (i, value) in present {
            past[i] = value;
        }
        predicted.ok_or_else(|| engine_err("Moonshine's decoder returned no logits"))
    }
}

/// Moonshine as a [`Transcriber`]: the model loads in the background when asked
/// ([`Transcriber::prepare`], at a press) or at first use, and is freed after
/// [`MoonshineStt::set_unload_after`] unused (by default it stays while the engine lives).
#[derive(Clone)]
pub struct MoonshineStt {
    files: MoonshineFiles,
    engine: IdleSlot<Moonshine>,
}

impl MoonshineStt {
    /// Checks that the files are there (they load on first use); a missing one is an error
    /// that names it and the way to fetch it.
    pub fn new(files: MoonshineFiles) -> Result<Self, ProviderError> {
        for f in [&files.encoder, &files.decoder, &files.tokenizer, &files.runtime] {
            if !f.exists() {
                return Err(engine_err(format!(
                    "Moonshine's file {} is not there: fetch it with `hark models fetch {MODEL_ID}` (or choose another STT engine)",
                    f.display()
                )));
            }
        }
        let engine = IdleSlot::new("moonshine", None).map_err(|e| engine_err(e.to_string()))?;
        Ok(Self { files, engine })
    }

    /// How long the model stays loaded without use; `None` keeps it while the engine lives.
    pub fn set_unload_after(&self, after: Option<std::time::Duration>) {
        self.engine.set_unload_after(after);
    }

    /// Whether the model is in memory now.
    pub fn is_loaded(&self) -> bool {
        self.engine.is_loaded()
    }

    /// Starts loading the model on a background thread (an error shows at first use).
    pub fn warm_up(&self) {
        if self.is_loaded() {
            return;
        }
        let this = self.clone();
        let _ = std::thread::Builder::new()
            .name("hark-moonshine-load".into())
            .spawn(move || {
                if let Err(e) = this.model() {
                    tracing::warn!("moonshine: {e}");
                }
            });
    }

    /// The loaded model, loading it if needed (blocking).
    fn model(&self) -> Result<Arc<Moonshine>, ProviderError> {
        self.engine.get_or_try_load(|| {
            let started = std::time::Instant::now();
            let m = Moonshine::load(&self.files)?;
            tracing::info!("moonshine loaded in {:?}", started.elapsed());
            Ok(m)
        })
    }

    /// One decode (blocking), from `draft` ([`Moonshine::transcribe_from`]).
    fn decode(&self, audio: &[f32], draft: &[i64], stop: Option<&CancellationToken>) -> Result<Decoded, ProviderError> {
        let decoded = self.model()?.transcribe_from(audio, draft, stop);
        self.engine.touch(); // idle time counts from the end of a use
        decoded
    }

    /// A whole clip, through the same segments as the live transcription (one decode per
    /// phrase, so a long clip costs no more per decode than a short one), on a blocking
    /// thread.
    async fn run(&self, audio: &[f32], stop: Option<CancellationToken>) -> Result<String, ProviderError> {
        let (this, audio) = (self.clone(), audio.to_vec());
        tokio::task::spawn_blocking(move || {
            segment::transcribe_whole(&audio, |clip| this.decode(clip, &[], stop.as_ref()).map(|d| d.text))
        })
        .await
        .map_err(|e| engine_err(format!("the transcription thread failed: {e}")))?
    }
}

#[async_trait]
impl Transcriber for MoonshineStt {
    fn name(&self) -> &'static str {
        PROVIDER
    }

    /// Loads the model while the user speaks (or at a session's start).
    fn prepare(&self) {
        self.warm_up();
    }

    async fn transcribe(&self, audio: &[f32]) -> Result<String, ProviderError> {
        self.run(audio, None).await
    }

    async fn transcribe_until(&self, audio: &[f32], stop: &CancellationToken) -> Result<String, ProviderError> {
        self.run(audio, Some(stop.clone())).await
    }

    fn speculates(&self) -> bool {
        true
    }

    /// Interim words while the key is held: see `stt::segment`.
    async fn live(
        &self,
        interim: mpsc::UnboundedSender<String>,
    ) -> Result<Option<Box<dyn LiveTranscription>>, ProviderError> {
        let this = self.clone();
        // The last decode's segment and tokens: an interim decode of the same phrase that
        // may be rough starts from them (see `Moonshine::transcribe_from`).
        let mut last: Option<(u64, Vec<i64>)> = None;
        let decoder: Decoder = Box::new(move |job: &Job, stop: &CancellationToken| {
            let draft = match &last {
                Some((segment, tokens)) if job.may_be_rough() && *segment == job.segment() => tokens.as_slice(),
                _ => &[],
            };
            let decoded = this.decode(&job.audio, draft, Some(stop))?;
            last = Some((job.segment(), decoded.tokens));
            Ok(decoded.text)
        });
        segment::start(PROVIDER, decoder, interim).map(Some)
    }
}

#[cfg(test)]
mod tests;
