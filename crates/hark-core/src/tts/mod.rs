//! Text-to-speech behind one capability trait, [`Synthesizer`].
//!
//! # Layout
//! - `espeak`: finding espeak-ng (on `PATH` and where its installers put it) and running it.
//! - `remote`: Deepgram Aura-2 `/v1/speak` (linear16) and OpenAI `/v1/audio/speech` (pcm),
//!   both streamed: audio is played while the rest of the sentence is still arriving.
//! - `natural`: the natural offline voice, Kokoro-82M through ONNX Runtime, its files
//!   fetched like the other offline models.
//! - `hibari`: the quick Heart voice, Kokoro's Heart distilled (Hibari) through ONNX Runtime:
//!   about twenty-five times faster than real time on one core, so its first sound comes as soon
//!   as the reply's first words.
//! - `piper`: the quick natural voice, a Piper voice through ONNX Runtime: seven to ten times
//!   faster than Kokoro on a small machine, so its first sound comes sooner.
//! - `quick`: what the quick voices share: a model from phonemes to audio, loaded in the
//!   background, freed when unused, rendered piece by piece off the runtime's threads.
//! - `system`: the operating system's own voice (espeak-ng on Linux, `say` on macOS,
//!   System.Speech on Windows), rendered to audio so Hark's playback, barge-in and heard-text
//!   tracking work the same for every voice.

pub mod espeak;
pub mod hibari;
pub mod natural;
pub mod piper;
pub mod quick;
pub mod remote;
pub mod system;

use async_trait::async_trait;
use tokio::sync::mpsc;

use crate::provider::ProviderError;

/// A piece of synthesised speech: mono samples at `rate`.
#[derive(Debug, Clone, PartialEq)]
pub struct AudioChunk {
    pub samples: Vec<f32>,
    pub rate: u32,
}

/// A text-to-speech engine.
#[async_trait]
pub trait Synthesizer: Send + Sync {
    /// Engine name ("deepgram", "openai", "natural", "piper", "system").
    fn name(&self) -> &'static str;

    /// How far ahead of playback (ms of queued audio) the voice turn may synthesise the next
    /// piece. About a second by default: a cloud voice renders faster than speech and bills
    /// what a barge-in throws away.
    fn lookahead_ms(&self) -> u64 {
        1_000
    }

    /// Speaks one sentence; audio arrives on `out` as it is produced. Cancel by dropping
    /// the future.
    async fn synthesize(&self, text: &str, out: &mpsc::UnboundedSender<AudioChunk>) -> Result<(), ProviderError>;
}

/// Hands rendered audio over in 100 ms pieces, so playback can start and be flushed as
/// with a streamed voice (for the voices that render a whole piece at once).
pub(crate) fn send_in_pieces(samples: &[f32], rate: u32, out: &mpsc::UnboundedSender<AudioChunk>) {
    for piece in samples.chunks((rate / 10).max(1) as usize) {
        let _ = out.send(AudioChunk {
            samples: piece.to_vec(),
            rate,
        });
    }
}

/// Which voice to speak with (as in settings and on the command line).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "lowercase")]
pub enum TtsKind {
    /// The operating system's own voice (offline).
    #[default]
    #[serde(alias = "os", alias = "local")]
    System,
    /// The natural offline voice (Kokoro).
    Natural,
    /// The quick natural offline voice (Piper, English).
    Piper,
    /// The quick Heart voice (Hibari: Kokoro's Heart distilled; offline, English).
    Hibari,
    /// Deepgram Aura-2.
    Deepgram,
    /// OpenAI speech.
    #[serde(rename = "openai")]
    OpenAi,
}

impl std::str::FromStr for TtsKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        serde_json::from_value(serde_json::Value::String(s.to_string())).map_err(|_| {
            format!("unknown TTS engine {s:?}: use hibari (offline, quick Heart), natural (offline), piper (offline, quick), system (offline), deepgram or openai")
        })
    }
}
