//! What the quick offline voices share: a model that turns a phoneme string into audio
//! through ONNX Runtime, fast enough to render each piece when it is asked for (Piper's Joe,
//! `piper`; the quick Heart voice, `hibari`). [`QuickVoice`] loads it in the background or
//! at first use, frees it when unused, and renders a text piece by piece off the runtime's
//! threads; each voice says how its text becomes phonemes and how phonemes become samples.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Mutex;

use async_trait::async_trait;
use tokio::sync::mpsc;

use super::natural::chunk_phonemes;
use super::{AudioChunk, Synthesizer};
use crate::idle::IdleSlot;
use crate::provider::{ErrorKind, ProviderError};

/// Where a quick voice's two files are.
#[derive(Debug, Clone, PartialEq)]
pub struct VoiceFiles {
    pub model: PathBuf,
    pub runtime: PathBuf,
}

/// One quick voice's model, loaded.
pub trait PhonemeModel: Send + Sync + Sized + 'static {
    /// Its errors' provider, and the name of its loading thread's slot.
    const PROVIDER: &'static str;
    /// What it is called in messages and logs ("quick natural voice").
    const WHAT: &'static str;
    /// Its output rate.
    const SAMPLE_RATE: u32;
    /// The most phonemes rendered in one run: a longer text is cut at punctuation or a space.
    const MAX_PHONEMES: usize;

    /// Loads the runtime (once per process) and the model; blocking.
    fn load(files: &VoiceFiles, threads: usize) -> Result<Self, ProviderError>;

    /// A text's phonemes, in the model's symbols.
    fn phonemes(text: &str) -> impl Future<Output = Result<String, ProviderError>> + Send;

    /// Renders at most [`Self::MAX_PHONEMES`] phonemes; blocking.
    fn render(&self, phonemes: &str) -> Result<Vec<f32>, ProviderError>;
}

/// A quick voice as a [`Synthesizer`]: loaded in the background when asked
/// ([`QuickVoice::warm_up`]) or at first use, freed after [`QuickVoice::set_unload_after`]
/// unused.
pub struct QuickVoice<M> {
    files: VoiceFiles,
    threads: usize,
    engine: IdleSlot<M>,
}

impl<M: PhonemeModel> QuickVoice<M> {
    pub fn new(files: VoiceFiles) -> Result<Self, ProviderError> {
        Ok(Self {
            files,
            // The same budget as Kokoro's: one thread on a two-core machine, so the chat
            // model decoding the rest of the reply keeps a core.
            threads: super::natural::thread_budget(),
            engine: IdleSlot::new(M::PROVIDER, None)
                .map_err(|e| ProviderError::new(M::PROVIDER, ErrorKind::LocalEngine, e.to_string()))?,
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

    /// Starts loading the model on a background thread.
    pub fn warm_up(&self) {
        let (files, threads) = (self.files.clone(), self.threads);
        self.engine
            .load_in_background("hark-voice-load", M::WHAT, move || load::<M>(&files, threads));
    }

    /// Renders a whole text to samples at [`PhonemeModel::SAMPLE_RATE`].
    pub async fn render(&self, text: &str) -> Result<Vec<f32>, ProviderError> {
        let phonemes = M::phonemes(text).await?;
        if !phonemes.chars().any(char::is_alphabetic) {
            return Ok(Vec::new()); // punctuation alone says nothing
        }
        let (engine, files, threads) = (self.engine.clone(), self.files.clone(), self.threads);
        tokio::task::spawn_blocking(move || {
            engine.use_with(
                || load::<M>(&files, threads),
                |model| {
                    let mut audio = Vec::new();
                    for piece in chunk_phonemes(&phonemes, M::MAX_PHONEMES) {
                        audio.extend(model.render(&piece)?);
                    }
                    Ok(audio)
                },
            )
        })
        .await
        .map_err(|e| {
            ProviderError::new(
                M::PROVIDER,
                ErrorKind::LocalEngine,
                format!("the {} stopped: {e}", M::WHAT),
            )
        })?
    }
}

/// Loads ONNX Runtime (once per process) and the model of `M`, the manifest's `id`; an
/// error that says how to fetch it where its file is not there. Blocking.
pub(crate) fn session<M: PhonemeModel>(
    id: &str,
    files: &VoiceFiles,
    threads: usize,
) -> Result<Mutex<ort::session::Session>, ProviderError> {
    crate::onnx::load_runtime(M::PROVIDER, &files.runtime, id)?;
    if !files.model.exists() {
        return Err(ProviderError::new(
            M::PROVIDER,
            ErrorKind::LocalEngine,
            format!(
                "the {}'s file {} is not there: fetch it with `hark models fetch {id}`",
                M::WHAT,
                files.model.display()
            ),
        ));
    }
    let what = format!("the {}'s model", M::WHAT);
    Ok(Mutex::new(crate::onnx::session(
        M::PROVIDER,
        &files.model,
        threads,
        &what,
    )?))
}

fn load<M: PhonemeModel>(files: &VoiceFiles, threads: usize) -> Result<M, ProviderError> {
    let started = std::time::Instant::now();
    let m = M::load(files, threads)?;
    tracing::info!("{} loaded in {:?} ({threads} thread(s))", M::WHAT, started.elapsed());
    Ok(m)
}

#[async_trait]
impl<M: PhonemeModel> Synthesizer for QuickVoice<M> {
    fn name(&self) -> &'static str {
        M::PROVIDER
    }

    /// Up to a second ahead of playback, as a cloud voice: a piece renders in a tenth of its
    /// length or less, so there is no gap to hide.
    async fn synthesize(&self, text: &str, out: &mpsc::UnboundedSender<AudioChunk>) -> Result<(), ProviderError> {
        let samples = self.render(text).await?;
        super::send_in_pieces(&samples, M::SAMPLE_RATE, out);
        Ok(())
    }
}
