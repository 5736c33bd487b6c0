//! Voice turns: transcript → streamed reply → sentences → speech, with barge-in, and the
//! session actor that serialises push-to-talk.
//!
//! # Layout
//! - this file: the speech parts of a session ([`Voice`]) and what a voice session reports
//!   ([`VoiceEvent`], past tense) with its per-turn figures ([`TurnMetrics`]).
//! - `turn`: one spoken turn. [`answer`] transcribes captured audio and [`respond`] speaks
//!   the reply sentence by sentence; a barge-in stops playback within one audio buffer,
//!   cancels the model and the voice, and records what was heard (rule 9). A panic inside a
//!   turn fails that turn only.
//! - `actor`: the session actor. One task owns capture, the conversation and the pipeline;
//!   key presses, capture ends, turn completions and edits reach it through a
//!   [`VoiceHandle`] and are handled in order. [`play_live`] holds the key for a
//!   recording played as live speech.
//! - `hands_free`: conversation without the key: the microphone stays open, a voice
//!   activity detector presses and releases for the user; with echo cancellation it
//!   listens while Hark speaks, and a voice over the reply pauses it until its words decide.
//! - `overheard`: whether a voice heard over the reply is a barge-in, by its words (Hark's
//!   own words, none, or a backchannel are not).
//! - `ask`: consent questions put by voice ([`SpokenAsker`]): spoken aside from the reply,
//!   answered by the next press ("yes", "no", "always").

mod actor;
mod ask;
pub mod hands_free;
pub mod overheard;
mod turn;

use std::sync::Arc;

use serde::Serialize;

pub use actor::{play_live, spawn, ActorOptions, ChatEdit, VoiceHandle, VoiceSession, VoiceStopped};
pub use ask::{say_aside, Aside, SpokenAsker, VoiceLine, SAY_AGAIN};
pub use turn::{answer, respond, transcribe, Spoken, Utterance};

use super::{ChatSession, TurnError};
use crate::audio::playback::AudioOut;
use crate::conversation::PanelView;
use crate::error::ErrorKind;
use crate::session::ptt::NoTurn;
use crate::stt::Transcriber;
use crate::tools::consent::Answer;
use crate::tts::Synthesizer;

/// How a spoken turn is scheduled (issue 12).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pipeline {
    /// The steps overlap: while the key is held a local model evaluates what the request
    /// will start with and a local speech engine transcribes at each pause, so release
    /// leaves only the new words; speech starts at the reply's first clause.
    #[default]
    Overlapped,
    /// One step after the other, as Hark did before: transcribe after release, evaluate the
    /// whole prompt after that, speak from the first whole sentence. Kept for the latency
    /// benchmark's side-by-side comparison.
    Sequential,
}

impl Pipeline {
    /// The reply splitter for this schedule.
    pub fn splitter(self) -> crate::session::sentences::SentenceSplitter {
        match self {
            Pipeline::Overlapped => crate::session::sentences::SentenceSplitter::first_clause(),
            Pipeline::Sequential => crate::session::sentences::SentenceSplitter::new(),
        }
    }
}

/// The speech parts of a session.
#[derive(Clone)]
pub struct Voice {
    pub stt: Arc<dyn Transcriber>,
    pub tts: Arc<dyn Synthesizer>,
    pub out: Arc<dyn AudioOut>,
}

/// Latency figures of one voice turn, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct TurnMetrics {
    /// Release → final transcript.
    pub transcript_ms: Option<u64>,
    /// Request → first token.
    pub first_token_ms: Option<u64>,
    /// First sentence ready → first byte of its audio.
    pub first_audio_byte_ms: Option<u64>,
    /// Release → first reply sample handed to the speaker.
    pub first_audio_out_ms: Option<u64>,
}

/// What the UI hears from a voice session (past tense: these happened).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum VoiceEvent {
    /// The microphone is open: speak now.
    ListeningStarted {
        /// The microphone's name.
        device: String,
    },
    /// Input level, about every 20 ms while listening.
    Level {
        rms: f32,
    },
    /// Live transcript so far (streaming engines only).
    TranscriptInterim {
        text: String,
    },
    TranscriptFinal {
        text: String,
    },
    /// The utterance did not make a turn.
    NoTurn {
        reason: NoTurn,
    },
    ThinkingStarted,
    ReplyDelta {
        text: String,
    },
    SpeakingStarted,
    /// The model called a tool, which is running ("checking the time…").
    ToolStarted {
        id: String,
        name: String,
        /// The call's arguments as the model wrote them (JSON text).
        arguments: String,
    },
    /// A tool call settled: `state` is "done", "error" or "cancelled"; `content` is the
    /// result (or the error) the model reads.
    ToolFinished {
        id: String,
        name: String,
        state: String,
        content: String,
    },
    /// A tool set to *ask* wants to run: the question is spoken, and the next press of the
    /// key answers it (instead of interrupting).
    ConsentAsked {
        id: String,
        question: String,
    },
    /// What was said in answer to question `id`. `answer` is `None` when it had none of
    /// the words (the question is asked again) or the question was settled meanwhile.
    ConsentHeard {
        id: String,
        heard: String,
        answer: Option<Answer>,
    },
    /// Hands-free: speech was heard over the reply, which paused while its words are checked
    /// (issue 49): someone else's words cut it ([`VoiceEvent::ReplyInterrupted`] follows),
    /// Hark's own, a backchannel or none let it play on ([`VoiceEvent::ReplyResumed`]).
    ReplyPaused,
    /// The paused reply plays on; `speaking`: it had begun playing (otherwise Hark is still
    /// thinking).
    ReplyResumed {
        speaking: bool,
    },
    /// Barge-in: what was heard of the reply and what had been generated.
    ReplyInterrupted {
        heard: String,
        generated: String,
        heard_ms: u64,
    },
    TurnFinished {
        reply: String,
        metrics: TurnMetrics,
        /// What Hark said after the reply about how it ended ([`crate::session::notice`]):
        /// a refusal with no words of the provider's, or a reply the length limit cut off.
        notice: Option<String>,
    },
    /// The record or the context changed: the history panel's new view.
    ContextChanged {
        panel: Box<PanelView>,
    },
    /// Something failed; the conversation is kept. `message` is in plain words, `detail`
    /// what the library or server said (for a "details" disclosure and the log).
    Failed {
        kind: ErrorKind,
        /// The kind's title, for a banner's heading.
        title: String,
        message: String,
        next_step: String,
        detail: Option<String>,
    },
    /// Hands-free: the voice activity detector heard the user start speaking (the key went
    /// down for them).
    SpeechStarted,
    /// Hands-free: the user stopped speaking (the key came up for them; the turn follows).
    SpeechEnded,
    /// Ready for the next press.
    Idle,
    /// Practice (the introduction's "say hello"): what was heard. Nothing was answered or
    /// recorded.
    PracticeHeard {
        transcript: String,
    },
}

impl VoiceEvent {
    /// The panel event for a conversation as it stands.
    pub fn context(chat: &ChatSession) -> Self {
        VoiceEvent::ContextChanged {
            panel: Box::new(PanelView::of(chat.conversation())),
        }
    }

    /// The failure event for a turn's error.
    pub fn failed(e: &TurnError) -> Self {
        VoiceEvent::Failed {
            kind: e.kind(),
            title: e.kind().title().into(),
            message: e.to_string(),
            next_step: e.next_step().into(),
            detail: e.detail(),
        }
    }
}
