//! The offline engine: whisper.cpp (through whisper-rs) with a ggml model such as tiny.en.
//!
//! The model is loaded once; each utterance gets a fresh state on a blocking thread. The
//! encoder window (`audio_ctx`) is scaled to the clip: whisper pads everything to 30 s by
//! default, and short push-to-talk clips run 4-7× faster with a window that fits them.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;
use whisper_rs::{FullParams, SamplingStrategy, WhisperContext, WhisperContextParameters};

use super::Transcriber;
use crate::audio::resample::STT_RATE;
use crate::idle::IdleSlot;
use crate::provider::{ErrorKind, ProviderError};

const PROVIDER: &str = "whisper";

/// whisper.cpp with a ggml model, loaded on demand: the weights (80 MB for tiny.en) come
/// into memory when push-to-talk is pressed, or at start-up with [`Transcriber::prepare`]
/// (in parallel with the speech, so it costs no latency), and leave after
/// [`set_unload_after`](WhisperStt::set_unload_after) without use (default
/// [`UNLOAD_AFTER`]; `None` keeps them while the app runs).
#[derive(Clone)]
pub struct WhisperStt {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    /// The loaded model, when it is, freed after `unload_after` unused.
    ctx: IdleSlot<WhisperContext>,
    threads: i32,
    /// The conversation language (ISO 639-1); `None`: detected (multilingual models) or
    /// English (English-only models such as tiny.en).
    language: Mutex<Option<&'static str>>,
}

/// How long an unused model stays in memory by default.
pub const UNLOAD_AFTER: Duration = Duration::from_secs(300);

fn model_error(path: &Path, what: impl std::fmt::Display) -> ProviderError {
    ProviderError::new(
        PROVIDER,
        ErrorKind::LocalEngine,
        format!(
            "the offline speech model {} {what}: run scripts/fetch-models.sh (or choose another STT engine)",
            path.display()
        ),
    )
}

impl WhisperStt {
    /// Checks a ggml model file (present, readable, ggml magic); the weights load on first use.
    pub fn load(model: &Path) -> Result<Self, ProviderError> {
        let mut magic = [0u8; 4];
        std::fs::File::open(model)
            .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut magic))
            .map_err(|e| {
                if e.kind() == std::io::ErrorKind::NotFound {
                    model_error(model, "is missing")
                } else {
                    model_error(model, format!("cannot be read ({e})"))
                }
            })?;
        if u32::from_le_bytes(magic) != 0x6767_6d6c {
            return Err(model_error(model, "is not a whisper.cpp ggml file"));
        }
        whisper_rs::install_logging_hooks(); // whisper.cpp's chatter stays off stderr
        let threads = std::thread::available_parallelism()
            .map(|n| n.get().min(4) as i32)
            .unwrap_or(2);
        let ctx = IdleSlot::new("whisper", Some(UNLOAD_AFTER))
            .map_err(|e| ProviderError::new(PROVIDER, ErrorKind::LocalEngine, e.to_string()))?;
        let inner = Arc::new(Inner {
            path: model.to_path_buf(),
            ctx,
            threads,
            language: Mutex::new(None),
        });
        Ok(Self { inner })
    }

    /// How long the model stays loaded without use; `None` keeps it while the engine lives.
    pub fn set_unload_after(&self, after: Option<Duration>) {
        self.inner.ctx.set_unload_after(after);
    }

    /// The spoken language (ISO 639-1); `None`: detect it. An English-only model (the
    /// `.en` ones, Hark's default) refuses any other language when it transcribes.
    pub fn set_language(&self, code: Option<&'static str>) {
        *lock(&self.inner.language) = code;
    }

    /// The loaded model, loading it if needed (blocking; no await inside).
    fn context(&self) -> Result<Arc<WhisperContext>, ProviderError> {
        self.inner.ctx.get_or_try_load(|| {
            let path = self.inner.path.to_string_lossy().to_string();
            WhisperContext::new_with_params(&path, WhisperContextParameters::default())
                .map_err(|e| model_error(&self.inner.path, format!("cannot be loaded ({e})")))
        })
    }

    /// Whether the weights are in memory now.
    pub fn is_loaded(&self) -> bool {
        self.inner.ctx.is_loaded()
    }
}

/// A poisoned lock here only means a panic elsewhere mid-update of a plain value.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
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

    fn speculates(&self) -> bool {
        true
    }

    fn prepare(&self) {
        if !self.is_loaded() {
            let this = self.clone();
            // Loads while the user speaks; an error shows when transcribing.
            std::thread::spawn(move || {
                let _ = this.context();
            });
        }
    }

    async fn transcribe(&self, audio: &[f32]) -> Result<String, ProviderError> {
        self.run(audio, None).await
    }

    async fn transcribe_until(&self, audio: &[f32], stop: &CancellationToken) -> Result<String, ProviderError> {
        self.run(audio, Some(stop.clone())).await
    }
}

/// whisper.cpp asks between computation steps whether to give up; `user_data` points to
/// the call's `CancellationToken`.
unsafe extern "C" fn stop_requested(user_data: *mut std::ffi::c_void) -> bool {
    // SAFETY: `run` sets `user_data` to a token that lives until `full` returns, and
    // whisper.cpp calls this only during `full`.
    let stop = unsafe { &*(user_data as *const CancellationToken) };
    stop.is_cancelled()
}

impl WhisperStt {
    /// Transcribes on a blocking thread; with `stop`, gives up (an error) once it is cancelled.
    async fn run(&self, audio: &[f32], stop: Option<CancellationToken>) -> Result<String, ProviderError> {
        let mut audio = audio.to_vec();
        // whisper.cpp wants at least a second; pad short clips with silence.
        if audio.len() < STT_RATE as usize {
            audio.resize(STT_RATE as usize + STT_RATE as usize / 10, 0.0);
        }
        let this = self.clone();
        let threads = self.inner.threads;
        tokio::task::spawn_blocking(move || {
            let err = |e: whisper_rs::WhisperError| ProviderError::new(PROVIDER, ErrorKind::LocalEngine, e.to_string());
            let ctx = this.context()?;
            let language = *lock(&this.inner.language);
            let language = if ctx.is_multilingual() {
                language.unwrap_or("auto")
            } else if language.is_none_or(|l| l == "en") {
                "en"
            } else {
                return Err(ProviderError::new(
                    PROVIDER,
                    ErrorKind::Settings,
                    format!(
                        "the offline speech model {} understands English only: set the conversation \
                         language to English or automatic, or choose Deepgram or OpenAI for speech-to-text",
                        this.inner.path.display()
                    ),
                ));
            };
            let mut state = ctx.create_state().map_err(err)?;
            let mut p = FullParams::new(SamplingStrategy::Greedy { best_of: 1 });
            p.set_n_threads(threads);
            p.set_language(Some(language));
            p.set_audio_ctx(audio_ctx_for(audio.len()));
            p.set_no_context(true);
            // Push-to-talk clips are short and Hark uses no timestamps: without them the
            // decoder makes fewer tokens (about 10 % faster on a 2 s clip here).
            p.set_no_timestamps(true);
            p.set_suppress_blank(true);
            p.set_print_progress(false);
            p.set_print_realtime(false);
            p.set_print_special(false);
            p.set_print_timestamps(false);
            if let Some(stop) = &stop {
                // Not whisper-rs's `set_abort_callback_safe`: in 0.16 it hands whisper.cpp a
                // pointer to a boxed trait object while its trampoline reads it as the
                // closure itself. A plain function and a pointer to the token instead.
                // SAFETY: the token outlives `full` below, the only call that uses it.
                unsafe {
                    p.set_abort_callback(Some(stop_requested));
                    p.set_abort_callback_user_data(stop as *const CancellationToken as *mut std::ffi::c_void);
                }
            }
            let done = state.full(p, &audio).map_err(err);
            this.inner.ctx.touch(); // idle time counts from the end of a use, not its start
            done?;
            let text: Vec<String> = state.as_iter().map(|s| s.to_string()).collect();
            Ok(clean(&text.concat()))
        })
        .await
        .map_err(|e| {
            ProviderError::new(
                PROVIDER,
                ErrorKind::LocalEngine,
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
