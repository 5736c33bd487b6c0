//! The offline engine: whisper.cpp (through whisper-rs) with a ggml model such as tiny.en.
//!
//! The model is loaded once; each utterance gets a fresh state on a blocking thread. The
//! encoder window (`audio_ctx`) is scaled to the clip: whisper pads everything to 30 s by
//! default, and short push-to-talk clips run 4-7× faster with a window that fits them.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use whisper_rs::{FullParams, SamplingStrategy, WhisperContext, WhisperContextParameters};

use super::Transcriber;
use crate::audio::resample::STT_RATE;
use crate::provider::{ErrorKind, ProviderError};

const PROVIDER: &str = "whisper";

/// The default model file name, looked for in the models directory.
pub const DEFAULT_MODEL: &str = "ggml-tiny.en.bin";

/// The models directory: `HARK_MODELS_DIR`, or `<data dir>/models`.
pub fn models_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("HARK_MODELS_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    directories::ProjectDirs::from("app", "hark", "hark")
        .map(|d| d.data_dir().join("models"))
        .unwrap_or_else(|| PathBuf::from("models"))
}

/// whisper.cpp with a loaded model.
pub struct WhisperStt {
    ctx: Arc<WhisperContext>,
    threads: i32,
}

impl WhisperStt {
    /// Loads a ggml model file.
    pub fn load(model: &Path) -> Result<Self, ProviderError> {
        if !model.exists() {
            return Err(ProviderError::new(
                PROVIDER,
                ErrorKind::InvalidRequest,
                format!(
                    "the offline speech model {} is missing: run scripts/fetch-models.sh (or choose another STT engine)",
                    model.display()
                ),
            ));
        }
        whisper_rs::install_logging_hooks(); // whisper.cpp's chatter stays off stderr
        let path = model.to_string_lossy().to_string();
        let ctx = WhisperContext::new_with_params(&path, WhisperContextParameters::default()).map_err(|e| {
            ProviderError::new(
                PROVIDER,
                ErrorKind::InvalidRequest,
                format!("cannot load {}: {e}", model.display()),
            )
        })?;
        let threads = std::thread::available_parallelism()
            .map(|n| n.get().min(4) as i32)
            .unwrap_or(2);
        Ok(Self {
            ctx: Arc::new(ctx),
            threads,
        })
    }
}

/// The encoder window for a clip: 50 frames a second plus a margin, at least 512 (shorter
/// windows lose accuracy on tiny models), at most whisper's full 1500.
pub fn audio_ctx_for(samples: usize) -> i32 {
    let secs = samples as f64 / STT_RATE as f64;
    ((50.0 * secs) as i32 + 64).clamp(512, 1500)
}

#[async_trait]
impl Transcriber for WhisperStt {
    fn name(&self) -> &'static str {
        PROVIDER
    }

    async fn transcribe(&self, audio: &[f32]) -> Result<String, ProviderError> {
        let mut audio = audio.to_vec();
        // whisper.cpp wants at least a second; pad short clips with silence.
        if audio.len() < STT_RATE as usize {
            audio.resize(STT_RATE as usize + STT_RATE as usize / 10, 0.0);
        }
        let ctx = self.ctx.clone();
        let threads = self.threads;
        tokio::task::spawn_blocking(move || {
            let err = |e: whisper_rs::WhisperError| ProviderError::new(PROVIDER, ErrorKind::Server, e.to_string());
            let mut state = ctx.create_state().map_err(err)?;
            let mut p = FullParams::new(SamplingStrategy::Greedy { best_of: 1 });
            p.set_n_threads(threads);
            p.set_language(Some("en"));
            p.set_audio_ctx(audio_ctx_for(audio.len()));
            p.set_no_context(true);
            p.set_suppress_blank(true);
            p.set_print_progress(false);
            p.set_print_realtime(false);
            p.set_print_special(false);
            p.set_print_timestamps(false);
            state.full(p, &audio).map_err(err)?;
            let text: Vec<String> = state.as_iter().map(|s| s.to_string()).collect();
            Ok(clean(&text.concat()))
        })
        .await
        .map_err(|e| {
            ProviderError::new(
                PROVIDER,
                ErrorKind::Server,
                format!("the transcription thread failed: {e}"),
            )
        })?
    }
}

/// Drops whisper's non-speech markers (`[BLANK_AUDIO]`, `(silence)`, `[Music]`) and trims.
pub fn clean(text: &str) -> String {
    let mut out = String::new();
    let mut depth = 0;
    for c in text.chars() {
        match c {
            '[' | '(' => depth += 1,
            ']' | ')' if depth > 0 => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_speech_markers_are_dropped() {
        assert_eq!(clean(" [BLANK_AUDIO]"), "");
        assert_eq!(clean(" My name is Sam. (upbeat music)"), "My name is Sam.");
    }

    #[test]
    fn the_window_fits_the_clip() {
        assert_eq!(audio_ctx_for(16_000 * 2), 512);
        assert_eq!(audio_ctx_for(16_000 * 20), 1064);
        assert_eq!(audio_ctx_for(16_000 * 60), 1500);
    }

    #[test]
    fn a_missing_model_says_how_to_get_it() {
        let Err(e) = WhisperStt::load(Path::new("/nonexistent/ggml-tiny.en.bin")) else {
            panic!()
        };
        assert!(e.message.contains("scripts/fetch-models.sh"), "{e}");
    }
}
