//! The session actor: one task owns the input, the conversation and the pipeline; every key
//! event, capture end, turn completion and edit is handled by it, in order, so none of them
//! can race. Callers hold a cheap [`VoiceHandle`] (a bounded channel, with `oneshot`
//! replies where a caller wants the outcome), as in mini-redis's clients.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot, watch, Notify};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::ask::{say_aside, Aside, Question, VoiceLine, SAY_AGAIN};
use super::{answer, overheard, transcribe, Pipeline, Voice, VoiceEvent};
use crate::audio::cue;
use crate::audio::input::{AudioInput, InputStream, Recordings};
use crate::audio::resample::STT_RATE;
use crate::audio::silence::{voiced_end, PAUSE};
use crate::audio::AudioError;
use crate::session::ptt::{check_utterance, decide, Action, Key, KeyState, NoTurn, Phase, PttMode};
use crate::session::{ChatSession, Prefiller, TurnError};
use crate::stt::LiveTranscription;
use crate::tools::consent::Answer;

/// A change to the conversation (reset, `max_turns`, system prompt), run by the actor when
/// it holds the conversation: at once when idle, after the turn in flight otherwise.
pub type ChatEdit = Box<dyn FnOnce(&mut ChatSession) -> Result<(), TurnError> + Send>;

/// Commands to the actor (imperative: do this).
enum Command {
    /// The push-to-talk key (or button) went down or up.
    Key(Key),
    /// Change the conversation; the outcome goes back on the reply channel, and a
    /// `ContextChanged` event follows.
    Edit(ChatEdit, oneshot::Sender<Result<(), TurnError>>),
    /// Send a fresh `ContextChanged` event.
    Refresh,
    /// Practice on (the first-run introduction's "say hello"): utterances are transcribed
    /// and shown, not answered or recorded.
    Practice(bool),
    /// End the session; the actor returns the conversation.
    Shutdown,
}

/// The actor is gone (it was shut down, or its task ended).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the voice session has stopped")]
pub struct VoiceStopped;

/// Commands waiting for the actor. Key presses are tiny and the actor answers each at once;
/// the bound only matters if it is stuck, and then a press is refused rather than queued
/// without end.
const QUEUE: usize = 64;

/// A cheap, cloneable handle to a running voice session.
#[derive(Clone, Debug)]
pub struct VoiceHandle {
    tx: mpsc::Sender<Command>,
}

impl VoiceHandle {
    /// The push-to-talk key went down or up. Never waits: callable from a shortcut handler.
    pub fn key(&self, key: Key) -> Result<(), VoiceStopped> {
        self.tx.try_send(Command::Key(key)).map_err(|e| match e {
            mpsc::error::TrySendError::Full(_) => {
                tracing::warn!("voice session busy: a key event was dropped");
                VoiceStopped
            }
            mpsc::error::TrySendError::Closed(_) => VoiceStopped,
        })
    }

    /// Changes the conversation; returns once the change is made (after the turn in flight,
    /// if any) with its outcome.
    pub async fn edit(
        &self,
        edit: impl FnOnce(&mut ChatSession) -> Result<(), TurnError> + Send + 'static,
    ) -> Result<(), TurnError> {
        let (reply, outcome) = oneshot::channel();
        self.tx
            .send(Command::Edit(Box::new(edit), reply))
            .await
            .map_err(|_| stopped())?;
        outcome.await.map_err(|_| stopped())?
    }

    /// Asks for a fresh `ContextChanged` event.
    pub fn refresh(&self) -> Result<(), VoiceStopped> {
        self.tx.try_send(Command::Refresh).map_err(|_| VoiceStopped)
    }

    /// Practice mode on or off: utterances are transcribed and reported
    /// ([`VoiceEvent::PracticeHeard`]), not answered and not recorded.
    pub fn practice(&self, on: bool) -> Result<(), VoiceStopped> {
        self.tx.try_send(Command::Practice(on)).map_err(|_| VoiceStopped)
    }
}

fn stopped() -> TurnError {
    TurnError::Internal(VoiceStopped.to_string())
}

/// Plays a recording into a voice session as live speech (`hark talk --wav FILE --live`,
/// the latency benchmark). The session must listen to `recordings` in hold mode. The key
/// goes down, the recording plays from its first sample at a capture device's pace, and
/// the key comes up `release_after` after its last sample by the clock, however far behind
/// the reader of the audio is, as a person's finger would. Returns at the release, with
/// the instant the recording began (its first sample: what a measurement of the live
/// words counts from); the turn's events follow on the session's channel, ending with
/// [`VoiceEvent::Idle`].
pub async fn play_live(
    handle: &VoiceHandle,
    recordings: &Recordings,
    name: &str,
    samples: Vec<f32>,
    release_after: Duration,
) -> Result<tokio::time::Instant, VoiceStopped> {
    let length = Duration::from_secs_f64(samples.len() as f64 / f64::from(STT_RATE));
    let opened = recordings.push(name, samples);
    handle.key(Key::Press)?;
    // The press opens the input at once; a session that ends first never will.
    let start = tokio::select! {
        at = opened => at.map_err(|_| VoiceStopped)?,
        _ = handle.tx.closed() => return Err(VoiceStopped),
    };
    tokio::time::sleep_until(start + length + release_after).await;
    handle.key(Key::Release)?;
    Ok(start)
}

/// A running voice session: its handle and its task, which gives the conversation back.
pub struct VoiceSession {
    handle: VoiceHandle,
    task: JoinHandle<ChatSession>,
}

impl VoiceSession {
    pub fn handle(&self) -> &VoiceHandle {
        &self.handle
    }

    /// Ends the session (a turn in flight is cancelled and recorded as such) and returns the
    /// conversation.
    pub async fn shutdown(self) -> Result<ChatSession, VoiceStopped> {
        let _ = self.handle.tx.send(Command::Shutdown).await;
        self.task.await.map_err(|_| VoiceStopped)
    }
}

/// How the actor listens.
#[derive(Clone)]
pub struct ActorOptions {
    pub mode: PttMode,
    /// The microphone (id or name); `None`: the default.
    pub input_device: Option<String>,
    /// Where utterances come from (the microphone; a script in tests).
    pub input: Arc<dyn AudioInput>,
    /// Play the start and stop cues (`audio::cue`) through the output.
    pub cues: bool,
    /// How turns are scheduled.
    pub pipeline: Pipeline,
    /// Where consent questions come from (the tool servers' `SpokenAsker`); `None`: no
    /// question is put by voice.
    pub questions: Option<Arc<VoiceLine>>,
}

/// Starts the voice session actor.
pub fn spawn(
    chat: ChatSession,
    voice: Voice,
    options: ActorOptions,
    events: mpsc::UnboundedSender<VoiceEvent>,
) -> VoiceSession {
    let (tx, rx) = mpsc::channel(QUEUE);
    let task = tokio::spawn(actor(chat, voice, options, events, rx));
    VoiceSession {
        handle: VoiceHandle { tx },
        task,
    }
}

/// An utterance's 16 kHz samples and, from a live engine, its transcript.
type Captured = (Vec<f32>, Option<String>);

/// Capture in progress: the pump task and how to stop it.
struct Listening {
    stop: CancellationToken,
    pump: JoinHandle<Result<Captured, TurnError>>,
    /// The consent question this capture answers (a press while one waits), if any.
    answering: Option<String>,
    /// A voice that may be Hark's own ([`Action::PauseAndListen`]; the reply, if any, is
    /// paused for it): its words decide whether it was someone else's ([`overheard`]).
    overheard: bool,
    /// When the reply pauses for this voice, if it has not yet ([`LEAKING_PAUSE`]).
    pause_at: Option<tokio::time::Instant>,
}

/// How long a voice over a reply that has let Hark's own voice through must go on before
/// the reply pauses for it (issue 49). Such a reply pauses for no voice at once: each
/// syllable of Hark's that the canceller lets through would stop it (the detector takes
/// 120 ms of speech as a voice), and those fragments are short. But a reply that played on
/// over someone's words put them through the canceller's double-talk suppression, which
/// damaged them: "Excuse me Hark tell me what is my name?" came out as "Excuse me,
/// pardon." in a CI run. Paused after this long, the rest of what they say is heard clean.
const LEAKING_PAUSE: Duration = Duration::from_millis(400);

/// A turn in progress: the task (which owns the conversation meanwhile), its barge-in
/// token, and what its speaking task should say aside (consent questions).
struct Turn {
    cancel: CancellationToken,
    task: JoinHandle<ChatSession>,
    asides: mpsc::UnboundedSender<Aside>,
}

/// Consent questions waiting for the user, in the order asked; the first is the one put
/// (spoken, and answered by the next press).
#[derive(Default)]
struct Questions {
    waiting: VecDeque<Question>,
    /// Cancelled when the first is settled or answered: what is said of it stops.
    said: Option<CancellationToken>,
}

async fn actor(
    chat: ChatSession,
    voice: Voice,
    options: ActorOptions,
    events: mpsc::UnboundedSender<VoiceEvent>,
    mut commands: mpsc::Receiver<Command>,
) -> ChatSession {
    let _ = events.send(VoiceEvent::context(&chat));
    let background: Arc<Notify> = chat.background_signal();
    let mut chat = Some(chat);
    let mut edits: Vec<(ChatEdit, oneshot::Sender<Result<(), TurnError>>)> = Vec::new();
    let mut key = KeyState::default();
    let mut listening: Option<Listening> = None;
    let mut turn: Option<Turn> = None;
    let mut practice = false;
    // This reply let Hark's own voice through to the detector (see `PauseAndListen`).
    let mut leaking = false;
    let mut line = options.questions.as_ref().map(|l| l.attach());
    let mut questions = Questions::default();
    loop {
        let phase = match (&listening, &turn) {
            (Some(_), _) => Phase::Listening,
            (None, Some(_)) => Phase::Thinking,
            (None, None) => Phase::Idle,
        };
        let pause_at = listening.as_ref().and_then(|l| l.pause_at);
        tokio::select! {
            cmd = commands.recv() => {
                let k = match cmd {
                    None | Some(Command::Shutdown) => break,
                    Some(Command::Edit(edit, reply)) => {
                        edits.push((edit, reply));
                        apply_edits(&mut chat, &mut edits, &events);
                        continue;
                    }
                    Some(Command::Refresh) => {
                        if let Some(c) = &chat {
                            let _ = events.send(VoiceEvent::context(c));
                        }
                        continue;
                    }
                    Some(Command::Practice(on)) => {
                        practice = on;
                        continue;
                    }
                    Some(Command::Key(k)) => k,
                };
                let action = decide(options.mode, phase, &mut key, k);
                // A press while a consent question waits answers it: nothing is interrupted.
                if matches!(action, Action::BargeIn | Action::PauseAndListen | Action::StartListening) {
                    if let Some(id) = questions.waiting.front().map(|q| q.request.id.clone()) {
                        questions.hush(&voice);
                        listening = start_listening(&voice, &options, &events, None);
                        if let Some(l) = listening.as_mut() {
                            l.answering = Some(id);
                        }
                        continue;
                    }
                }
                match action {
                    Action::Nothing => {}
                    Action::BargeIn => {
                        if let Some(t) = &turn {
                            t.cancel.cancel();
                        }
                        listening = start_listening(&voice, &options, &events, None);
                    }
                    // Hands-free, a voice that may be Hark's own: the reply pauses (the
                    // model and the voice go on) until its words say whose it was.
                    Action::PauseAndListen => {
                        // Once this reply has shown that Hark's voice gets through, it
                        // pauses only for a voice that goes on (see LEAKING_PAUSE).
                        if turn.is_some() && !leaking {
                            voice.out.hold(true);
                            let _ = events.send(VoiceEvent::ReplyPaused);
                        }
                        listening = start_listening(&voice, &options, &events, None);
                        match listening.as_mut() {
                            Some(l) => {
                                l.overheard = true;
                                if turn.is_some() && leaking {
                                    l.pause_at = Some(tokio::time::Instant::now() + LEAKING_PAUSE);
                                }
                            }
                            None => play_on(&voice, &events, turn.is_some()),
                        }
                    }
                    Action::StartListening => {
                        // While the user speaks, a local model evaluates what the request
                        // will start with, and each transcript made while the key is held
                        // (see ChatSession::prefill and Speculation). Practice makes no
                        // request, so nothing is evaluated for it.
                        let prefiller = chat
                            .as_ref()
                            .filter(|_| options.pipeline == Pipeline::Overlapped && !practice)
                            .and_then(ChatSession::prefiller);
                        listening = start_listening(&voice, &options, &events, prefiller.clone());
                        if let (Some(_), Some(p)) = (&listening, prefiller) {
                            p.prefill(None);
                        }
                    }
                    Action::StopListening => {
                        let Some(l) = listening.take() else { continue };
                        let released_at = Instant::now();
                        l.stop.cancel();
                        if options.cues {
                            voice.out.cue(cue::stop(), cue::RATE);
                        }
                        if let Some(id) = l.answering {
                            let heard = heard_answer(&voice, l.pump.await).await;
                            questions.answer(&id, &heard, &voice, turn.as_ref(), &events);
                            if turn.is_none() && questions.waiting.is_empty() {
                                let _ = events.send(VoiceEvent::Idle);
                            }
                            continue;
                        }
                        let overheard = l.overheard;
                        // A hand on the key is someone's; the detector says whether the
                        // voice it heard went on past Hark's own.
                        let past_echo = !matches!(k, Key::VoiceEnded { past_echo: false });
                        let Some(mut captured) = captured(l.pump.await, &events, turn.is_none() && !overheard) else {
                            if overheard {
                                play_on(&voice, &events, turn.is_some());
                            }
                            continue;
                        };
                        if overheard {
                            // The words decide (issue 49). The actor waits for them as it
                            // waits for the capture: commands queue meanwhile.
                            let words = match someone_else_s_words(&voice, &mut captured, past_echo, &events).await {
                                Ok(words) => words,
                                Err(whose) => {
                                    // Hark heard itself: its canceller lets its voice through
                                    // now, and pausing at once at each syllable of it would
                                    // stutter the whole reply (see LEAKING_PAUSE).
                                    leaking |= whose == overheard::Voice::Hark && turn.is_some();
                                    play_on(&voice, &events, turn.is_some());
                                    continue;
                                }
                            };
                            if let Some(t) = &turn {
                                t.cancel.cancel();
                            }
                            captured.1 = Some(words);
                        }
                        // A barged-in turn is still winding down: it gives the conversation back first.
                        if let Some(t) = turn.take() {
                            chat = Some(rejoin(t.task.await));
                        }
                        let Some(c) = chat.take() else { break };
                        leaking = false;
                        turn = Some(if practice {
                            start_practice(c, voice.clone(), captured, events.clone())
                        } else {
                            start_turn(c, voice.clone(), captured, released_at, options.pipeline, events.clone())
                        });
                    }
                }
            }
            // A voice over a reply that let Hark's voice through went on: the reply pauses.
            _ = async { tokio::time::sleep_until(pause_at.expect("guarded")).await }, if pause_at.is_some() => {
                if let Some(l) = listening.as_mut() {
                    l.pause_at = None;
                }
                if turn.is_some() {
                    voice.out.hold(true);
                    let _ = events.send(VoiceEvent::ReplyPaused);
                }
            }
            // The input ended by itself while the key was held: its device failed or vanished.
            // Reported at once, not at the release (issue 9).
            ended = async { listening.as_mut().map(|l| &mut l.pump).expect("guarded").await }, if listening.is_some() => {
                listening = None;
                match ended {
                    Ok(Err(e)) => {
                        let _ = events.send(VoiceEvent::failed(&e));
                    }
                    Ok(Ok(_)) | Err(_) => {
                        let e = TurnError::Audio(AudioError::input("microphone", "the input ended by itself"));
                        let _ = events.send(VoiceEvent::failed(&e));
                    }
                }
                if turn.is_none() {
                    let _ = events.send(VoiceEvent::Idle);
                }
            }
            // A consent question from a tool waiting to run.
            q = async { line.as_mut().expect("guarded").recv().await }, if line.is_some() => {
                match q {
                    Some(q) => questions.arrived(q, &voice, turn.as_ref(), &events),
                    None => line = None,
                }
            }
            // The first question was settled elsewhere (the window, the time limit).
            _ = async { questions.waiting.front_mut().expect("guarded").withdrawn().await }, if !questions.waiting.is_empty() => {
                questions.waiting.pop_front();
                questions.next(&voice, turn.as_ref(), &events);
                if turn.is_none() && listening.is_none() && questions.waiting.is_empty() {
                    let _ = events.send(VoiceEvent::Idle);
                }
            }
            _ = background.notified(), if chat.is_some() => {
                if let Some(c) = chat.as_mut() {
                    match c.poll_background() {
                        Ok(true) => {
                            let _ = events.send(VoiceEvent::context(c));
                        }
                        Ok(false) => {}
                        Err(e) => {
                            let _ = events.send(VoiceEvent::failed(&e));
                        }
                    }
                }
            }
            // The `if turn.is_some()` guard makes the `expect` hold.
            done = async { turn.as_mut().map(|t| &mut t.task).expect("guarded").await }, if turn.is_some() => {
                turn = None;
                chat = Some(rejoin(done));
                apply_edits(&mut chat, &mut edits, &events);
                if listening.is_none() {
                    let _ = events.send(VoiceEvent::Idle);
                }
            }
        }
    }
    if let Some(l) = listening.take() {
        l.stop.cancel();
        let _ = l.pump.await;
    }
    if let Some(t) = turn.take() {
        t.cancel.cancel();
        chat = Some(rejoin(t.task.await));
    }
    // Edits still queued get their answer: the session is gone.
    for (_, reply) in edits {
        let _ = reply.send(Err(stopped()));
    }
    // The conversation is only ever out of `chat` while a turn task holds it, and every turn
    // task has been joined back above.
    chat.expect("the conversation is back from every turn")
}

/// The words of a voice that may be Hark's own (issue 49): `Ok` with them when they are
/// someone else's (a barge-in, or a turn); otherwise whose they were (a `NoTurn` event says
/// so), or `Listener` when no transcript could be had (a `Failed` event says why).
/// `past_echo`: the voice went on past where Hark's own could still be heard
/// ([`Key::VoiceEnded`]).
async fn someone_else_s_words(
    voice: &Voice,
    captured: &mut Captured,
    past_echo: bool,
    events: &mpsc::UnboundedSender<VoiceEvent>,
) -> Result<String, overheard::Voice> {
    let words = match captured.1.take() {
        Some(t) => t,
        None => match transcribe(voice.stt.as_ref(), &captured.0).await {
            Ok(t) => t,
            Err(e) => {
                let _ = events.send(VoiceEvent::failed(&TurnError::Provider(e)));
                return Err(overheard::Voice::Listener);
            }
        },
    };
    let whose = overheard::whose(&words, &voice.out.tracker().reply_text(), past_echo);
    // Counts only: the log is no transcript.
    tracing::debug!(
        words = words.split_whitespace().count(),
        past_echo,
        ?whose,
        "a voice that may be Hark's own"
    );
    if whose != overheard::Voice::Someone {
        let _ = events.send(VoiceEvent::NoTurn {
            reason: NoTurn::Overheard,
        });
        return Err(whose);
    }
    Ok(words)
}

/// A voice over the reply was not a barge-in (or could not be checked): the reply plays on
/// from where it paused; with no turn under way any more (it ended meanwhile), Hark is idle.
fn play_on(voice: &Voice, events: &mpsc::UnboundedSender<VoiceEvent>, turn: bool) {
    voice.out.hold(false);
    if turn {
        let _ = events.send(VoiceEvent::ReplyResumed {
            speaking: voice.out.first_sample_at().is_some(),
        });
    } else {
        let _ = events.send(VoiceEvent::Idle);
    }
}

/// The captured utterance, or `None` (with the events saying why) when it makes no turn.
fn captured(
    pumped: Result<Result<Captured, TurnError>, tokio::task::JoinError>,
    events: &mpsc::UnboundedSender<VoiceEvent>,
    idle: bool,
) -> Option<Captured> {
    let captured = match pumped {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => {
            let _ = events.send(VoiceEvent::failed(&e));
            let _ = events.send(VoiceEvent::Idle);
            return None;
        }
        Err(_) => return None,
    };
    if let Err(reason) = check_utterance(&captured.0) {
        let _ = events.send(VoiceEvent::NoTurn { reason });
        if idle {
            let _ = events.send(VoiceEvent::Idle);
        }
        return None;
    }
    Some(captured)
}

/// The conversation back from a turn task. A turn catches its own panics (see `answer`)
/// and is stopped with its cancel token, never aborted, so a join error cannot happen; if
/// one did, it is passed on rather than silently losing the conversation.
fn rejoin(joined: Result<ChatSession, tokio::task::JoinError>) -> ChatSession {
    match joined {
        Ok(chat) => chat,
        Err(e) => std::panic::resume_unwind(
            e.try_into_panic()
                .unwrap_or_else(|_| Box::new("the voice turn was aborted")),
        ),
    }
}

/// Runs queued edits if the actor holds the conversation, answers each, then reports the
/// new context.
fn apply_edits(
    chat: &mut Option<ChatSession>,
    edits: &mut Vec<(ChatEdit, oneshot::Sender<Result<(), TurnError>>)>,
    events: &mpsc::UnboundedSender<VoiceEvent>,
) {
    let Some(c) = chat.as_mut() else { return };
    if edits.is_empty() {
        return;
    }
    for (edit, reply) in edits.drain(..) {
        let outcome = edit(c);
        if let Err(e) = &outcome {
            tracing::warn!("a conversation edit failed: {e}");
        }
        let _ = reply.send(outcome);
    }
    let _ = events.send(VoiceEvent::context(c));
}

fn start_listening(
    voice: &Voice,
    options: &ActorOptions,
    events: &mpsc::UnboundedSender<VoiceEvent>,
    prefiller: Option<Prefiller>,
) -> Option<Listening> {
    let input = match options.input.open(options.input_device.as_deref()) {
        Ok(c) => c,
        Err(e) => {
            let _ = events.send(VoiceEvent::failed(&TurnError::Audio(e)));
            let _ = events.send(VoiceEvent::Idle);
            return None;
        }
    };
    let _ = events.send(VoiceEvent::ListeningStarted { device: input.device() });
    voice.stt.prepare();
    let skip = if options.cues {
        voice.out.cue(cue::start(), cue::RATE);
        (cue::SKIP_MS * STT_RATE / 1000) as usize
    } else {
        0
    };
    let stop = CancellationToken::new();
    let speculate = options.pipeline == Pipeline::Overlapped && voice.stt.speculates();
    let speculation = speculate.then(|| Speculation {
        running: None,
        prefiller,
        held: stop.clone(),
    });
    let pump = tokio::spawn(pump(
        input,
        voice.clone(),
        skip,
        speculation,
        stop.clone(),
        events.clone(),
    ));
    Some(Listening {
        stop,
        pump,
        answering: None,
        pause_at: None,
        overheard: false,
    })
}

/// Moves captured audio to the live transcriber (if any) and collects it, until stopped
/// or until the input ends by itself (its device failed). The first `skip` samples (the
/// start cue, heard by the microphone) are left out. With a `speculation` (a local engine
/// without a live mode), the speech so far is transcribed at each pause, so that a release
/// after a pause finds its transcript ready (see [`Speculation`]); with a local engine's
/// live mode, the local model answers the transcript settled in each pause (see
/// [`Ahead`]).
async fn pump(
    mut input: Box<dyn InputStream>,
    voice: Voice,
    mut skip: usize,
    speculation: Option<Speculation>,
    stop: CancellationToken,
    events: mpsc::UnboundedSender<VoiceEvent>,
) -> Result<Captured, TurnError> {
    let (interim_tx, mut interim_rx) = mpsc::unbounded_channel();
    let mut live: Option<Box<dyn LiveTranscription>> = voice.stt.live(interim_tx).await?;
    let mut ahead = match (&live, &speculation) {
        (Some(l), Some(s)) => s.prefiller.clone().zip(l.settled()).map(|(prefiller, settled)| Ahead {
            prefiller,
            settled,
            running: None,
            open: None,
        }),
        _ => None,
    };
    let mut speculation = speculation.filter(|_| live.is_none());
    let mut all = Vec::new();
    loop {
        tokio::select! {
            biased;
            _ = stop.cancelled() => break,
            Some(text) = interim_rx.recv() => {
                if let Some(a) = ahead.as_mut() {
                    a.interim(&text);
                }
                let _ = events.send(VoiceEvent::TranscriptInterim { text });
            }
            // The `if ahead.is_some()` guard makes the `expect` hold.
            changed = async { ahead.as_mut().expect("guarded").settled.changed().await }, if ahead.is_some() => {
                match changed {
                    Ok(()) => {
                        let a = ahead.as_mut().expect("guarded");
                        let now = a.settled.borrow_and_update().clone();
                        a.follow(now);
                    }
                    // The transcription's thread ended: its release reports why.
                    Err(_) => ahead = None,
                }
            }
            chunk = input.next_chunk() => {
                let Some(mut chunk) = chunk else { break };
                let _ = events.send(VoiceEvent::Level { rms: input.level() });
                let cut = skip.min(chunk.len());
                chunk.drain(..cut);
                skip -= cut;
                if let Some(l) = live.as_mut() {
                    l.send(&chunk).await?;
                }
                all.extend(chunk);
                if let Some(s) = speculation.as_mut() {
                    s.after_chunk(&voice, &all);
                }
            }
        }
    }
    let ended_by_itself = !stop.is_cancelled();
    let rest = input.stop().map_err(TurnError::Audio)?;
    if ended_by_itself {
        return Err(TurnError::Audio(AudioError::input(
            "microphone",
            "the input ended by itself",
        )));
    }
    if let Some(l) = live.as_mut() {
        l.send(&rest).await?;
    }
    all.extend(rest);
    let transcript = match (live, speculation) {
        (Some(l), _) if check_utterance(&all).is_ok() => {
            let transcript = l.finish().await?;
            if let Some(a) = ahead.take() {
                a.at_release(&transcript);
            }
            Some(transcript)
        }
        (None, Some(s)) => s.at_release(&all).await,
        _ => None,
    };
    Ok((all, transcript))
}

/// Transcription while the key is held, for a local engine (issue 12). At each pause
/// ([`PAUSE_MS`](crate::audio::silence::PAUSE_MS) of silence after new speech) the speech
/// so far is transcribed in the background; a word spoken after it stops that
/// transcription at once. At
/// release, if no word was spoken since the last such transcription began, it is the
/// transcript: it heard the same speech the whole clip holds (the clip differs only by
/// trailing silence), so the transcript is the same and release waits only for what of it
/// is still running. If the user spoke on, the whole clip is transcribed after release,
/// as before. Speech that never pauses before the release costs nothing extra.
///
/// A transcript finished while the key is still held is also handed to the local model
/// (`prefiller`), which evaluates the whole request it would make and goes on to generate
/// its reply while the key is still held: a release that confirms it finds the request
/// evaluated and as much of the reply made as the time allowed — `hark-llm` hands it, and
/// the rest as it comes, to the turn's identical request. A word spoken after that pause,
/// or a release that does not confirm it, stops the generation (the model stops at its
/// next token, and the CPU goes to the transcription that counts). One finished after the
/// release is not handed over: the turn sends the same request at once.
///
/// Transcribing while the user still speaks (between pauses, for the model to evaluate the
/// words so far) was tried and measured: on 2 cores that work took the CPU from the pause's
/// transcription, and the turn got slower (README, "The offline spoken turn").
struct Speculation {
    /// The transcription started last.
    running: Option<Run>,
    prefiller: Option<Prefiller>,
    /// Cancelled at the release.
    held: CancellationToken,
}

/// One transcription while the key is held.
struct Run {
    /// The voiced end of the speech it hears.
    covered: usize,
    /// Stops it early.
    stop: CancellationToken,
    task: tokio::task::JoinHandle<Result<String, crate::provider::ProviderError>>,
}

impl Run {
    /// Stops it: whisper gives up at its next step (its thread cannot be aborted from
    /// outside), and what it would have said is neither used nor evaluated; a reply
    /// already being generated from it is dropped (the model stops at its next token).
    fn cancel(&self) {
        self.stop.cancel();
    }
}

impl Speculation {
    fn after_chunk(&mut self, voice: &Voice, all: &[f32]) {
        let end = voiced_end(all);
        if let Some(r) = self.running.as_ref() {
            if end > r.covered {
                // The user spoke on: it hears less than the utterance and would be thrown
                // away at the release, so it stops now (with the reply made from it) and
                // leaves the CPU to the next pause's.
                r.cancel();
            } else if !r.task.is_finished() {
                return; // one at a time; the next pause starts the next
            }
        }
        let covered = self.running.as_ref().map_or(0, |r| r.covered);
        if end == 0 || end <= covered || all.len() - end < PAUSE {
            return;
        }
        let clip = all.to_vec();
        if check_utterance(&clip).is_err() {
            return;
        }
        let stt = voice.stt.clone();
        let (prefiller, held) = (self.prefiller.clone(), self.held.clone());
        let stop = CancellationToken::new();
        let until = stop.clone();
        let task = tokio::spawn(async move {
            let text = stt.transcribe_until(&clip, &until).await;
            if let (Ok(t), Some(p)) = (&text, prefiller) {
                if !held.is_cancelled() && !until.is_cancelled() && !t.trim().is_empty() {
                    // The run's own stop ends the request too (`Run::cancel`).
                    p.prefill_until(Some(t.trim().to_string()), until.clone());
                }
            }
            text
        });
        let run = Run {
            covered: end,
            stop,
            task,
        };
        if let Some(old) = self.running.replace(run) {
            old.cancel();
        }
    }

    /// The transcript for the whole clip, when a transcription of the same speech is done
    /// or running; `None`: transcribe the clip.
    async fn at_release(self, all: &[f32]) -> Option<String> {
        let run = self.running?;
        if run.covered != voiced_end(all) {
            // Stale: it stops, so the whole clip's transcription has the CPU.
            run.cancel();
            return None;
        }
        match run.task.await {
            Ok(Ok(text)) => Some(text.trim().to_string()),
            // A failure is retried on the whole clip, which reports it if it persists.
            _ => None,
        }
    }
}

/// The local model answers ahead of the release, with a live engine that can tell when
/// its transcript is settled (`LiveTranscription::settled`: every word heard so far decoded,
/// and a pause after them). Each settled transcript is handed to the model as the whole
/// request the turn would make (`Prefiller::prefill_until`), which evaluates it and starts
/// the reply while the key is still held; the words already evaluated for an earlier
/// pause are not evaluated again (`hark-llm` keeps the common prefix). New speech drops
/// the reply ahead at once (the model stops at its next token, and the CPU goes back to
/// the recogniser), and a release whose transcript is the settled one finds its request
/// evaluated and its reply under way: the turn's identical request takes it over. A
/// release that heard more drops it, and the turn asks for the words it heard.
///
/// Unlike [`Speculation`], this costs no transcription of its own: the live transcription
/// decodes each pause anyway, and its final text is what the release would give.
///
/// Before a pause, the model follows the words as they are shown (issue 20): each new
/// interim transcript is handed over left open (`Prefiller::prefill_open`), evaluated up to
/// its last word with nothing generated, so at the pause only the words since the last
/// interim and the markup that closes the message are left to evaluate, not the whole
/// utterance.
struct Ahead {
    prefiller: Prefiller,
    settled: watch::Receiver<Option<String>>,
    /// The transcript the model is answering ahead, and what drops that reply.
    running: Option<(String, CancellationToken)>,
    /// The words so far last handed over open, and what drops that request.
    open: Option<(String, CancellationToken)>,
}

impl Ahead {
    /// New interim words: the model evaluates them, unless a reply ahead already answers
    /// them (a pause settled these very words).
    fn interim(&mut self, words: &str) {
        let words = words.trim();
        if words.is_empty()
            || matches!(&self.running, Some((t, _)) if t == words)
            || matches!(&self.open, Some((t, _)) if t == words)
        {
            return;
        }
        if let Some((_, stop)) = self.open.take() {
            stop.cancel();
        }
        let stop = CancellationToken::new();
        self.prefiller.prefill_open(words.to_string(), stop.clone());
        self.open = Some((words.to_string(), stop));
    }

    /// The settled transcript changed to `now`.
    fn follow(&mut self, now: Option<String>) {
        let now = now.map(|t| t.trim().to_string()).filter(|t| !t.is_empty());
        if matches!((&self.running, &now), (Some((was, _)), Some(now)) if was == now) {
            return;
        }
        if let Some((_, stop)) = self.running.take() {
            stop.cancel();
        }
        if let Some(text) = now {
            let stop = CancellationToken::new();
            self.prefiller.prefill_until(Some(text.clone()), stop.clone());
            self.running = Some((text, stop));
        }
    }

    /// At release, with the final transcript: the reply ahead is kept for the turn if it
    /// answers that transcript, else dropped.
    fn at_release(mut self, transcript: &str) {
        if let Some((text, stop)) = self.running.take() {
            if text != transcript.trim() {
                stop.cancel();
            }
        }
    }
}

impl Drop for Ahead {
    /// A capture that ends without a turn (a failure, a cancel) drops the reply ahead.
    fn drop(&mut self) {
        for (_, stop) in [self.running.take(), self.open.take()].into_iter().flatten() {
            stop.cancel();
        }
    }
}

/// Practice: the utterance is transcribed and reported, no model turn, nothing recorded.
fn start_practice(
    chat: ChatSession,
    voice: Voice,
    (samples, live_transcript): Captured,
    events: mpsc::UnboundedSender<VoiceEvent>,
) -> Turn {
    let task = tokio::spawn(async move {
        let heard = match live_transcript {
            Some(t) => Ok(t.trim().to_string()),
            None => super::transcribe(voice.stt.as_ref(), &samples).await,
        };
        match heard {
            Ok(transcript) => {
                let _ = events.send(VoiceEvent::TranscriptFinal {
                    text: transcript.clone(),
                });
                let _ = events.send(VoiceEvent::PracticeHeard { transcript });
            }
            Err(e) => {
                let _ = events.send(VoiceEvent::failed(&TurnError::Provider(e)));
            }
        }
        chat
    });
    Turn {
        cancel: CancellationToken::new(),
        task,
        // Practice makes no model turn, so no tool asks anything during it.
        asides: mpsc::unbounded_channel().0,
    }
}

impl Questions {
    /// A new question: put at once if none waits, else after those before it.
    fn arrived(&mut self, q: Question, voice: &Voice, turn: Option<&Turn>, events: &mpsc::UnboundedSender<VoiceEvent>) {
        self.waiting.push_back(q);
        if self.waiting.len() == 1 {
            self.put(voice, turn, events);
        }
    }

    /// The first question was settled: stop saying it, and put the next one still waited
    /// for (those settled meanwhile are dropped).
    fn next(&mut self, voice: &Voice, turn: Option<&Turn>, events: &mpsc::UnboundedSender<VoiceEvent>) {
        self.hush(voice);
        while self.waiting.front().is_some_and(|q| q.is_settled()) {
            self.waiting.pop_front();
        }
        if !self.waiting.is_empty() {
            self.put(voice, turn, events);
        }
    }

    /// Shows and says the first question.
    fn put(&mut self, voice: &Voice, turn: Option<&Turn>, events: &mpsc::UnboundedSender<VoiceEvent>) {
        let Some(q) = self.waiting.front() else { return };
        let question = q.request.question();
        let _ = events.send(VoiceEvent::ConsentAsked {
            id: q.request.id.clone(),
            question: question.clone(),
        });
        self.say(voice, turn, question);
    }

    /// Says `text` aside: through the turn's speaking task while a turn runs (so it comes
    /// after the words said before the call), else on its own.
    fn say(&mut self, voice: &Voice, turn: Option<&Turn>, text: String) {
        let settled = CancellationToken::new();
        self.said = Some(settled.clone());
        let aside = Aside { text, settled };
        let unsaid = match turn {
            Some(t) => t.asides.send(aside).err().map(|e| e.0),
            None => Some(aside),
        };
        if let Some(aside) = unsaid {
            let (tts, out) = (voice.tts.clone(), voice.out.clone());
            tokio::spawn(async move { say_aside(tts.as_ref(), out.as_ref(), aside).await });
        }
    }

    /// Stops saying the question (it was settled, or the user pressed to answer it: the
    /// microphone must not hear it).
    fn hush(&mut self, voice: &Voice) {
        if let Some(said) = self.said.take() {
            said.cancel();
            voice.out.hush();
        }
    }

    /// What the user said in answer to question `id`: settles it when it has one of the
    /// words; asks again when it has none.
    fn answer(
        &mut self,
        id: &str,
        heard: &str,
        voice: &Voice,
        turn: Option<&Turn>,
        events: &mpsc::UnboundedSender<VoiceEvent>,
    ) {
        let asked = self.waiting.front().is_some_and(|q| q.request.id == id);
        let answer = Answer::from_words(heard).filter(|_| asked);
        let _ = events.send(VoiceEvent::ConsentHeard {
            id: id.to_string(),
            heard: heard.to_string(),
            answer,
        });
        match answer {
            Some(a) => {
                if let Some(q) = self.waiting.pop_front() {
                    q.answer(a);
                }
                self.next(voice, turn, events);
            }
            None if asked => self.say(voice, turn, SAY_AGAIN.to_string()),
            None => {}
        }
    }
}

/// The transcript of an answer to a consent question ("" when nothing was heard: it is
/// asked again).
async fn heard_answer(voice: &Voice, pumped: Result<Result<Captured, TurnError>, tokio::task::JoinError>) -> String {
    let (samples, live) = match pumped {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => {
            tracing::warn!("the answer to a consent question was not heard: {e}");
            return String::new();
        }
        Err(_) => return String::new(),
    };
    if let Some(t) = live {
        return t.trim().to_string();
    }
    if check_utterance(&samples).is_err() {
        return String::new();
    }
    match super::transcribe(voice.stt.as_ref(), &samples).await {
        Ok(t) => t,
        Err(e) => {
            tracing::warn!("the answer to a consent question could not be transcribed: {e}");
            String::new()
        }
    }
}

fn start_turn(
    mut chat: ChatSession,
    voice: Voice,
    (samples, live_transcript): Captured,
    released_at: Instant,
    pipeline: Pipeline,
    events: mpsc::UnboundedSender<VoiceEvent>,
) -> Turn {
    let cancel = CancellationToken::new();
    let c = cancel.clone();
    let (asides, asides_rx) = mpsc::unbounded_channel();
    let task = tokio::spawn(async move {
        if let Err(e) = answer(
            &mut chat,
            &voice,
            &samples,
            live_transcript,
            released_at,
            pipeline,
            &c,
            Some(asides_rx),
            &events,
        )
        .await
        {
            let _ = events.send(VoiceEvent::failed(&e));
        }
        chat
    });
    Turn { cancel, task, asides }
}

#[cfg(test)]
mod tests;
