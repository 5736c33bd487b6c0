//! Hands-free conversation (issue 23): no key. The microphone stays open
//! ([`OpenMic`]), a voice activity detector ([`Detector`]) hears where the user starts and
//! stops speaking, and each utterance becomes a push-to-talk turn through the same voice
//! actor: the detector's start is a press, with the pre-roll before it kept, and its end is
//! the release. So the live words, the overlapped pipeline, the reply and the record are
//! exactly a released push-to-talk's.
//!
//! Full duplex, where the output gives an echo reference (the speaker): the microphone is
//! cleaned of Hark's own voice by echo cancellation (`audio::echo`) before anything hears
//! it, and the detector listens all the time. Speech heard while Hark thinks or speaks is
//! a press too, which the actor takes as a barge-in: playback stops, the model and the
//! voice are cancelled, what was heard is kept (rule 9), and the new utterance is captured
//! and answered.
//!
//! Half-duplex, where echo cancellation is off or cannot run: from the release until the
//! session is idle again (the reply has been spoken), and for [`ECHO_TAIL_MS`] after, the
//! detector does not listen, so Hark never takes its own voice from the speakers for the
//! user's; the key still interrupts.
//!
//! The controller sits between the actor and whoever reads its events: it passes every
//! event on, adds [`VoiceEvent::SpeechStarted`] and [`VoiceEvent::SpeechEnded`], and
//! learns from `Idle` that a turn is over.

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::actor::{spawn as spawn_actor, ActorOptions, VoiceHandle, VoiceSession, VoiceStopped};
use super::{Voice, VoiceEvent};
use crate::audio::echo::EchoCanceller;
use crate::audio::open_mic::{OpenMic, Placer};
use crate::audio::resample::STT_RATE;
use crate::audio::vad::{Detector, Edge, GateSettings, SpeechProbability};
use crate::audio::AudioError;
use crate::session::ptt::{Key, PttMode};
use crate::session::{ChatSession, TurnError};

/// Audio kept from before the detector's start of speech (at least 300 ms: issue 23).
pub const PREROLL_MS: u64 = 300;
/// After a turn, the detector stays deaf this long: the room still rings with the reply's
/// last syllable (and a virtual microphone hears the speaker a buffer late).
pub const ECHO_TAIL_MS: u64 = 300;

/// How hands-free listening decides.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HandsFreeOptions {
    pub gate: GateSettings,
    /// Cancel Hark's own voice and listen while it speaks (barge-in by voice). Off, or
    /// with an output that gives no reference, Hark does not listen while it speaks.
    pub echo_cancellation: bool,
}

impl Default for HandsFreeOptions {
    fn default() -> Self {
        Self {
            gate: GateSettings::default(),
            echo_cancellation: true,
        }
    }
}

/// A hands-free voice session: the actor, the controller and the open microphone.
pub struct HandsFreeSession {
    session: VoiceSession,
    controller: JoinHandle<()>,
    mic: OpenMic,
    duplex: bool,
}

impl HandsFreeSession {
    /// The actor's handle (edits; the key still works: a press interrupts Hark).
    pub fn handle(&self) -> &VoiceHandle {
        self.session.handle()
    }

    /// The microphone's name.
    pub fn device(&self) -> String {
        self.mic.device()
    }

    /// Whether Hark listens while it speaks (echo cancellation runs), so a voice can
    /// interrupt it; `false`: half-duplex.
    pub fn full_duplex(&self) -> bool {
        self.duplex
    }

    /// Ends the session, closes the microphone and returns the conversation.
    pub async fn shutdown(self) -> Result<ChatSession, VoiceStopped> {
        let chat = self.session.shutdown().await;
        // The actor's sender is gone with it, so the controller ends.
        let _ = self.controller.await;
        self.mic.close().await;
        chat
    }
}

/// Starts a hands-free session on `options.input` (the microphone; anything that delivers
/// like one in tests), with `vad` rating the audio. The actor runs in hold mode without
/// cues: a start cue would be heard as speech, and the pre-roll comes first.
pub fn spawn(
    chat: ChatSession,
    voice: Voice,
    options: ActorOptions,
    vad: Box<dyn SpeechProbability>,
    hands_free: HandsFreeOptions,
    events: mpsc::UnboundedSender<VoiceEvent>,
) -> Result<HandsFreeSession, AudioError> {
    let reference = if hands_free.echo_cancellation {
        voice.out.echo_reference()
    } else {
        None
    };
    let duplex = reference.is_some();
    let echo = reference.map(EchoCanceller::new);
    let (mic, frames) = OpenMic::open(&*options.input, options.input_device.as_deref(), echo)?;
    let actor_options = ActorOptions {
        mode: PttMode::Hold,
        input: mic.input(),
        cues: false,
        ..options
    };
    let (inner_tx, inner_rx) = mpsc::unbounded_channel();
    let session = spawn_actor(chat, voice, actor_options, inner_tx);
    let controller = Controller {
        handle: session.handle().clone(),
        mic: mic.placer(),
        detector: Detector::new(vad, hands_free.gate),
        state: State::Waiting { deaf_until: 0 },
        duplex,
        broken: false,
    };
    let controller = tokio::spawn(controller.run(frames, inner_rx, events));
    Ok(HandsFreeSession {
        session,
        controller,
        mic,
        duplex,
    })
}

fn samples(ms: u64) -> u64 {
    ms * u64::from(STT_RATE) / 1000
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Listening for speech; deaf before position `deaf_until`.
    Waiting { deaf_until: u64 },
    /// The user is speaking: the key is down.
    Capturing,
    /// Released: Hark is thinking or speaking. Half-duplex, it does not listen; full
    /// duplex, speech is a barge-in.
    Busy,
}

struct Controller {
    /// The actor's key.
    handle: VoiceHandle,
    /// Where the next utterance starts in the open microphone's ring.
    mic: Placer,
    /// The voice activity model and gate, fed every chunk the microphone delivers (or told
    /// how many it skipped), so its positions are the ring's.
    detector: Detector,
    state: State,
    /// Echo cancellation runs: listen while Hark speaks.
    duplex: bool,
    /// The voice activity model failed: listening by voice has stopped.
    broken: bool,
}

impl Controller {
    async fn run(
        mut self,
        mut frames: mpsc::UnboundedReceiver<Vec<f32>>,
        mut inner: mpsc::UnboundedReceiver<VoiceEvent>,
        events: mpsc::UnboundedSender<VoiceEvent>,
    ) {
        let mut mic_open = true;
        loop {
            tokio::select! {
                e = inner.recv() => {
                    let Some(e) = e else { break };
                    if e == VoiceEvent::Idle {
                        // The turn is over (or the utterance made none, or its capture
                        // failed): listen again, once the reply has died away. Full
                        // duplex, the detector never stopped, and speech it is hearing
                        // now goes on counting.
                        let deaf_until = if self.duplex {
                            0
                        } else {
                            self.detector.reset();
                            self.detector.position() + samples(ECHO_TAIL_MS)
                        };
                        self.state = State::Waiting { deaf_until };
                    }
                    let _ = events.send(e);
                }
                chunk = frames.recv(), if mic_open => {
                    let Some(chunk) = chunk else {
                        // The microphone stopped by itself. During an utterance the actor
                        // reports it; otherwise it is said here.
                        mic_open = false;
                        if !matches!(self.state, State::Capturing) {
                            let e = TurnError::Audio(AudioError::input("microphone", "the input ended by itself"));
                            let _ = events.send(VoiceEvent::failed(&e));
                        }
                        continue;
                    };
                    self.heard(&chunk, &events);
                }
            }
        }
    }

    /// A chunk from the open microphone.
    fn heard(&mut self, chunk: &[f32], events: &mpsc::UnboundedSender<VoiceEvent>) {
        // Full duplex, Hark is speaking (or about to) while the key is up after a turn.
        self.detector.set_barge_in(self.state == State::Busy);
        let deaf = match self.state {
            State::Busy => !self.duplex,
            State::Waiting { deaf_until } => self.detector.position() < deaf_until,
            State::Capturing => false,
        };
        if deaf || self.broken {
            self.detector.skip(chunk.len());
            return;
        }
        let edges = match self.detector.push(chunk) {
            Ok(edges) => edges,
            Err(e) => {
                // The model failed: said once, and hands-free listening stops (the key
                // still works) rather than failing again every 32 ms.
                let _ = events.send(VoiceEvent::failed(&TurnError::Provider(e)));
                self.broken = true;
                return;
            }
        };
        for edge in edges {
            match (self.state, edge) {
                // Busy here is full duplex: the press is a barge-in.
                (State::Waiting { .. } | State::Busy, Edge::Started { at }) => {
                    let deaf_until = deaf_until_of(self.state);
                    self.mic
                        .start_next_at(at.saturating_sub(samples(PREROLL_MS)).max(deaf_until));
                    if self.handle.key(Key::Press).is_err() {
                        return;
                    }
                    self.state = State::Capturing;
                    let _ = events.send(VoiceEvent::SpeechStarted);
                }
                (State::Capturing, Edge::Ended { .. }) => {
                    let _ = events.send(VoiceEvent::SpeechEnded);
                    if self.handle.key(Key::Release).is_err() {
                        return;
                    }
                    self.state = State::Busy;
                }
                _ => {}
            }
        }
    }
}

/// Where listening resumed: an utterance never starts before it.
fn deaf_until_of(state: State) -> u64 {
    match state {
        State::Waiting { deaf_until } => deaf_until,
        State::Capturing | State::Busy => 0,
    }
}
