//! Hands-free conversation (issue 23): no key. The microphone stays open
//! ([`OpenMic`]), a voice activity detector ([`Detector`]) hears where the user starts and
//! stops speaking, and each utterance becomes a push-to-talk turn through the same voice
//! actor: the detector's start is a press, with the pre-roll before it kept, and its end is
//! the release. So the live words, the overlapped pipeline, the reply and the record are
//! exactly a released push-to-talk's.
//!
//! Full duplex, where the output gives an echo reference (the speaker): the microphone is
//! cleaned of Hark's own voice by echo cancellation (`audio::echo`) before anything hears
//! it, and the detector listens all the time. Speech heard while Hark thinks or speaks (or
//! while its voice may still be in the microphone, [`EchoWindow`]) is a press too
//! ([`Key::Voice`]), which pauses the reply while the utterance is captured;
//! its words decide (`overheard`, issue 49), and where it ended: Hark's voice stops with
//! the pause, so a voice that goes on past the echo's end ([`Key::VoiceEnded`]) is not
//! Hark's alone, and one that ended within it is a barge-in only by a word that stops a
//! speaker ("stop", "wait"). Someone else's words are a barge-in: the
//! model and the voice are cancelled, what was heard is kept (rule 9), and the utterance is
//! answered. Hark's own words (its voice, let through by a canceller that has not
//! converged), a backchannel or no words: the reply plays on from where it paused.
//!
//! Half-duplex, where echo cancellation is off or cannot run: from the release until the
//! session is idle again (the reply has been spoken), and for [`ECHO_TAIL_MS`] after, the
//! detector does not listen, so Hark never takes its own voice from the speakers for the
//! user's; the key still interrupts.
//!
//! The end of a turn: with an end-of-turn model ([`TurnModel`], Smart Turn v3), a pause of
//! [`GateSettings::pause_ms`] asks it about the utterance so far (its last 8 s, pre-roll
//! included), and "finished" ends the turn there; otherwise, and with no model, silence
//! ends it (`unfinished_patience_ms`, or `patience_ms` with no model). A model that fails
//! is said once, and silence decides from then on. Full duplex, a silence that began while
//! Hark's voice may still be in the microphone (until [`ECHO_TAIL_MS`] after the speaker's
//! last sound: [`EchoWindow`]) is not a pause until it outlasts that: AEC3 can take words
//! said over the reply for its echo and leave silence, which is no end of a sentence.
//!
//! Muted ([`Mute`]), the detector hears nothing: an utterance under way ends where the
//! mute came, and nothing said while muted reaches an utterance (the next one starts after
//! the unmute, pre-roll or not). A reply already under way goes on.
//!
//! The controller sits between the actor and whoever reads its events: it passes every
//! event on, adds [`VoiceEvent::SpeechStarted`] and [`VoiceEvent::SpeechEnded`], and
//! learns from `Idle` that a turn is over.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::actor::{spawn as spawn_actor, ActorOptions, VoiceHandle, VoiceSession, VoiceStopped};
use super::{Voice, VoiceEvent};
use crate::audio::echo::{EchoCanceller, EchoWindow, ECHO_TAIL_MS};
use crate::audio::open_mic::{OpenMic, Placer};
use crate::audio::resample::STT_RATE;
use crate::audio::turn::{TurnModel, FINISHED, WINDOW};
use crate::audio::vad::{Detector, Edge, GateSettings, SpeechProbability};
use crate::audio::AudioError;
use crate::session::ptt::{Key, PttMode};
use crate::session::{ChatSession, TurnError};

/// Audio kept from before the detector's start of speech (at least 300 ms: issue 23).
pub const PREROLL_MS: u64 = 300;

/// How far past the end of Hark's echo ([`EchoWindow::until`]) a voice over the reply must
/// go on to count as past it ([`Key::VoiceEnded`]): a margin for a busy machine, whose
/// capture can fall behind the speaker. The canceller takes the reference as it cleans
/// each frame, so a capture that lags dates Hark's last sound early. A margin too small
/// only lets the old rule judge the words (as before issue 49's second fix), no worse.
const PAST_ECHO_MARGIN_MS: u64 = 200;

/// How hands-free listening decides.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HandsFreeOptions {
    pub gate: GateSettings,
    /// Cancel Hark's own voice and listen while it speaks (barge-in by voice). Off, or
    /// with an output that gives no reference, Hark does not listen while it speaks.
    pub echo_cancellation: bool,
    /// A voice over the reply pauses it and its words decide whether it is a barge-in
    /// ([`Key::Voice`]); `false`: any speech over the reply cuts it at once ([`Key::Press`]),
    /// as before issue 49, kept so the hands-free benchmark measures both side by side.
    pub barge_in_by_words: bool,
}

impl Default for HandsFreeOptions {
    fn default() -> Self {
        Self {
            gate: GateSettings::default(),
            echo_cancellation: true,
            barge_in_by_words: true,
        }
    }
}

/// Pauses hands-free listening and resumes it: a cheap handle the window, the tray and a
/// shortcut can hold (an atomic flag the controller reads at each chunk, so muting never
/// waits behind a turn).
#[derive(Debug, Clone, Default)]
pub struct Mute(Arc<AtomicBool>);

impl Mute {
    pub fn set(&self, muted: bool) {
        self.0.store(muted, Ordering::SeqCst);
    }

    pub fn is_muted(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// A hands-free voice session: the actor, the controller and the open microphone.
pub struct HandsFreeSession {
    session: VoiceSession,
    controller: JoinHandle<()>,
    mic: OpenMic,
    duplex: bool,
    mute: Mute,
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

    /// The switch that pauses listening (the microphone stays open; what it hears while
    /// muted is never used).
    pub fn mute(&self) -> &Mute {
        &self.mute
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

/// The microphone could not be opened for hands-free listening: why, and the conversation
/// back (so the caller can listen another way; nothing is lost).
pub struct NotListening {
    pub error: AudioError,
    /// Boxed: a `Result` carries its error by value, and a conversation is large.
    pub chat: Box<ChatSession>,
}

impl std::fmt::Debug for NotListening {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "NotListening({:?})", self.error)
    }
}

/// Starts a hands-free session on `options.input` (the microphone; anything that delivers
/// like one in tests), with `vad` rating the audio and `turn`, if any, saying when a
/// sentence is finished. The actor runs in hold mode without
/// cues: a start cue would be heard as speech, and the pre-roll comes first.
pub fn spawn(
    chat: ChatSession,
    voice: Voice,
    options: ActorOptions,
    vad: Box<dyn SpeechProbability>,
    turn: Option<Box<dyn TurnModel>>,
    hands_free: HandsFreeOptions,
    events: mpsc::UnboundedSender<VoiceEvent>,
) -> Result<HandsFreeSession, NotListening> {
    let reference = if hands_free.echo_cancellation {
        voice.out.echo_reference()
    } else {
        None
    };
    let duplex = reference.is_some();
    let echo = reference.map(EchoCanceller::new);
    let echo_window = echo.as_ref().map(EchoCanceller::window);
    let (mic, frames) = match OpenMic::open(&*options.input, options.input_device.as_deref(), echo) {
        Ok(opened) => opened,
        Err(error) => {
            return Err(NotListening {
                error,
                chat: Box::new(chat),
            })
        }
    };
    let actor_options = ActorOptions {
        mode: PttMode::Hold,
        input: mic.input(),
        cues: false,
        ..options
    };
    let (inner_tx, inner_rx) = mpsc::unbounded_channel();
    let session = spawn_actor(chat, voice, actor_options, inner_tx);
    let mute = Mute::default();
    let mut detector = Detector::new(vad, hands_free.gate);
    detector.set_turn_model(turn.is_some());
    let controller = Controller {
        handle: session.handle().clone(),
        mic: mic.placer(),
        detector,
        turn,
        heard: VecDeque::with_capacity(WINDOW),
        utterance_from: 0,
        state: State::Waiting { deaf_until: 0 },
        duplex,
        echo_window,
        broken: false,
        by_words: hands_free.barge_in_by_words,
        mute: mute.clone(),
        was_muted: false,
        unmuted_at: 0,
    };
    let controller = tokio::spawn(controller.run(frames, inner_rx, events));
    Ok(HandsFreeSession {
        session,
        controller,
        mic,
        duplex,
        mute,
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
    /// The end-of-turn model, asked at pauses (none: silence decides).
    turn: Option<Box<dyn TurnModel>>,
    /// The last [`WINDOW`] samples heard (muted or deaf too), ending at the detector's
    /// position: what the end-of-turn model is given.
    heard: VecDeque<f32>,
    /// Where the utterance under way began, pre-roll included.
    utterance_from: u64,
    state: State,
    /// Echo cancellation runs: listen while Hark speaks.
    duplex: bool,
    /// Full duplex: how far the speaker's echo may reach in what the detector hears.
    echo_window: Option<EchoWindow>,
    /// The voice activity model failed: listening by voice has stopped.
    broken: bool,
    /// Speech that may be Hark's own is pressed as [`Key::Voice`], so that its words decide
    /// ([`HandsFreeOptions::barge_in_by_words`]).
    by_words: bool,
    /// The user's mute, and whether it was on at the last chunk (an unmute starts
    /// listening afresh there).
    mute: Mute,
    was_muted: bool,
    /// Where the last unmute came: no utterance reaches back before it.
    unmuted_at: u64,
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
        if self.turn.is_some() {
            let over = (self.heard.len() + chunk.len()).saturating_sub(WINDOW);
            self.heard.drain(..over.min(self.heard.len()));
            self.heard.extend(&chunk[chunk.len().saturating_sub(WINDOW)..]);
        }
        let muted = self.mute.is_muted();
        if muted != self.was_muted {
            self.was_muted = muted;
            if muted && self.state == State::Capturing {
                // The utterance ends where the mute came.
                let _ = events.send(VoiceEvent::SpeechEnded);
                let past_echo = self.past_echo(self.detector.position());
                if self.handle.key(Key::VoiceEnded { past_echo }).is_err() {
                    return;
                }
                self.state = State::Busy;
            }
            if !muted {
                // Nothing heard while muted counts: not the gate's count, not the ring.
                self.detector.reset();
                self.unmuted_at = self.detector.position();
            }
        }
        if muted {
            self.detector.skip(chunk.len());
            return;
        }
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
        if let Some(window) = &self.echo_window {
            // A silence while Hark's voice may still be in the microphone is not a pause:
            // words said over the reply can come out of AEC3 as silence, and Smart Turn,
            // asked there, ended a barge-in before the question that followed it (the
            // room test, on a loaded machine, 1 run in 25).
            self.detector.hold_pauses_until(window.until());
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
            // A pause asks the end-of-turn model; "finished" ends the utterance here.
            let edge = match edge {
                Edge::Paused { .. } => {
                    if self.state != State::Capturing || !self.finished(events) {
                        continue;
                    }
                    match self.detector.end_turn() {
                        Some(ended) => ended,
                        None => continue,
                    }
                }
                other => other,
            };
            match (self.state, edge) {
                // Busy here is full duplex: the press is a barge-in.
                (State::Waiting { .. } | State::Busy, Edge::Started { at }) => {
                    let deaf_until = deaf_until_of(self.state).max(self.unmuted_at);
                    self.utterance_from = at.saturating_sub(samples(PREROLL_MS)).max(deaf_until);
                    self.mic.start_next_at(self.utterance_from);
                    // Speech that began while Hark spoke, or while its voice may still be
                    // in the microphone, may be Hark's own: its words decide.
                    let may_be_hark =
                        self.state == State::Busy || self.echo_window.as_ref().is_some_and(|w| at < w.until());
                    let key = if self.by_words && may_be_hark {
                        Key::Voice
                    } else {
                        Key::Press
                    };
                    if self.handle.key(key).is_err() {
                        return;
                    }
                    self.state = State::Capturing;
                    let _ = events.send(VoiceEvent::SpeechStarted);
                }
                (State::Capturing, Edge::Ended { at }) => {
                    let _ = events.send(VoiceEvent::SpeechEnded);
                    let past_echo = self.past_echo(at);
                    if self.handle.key(Key::VoiceEnded { past_echo }).is_err() {
                        return;
                    }
                    self.state = State::Busy;
                }
                _ => {}
            }
        }
    }

    /// Whether a voice that ended at `end` went on past where Hark's own voice may still be
    /// in the microphone: the echo window's end and [`PAST_ECHO_MARGIN_MS`]. Half duplex
    /// (no window), the detector never hears Hark: every voice is past it. Issue 49: a
    /// voice that ended within it may be Hark's alone (`overheard`).
    fn past_echo(&self, end: u64) -> bool {
        let Some(window) = &self.echo_window else { return true };
        let until = window.until();
        let past = end > until + samples(PAST_ECHO_MARGIN_MS);
        tracing::debug!(
            end_ms = end * 1000 / u64::from(STT_RATE),
            echo_until_ms = until * 1000 / u64::from(STT_RATE),
            past,
            "a voice ended"
        );
        past
    }

    /// Asks the end-of-turn model whether the utterance so far is a finished turn. A model
    /// that fails is said once and dropped: silence decides from then on.
    fn finished(&mut self, events: &mpsc::UnboundedSender<VoiceEvent>) -> bool {
        let Some(model) = self.turn.as_mut() else {
            return false;
        };
        let now = self.detector.position();
        let kept = (now - self.utterance_from).min(self.heard.len() as u64) as usize;
        let audio: Vec<f32> = self.heard.iter().skip(self.heard.len() - kept).copied().collect();
        match model.completion(&audio) {
            Ok(p) => {
                tracing::debug!("end of turn: Smart Turn says {p:.2} after a pause");
                p > FINISHED
            }
            Err(e) => {
                let _ = events.send(VoiceEvent::failed(&TurnError::Provider(e)));
                self.turn = None;
                self.detector.set_turn_model(false);
                false
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

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;

    use super::*;
    use crate::audio::echo::EchoReference;
    use crate::audio::input::{Script, Scripted};
    use crate::audio::playback::{AudioOut, ClockOut};
    use crate::audio::vad::Loud;
    use crate::conversation::HistorySettings;
    use crate::provider::ProviderError;
    use crate::store::Store;
    use crate::testing::{speech_samples, Reply, ScriptedModel, ScriptedStt, ToneTts};

    /// An end-of-turn model that answers `p`, or fails, and counts what it was asked and
    /// how much audio it was given.
    struct Judge {
        p: Option<f32>,
        asked: Arc<AtomicUsize>,
        heard: Arc<AtomicUsize>,
    }
    impl TurnModel for Judge {
        fn completion(&mut self, audio: &[f32]) -> Result<f32, ProviderError> {
            self.asked.fetch_add(1, Ordering::SeqCst);
            self.heard.store(audio.len(), Ordering::SeqCst);
            self.p.ok_or_else(|| {
                ProviderError::new("smart-turn", crate::provider::ErrorKind::LocalEngine, "the model broke")
            })
        }
    }

    /// A hands-free session on a scripted microphone (1 s of speech, then silence) whose
    /// silence alone would end a turn only after a minute, with `judge` asked at pauses.
    fn session_with(
        p: Option<f32>,
    ) -> (
        HandsFreeSession,
        mpsc::UnboundedReceiver<VoiceEvent>,
        Arc<AtomicUsize>,
        Arc<AtomicUsize>,
    ) {
        let mut audio = speech_samples(1_000);
        audio.extend(vec![0.0; STT_RATE as usize * 3]);
        let room = Room {
            mic: audio,
            transcripts: vec!["hello there".into()],
            reply: "Hello.",
            out: Arc::new(ClockOut::new()),
            duplex: false,
        };
        session_in(room, p)
    }

    /// What a scripted hands-free session hears and says.
    struct Room {
        /// The microphone's whole timeline (then silence).
        mic: Vec<f32>,
        /// What the transcriber hears in each utterance, in order.
        transcripts: Vec<String>,
        /// The model's reply to the first.
        reply: &'static str,
        out: Arc<dyn AudioOut>,
        /// Full duplex (`out` gives an echo reference).
        duplex: bool,
    }

    /// An output on the clock that gives echo cancellation a reference, full duplex. Fed
    /// nothing ([`Echoed::unfed`]): the canceller has nothing to cancel and lets everything
    /// through, as a cold one at its worst does, and Hark's echo never reaches past
    /// anything. Fed as it plays ([`Echoed::sounding`]), as a device's tap does: a 2 kHz tone
    /// while the reply sounds (neither paused nor done), silence otherwise, 10 ms at a
    /// time. The microphone does not hear it: what of Hark's voice gets through is scripted
    /// into the microphone's timeline.
    struct Echoed {
        clock: Arc<ClockOut>,
        reference: Arc<EchoReference>,
        alive: Arc<AtomicBool>,
    }

    impl Echoed {
        fn unfed() -> Self {
            Self {
                clock: Arc::new(ClockOut::new()),
                reference: EchoReference::new(),
                alive: Arc::new(AtomicBool::new(false)),
            }
        }

        fn sounding() -> Self {
            let out = Self::unfed();
            out.alive.store(true, Ordering::Relaxed);
            let (c, r, a) = (out.clock.clone(), out.reference.clone(), out.alive.clone());
            std::thread::spawn(move || {
                let mut tap = r.tap(STT_RATE, 1);
                let mut n = 0usize;
                while a.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(10));
                    let sounding = !c.is_idle() && !c.tracker().is_held();
                    let block: Vec<f32> = (0..STT_RATE as usize / 100)
                        .map(|_| {
                            n += 1;
                            let phase = n as f32 * std::f32::consts::TAU * 2_000.0 / STT_RATE as f32;
                            if sounding {
                                0.1 * phase.sin()
                            } else {
                                0.0
                            }
                        })
                        .collect();
                    tap.push(&block);
                }
            });
            out
        }
    }

    impl Drop for Echoed {
        fn drop(&mut self) {
            self.alive.store(false, Ordering::Relaxed);
        }
    }

    impl AudioOut for Echoed {
        fn tracker(&self) -> &crate::audio::playback::Tracker {
            self.clock.tracker()
        }
        fn start_reply(&self) {
            self.clock.start_reply()
        }
        fn push(&self, sentence: usize, samples: Vec<f32>, rate: u32) {
            self.clock.push(sentence, samples, rate)
        }
        fn flush(&self) -> crate::audio::playback::Heard {
            self.clock.flush()
        }
        fn is_idle(&self) -> bool {
            self.clock.is_idle()
        }
        fn echo_reference(&self) -> Option<Arc<EchoReference>> {
            Some(self.reference.clone())
        }
    }

    fn session_in(
        room: Room,
        p: Option<f32>,
    ) -> (
        HandsFreeSession,
        mpsc::UnboundedReceiver<VoiceEvent>,
        Arc<AtomicUsize>,
        Arc<AtomicUsize>,
    ) {
        let store = Arc::new(Store::open_in_memory().unwrap());
        let model = ScriptedModel::new();
        model.push(Reply::text(room.reply));
        model.push(Reply::text("Okay."));
        let chat = ChatSession::create(store, Box::new(model), "Be brief.", HistorySettings::default()).unwrap();
        let voice = Voice {
            stt: Arc::new(ScriptedStt::new(
                &room.transcripts.iter().map(String::as_str).collect::<Vec<_>>(),
            )),
            tts: Arc::new(ToneTts { ms_per_char: 20 }),
            out: room.out,
        };
        let mic = Scripted::new();
        mic.push(Script::Speak(room.mic));
        let (asked, heard) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let judge = Judge {
            p,
            asked: asked.clone(),
            heard: heard.clone(),
        };
        let (tx, rx) = mpsc::unbounded_channel();
        let session = spawn(
            chat,
            voice,
            ActorOptions {
                mode: PttMode::Hold,
                input_device: None,
                input: Arc::new(mic),
                cues: false,
                pipeline: Default::default(),
                questions: None,
            },
            Box::new(Loud(0.01)),
            Some(Box::new(judge)),
            HandsFreeOptions {
                gate: GateSettings {
                    unfinished_patience_ms: 60_000,
                    ..GateSettings::default()
                },
                echo_cancellation: room.duplex,
                ..HandsFreeOptions::default()
            },
            tx,
        )
        .map_err(|n| n.error)
        .unwrap();
        assert_eq!(session.full_duplex(), room.duplex);
        (session, rx, asked, heard)
    }

    async fn next(rx: &mut mpsc::UnboundedReceiver<VoiceEvent>, want: impl Fn(&VoiceEvent) -> bool) -> bool {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            match tokio::time::timeout_at(deadline, rx.recv()).await {
                Ok(Some(e)) if want(&e) => return true,
                Ok(Some(_)) => {}
                _ => return false,
            }
        }
    }

    #[tokio::test]
    async fn a_pause_the_turn_model_calls_finished_ends_the_turn_there() {
        let (session, mut rx, asked, heard) = session_with(Some(0.9));
        assert!(next(&mut rx, |e| *e == VoiceEvent::SpeechStarted).await);
        // Silence alone would wait a minute: only the model's "finished" ends it now.
        assert!(
            next(&mut rx, |e| *e == VoiceEvent::SpeechEnded).await,
            "the turn did not end at the pause"
        );
        assert_eq!(asked.load(Ordering::SeqCst), 1);
        // The utterance from its pre-roll to the pause: 1 s of speech, 300 ms before it
        // (as much as there was), the 64 ms pause after it, give or take a frame.
        let got = heard.load(Ordering::SeqCst) as u64;
        assert!(
            (samples(1_000)..=samples(1_000 + PREROLL_MS + 100 + 100)).contains(&got),
            "{got} samples"
        );
        assert!(next(&mut rx, |e| matches!(e, VoiceEvent::TurnFinished { .. })).await);
        let chat = session.shutdown().await.unwrap();
        assert_eq!(chat.conversation().record().len(), 2);
    }

    #[tokio::test]
    async fn a_pause_it_calls_unfinished_keeps_listening_and_a_failed_model_leaves_it_to_silence() {
        let (session, mut rx, asked, _) = session_with(Some(0.1));
        assert!(next(&mut rx, |e| *e == VoiceEvent::SpeechStarted).await);
        // Three seconds of silence go by: asked once, and the turn goes on.
        let ended = tokio::time::timeout(Duration::from_secs(3), async {
            next(&mut rx, |e| *e == VoiceEvent::SpeechEnded).await
        })
        .await;
        assert!(ended.is_err(), "an unfinished sentence was ended");
        assert_eq!(asked.load(Ordering::SeqCst), 1, "once per pause");
        drop(session.shutdown().await);

        // A model that fails is said once; silence (800 ms, no model) decides from then on.
        let (session, mut rx, asked, _) = session_with(None);
        assert!(next(&mut rx, |e| matches!(e, VoiceEvent::Failed { .. })).await);
        assert!(next(&mut rx, |e| *e == VoiceEvent::SpeechEnded).await);
        assert_eq!(asked.load(Ordering::SeqCst), 1);
        drop(session.shutdown().await);
    }

    /// A question (1 s), then, while Hark's two-second reply plays, 400 ms of Hark's own
    /// voice in the microphone, which the canceller let through; the transcriber hears
    /// `overheard` in it.
    fn room_hearing_its_reply(overheard: &str) -> Room {
        let mut audio = speech_samples(1_000);
        audio.extend(vec![0.0; STT_RATE as usize * 6 / 10]);
        audio.extend(speech_samples(400));
        audio.extend(vec![0.0; STT_RATE as usize * 4]);
        Room {
            mic: audio,
            transcripts: vec!["tell me a story".into(), overheard.into()],
            reply:
                "Once upon a time there was a fox who lived in a deep green wood. Every morning it walked to the river.",
            out: Arc::new(Echoed::unfed()),
            duplex: true,
        }
    }

    /// Every event until the turn is over (`Idle`), or a failure after 20 s.
    async fn until_idle(rx: &mut mpsc::UnboundedReceiver<VoiceEvent>) -> Vec<VoiceEvent> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        let mut seen = Vec::new();
        loop {
            match tokio::time::timeout_at(deadline, rx.recv()).await {
                Ok(Some(VoiceEvent::Level { .. } | VoiceEvent::ContextChanged { .. })) => {}
                Ok(Some(VoiceEvent::Idle)) if seen.iter().any(|e| matches!(e, VoiceEvent::TurnFinished { .. })) => {
                    return seen
                }
                Ok(Some(e)) => seen.push(e),
                _ => panic!("no end of the turn: {seen:?}"),
            }
        }
    }

    /// Every event (but the level's and the panel's) until the words over the reply are
    /// answered (the scripted model's second reply, "Okay."), or a failure, naming `what`,
    /// after 30 s.
    async fn until_answered(rx: &mut mpsc::UnboundedReceiver<VoiceEvent>, what: &str) -> Vec<VoiceEvent> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        let mut seen = Vec::new();
        while !seen
            .iter()
            .any(|e| matches!(e, VoiceEvent::TurnFinished { reply, .. } if reply == "Okay."))
        {
            match tokio::time::timeout_at(deadline, rx.recv()).await {
                Ok(Some(VoiceEvent::Level { .. } | VoiceEvent::ContextChanged { .. })) => {}
                Ok(Some(e)) => seen.push(e),
                _ => panic!("{what} was not answered: {seen:?}"),
            }
        }
        seen
    }

    /// The room of [`room_hearing_its_reply`] with the transcriber hearing `overheard`: the
    /// events of the turn, which must have played its reply whole, and the session.
    async fn reply_played_whole(overheard: &str) -> (HandsFreeSession, Vec<VoiceEvent>) {
        let (session, mut rx, _, _) = session_in(room_hearing_its_reply(overheard), Some(0.9));
        let seen = until_idle(&mut rx).await;
        assert!(
            !seen.iter().any(|e| matches!(e, VoiceEvent::ReplyInterrupted { .. })),
            "Hark cut its reply: {seen:?}"
        );
        (session, seen)
    }

    /// What the record holds as the user's words.
    fn user_lines(chat: &ChatSession) -> Vec<String> {
        chat.conversation()
            .record()
            .iter()
            .filter_map(|m| match &m.kind {
                crate::conversation::MessageKind::User { text } => Some(text.clone()),
                _ => None,
            })
            .collect()
    }

    /// Issue 49: Hark's own voice in the microphone while it speaks (a cold canceller lets
    /// it through) pauses the reply, and its words, Hark's own, let the reply play on to
    /// the end: nothing is cut, no turn is made of it.
    #[tokio::test]
    async fn hark_s_own_voice_let_through_the_canceller_does_not_interrupt_its_reply() {
        let (session, seen) = reply_played_whole("Once upon a time there").await;
        let paused = seen
            .iter()
            .position(|e| *e == VoiceEvent::ReplyPaused)
            .expect("the voice paused the reply");
        let after: Vec<&VoiceEvent> = seen[paused..].iter().collect();
        assert!(after.contains(&&VoiceEvent::NoTurn {
            reason: crate::session::ptt::NoTurn::Overheard
        }));
        assert!(
            after.contains(&&VoiceEvent::ReplyResumed { speaking: true }),
            "{seen:?}"
        );
        let chat = session.shutdown().await.unwrap();
        let record = chat.conversation().record();
        assert_eq!(record.len(), 2, "one turn: {record:?}");
        match &record[1].kind {
            crate::conversation::MessageKind::Assistant(a) => assert!(!a.interrupted, "{a:?}"),
            other => panic!("{other:?}"),
        }
    }

    /// Issue 49: whisper read "…there was a fox", Hark's own voice let through a cold
    /// canceller, as "That wasn't a fault.": no words of the reply's. The voice ended while
    /// Hark's echo could still be in the microphone (the reply paused for it, 400 ms in),
    /// so it may have been Hark's alone, and with no word that stops a speaker it does not
    /// cut the reply. The same words going on past the echo (1.5 s) do.
    #[tokio::test]
    async fn hark_s_voice_misread_within_its_echo_does_not_interrupt_it_and_past_it_the_words_decide() {
        let room = |leak_ms: u32| {
            let mut audio = speech_samples(1_000);
            audio.extend(vec![0.0; STT_RATE as usize * 6 / 10]);
            audio.extend(speech_samples(leak_ms));
            audio.extend(vec![0.0; STT_RATE as usize * 4]);
            Room {
                mic: audio,
                transcripts: vec!["tell me a story".into(), "That wasn't a fault.".into()],
                reply: "Once upon a time there was a fox who lived in a deep green wood. Every morning it walked to \
                        the river.",
                out: Arc::new(Echoed::sounding()),
                duplex: true,
            }
        };
        let (session, mut rx, _, _) = session_in(room(400), Some(0.9));
        let seen = until_idle(&mut rx).await;
        assert!(
            seen.contains(&VoiceEvent::ReplyPaused),
            "the voice paused the reply: {seen:?}"
        );
        assert!(
            !seen.iter().any(|e| matches!(e, VoiceEvent::ReplyInterrupted { .. })),
            "Hark cut its reply for its own voice: {seen:?}"
        );
        assert!(seen.contains(&VoiceEvent::ReplyResumed { speaking: true }), "{seen:?}");
        assert_eq!(user_lines(&session.shutdown().await.unwrap()), ["tell me a story"]);

        let (session, mut rx, _, _) = session_in(room(1_500), Some(0.9));
        let seen = until_answered(&mut rx, "the voice past the echo").await;
        assert!(
            seen.iter().any(|e| matches!(e, VoiceEvent::ReplyInterrupted { .. })),
            "{seen:?}"
        );
        let users = user_lines(&session.shutdown().await.unwrap());
        assert_eq!(users, ["tell me a story", "That wasn't a fault."]);
    }

    /// A backchannel over the reply does not cut it either; someone else's words do, at
    /// once, and are the next turn (rule 9: what was heard before the pause is kept).
    #[tokio::test]
    async fn a_backchannel_lets_the_reply_go_on_and_someone_else_s_words_cut_it() {
        let (session, _) = reply_played_whole("Mm-hmm.").await;
        drop(session.shutdown().await);

        let (session, mut rx, _, _) = session_in(room_hearing_its_reply("Stop."), Some(0.9));
        let mut seen = Vec::new();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        while !seen
            .iter()
            .any(|e| matches!(e, VoiceEvent::TurnFinished { reply, .. } if reply == "Okay."))
        {
            match tokio::time::timeout_at(deadline, rx.recv()).await {
                Ok(Some(e)) => seen.push(e),
                _ => panic!("the words over the reply were not answered: {seen:?}"),
            }
        }
        let paused = seen.iter().position(|e| *e == VoiceEvent::ReplyPaused).expect("paused");
        let cut = seen
            .iter()
            .position(|e| matches!(e, VoiceEvent::ReplyInterrupted { .. }))
            .expect("cut");
        assert!(paused < cut);
        let users = user_lines(&session.shutdown().await.unwrap());
        assert_eq!(users, ["tell me a story", "Stop."]);
    }

    /// Issue 49: once a reply has let Hark's own voice through (the first voice over it was
    /// Hark's words), a later voice that goes on still pauses the reply before it ends, so
    /// the rest of its words are not said over Hark (a CI run heard "Excuse me, pardon." of
    /// "Excuse me Hark tell me what is my name?" said over a reply that played on), and its
    /// words cut the reply and are the next turn.
    #[tokio::test]
    async fn a_voice_that_goes_on_over_a_leaking_reply_pauses_it_before_its_words_decide() {
        let mut audio = speech_samples(1_000);
        audio.extend(vec![0.0; STT_RATE as usize * 6 / 10]);
        audio.extend(speech_samples(400));
        audio.extend(vec![0.0; STT_RATE as usize * 3 / 2]);
        audio.extend(speech_samples(1_500));
        audio.extend(vec![0.0; STT_RATE as usize * 4]);
        let room = Room {
            mic: audio,
            transcripts: vec![
                "tell me a story".into(),
                "Once upon a time there".into(),
                "Excuse me, tell me what my name is.".into(),
            ],
            reply: "Once upon a time there was a fox who lived in a deep green wood. Every morning it walked to the \
                    river. It watched the fish and the birds for hours. Then it went home and slept until the moon \
                    came up. The next day it did it all again, and the day after that, for as long as it lived.",
            out: Arc::new(Echoed::unfed()),
            duplex: true,
        };
        let (session, mut rx, _, _) = session_in(room, Some(0.9));
        let seen = until_answered(&mut rx, "the words over the reply").await;
        // The first voice over the reply, Hark's own: it paused the reply, which played on.
        let overheard = seen
            .iter()
            .position(|e| {
                *e == VoiceEvent::NoTurn {
                    reason: crate::session::ptt::NoTurn::Overheard,
                }
            })
            .unwrap_or_else(|| panic!("Hark's own voice was no voice over the reply: {seen:?}"));
        // The second: paused after it started and before it ended, then cut by its words.
        let after = &seen[overheard..];
        let at = |want: &dyn Fn(&VoiceEvent) -> bool| after.iter().position(want);
        let started = at(&|e| *e == VoiceEvent::SpeechStarted).expect("a second voice");
        let paused = at(&|e| *e == VoiceEvent::ReplyPaused);
        let ended = at(&|e| *e == VoiceEvent::SpeechEnded).expect("its end");
        let cut = at(&|e| matches!(e, VoiceEvent::ReplyInterrupted { .. })).expect("the reply cut");
        assert!(
            paused.is_some_and(|p| started < p && p < ended),
            "the reply played on under the voice: {seen:?}"
        );
        assert!(ended < cut, "{seen:?}");
        let users = user_lines(&session.shutdown().await.unwrap());
        assert_eq!(users, ["tell me a story", "Excuse me, tell me what my name is."]);
    }
}
