//! What the commands, the tray and the shortcut share: the store, the settings, the running
//! session, the windows' channels, and the one status line.
//!
//! Locks: std `Mutex` for plain values that are read or replaced whole and never held
//! across an await; a tokio `Mutex` for the runtime, because switching sessions awaits the
//! old actor's end.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use hark_core::conversation::PanelView;
use hark_core::error::ErrorKind;
use hark_core::secrets::Keychain;
use hark_core::session::ptt::Key;
use hark_core::session::voice::hands_free::{HandsFreeSession, Mute};
use hark_core::session::voice::{ActorOptions, Voice, VoiceEvent, VoiceHandle, VoiceSession, VoiceStopped};
use hark_core::session::ChatSession;
use hark_core::store::Store;
use tauri::ipc::Channel;
use tokio_util::sync::CancellationToken;

use crate::error::{CmdResult, CommandError};
use crate::events::{AppEvent, Download, Numbered, Status};
use crate::logging::Logs;
use crate::settings::AppSettings;

pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // The guarded values are plain data replaced whole; a poisoned lock still holds a
    // consistent value.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// What a window needs when it opens (or reopens) to show the truth without waiting for
/// events: kept up to date as events pass.
#[derive(Debug, Clone, Default)]
pub struct Latest {
    /// The number of the last event sent (0: none yet).
    pub seq: u64,
    pub panel: Option<Box<PanelView>>,
    pub download: Option<Download>,
    /// Problems to show as banners (setup problems: no speaker, shortcut taken).
    pub problems: Vec<CommandError>,
}

/// A start-up problem Hark cannot run with; the window offers to start fresh.
#[derive(Debug, Clone)]
pub enum Fatal {
    /// The database at this path cannot be opened (unreadable, corrupt, newer).
    Database(std::path::PathBuf),
    /// The settings file at this path cannot be read.
    Settings(std::path::PathBuf),
}

/// A running session: the voice actor (behind the key or hands-free), what it was started
/// with, and the offline model's server when the session uses it (stopped when the runtime
/// is dropped). `runtime` starts it; it is kept here.
pub struct Runtime {
    pub session_id: String,
    pub listener: Listener,
    /// The speech pipeline and the actor's options, kept so that conversation mode can be
    /// turned on or off on the same conversation without building them again.
    pub voice: Voice,
    pub options: ActorOptions,
    pub _local: Option<hark_core::local::LocalLlm>,
}

/// How the session hears the user: push-to-talk, or hands-free (issue 23; the microphone
/// stays open only while this is the one).
pub enum Listener {
    PushToTalk(VoiceSession),
    HandsFree(HandsFreeSession),
}

impl Listener {
    /// Ends the actor (and closes an open microphone); the conversation comes back.
    pub async fn shutdown(self) -> Result<ChatSession, VoiceStopped> {
        match self {
            Listener::PushToTalk(s) => s.shutdown().await,
            Listener::HandsFree(s) => s.shutdown().await,
        }
    }
}

/// Conversation mode as it runs: whether Hark listens while it speaks, and the mute.
#[derive(Debug, Clone)]
pub struct HandsFree {
    pub full_duplex: bool,
    pub mute: Mute,
}

pub struct AppState {
    /// The fatal start-up problem that stands, if any.
    pub fatal: Mutex<Option<Fatal>>,
    /// `None` while a fatal start-up problem (an unreadable database) stands.
    pub store: Mutex<Option<Arc<Store>>>,
    pub keychain: Keychain,
    pub settings: Mutex<AppSettings>,
    /// The running session; a tokio Mutex because switching sessions awaits the old actor.
    pub runtime: tokio::sync::Mutex<Option<Runtime>>,
    /// The running session's handle, for the shortcut, the tray and `ptt` (which must not
    /// wait behind a session switch).
    pub voice: Mutex<Option<VoiceHandle>>,
    /// Conversation mode while it runs (for the status line, the mute and the key, which
    /// must not wait behind a session switch either).
    pub hands_free: Mutex<Option<HandsFree>>,
    /// Each window's channel, by window label.
    channels: Mutex<HashMap<String, Channel<Numbered>>>,
    status: Mutex<Status>,
    /// What "idle" means now: ready, or no microphone.
    idle: Mutex<Status>,
    latest: Mutex<Latest>,
    /// A `--toggle` that came before the session could take it.
    pub pending_toggle: AtomicBool,
    /// Cancels the model download in progress.
    pub download: Mutex<Option<CancellationToken>>,
    /// The memory's background indexing (issue 24), once the embedding model is loaded.
    pub memory: Mutex<Option<hark_core::store::index::Indexer>>,
    /// The notice that memory finds words only was shown (it is shown once).
    pub memory_notice: AtomicBool,
    /// The microphone check of the introduction, while it runs.
    pub mic_check: Mutex<Option<CancellationToken>>,
    pub logs: Logs,
    /// The push-to-talk keys the desktop assigned through its GlobalShortcuts portal (issue
    /// 48), as it describes them: the window shows these rather than the setting's.
    pub assigned_shortcut: Mutex<Option<String>>,
    /// The desktop gives Hark no global shortcut, and what to bind instead (issue 48).
    pub no_global_shortcuts: Mutex<Option<crate::events::NoGlobalShortcuts>>,
    /// Changes of status go to the tray (and the overlay's visibility) through this.
    on_status: Box<dyn Fn(&Status) + Send + Sync>,
}

impl AppState {
    pub fn new(
        store: Option<Arc<Store>>,
        settings: AppSettings,
        status: Status,
        logs: Logs,
        on_status: Box<dyn Fn(&Status) + Send + Sync>,
    ) -> Self {
        Self {
            fatal: Mutex::new(None),
            store: Mutex::new(store),
            keychain: Keychain::default(),
            settings: Mutex::new(settings),
            runtime: tokio::sync::Mutex::new(None),
            voice: Mutex::new(None),
            hands_free: Mutex::new(None),
            channels: Mutex::new(HashMap::new()),
            status: Mutex::new(status),
            idle: Mutex::new(Status::Ready),
            latest: Mutex::new(Latest::default()),
            pending_toggle: AtomicBool::new(false),
            download: Mutex::new(None),
            memory: Mutex::new(None),
            memory_notice: AtomicBool::new(false),
            mic_check: Mutex::new(None),
            logs,
            assigned_shortcut: Mutex::new(None),
            no_global_shortcuts: Mutex::new(None),
            on_status,
        }
    }

    /// The store, or the fatal problem that stands instead of it.
    pub fn store(&self) -> CmdResult<Arc<Store>> {
        lock(&self.store).clone().ok_or_else(|| {
            CommandError::new(ErrorKind::Storage, "the conversation database could not be opened")
                .with_next_step("start with a fresh database (the window shows how)")
        })
    }

    pub fn settings(&self) -> AppSettings {
        lock(&self.settings).clone()
    }

    /// The UI language in effect (the setting, else the system's).
    pub fn ui_language(&self) -> &'static str {
        crate::i18n::resolve(lock(&self.settings).ui_language.as_deref())
    }

    pub fn status(&self) -> Status {
        lock(&self.status).clone()
    }

    pub fn latest(&self) -> Latest {
        lock(&self.latest).clone()
    }

    /// A window listens here from now on (replacing its earlier channel).
    pub fn subscribe(&self, window: &str, channel: Channel<Numbered>) {
        lock(&self.channels).insert(window.to_string(), channel);
    }

    /// Sends an event to every window, keeping what a window opening later must know.
    pub fn emit(&self, event: AppEvent) {
        let mut latest = lock(&self.latest);
        match &event {
            AppEvent::Voice {
                event: VoiceEvent::ContextChanged { panel },
            } => latest.panel = Some(panel.clone()),
            AppEvent::Download { progress } => latest.download = progress.clone(),
            AppEvent::Problem { problem } => {
                latest.problems.retain(|p| p != problem);
                latest.problems.push(problem.clone());
            }
            _ => {}
        }
        latest.seq += 1;
        let numbered = Numbered { seq: latest.seq, event };
        // Sent while numbered: every window gets the events in the order of their numbers.
        let channels = lock(&self.channels);
        for ch in channels.values() {
            let _ = ch.send(numbered.clone());
        }
    }

    /// Shows a problem as a banner (and logs it).
    pub fn problem(&self, problem: CommandError) {
        tracing::warn!(kind = %problem.kind, detail = ?problem.detail, "{}", problem.message);
        self.emit(AppEvent::Problem { problem });
    }

    /// Forgets the setup problems (a new session brings its own).
    pub fn clear_problems(&self) {
        lock(&self.latest).problems.clear();
    }

    /// Sets the status line (the tray and the overlay follow).
    pub fn set_status(&self, status: Status) {
        {
            let mut s = lock(&self.status);
            if *s == status {
                return;
            }
            *s = status.clone();
        }
        (self.on_status)(&status);
        self.emit(AppEvent::Status { status });
    }

    /// Shows the status again where it is shown outside the windows (the tray, with its
    /// conversation-mode switches, and the overlay): after a change those follow that may
    /// leave the status as it was (conversation mode turned on or off, muted).
    pub fn show_status_again(&self) {
        (self.on_status)(&self.status());
    }

    /// What idle means from now on (ready, listening hands-free, or no microphone); applied
    /// at once when idle.
    pub fn set_idle(&self, idle: Status) {
        *lock(&self.idle) = idle.clone();
        let now = self.status();
        if matches!(
            now,
            Status::Ready | Status::HandsFree { .. } | Status::NoMicrophone { .. }
        ) {
            self.set_status(idle);
        }
    }

    /// The session is idle now, whatever the status said (a new actor has no turn under
    /// way): `idle` is the status and what idle means.
    pub fn idle_now(&self, idle: Status) {
        *lock(&self.idle) = idle.clone();
        self.set_status(idle);
    }

    /// Idle with a microphone: ready for the key, or listening hands-free (and whether
    /// muted).
    pub fn ready(&self) -> Status {
        match &*lock(&self.hands_free) {
            Some(h) => Status::HandsFree {
                full_duplex: h.full_duplex,
                muted: h.mute.is_muted(),
            },
            None => Status::Ready,
        }
    }

    /// Pauses or resumes hands-free listening (the mute shortcut, the tray, the window).
    pub fn set_muted(&self, muted: bool) -> CmdResult<()> {
        let Some(h) = lock(&self.hands_free).clone() else {
            return Err(CommandError::new(
                ErrorKind::NotReady,
                "conversation mode is off: there is nothing to mute",
            )
            .with_next_step("turn conversation mode on first"));
        };
        h.mute.set(muted);
        tracing::info!(muted, "hands-free listening");
        self.set_idle(self.ready());
        Ok(())
    }

    /// Mutes hands-free listening if it listens, unmutes it if muted (the shortcut, the
    /// tray).
    pub fn toggle_muted(&self) -> CmdResult<()> {
        let muted = matches!(self.ready(), Status::HandsFree { muted: true, .. });
        self.set_muted(!muted)
    }

    /// A voice event: to the windows, and into the status line.
    pub fn voice_event(&self, event: VoiceEvent) {
        // The turn's course in the debug log (never what was said: the log is no transcript).
        match &event {
            VoiceEvent::SpeechStarted
            | VoiceEvent::SpeechEnded
            | VoiceEvent::ListeningStarted { .. }
            | VoiceEvent::ThinkingStarted
            | VoiceEvent::SpeakingStarted
            | VoiceEvent::ReplyPaused
            | VoiceEvent::ReplyResumed { .. }
            | VoiceEvent::Idle => tracing::debug!(?event, "voice"),
            VoiceEvent::NoTurn { reason } => tracing::debug!(?reason, "voice: no turn"),
            VoiceEvent::TranscriptFinal { text } => {
                tracing::debug!(words = text.split_whitespace().count(), "voice: transcript")
            }
            VoiceEvent::ReplyInterrupted { heard_ms, .. } => tracing::debug!(heard_ms, "voice: reply interrupted"),
            _ => {}
        }
        if let VoiceEvent::ListeningStarted { .. } = event {
            // A microphone opened: idle is ready (or hands-free) again.
            *lock(&self.idle) = self.ready();
        }
        if let VoiceEvent::Failed { kind, message, .. } = &event {
            if *kind == ErrorKind::Microphone {
                *lock(&self.idle) = Status::NoMicrophone {
                    message: message.clone(),
                };
            }
        }
        let idle = lock(&self.idle).clone();
        let next = self.status().after(&event, &idle);
        self.emit(AppEvent::Voice { event });
        if let Some(s) = next {
            self.set_status(s);
        }
    }

    /// A push-to-talk key event from the button, the shortcut or the tray. With no session
    /// yet (Hark is still preparing) the window says what is being prepared, in a notice
    /// rather than an error: nothing is silently dropped.
    pub fn key(&self, key: Key) -> CmdResult<()> {
        if lock(&self.hands_free).is_some() {
            // Hands-free, the detector holds the actor's key: a press of the user's own
            // would leave the two out of step. Saying so beats doing nothing.
            if key == Key::Release {
                return Ok(());
            }
            let notice = CommandError::new(
                ErrorKind::NotReady,
                "conversation mode is on: just speak, Hark hears you without the key",
            )
            .with_next_step("turn conversation mode off to push to talk");
            self.emit(AppEvent::Problem {
                problem: notice.clone(),
            });
            return Err(notice);
        }
        let handle = lock(&self.voice).clone();
        match handle {
            Some(h) if self.status().can_listen() => h
                .key(key)
                .map_err(|e| CommandError::new(ErrorKind::NotReady, e.to_string())),
            _ => {
                // In English, as the app's other errors for now.
                let what = match self.status() {
                    s @ (Status::Preparing { .. } | Status::Waiting) => s.words("en"),
                    Status::Unavailable { problem } | Status::Fatal { problem, .. } => return Err(problem),
                    _ => "the session".to_string(),
                };
                if key == Key::Release {
                    return Ok(());
                }
                let notice = CommandError::new(ErrorKind::NotReady, format!("Hark is not ready yet: {what}"));
                self.emit(AppEvent::Problem {
                    problem: notice.clone(),
                });
                Err(notice)
            }
        }
    }

    /// A `--toggle` from a second launch: pressed now if a session can take it, else as
    /// soon as one can.
    pub fn toggle(&self) {
        if lock(&self.voice).is_some() && self.status().can_listen() {
            let _ = self.key(Key::Toggle);
        } else {
            self.pending_toggle.store(true, Ordering::SeqCst);
        }
    }
}
