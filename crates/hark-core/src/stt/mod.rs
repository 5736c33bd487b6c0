//! Speech-to-text behind one capability trait, [`Transcriber`].
//!
//! # Layout
//! - `deepgram`: live WebSocket `/v1/listen` (interim results, `Finalize`) and prerecorded.
//! - `openai`: `/v1/audio/transcriptions` (multipart WAV upload).
//! - `whisper`: the offline engine, whisper.cpp through whisper-rs (feature `whisper`).
//! - `moonshine`: the offline engine with live words, Moonshine tiny (English) through
//!   ONNX Runtime.
//! - `segment`: live transcription for an offline engine that decodes whole clips: the
//!   phrase being spoken decoded again as it grows, committed at each pause.
//! - `wer`: word error, how far a transcript is from what was said (the latency
//!   benchmark's score for each engine).
//! - this file: the traits and the provider choice. Failures use the same
//!   [`ProviderError`] taxonomy as the language models.

pub mod deepgram;
pub mod moonshine;
pub mod openai;
pub(crate) mod segment;
pub mod wer;
#[cfg(feature = "whisper")]
pub mod whisper;

pub use segment::transcribe_whole;

use async_trait::async_trait;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use crate::provider::ProviderError;

/// A speech-to-text engine. Audio is always 16 kHz mono f32.
#[async_trait]
pub trait Transcriber: Send + Sync {
    /// Engine name ("deepgram", "openai", "whisper", "moonshine").
    fn name(&self) -> &'static str;

    /// Push-to-talk was pressed: get ready (load a model, warm a connection) while the user
    /// speaks. The default does nothing.
    fn prepare(&self) {}

    /// Transcribes a whole utterance.
    async fn transcribe(&self, audio: &[f32]) -> Result<String, ProviderError>;

    /// [`Self::transcribe`], giving up (with an error) once `stop` is cancelled: for a
    /// speculative transcription no longer wanted, so it stops taking the CPU. An engine
    /// that cannot stop midway (the default) finishes.
    async fn transcribe_until(&self, audio: &[f32], stop: &CancellationToken) -> Result<String, ProviderError> {
        let _ = stop;
        self.transcribe(audio).await
    }

    /// Whether it is cheap to transcribe speculatively while the user still speaks (a local
    /// engine: no per-request cost). A cloud engine bills every call, so the default is no.
    fn speculates(&self) -> bool {
        false
    }

    /// Opens a streaming session that reports interim text on `interim` while audio is
    /// pushed, when the engine has one; `None` means: buffer, then call `transcribe`.
    async fn live(
        &self,
        interim: mpsc::UnboundedSender<String>,
    ) -> Result<Option<Box<dyn LiveTranscription>>, ProviderError> {
        let _ = interim;
        Ok(None)
    }
}

/// A streaming transcription of one utterance.
#[async_trait]
pub trait LiveTranscription: Send {
    /// Sends captured audio.
    async fn send(&mut self, audio: &[f32]) -> Result<(), ProviderError>;
    /// The push-to-talk key was released: flush and return the final transcript.
    async fn finish(self: Box<Self>) -> Result<String, ProviderError>;

    /// The transcript a release would give now, when the engine can tell: what
    /// [`finish`](Self::finish) would return without another decode, because every word
    /// so far was decoded and a pause followed them. `None` (the value) while the user
    /// speaks on. The voice actor hands it to a local model, which evaluates the request
    /// and starts its reply while the key is still held. An engine that cannot tell (the
    /// default; a cloud engine's final words come from the server) has no such channel.
    fn settled(&self) -> Option<watch::Receiver<Option<String>>> {
        None
    }
}

/// Which speech-to-text engine to use (as in settings and on the command line).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "kebab-case")]
pub enum SttKind {
    /// Offline: whisper.cpp on this computer, in every language.
    #[serde(alias = "local")]
    Whisper,
    /// Deepgram's live WebSocket (interim text while you speak).
    Deepgram,
    /// Deepgram's prerecorded endpoint (the utterance is sent after release).
    DeepgramPrerecorded,
    /// OpenAI's transcription endpoint.
    #[serde(rename = "openai")]
    OpenAi,
    /// Offline with live words: Moonshine tiny (English) through ONNX Runtime; whisper
    /// transcribes the other languages. The default (issue 20): its word error on the
    /// benchmark's clips is no worse than whisper tiny.en's.
    #[default]
    Moonshine,
}

impl std::str::FromStr for SttKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        serde_json::from_value(serde_json::Value::String(s.to_string())).map_err(|_| {
            format!(
                "unknown STT engine {s:?}: use whisper (offline), moonshine (offline, live words, English), \
                 deepgram, deepgram-prerecorded or openai"
            )
        })
    }
}

/// Joins text pieces with single spaces, skipping empty ones.
pub(crate) fn join_text<'a>(parts: impl IntoIterator<Item = &'a str>) -> String {
    parts
        .into_iter()
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}
