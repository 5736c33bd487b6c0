//! Starting a session from the settings: the offline models fetched first (with a progress
//! bar whose totals are the manifest's), the model and the speech pipeline built through
//! the core's composition root (`Profile`), and the voice actor started. The status line
//! says what is being prepared at each step, and "ready" as soon as a turn can be taken.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hark_core::assembly::{Llm, Profile};
use hark_core::audio::input::Microphone;
use hark_core::audio::playback::{AudioOut, ClockOut, Speaker};
use hark_core::audio::turn::{SmartTurn, TurnModel};
use hark_core::audio::vad::{self, Silero, SpeechProbability};
use hark_core::error::ErrorKind;
use hark_core::models::{Manifest, ModelKind, ModelSpec, ModelStore, Phase, Progress};
use hark_core::secrets::Keychain;
use hark_core::session::ptt::Key;
use hark_core::session::voice::hands_free::{self, HandsFreeOptions};
use hark_core::session::voice::{self, ActorOptions, Voice, VoiceEvent};
use hark_core::session::ChatSession;
use hark_core::stt::Transcriber;
use hark_core::tts::system::SystemVoice;
use tauri::{AppHandle, Manager};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::error::{CmdResult, CommandError};
use crate::events::{AppEvent, Download, Stage, Status};
use crate::settings::AppSettings;
use crate::state::{lock, AppState, HandsFree, Listener, Runtime};

/// Starts the forwarder that takes every voice session's events to the windows and the
/// status line. Returns where the sessions send them.
pub fn forwarder(app: &AppHandle) -> mpsc::UnboundedSender<VoiceEvent> {
    let (tx, mut rx) = mpsc::unbounded_channel::<VoiceEvent>();
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        while let Some(e) = rx.recv().await {
            app.state::<AppState>().voice_event(e);
        }
    });
    tx
}

/// The offline models the settings need that are not downloaded yet.
pub fn missing_models(profile: &Profile, kc: &Keychain) -> Result<Vec<ModelSpec>, CommandError> {
    let manifest = Manifest::load()?;
    let store = ModelStore::default_dir();
    let mut want = profile.models_needed(kc, &manifest)?;
    // Nothing is fetched (a gigabyte) for engines this processor cannot run.
    if want.iter().any(|m| matches!(m.kind, ModelKind::Llm | ModelKind::Stt)) {
        hark_core::cpu::offline_engines_supported("offline")?;
    }
    want.retain(|m| !store.is_ready(m));
    Ok(want)
}

/// The kinds of models being fetched, each once, for the window to name in its language:
/// "chat", "speech", "voice", "memory", "hands-free".
fn kinds(models: &[ModelSpec]) -> Vec<String> {
    models
        .iter()
        .map(|m| match m.kind {
            ModelKind::Llm => "chat",
            ModelKind::Stt => "speech",
            ModelKind::Tts | ModelKind::Runtime => "voice",
            ModelKind::Embed => "memory",
            ModelKind::Vad | ModelKind::Turn => "hands-free",
        })
        .fold(Vec::new(), |mut kinds: Vec<String>, k| {
            if !kinds.iter().any(|seen| seen == k) {
                kinds.push(k.to_string());
            }
            kinds
        })
}

/// Words for what is being fetched, for the log and the app's (English) errors: "the
/// offline speech model (78 MB)".
fn describe(models: &[ModelSpec]) -> String {
    let kinds = kinds(models);
    let total: u64 = models.iter().map(ModelSpec::download_size).sum();
    let what = match kinds.as_slice() {
        [one] => format!("the offline {one} model"),
        _ => format!("the offline {} models", kinds.join(" and ")),
    };
    format!("{what} ({:.0} MB)", total as f64 / 1e6)
}

/// Turns per-model progress into one bar over every model, with speed and time left.
struct Meter {
    kinds: Vec<String>,
    /// Bytes of the models finished before the current one.
    before: u64,
    total: u64,
    current: String,
    /// (when, bytes) a few seconds back, for the speed.
    window: std::collections::VecDeque<(Instant, u64)>,
    last_sent: Option<Instant>,
}

impl Meter {
    fn update(&mut self, p: &Progress, labels: &[ModelSpec]) -> Option<Download> {
        if p.model != self.current {
            if let Some(prev) = labels.iter().find(|m| m.id == self.current) {
                self.before += prev.download_size();
            }
            self.current = p.model.clone();
        }
        // Checking and assembling come after a model's download: its bytes stay counted, so
        // the figure never goes back (it used to drop to the models before it, and the speed
        // below then subtracted a larger count from a smaller one: a panic in debug builds
        // that ended the download task with the bar stuck).
        let this_model = labels
            .iter()
            .find(|m| m.id == p.model)
            .map_or(0, ModelSpec::download_size);
        let done = self.before
            + if p.phase == Phase::Downloading {
                p.done
            } else {
                this_model
            };
        let now = Instant::now();
        self.window.push_back((now, done));
        while self
            .window
            .front()
            .is_some_and(|(t, _)| now.duration_since(*t) > Duration::from_secs(5))
        {
            self.window.pop_front();
        }
        // At most ten updates a second, and always the phase changes and the end.
        let due = self
            .last_sent
            .is_none_or(|t| now.duration_since(t) >= Duration::from_millis(100));
        if !due && p.phase == Phase::Downloading && p.done < p.total {
            return None;
        }
        self.last_sent = Some(now);
        let speed = match (self.window.front(), self.window.back()) {
            (Some((t0, b0)), Some((t1, b1))) if t1.duration_since(*t0) >= Duration::from_millis(500) => {
                Some((b1.saturating_sub(*b0) as f64 / t1.duration_since(*t0).as_secs_f64()) as u64)
            }
            _ => None,
        };
        let spec = labels.iter().find(|m| m.id == p.model);
        Some(Download {
            kinds: self.kinds.clone(),
            model: p.model.clone(),
            label: spec.map(|s| s.label.clone()).unwrap_or_default(),
            phase: p.phase,
            done: done.min(self.total),
            total: self.total,
            bytes_per_sec: speed,
            eta_secs: speed.filter(|s| *s > 0).map(|s| self.total.saturating_sub(done) / s),
        })
    }
}

/// Fetches the models the settings need, reporting progress to the windows. Cancelling
/// stops it (the parts already fetched stay for the next try, which resumes).
pub async fn fetch_models(app: &AppHandle, profile: &Profile) -> CmdResult<()> {
    let missing = missing_models(profile, &app.state::<AppState>().keychain)?;
    fetch_missing(app, missing).await
}

/// Downloads `missing` (if anything is), the status line saying what.
async fn fetch_missing(app: &AppHandle, missing: Vec<ModelSpec>) -> CmdResult<()> {
    if missing.is_empty() {
        return Ok(());
    }
    let what = describe(&missing);
    app.state::<AppState>().set_status(Status::Preparing {
        stage: Stage::Download {
            kinds: kinds(&missing),
            bytes: missing.iter().map(ModelSpec::download_size).sum(),
        },
    });
    download(app, missing, what).await
}

/// Fetches models with one progress bar over all of them (the `download` events); pausing
/// cancels it and keeps what was fetched for the next try.
pub async fn download(app: &AppHandle, missing: Vec<ModelSpec>, what: String) -> CmdResult<()> {
    let state = app.state::<AppState>();
    let cancel = CancellationToken::new();
    tracing::info!("downloading {what}");
    *lock(&state.download) = Some(cancel.clone());
    let meter = std::sync::Mutex::new(Meter {
        kinds: kinds(&missing),
        before: 0,
        total: missing.iter().map(ModelSpec::download_size).sum(),
        current: missing[0].id.clone(),
        window: Default::default(),
        last_sent: None,
    });
    let report = |p: Progress| {
        if let Some(d) = lock(&meter).update(&p, &missing) {
            state.emit(AppEvent::Download { progress: Some(d) });
        }
    };
    let store = ModelStore::default_dir();
    let result = async {
        for spec in &missing {
            store.ensure(spec, &report).await?;
        }
        Ok::<_, hark_core::models::ModelError>(())
    };
    let outcome = tokio::select! {
        r = result => r.map_err(CommandError::from),
        _ = cancel.cancelled() => Err(CommandError::new(ErrorKind::NotReady, format!("the download of {what} is paused"))
            .with_next_step("resume it when you are ready: it continues where it stopped")),
    };
    *lock(&state.download) = None;
    state.emit(AppEvent::Download { progress: None });
    tracing::info!(
        "download of {what} ended: {:?}",
        outcome.as_ref().err().map(|e| &e.message)
    );
    outcome
}

/// The speech pipeline. What cannot be set up (the speech engine, the speaker) is replaced
/// by a stand-in that explains the problem when used, and the problem is returned for a
/// banner; the conversation itself keeps working.
fn voice(s: &AppSettings, kc: &Keychain) -> (Voice, Vec<CommandError>) {
    let mut problems = Vec::new();
    let stt: Arc<dyn Transcriber> = match s.profile.transcriber(kc) {
        Ok(t) => t,
        Err(e) => {
            problems.push(CommandError::from(e.clone()));
            Arc::new(unavailable::UnavailableStt(e))
        }
    };
    let tts = s.profile.synthesizer(kc).unwrap_or_else(|e| {
        problems.push(e.into());
        Arc::new(SystemVoice::default())
    });
    let out: Arc<dyn AudioOut> = match Speaker::open(s.output_device.as_deref()) {
        Ok(sp) => Arc::new(sp),
        Err(e) => {
            problems.push(CommandError::from(e).with_next_step(
                "connect a speaker or headphones, then choose it in Settings → Speech; replies are shown meanwhile",
            ));
            // Replies still run (text, history); they are just not heard.
            Arc::new(ClockOut::new())
        }
    };
    (Voice { stt, tts, out }, problems)
}

/// The natural voice chosen but the OS voice speaking: why, as a notice (a banner that is
/// no alarm, kept for a window that subscribes later, as problems are), so the fallback is
/// never silent (issue 22).
fn voice_fallback(profile: &Profile) -> Option<CommandError> {
    let manifest = Manifest::load().ok()?;
    let why = profile
        .voice_in_effect(&manifest, hark_core::tts::espeak::find().as_deref())
        .fallback?;
    Some(CommandError {
        kind: ErrorKind::NotReady,
        title: "The natural voice".into(),
        message: why.to_string(),
        next_step: String::new(),
        detail: None,
    })
}

/// Recall finds meaning (issue 24): the embedding model is loaded once for the app's
/// store, and every message and fact not embedded yet is embedded in the background. A
/// manifest that pins no embedding model (an organisation's own) leaves recall to the
/// words, quietly; a pinned model that will not load says so once, in a notice.
async fn memory(state: &AppState, store: &Arc<hark_core::store::Store>) {
    use hark_core::store::embed::{self, Embedder};
    use hark_core::store::index::Indexer;
    if store.meaning().is_some() {
        return;
    }
    let Ok(manifest) = Manifest::load() else { return };
    let Ok(files) = embed::files(&manifest, &ModelStore::default_dir()) else {
        tracing::info!("the manifest pins no embedding model: memory finds words only");
        return;
    };
    // On a thread of its own at the lowest priority: at a session's start the microphone,
    // the speech model and the voice come first (loaded beside them at normal priority,
    // it cost a test's first spoken words on 2 cores: "My name is Sam." heard as "… Erm").
    let (tx, rx) = tokio::sync::oneshot::channel();
    let spawned = std::thread::Builder::new()
        .name("hark-memory-load".into())
        .spawn(move || {
            hark_core::cpu::lower_this_threads_priority();
            let _ = tx.send(Embedder::load(embed::MODEL, &files).map_err(|e| e.to_string()));
        });
    let loaded = match spawned {
        Ok(_) => rx.await.unwrap_or_else(|_| Err("the loading thread ended".into())),
        Err(e) => Err(e.to_string()),
    };
    match loaded {
        Ok(model) => {
            let model = Arc::new(model);
            store.set_meaning(Some(model.clone()));
            match Indexer::start(store.clone(), model) {
                Ok(indexer) => *lock(&state.memory) = Some(indexer),
                Err(e) => tracing::warn!("the memory's indexing did not start: {e}"),
            }
        }
        Err(why) => {
            tracing::warn!("memory finds words only: {why}");
            if !state.memory_notice.swap(true, Ordering::SeqCst) {
                state.problem(CommandError {
                    kind: ErrorKind::NotReady,
                    title: "Memory".into(),
                    message: format!("Memory finds words only, not meaning: {why}"),
                    next_step: "Settings → Offline models fetches the embedding model again".into(),
                    detail: None,
                });
            }
        }
    }
}

/// What idle means now: ready (for the key, or listening hands-free), or no microphone.
async fn idle_status(state: &AppState, s: &AppSettings) -> Status {
    match microphone(s).await {
        Status::Ready => state.ready(),
        missing => missing,
    }
}

/// Whether a microphone is there to listen with (the status says so when not). Listing
/// devices probes each (ALSA): a blocking thread's work.
async fn microphone(s: &AppSettings) -> Status {
    let wanted = s.input_device.clone();
    let listed = tokio::task::spawn_blocking(|| hark_core::audio::list_devices(true))
        .await
        .unwrap_or_else(|e| Err(hark_core::audio::AudioError::input("default", e)));
    match listed {
        Ok(list) if list.is_empty() => Status::NoMicrophone {
            message: "no microphone found".into(),
        },
        Ok(list) => match &wanted {
            Some(d) if !list.iter().any(|x| &x.id == d || &x.name == d) => Status::NoMicrophone {
                message: format!("the microphone {d:?} is not connected"),
            },
            _ => Status::Ready,
        },
        Err(e) => Status::NoMicrophone { message: e.to_string() },
    }
}

/// Stops the running session (if any) and starts `session` (`None`: a new one), fetching
/// the models the settings need first. The status line says what is prepared; problems
/// go to banners; the window stays responsive throughout.
pub async fn switch(app: &AppHandle, session: Option<String>) -> CmdResult<String> {
    let state = app.state::<AppState>();
    let store = state.store()?;
    let settings = state.settings();
    state.clear_problems();
    if let Err(e) = fetch_models(app, &settings.profile).await {
        state.set_status(Status::Unavailable { problem: e.clone() });
        return Err(e);
    }
    let mut rt = state.runtime.lock().await;
    *lock(&state.voice) = None;
    *lock(&state.hands_free) = None;
    if let Some(old) = rt.take() {
        let _ = old.listener.shutdown().await;
    }
    let kc = &state.keychain;
    if settings.profile.llm(kc) == Llm::Local {
        state.set_status(Status::Preparing {
            stage: Stage::LocalModel,
        });
    }
    let started = async {
        let manifest = Manifest::load()?;
        let chat = settings.profile.chat(kc, &manifest, &ModelStore::default_dir()).await?;
        let (mut chat, local) = settings.profile.open_session(&store, chat, session.as_deref())?;
        // The user's tool servers go beside the built-in tools, where the model gets tools.
        if let Some(tools) = app.try_state::<crate::tool_servers::Tools>() {
            if !chat.tools().is_empty() {
                let toolbox = chat.tools().clone().with_source(tools.servers.clone());
                chat.set_tools(toolbox);
            }
        }
        Ok::<_, CommandError>((chat, local))
    };
    let (chat, local) = match started.await {
        Ok(x) => x,
        Err(e) => {
            state.set_status(Status::Unavailable { problem: e.clone() });
            return Err(e);
        }
    };
    let (voice, problems) = voice(&settings, kc);
    for p in problems {
        state.problem(p);
    }
    if let Some(notice) = voice_fallback(&settings.profile) {
        state.problem(notice);
    }
    // Warm up in the background, so the first turn is not slower than the next: the
    // speech model loads, and a local model evaluates the system prompt into its cache.
    voice.stt.prepare();
    chat.prefill();
    let id = chat.id().to_string();
    let options = ActorOptions {
        mode: settings.ptt_mode,
        input_device: settings.input_device.clone(),
        input: Arc::new(Microphone),
        cues: settings.sound_cues,
        pipeline: Default::default(),
        // The tool servers' consent questions are spoken, and answered by the next press
        // (hands-free: by the next utterance).
        questions: app
            .try_state::<crate::tool_servers::Tools>()
            .map(|t| t.questions.clone()),
    };
    let listener = listen(app, chat, &voice, &options, &settings).await;
    *rt = Some(Runtime {
        session_id: id.clone(),
        listener,
        voice,
        options,
        _local: local,
    });
    drop(rt);
    {
        let mut s = lock(&state.settings);
        s.last_session = Some(id.clone());
        if let Err(e) = crate::settings::save(&s) {
            drop(s);
            state.problem(CommandError::new(ErrorKind::Settings, e.to_string()));
        }
    }
    state.set_status(state.ready());
    let idle = idle_status(&state, &settings).await;
    if let Status::NoMicrophone { message } = &idle {
        state.problem(CommandError::new(ErrorKind::Microphone, message.clone()));
    }
    state.set_idle(idle);
    state.emit(AppEvent::SessionStarted { session_id: id.clone() });
    if state.pending_toggle.swap(false, Ordering::SeqCst) {
        let _ = state.key(Key::Toggle);
    }
    // The embedding model loads after the session is up: the first turns recall by words
    // until it has (a fraction of a second).
    if settings.profile.recall {
        let app = app.clone();
        tauri::async_runtime::spawn(async move {
            memory(&app.state::<AppState>(), &store).await;
        });
    }
    Ok(id)
}

/// Starts the voice actor on `chat`: hands-free when the settings say so (issue 23), else
/// behind the key. Hands-free that cannot start (its model cannot be fetched or loaded, the
/// microphone will not open) says why in a banner and falls back to the key, on the same
/// conversation. Sets the handle the shortcut and the window use, and conversation mode's
/// state.
async fn listen(
    app: &AppHandle,
    mut chat: ChatSession,
    voice: &Voice,
    options: &ActorOptions,
    settings: &AppSettings,
) -> Listener {
    let state = app.state::<AppState>();
    let events = app.state::<Forwarder>().0.clone();
    if settings.hands_free {
        match detector(app).await {
            Ok((vad, turn)) => {
                let hands_free = HandsFreeOptions {
                    echo_cancellation: settings.echo_cancellation,
                    ..HandsFreeOptions::default()
                };
                match hands_free::spawn(
                    chat,
                    voice.clone(),
                    options.clone(),
                    vad,
                    turn,
                    hands_free,
                    events.clone(),
                ) {
                    Ok(session) => {
                        tracing::info!(
                            full_duplex = session.full_duplex(),
                            "listening hands-free on {}",
                            session.device()
                        );
                        *lock(&state.hands_free) = Some(HandsFree {
                            full_duplex: session.full_duplex(),
                            mute: session.mute().clone(),
                        });
                        *lock(&state.voice) = Some(session.handle().clone());
                        state.emit(AppEvent::HandsFree { on: true });
                        return Listener::HandsFree(session);
                    }
                    Err(not) => {
                        state.problem(
                            CommandError::from(not.error)
                                .with_next_step("conversation mode is off; check the microphone in Settings → Speech"),
                        );
                        chat = *not.chat;
                    }
                }
            }
            Err(e) => state.problem(e),
        }
        // The switch shows the truth: off, until the user turns it on again.
        let mut s = lock(&state.settings);
        s.hands_free = false;
        if let Err(e) = crate::settings::save(&s) {
            tracing::warn!("{e}");
        }
    }
    let session = voice::spawn(chat, voice.clone(), options.clone(), events);
    *lock(&state.voice) = Some(session.handle().clone());
    state.emit(AppEvent::HandsFree { on: false });
    Listener::PushToTalk(session)
}

/// Hands-free listening's models, Silero VAD and Smart Turn: fetched first if they are not
/// here yet (with the download bar; Silero's entry requires Smart Turn) and loaded off the
/// async threads (they load ONNX Runtime). Smart Turn that does not load is said in the
/// log, and silence alone ends turns; the detector is required.
async fn detector(app: &AppHandle) -> CmdResult<(Box<dyn SpeechProbability>, Option<Box<dyn TurnModel>>)> {
    let manifest = Manifest::load()?;
    let store = ModelStore::default_dir();
    let missing: Vec<ModelSpec> = manifest
        .with_requirements(vad::MODEL_ID)?
        .into_iter()
        .filter(|m| !store.is_ready(m))
        .cloned()
        .collect();
    fetch_missing(app, missing).await?;
    let files = Profile::default().vad_files(&manifest, &store)?;
    let turn_files = Profile::default().turn_files(&manifest, &store)?;
    let (vad, turn) = tokio::task::spawn_blocking(move || (Silero::load(&files), SmartTurn::load(&turn_files)))
        .await
        .map_err(|e| {
            CommandError::new(
                ErrorKind::LocalEngine,
                format!("the hands-free model did not load: {e}"),
            )
        })?;
    let vad = vad.map_err(|e| {
        CommandError::from(e).with_next_step("conversation mode is off; Settings → Offline models fetches it again")
    })?;
    let turn: Option<Box<dyn TurnModel>> = match turn {
        Ok(t) => Some(Box::new(t)),
        Err(e) => {
            tracing::warn!("the end-of-turn model did not load ({e}); silence alone ends turns");
            None
        }
    };
    Ok((Box::new(vad), turn))
}

/// Turns conversation mode on or off on the running conversation (the window's switch,
/// the tray, the shortcut), and saves the choice. With no conversation open yet it is only
/// saved: the session starts in that mode.
pub async fn set_hands_free(app: &AppHandle, on: bool) -> CmdResult<()> {
    let state = app.state::<AppState>();
    {
        let mut s = lock(&state.settings);
        s.hands_free = on;
        crate::settings::save(&s).map_err(|e| CommandError::new(ErrorKind::Settings, e.to_string()))?;
    }
    let settings = state.settings();
    let mut rt = state.runtime.lock().await;
    let Some(Runtime {
        session_id,
        listener,
        voice,
        options,
        _local,
    }) = rt.take()
    else {
        return Ok(());
    };
    *lock(&state.voice) = None;
    *lock(&state.hands_free) = None;
    let chat = match listener.shutdown().await {
        Ok(chat) => chat,
        Err(e) => {
            // The actor had failed: start the conversation afresh from the store.
            tracing::warn!("the voice session had stopped ({e}); starting it again");
            drop(rt);
            drop(_local);
            switch(app, Some(session_id)).await?;
            state.show_status_again();
            return Ok(());
        }
    };
    let listener = listen(app, chat, &voice, &options, &settings).await;
    *rt = Some(Runtime {
        session_id,
        listener,
        voice,
        options,
        _local,
    });
    drop(rt);
    // No turn is under way in the new actor: the status is its idle one at once.
    state.idle_now(idle_status(&state, &settings).await);
    state.show_status_again();
    Ok(())
}

/// [`set_hands_free`] from a place that cannot wait (the tray, the shortcut); a failure is
/// a banner.
pub fn spawn_hands_free(app: &AppHandle, on: bool) {
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        if let Err(e) = set_hands_free(&app, on).await {
            app.state::<AppState>().problem(e);
        }
    });
}

/// Where the voice sessions send their events (managed state).
pub struct Forwarder(pub mpsc::UnboundedSender<VoiceEvent>);

/// A transcriber stand-in for when speech-to-text could not be set up: it says why when
/// used.
mod unavailable {
    use hark_core::provider::ProviderError;
    use hark_core::stt::Transcriber;

    pub struct UnavailableStt(pub ProviderError);

    #[async_trait::async_trait]
    impl Transcriber for UnavailableStt {
        fn name(&self) -> &'static str {
            "unavailable"
        }
        async fn transcribe(&self, _: &[f32]) -> Result<String, ProviderError> {
            Err(self.0.clone())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The figure never goes back when a model's download turns to checking and assembling,
    /// and the speed over that turn does not underflow (it panicked in debug builds, which
    /// ended the download task with the bar stuck at the last figure).
    #[test]
    fn the_download_figure_never_goes_back_when_a_model_is_assembled() {
        let models: Vec<ModelSpec> = Manifest::builtin().models.into_iter().filter(|m| m.default).collect();
        let first = &models[0];
        let size = first.download_size();
        let mut meter = Meter {
            kinds: vec!["chat".into()],
            before: 0,
            total: models.iter().map(ModelSpec::download_size).sum(),
            current: first.id.clone(),
            window: Default::default(),
            last_sent: None,
        };
        let at = |phase, done, total| Progress {
            model: first.id.clone(),
            phase,
            done,
            total,
        };
        let mut seen = Vec::new();
        seen.extend(meter.update(&at(Phase::Downloading, size / 2, size), &models));
        std::thread::sleep(Duration::from_millis(600));
        seen.extend(meter.update(&at(Phase::Downloading, size, size), &models));
        seen.extend(meter.update(&at(Phase::Assembling, 0, 1), &models));
        std::thread::sleep(Duration::from_millis(600));
        seen.extend(meter.update(&at(Phase::Assembling, 1, 1), &models));
        let figures: Vec<u64> = seen.iter().map(|d| d.done).collect();
        assert_eq!(figures.len(), 4, "{figures:?}");
        assert!(figures.windows(2).all(|w| w[1] >= w[0]), "{figures:?}");
        assert_eq!(*figures.last().unwrap(), size);
    }
}
