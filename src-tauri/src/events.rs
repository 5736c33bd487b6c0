//! What the app tells its windows, over each window's `Channel`, and the one true status
//! line: [`Status`] is derived here, in Rust, from what the voice session and the start-up
//! report, so the window, the tray and the overlay can never disagree about it.

use hark_core::error::ErrorKind;
use hark_core::models::Phase;
use hark_core::session::voice::VoiceEvent;
use serde::Serialize;

use crate::error::CommandError;

/// Where Hark is. The state line shows it, the tray's icon and tooltip follow it.
#[derive(Debug, Clone, PartialEq, Serialize, specta::Type)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Status {
    /// Nothing is set up yet: the first-run introduction asks how Hark should think (and
    /// nothing is downloaded before the user has chosen).
    Waiting,
    /// Something is being prepared; a turn cannot be taken yet.
    Preparing {
        stage: Stage,
    },
    /// A turn can be taken: press to talk.
    Ready,
    /// Conversation mode (issue 23): the microphone is open and Hark hears where the user
    /// starts speaking; half-duplex (`full_duplex: false`) it does not listen while it
    /// speaks. Muted, it hears nothing until unmuted.
    HandsFree {
        full_duplex: bool,
        muted: bool,
    },
    Listening,
    Thinking,
    Speaking,
    /// No microphone to listen with; everything else works.
    NoMicrophone {
        message: String,
    },
    /// A turn cannot be taken until the user acts (a download failed or was paused, the
    /// offline engine did not start); the problem says what to do.
    Unavailable {
        problem: CommandError,
    },
    /// Hark could not start (an unreadable database or settings file): the window shows
    /// what, where, and how to go on.
    Fatal {
        problem: CommandError,
        path: String,
    },
}

/// What is being prepared: the window and the tray say it in the UI language.
#[derive(Debug, Clone, PartialEq, Serialize, specta::Type)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum Stage {
    Starting,
    /// The offline language model server is starting.
    LocalModel,
    /// Models are being fetched: their kinds (see [`Download::kinds`]) and size in bytes.
    Download {
        kinds: Vec<String>,
        bytes: u64,
    },
}

impl Status {
    /// The tray's tooltip (and title on Linux), in the UI language `lang`.
    pub fn tooltip(&self, lang: &str) -> String {
        format!("Hark — {}", self.words(lang))
    }

    /// What Hark is doing, in a few words in `lang` ("listening").
    pub fn words(&self, lang: &str) -> String {
        let key = match self {
            Status::Preparing { stage: Stage::Starting } => "tray.state.starting",
            Status::Preparing {
                stage: Stage::LocalModel,
            } => "tray.state.localModel",
            Status::Preparing {
                stage: Stage::Download { .. },
            } => "tray.state.download",
            Status::Waiting => "tray.state.waiting",
            Status::Ready => "tray.state.ready",
            Status::HandsFree { muted: true, .. } => "tray.state.muted",
            Status::HandsFree { full_duplex: false, .. } => "tray.state.handsFreeHalf",
            Status::HandsFree { .. } => "tray.state.handsFree",
            Status::Listening => "tray.state.listening",
            Status::Thinking => "tray.state.thinking",
            Status::Speaking => "tray.state.speaking",
            Status::NoMicrophone { .. } => "tray.state.noMicrophone",
            // The problem's own title (the app's errors are English for now).
            Status::Unavailable { problem } | Status::Fatal { problem, .. } => return problem.title.clone(),
        };
        crate::i18n::text(lang, key)
    }

    /// Which of the tray's icons shows it.
    pub fn icon(&self) -> TrayIcon {
        match self {
            Status::Ready | Status::HandsFree { muted: true, .. } => TrayIcon::Idle,
            Status::HandsFree { .. } => TrayIcon::HandsFree,
            Status::Listening => TrayIcon::Listening,
            Status::Thinking | Status::Preparing { .. } | Status::Waiting => TrayIcon::Thinking,
            Status::Speaking => TrayIcon::Speaking,
            Status::NoMicrophone { .. } | Status::Unavailable { .. } | Status::Fatal { .. } => TrayIcon::Error,
        }
    }

    /// Whether a press can start a turn now.
    pub fn can_listen(&self) -> bool {
        matches!(
            self,
            Status::Ready
                | Status::HandsFree { .. }
                | Status::Listening
                | Status::Thinking
                | Status::Speaking
                | Status::NoMicrophone { .. }
        )
    }

    /// The status after a voice event, if it changes. `idle` is what "idle" means now:
    /// [`Status::Ready`] (or [`Status::HandsFree`]), or [`Status::NoMicrophone`] while no
    /// microphone can be opened.
    pub fn after(&self, event: &VoiceEvent, idle: &Status) -> Option<Status> {
        let next = match event {
            VoiceEvent::ListeningStarted { .. } => Status::Listening,
            VoiceEvent::ThinkingStarted | VoiceEvent::TranscriptFinal { .. } if *self == Status::Listening => {
                Status::Thinking
            }
            // An answer to a consent question was heard: the turn goes on.
            VoiceEvent::ConsentHeard { .. } if *self == Status::Listening => Status::Thinking,
            VoiceEvent::ThinkingStarted => Status::Thinking,
            VoiceEvent::SpeakingStarted | VoiceEvent::ReplyResumed { speaking: true } => Status::Speaking,
            VoiceEvent::ReplyResumed { speaking: false } => Status::Thinking,
            VoiceEvent::Idle => idle.clone(),
            VoiceEvent::Failed {
                kind: ErrorKind::Microphone,
                message,
                ..
            } => Status::NoMicrophone {
                message: message.clone(),
            },
            _ => return None,
        };
        (next != *self).then_some(next)
    }
}

/// The tray's icons.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, specta::Type)]
#[serde(rename_all = "snake_case")]
pub enum TrayIcon {
    Idle,
    /// Listening hands-free: the microphone is open, no turn under way.
    HandsFree,
    Listening,
    Thinking,
    Speaking,
    Error,
}

/// A model download, for the progress bar: totals are the manifest's sizes.
#[derive(Debug, Clone, PartialEq, Serialize, specta::Type)]
pub struct Download {
    /// The kinds of models being fetched ("chat", "speech", "voice", "memory",
    /// "hands-free"), for the window to name in its language.
    pub kinds: Vec<String>,
    /// The model being fetched now (manifest id) and its description.
    pub model: String,
    pub label: String,
    pub phase: Phase,
    /// Bytes downloaded of all models so far, and in all.
    pub done: u64,
    pub total: u64,
    /// Recent speed, once known.
    pub bytes_per_sec: Option<u64>,
    /// Time left at that speed.
    pub eta_secs: Option<u64>,
}

/// Which view of the main window to show (the tray's "Settings").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, specta::Type)]
#[serde(rename_all = "snake_case")]
pub enum View {
    Settings,
}

/// An event as a window gets it: numbered, from 1, in the order sent. A snapshot carries
/// the number of the last event sent before it was read, so a window can tell a snapshot
/// older than an event it has already shown (the two travel by different routes and may
/// arrive in either order) and read a fresh one instead of putting the old state back.
#[derive(Debug, Clone, Serialize, specta::Type)]
pub struct Numbered {
    pub seq: u64,
    pub event: AppEvent,
}

/// Everything a window hears, in order.
#[derive(Debug, Clone, PartialEq, Serialize, specta::Type)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AppEvent {
    /// From the voice session: transcript, reply, level, the history panel...
    Voice { event: VoiceEvent },
    /// The status line changed.
    Status { status: Status },
    /// A model download moved on; `None` when it ended.
    Download { progress: Option<Download> },
    /// Something the user should know (a banner); not one for a condition Hark is still
    /// setting up.
    Problem { problem: CommandError },
    /// Something worth knowing that is no problem (an update check's answer).
    Notice { message: String },
    /// A session is running (after start-up, a switch, or a settings change).
    SessionStarted { session_id: String },
    /// The microphone check's level and the device it listens to.
    MicLevel { rms: f32, device: String },
    /// The window should show this view (the tray asked).
    Navigate { view: View },
    /// A tool set to *ask* wants to run: the window asks the user (`answer_consent`).
    ConsentAsked {
        request: hark_core::tools::consent::ConsentRequest,
    },
    /// That question is no longer asked (answered, timed out, or the turn was cancelled).
    ConsentSettled { id: String },
    /// A tool server's state or tools changed (`tool_servers` has the new list).
    ToolServersChanged,
    /// Conversation mode is now on or off (the window's switch follows it, however it was
    /// turned: the tray, the shortcut, or a start that could not open the microphone).
    HandsFree { on: bool },
    /// The push-to-talk shortcut as the window should write it now: the keys the desktop
    /// assigned through its GlobalShortcuts portal (issue 48); and, when the desktop gives
    /// Hark no global shortcut, what to bind instead (`None` once it does).
    Shortcut {
        label: String,
        unavailable: Option<NoGlobalShortcuts>,
    },
}

/// The desktop gives Hark no global shortcut (issue 48: a Wayland session with no
/// GlobalShortcuts portal, or one that refused): its keys work only while its window has
/// focus, and a key the user binds in the desktop's own settings to Hark's `--toggle` is
/// the way to talk from anywhere. The window says so in its language, with these facts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, specta::Type)]
pub struct NoGlobalShortcuts {
    /// The desktop refused them (`true`), or offers none.
    pub refused: bool,
    /// The desktop in use, for the steps (`XDG_CURRENT_DESKTOP`): "gnome", "kde", "sway",
    /// "hyprland" or "other".
    pub desktop: String,
    /// What to paste where the steps say: the command (`/usr/bin/hark-app --toggle`), or,
    /// for Sway and Hyprland, the configuration line that binds it to Ctrl+Shift+Space.
    pub paste: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_follows_the_voice_session_and_a_missing_microphone_is_its_own_state() {
        let ready = Status::Ready;
        let s = Status::Ready
            .after(&VoiceEvent::ListeningStarted { device: "mic".into() }, &ready)
            .unwrap();
        assert_eq!(s, Status::Listening);
        let s = s.after(&VoiceEvent::ThinkingStarted, &ready).unwrap();
        assert_eq!(s, Status::Thinking);
        assert_eq!(s.after(&VoiceEvent::SpeakingStarted, &ready), Some(Status::Speaking));
        // A voice over the reply that was not a barge-in: back to where the reply was.
        let resumed = |speaking| VoiceEvent::ReplyResumed { speaking };
        assert_eq!(Status::Listening.after(&resumed(true), &ready), Some(Status::Speaking));
        assert_eq!(Status::Listening.after(&resumed(false), &ready), Some(Status::Thinking));
        assert_eq!(Status::Speaking.after(&VoiceEvent::Idle, &ready), Some(Status::Ready));
        assert_eq!(Status::Ready.after(&VoiceEvent::Level { rms: 0.1 }, &ready), None);
        let failed = VoiceEvent::Failed {
            kind: ErrorKind::Microphone,
            title: String::new(),
            message: "no microphone found".into(),
            next_step: String::new(),
            detail: None,
        };
        let s = Status::Ready.after(&failed, &ready).unwrap();
        assert!(matches!(s, Status::NoMicrophone { .. }));
        assert!(s.can_listen(), "a press tries the microphone again");
        assert_eq!(s.icon(), TrayIcon::Error);
        assert!(!Status::Preparing { stage: Stage::Starting }.can_listen());
        assert_eq!(Status::Listening.tooltip("en"), "Hark — listening");
        assert_eq!(
            Status::Listening.tooltip("de"),
            format!("Hark — {}", crate::i18n::text("de", "tray.state.listening"))
        );
        assert_ne!(Status::Listening.tooltip("de"), "Hark — listening");
    }
}
