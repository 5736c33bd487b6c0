//! The offline engine: whisper.cpp (through whisper-rs) with a ggml model such as tiny.en.
//!
//! The model is loaded once; each utterance gets a fresh state on a blocking thread. The
//! encoder window (`audio_ctx`) is scaled to the clip: whisper pads everything to 30 s by
//! default, and short push-to-talk clips run 4-7× faster with a window that fits them.
//!
//! After each load, one throw-away decode of silence warms whisper.cpp up (its first
//! decode after a load costs about a quarter of a second more), in the background at the
//! lowest priority on one thread, and stopped by any real transcription: a running turn
//! always comes first (issue 21).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
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
    /// Held by the engine's users and not by its warm-up, which holds the `Inner` only.
    owner: Arc<Owner>,
}

/// When the last user of the engine lets go, a warm-up still running is stopped and waited
/// for: whisper.cpp computing on its thread while the process exits crashes in ggml's
/// static state, which the exit tears down (a test binary ended with a segfault after its
/// tests passed, 5 runs in 38 on a loaded machine, where the lowest-priority warm-up had
/// not finished by the end). The wait is whisper.cpp's next abort check, or the end of a
/// load of the model already under way.
struct Owner(Arc<Inner>);

impl Drop for Owner {
    fn drop(&mut self) {
        let (stop, thread) = {
            let mut warm = lock(&self.0.warm);
            (warm.running.clone(), warm.thread.take())
        };
        if let Some(stop) = stop {
            stop.cancel();
        }
        if let Some(thread) = thread {
            let _ = thread.join();
        }
    }
}

struct Inner {
    path: PathBuf,
    /// The loaded model, when it is, freed after `unload_after` unused.
    ctx: IdleSlot<WhisperContext>,
    threads: i32,
    /// The conversation language (ISO 639-1); `None`: detected (multilingual models) or
    /// English (English-only models such as tiny.en).
    language: Mutex<Option<&'static str>>,
    /// The warm-up: which loaded model it warmed, and the stop of the one running.
    warm: Mutex<Warm>,
}

/// What the warm-up decode has done (see the module's opening).
#[derive(Default)]
struct Warm {
    /// The model a warm-up decode finished on; a model loaded again after an unload is
    /// another one, and is warmed again.
    done: Weak<WhisperContext>,
    /// The warm-up running now, stopped when a transcription starts.
    running: Option<CancellationToken>,
    /// The thread of the last warm-up, joined when the engine goes ([`Owner`]).
    thread: Option<std::thread::JoinHandle<()>>,
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
        // Before anything of whisper.cpp runs: a processor it was not built for stops the
        // process with no message.
        crate::cpu::offline_engines_supported(PROVIDER)?;
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
            warm: Mutex::new(Warm::default()),
        });
        Ok(Self {
            owner: Arc::new(Owner(inner)),
        })
    }

    /// The engine itself.
    fn inner(&self) -> &Arc<Inner> {
        &self.owner.0
    }

    /// How long the model stays loaded without use; `None` keeps it while the engine lives.
    pub fn set_unload_after(&self, after: Option<Duration>) {
        self.inner().ctx.set_unload_after(after);
    }

    /// The spoken language (ISO 639-1); `None`: detect it. An English-only model (the
    /// `.en` ones, Hark's default) refuses any other language when it transcribes.
    pub fn set_language(&self, code: Option<&'static str>) {
        *lock(&self.inner().language) = code;
    }

    /// Whether the weights are in memory now.
    pub fn is_loaded(&self) -> bool {
        self.inner().ctx.is_loaded()
    }

    /// Loads the weights now (blocking), without the warm-up: what a session's start did
    /// before the warm-up (the benchmark's "before").
    pub fn load_weights(&self) -> Result<(), ProviderError> {
        self.inner().context().map(drop)
    }

    /// Whether the model in memory now has been warmed up (its first decode made).
    pub fn is_warm(&self) -> bool {
        lock(&self.inner().warm).done.strong_count() > 0 && self.is_loaded()
    }

    /// Loads the model and makes its first decode (a second of silence), on a thread of
    /// the lowest priority with one whisper thread, so a turn running meanwhile (the
    /// local model's prefill, another app) keeps the CPU; a transcription that starts
    /// stops it at whisper.cpp's next abort check. Returns at once; does nothing when the
    /// model in memory is warm or a warm-up runs.
    pub fn warm_up(&self) {
        let stop = {
            let mut warm = lock(&self.inner().warm);
            if warm.running.is_some() || (warm.done.strong_count() > 0 && self.is_loaded()) {
                return;
            }
            let stop = CancellationToken::new();
            warm.running = Some(stop.clone());
            stop
        };
        // The engine (`Inner`), not a handle: the handles' owner must be able to go.
        let inner = self.inner().clone();
        let thread = std::thread::spawn(move || {
            crate::cpu::lower_this_threads_priority();
            // Loads (an error shows when transcribing), then the first decode.
            let warmed = inner.context().ok().filter(|ctx| {
                let silence = vec![0.0f32; STT_RATE as usize + STT_RATE as usize / 10];
                !stop.is_cancelled() && decode(ctx, &silence, "en", 1, Some(&stop)).is_ok()
            });
            let mut warm = lock(&inner.warm);
            if let Some(ctx) = warmed {
                warm.done = Arc::downgrade(&ctx);
                tracing::debug!("whisper warmed up");
            }
            warm.running = None;
        });
        lock(&self.inner().warm).thread = Some(thread);
    }
}

impl Inner {
    /// The loaded model, loading it if needed (blocking; no await inside).
    fn context(&self) -> Result<Arc<WhisperContext>, ProviderError> {
        self.ctx.get_or_try_load(|| {
            let path = self.path.to_string_lossy().to_string();
            WhisperContext::new_with_params(&path, WhisperContextParameters::default())
                .map_err(|e| model_error(&self.path, format!("cannot be loaded ({e})")))
        })
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

    /// Loads and warms up (see [`WhisperStt::warm_up`]) while the user speaks or at a
    /// session's start.
    fn prepare(&self) {
        self.warm_up();
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
        // A turn comes first: a warm-up still running stops at its next abort check. Its
        // token stays until its thread ends, so no second warm-up starts beside it.
        if let Some(warming) = &lock(&self.inner().warm).running {
            warming.cancel();
        }
        let this = self.clone();
        let threads = self.inner().threads;
        tokio::task::spawn_blocking(move || {
            let ctx = this.inner().context()?;
            let language = *lock(&this.inner().language);
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
                        this.inner().path.display()
                    ),
                ));
            };
            let text = decode(&ctx, &audio, language, threads, stop.as_ref());
            this.inner().ctx.touch(); // idle time counts from the end of a use, not its start
            text
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

/// One decode of `audio` (16 kHz mono, a second or more) on a fresh state; with `stop`, it
/// gives up (an error) once that is cancelled.
fn decode(
    ctx: &WhisperContext,
    audio: &[f32],
    language: &str,
    threads: i32,
    stop: Option<&CancellationToken>,
) -> Result<String, ProviderError> {
    let err = |e: whisper_rs::WhisperError| ProviderError::new(PROVIDER, ErrorKind::LocalEngine, e.to_string());
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
    if let Some(stop) = stop {
        // Not whisper-rs's `set_abort_callback_safe`: in 0.16 it hands whisper.cpp a
        // pointer to a boxed trait object while its trampoline reads it as the
        // closure itself. A plain function and a pointer to the token instead.
        // SAFETY: the token outlives `full` below, the only call that uses it.
        unsafe {
            p.set_abort_callback(Some(stop_requested));
            p.set_abort_callback_user_data(stop as *const CancellationToken as *mut std::ffi::c_void);
        }
    }
    state.full(p, audio).map_err(err)?;
    let text: Vec<String> = state.as_iter().map(|s| s.to_string()).collect();
    Ok(clean(&text.concat()))
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

    /// The last handle let go while the warm-up still runs stops it and waits for it:
    /// nothing of whisper.cpp runs on after the engine (a process exiting meanwhile
    /// crashed in ggml's torn-down statics).
    #[test]
    #[ignore = "needs the whisper model (scripts/test.sh)"]
    fn letting_the_engine_go_stops_and_waits_for_its_warm_up() {
        let dir = std::env::var_os("HARK_MODELS_DIR")
            .expect("HARK_MODELS_DIR is not set: run the tests through scripts/test.sh");
        let stt = WhisperStt::load(&Path::new(&dir).join("ggml-tiny.en.bin")).unwrap();
        let inner = Arc::downgrade(stt.inner());
        stt.warm_up();
        assert!(lock(&stt.inner().warm).running.is_some(), "a warm-up runs");
        drop(stt);
        assert!(
            inner.upgrade().is_none(),
            "the warm-up's thread still runs with the engine"
        );
    }

    #[test]
    fn a_missing_model_says_how_to_get_it() {
        let Err(e) = WhisperStt::load(Path::new("/nonexistent/ggml-tiny.en.bin")) else {
            panic!()
        };
        assert!(e.message.contains("scripts/fetch-models.sh"), "{e}");
    }
}
