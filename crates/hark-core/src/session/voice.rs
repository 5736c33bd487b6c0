//! Voice turns: transcript → streamed reply → sentences → speech, with barge-in.
//!
//! [`respond`] answers one transcript aloud: reply tokens go through the sentence splitter,
//! each sentence is synthesised and queued for playback as soon as it is complete, so the
//! first audio starts after the first sentence. A barge-in (the cancel token) stops playback
//! within one audio buffer, cancels the model and the voice, and records what was heard
//! next to what was generated (rule 9).
//!
//! [`spawn`] starts the session actor: one task owns capture, the conversation and the
//! pipeline, and every key event, capture end and turn completion goes through it in order.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::ptt::{check_utterance, decide, Action, Key, KeyState, NoTurn, Phase, PttMode};
use super::sentences::SentenceSplitter;
use super::{ChatSession, TurnError, TurnEvent};
use crate::audio::capture::Capture;
use crate::audio::playback::{AudioOut, Heard};
use crate::conversation::{MessageKind, PanelView};
use crate::provider::{ErrorKind, ProviderError};
use crate::stt::Transcriber;
use crate::tts::{AudioChunk, Synthesizer};

/// The speech parts of a session.
#[derive(Clone)]
pub struct Voice {
    pub stt: Arc<dyn Transcriber>,
    pub tts: Arc<dyn Synthesizer>,
    pub out: Arc<dyn AudioOut>,
}

/// Latency figures of one voice turn, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
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
#[serde(tag = "type", rename_all = "snake_case")]
pub enum VoiceEvent {
    ListeningStarted,
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
        name: String,
    },
    /// A tool call settled: `state` is "done", "error" or "cancelled".
    ToolFinished {
        name: String,
        state: String,
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
    },
    /// The record or the context changed: the history panel's new view.
    ContextChanged {
        panel: Box<PanelView>,
    },
    Failed {
        kind: String,
        message: String,
        next_step: String,
    },
    Idle,
    /// An offline model is being fetched (first use): for a progress bar.
    ModelProgress {
        model: String,
        phase: crate::models::Phase,
        done: u64,
        total: u64,
    },
    /// A session started (after models were fetched): the window should read the state.
    SessionReady {
        session_id: String,
    },
}

impl VoiceEvent {
    /// The panel event for a conversation as it stands.
    pub fn context(chat: &ChatSession) -> Self {
        VoiceEvent::ContextChanged {
            panel: Box::new(PanelView::of(chat.conversation())),
        }
    }

    fn failed(e: &TurnError) -> Self {
        VoiceEvent::Failed {
            kind: e.kind().into(),
            message: e.to_string(),
            next_step: e.next_step().into(),
        }
    }
}

/// A transcript ready to answer, with its timing.
#[derive(Debug, Clone)]
pub struct Utterance {
    pub transcript: String,
    /// When the push-to-talk key was released.
    pub released_at: Instant,
    /// When the final transcript was there.
    pub transcript_at: Instant,
}

/// How a spoken reply ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Spoken {
    pub reply_id: String,
    pub generated: String,
    pub heard: Heard,
    pub interrupted: bool,
    pub metrics: TurnMetrics,
}

fn ms(from: Instant, to: Instant) -> u64 {
    to.saturating_duration_since(from).as_millis() as u64
}

/// Transcribes a whole utterance (engines without a live mode, and `hark talk --wav`).
pub async fn transcribe(stt: &dyn Transcriber, samples: &[f32]) -> Result<String, ProviderError> {
    Ok(stt.transcribe(samples).await?.trim().to_string())
}

/// How much unplayed audio the synthesiser may queue before it waits.
const LOOKAHEAD_MS: u64 = 1_000;

/// Timestamps the speaking task shares with the turn.
#[derive(Default)]
struct Timing {
    first_sentence: Option<Instant>,
    first_byte: Option<Instant>,
}

/// Speaks sentences as they arrive: synthesise, queue for playback, next.
async fn speak(
    tts: Arc<dyn Synthesizer>,
    out: Arc<dyn AudioOut>,
    mut sentences: mpsc::UnboundedReceiver<String>,
    timing: Arc<Mutex<Timing>>,
    events: mpsc::UnboundedSender<VoiceEvent>,
) -> Result<(), ProviderError> {
    let mut started = false;
    while let Some(sentence) = sentences.recv().await {
        // Stay about a second ahead of playback, no more: synthesis is faster than speech,
        // and audio synthesised past a barge-in is paid for and never heard.
        while out.queued_ms() > LOOKAHEAD_MS {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let idx = out.begin_sentence(&sentence);
        let (tx, mut rx) = mpsc::unbounded_channel::<AudioChunk>();
        let synth = tts.synthesize(&sentence, &tx);
        tokio::pin!(synth);
        let mut push = |chunk: AudioChunk| {
            timing
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .first_byte
                .get_or_insert_with(Instant::now);
            if !started {
                started = true;
                let _ = events.send(VoiceEvent::SpeakingStarted);
            }
            out.push(idx, chunk.samples, chunk.rate);
        };
        let result = loop {
            tokio::select! {
                Some(chunk) = rx.recv() => push(chunk),
                r = &mut synth => break r,
            }
        };
        while let Ok(chunk) = rx.try_recv() {
            push(chunk);
        }
        out.end_sentence(idx);
        result?;
    }
    Ok(())
}

/// Answers a transcript aloud. Cancelling `barge_in` interrupts it at any point.
pub async fn respond(
    chat: &mut ChatSession,
    voice: &Voice,
    utterance: &Utterance,
    barge_in: &CancellationToken,
    events: &mpsc::UnboundedSender<VoiceEvent>,
) -> Result<Spoken, TurnError> {
    voice.out.start_reply();
    let timing = Arc::new(Mutex::new(Timing::default()));
    let (sentence_tx, sentence_rx) = mpsc::unbounded_channel::<String>();
    let mut speaking = tokio::spawn(speak(
        voice.tts.clone(),
        voice.out.clone(),
        sentence_rx,
        timing.clone(),
        events.clone(),
    ));
    let record_len = chat.conversation().record().len();
    let _ = events.send(VoiceEvent::ThinkingStarted);

    let mut splitter = SentenceSplitter::new();
    let queue = |s: String| {
        timing
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .first_sentence
            .get_or_insert_with(Instant::now);
        let _ = sentence_tx.send(s);
    };
    let sent = chat
        .send(&utterance.transcript, barge_in, |e| {
            match e {
                TurnEvent::Delta(d) => {
                    for s in splitter.push(&d) {
                        queue(s);
                    }
                    let _ = events.send(VoiceEvent::ReplyDelta { text: d });
                }
                TurnEvent::ToolStarted { call } => {
                    // What was said before the call is spoken while the tool runs.
                    if let Some(rest) = splitter.finish() {
                        queue(rest);
                    }
                    let _ = events.send(VoiceEvent::ToolStarted { name: call.name });
                }
                TurnEvent::ToolFinished { name, state, .. } => {
                    let state = serde_json::to_value(state)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_string))
                        .unwrap_or_default();
                    let _ = events.send(VoiceEvent::ToolFinished { name, state });
                }
                TurnEvent::UserRecorded(_) => {}
            }
        })
        .await;
    let failure = match sent {
        Ok(_) => {
            if let Some(rest) = splitter.finish() {
                queue(rest);
            }
            None
        }
        Err(TurnError::Provider(e)) if e.kind == ErrorKind::Cancelled => None,
        Err(e) => Some(e),
    };
    drop(sentence_tx);
    let _ = events.send(VoiceEvent::context(chat));

    // Speak to the end, unless the user barges in.
    let mut tts_error = None;
    if failure.is_none() && !barge_in.is_cancelled() {
        tokio::select! {
            r = &mut speaking => {
                if let Ok(Err(e)) = r {
                    tts_error = Some(e);
                }
            }
            _ = barge_in.cancelled() => {}
        }
        while tts_error.is_none() && !barge_in.is_cancelled() && !voice.out.is_idle() {
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(5)) => {}
                _ = barge_in.cancelled() => {}
            }
        }
    }
    let interrupted = barge_in.is_cancelled();
    let heard = if interrupted || failure.is_some() || tts_error.is_some() {
        voice.out.flush()
    } else {
        voice.out.heard()
    };
    speaking.abort();
    if let Some(e) = failure {
        return Err(e);
    }

    // This turn's reply (recorded by `send`, complete or cut): its last model response.
    let reply = chat.conversation().record()[record_len..]
        .iter()
        .rev()
        .find(|m| matches!(m.kind, MessageKind::Assistant(_)))
        .cloned()
        .ok_or_else(|| ProviderError::new("voice", ErrorKind::InvalidResponse, "the turn recorded no reply"))?;
    let MessageKind::Assistant(a) = &reply.kind else {
        unreachable!("filtered to assistant messages above")
    };
    let t = timing.lock().unwrap_or_else(|p| p.into_inner());
    let metrics = TurnMetrics {
        transcript_ms: Some(ms(utterance.released_at, utterance.transcript_at)),
        first_token_ms: a.latency.and_then(|l| l.first_token_ms),
        first_audio_byte_ms: t.first_sentence.zip(t.first_byte).map(|(s, b)| ms(s, b)),
        first_audio_out_ms: voice.out.first_sample_at().map(|f| ms(utterance.released_at, f)),
    };
    drop(t);
    chat.edit_reply(&reply.id, |a| {
        let l = a.latency.get_or_insert_with(Default::default);
        l.transcript_ms = metrics.transcript_ms;
        l.first_audio_byte_ms = metrics.first_audio_byte_ms;
        l.first_audio_out_ms = metrics.first_audio_out_ms;
    })?;
    if interrupted {
        chat.mark_interrupted(&reply.id, &heard.text, heard.ms)?;
        let _ = events.send(VoiceEvent::ReplyInterrupted {
            heard: heard.text.clone(),
            generated: a.generated.clone(),
            heard_ms: heard.ms,
        });
    } else if let Some(e) = tts_error {
        let e = TurnError::Provider(e);
        let _ = events.send(VoiceEvent::failed(&e));
    }
    let _ = events.send(VoiceEvent::context(chat));
    let _ = events.send(VoiceEvent::TurnFinished {
        reply: a.generated.clone(),
        metrics,
    });
    Ok(Spoken {
        reply_id: reply.id,
        generated: a.generated.clone(),
        heard,
        interrupted,
        metrics,
    })
}

/// Answers captured audio aloud: the final transcript (from the live session, or by
/// transcribing the samples), then [`respond`]. `Ok(None)` when no words were heard (a
/// `NoTurn` event says so).
pub async fn answer(
    chat: &mut ChatSession,
    voice: &Voice,
    samples: &[f32],
    live_transcript: Option<String>,
    released_at: Instant,
    barge_in: &CancellationToken,
    events: &mpsc::UnboundedSender<VoiceEvent>,
) -> Result<Option<Spoken>, TurnError> {
    let transcript = match live_transcript {
        Some(t) => t.trim().to_string(),
        None => transcribe(voice.stt.as_ref(), samples).await?,
    };
    if transcript.is_empty() {
        let _ = events.send(VoiceEvent::NoTurn {
            reason: NoTurn::NoWords,
        });
        return Ok(None);
    }
    let _ = events.send(VoiceEvent::TranscriptFinal {
        text: transcript.clone(),
    });
    let u = Utterance {
        transcript,
        released_at,
        transcript_at: Instant::now(),
    };
    respond(chat, voice, &u, barge_in, events).await.map(Some)
}

/// A change to the conversation (reset, `max_turns`, system prompt), run by the actor when
/// it holds the conversation: at once when idle, after the turn in flight otherwise.
pub type ChatEdit = Box<dyn FnOnce(&mut ChatSession) -> Result<(), TurnError> + Send>;

/// Commands to the session actor (imperative: do this).
pub enum VoiceCommand {
    /// The push-to-talk key (or button) went down or up.
    Key(Key),
    /// Change the conversation; a `ContextChanged` event follows.
    Edit(ChatEdit),
    /// Send a fresh `ContextChanged` event.
    Refresh,
    /// End the session; the actor returns the conversation.
    Shutdown,
}

impl std::fmt::Debug for VoiceCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            VoiceCommand::Key(k) => write!(f, "Key({k:?})"),
            VoiceCommand::Edit(_) => f.write_str("Edit(..)"),
            VoiceCommand::Refresh => f.write_str("Refresh"),
            VoiceCommand::Shutdown => f.write_str("Shutdown"),
        }
    }
}

/// An utterance's 16 kHz samples and, from a live engine, its transcript.
type Captured = (Vec<f32>, Option<String>);

/// Capture in progress: the pump task and how to stop it.
struct Listening {
    stop: CancellationToken,
    pump: JoinHandle<Result<Captured, TurnError>>,
}

/// A turn in progress: the task (which owns the conversation meanwhile) and its barge-in token.
struct Turn {
    cancel: CancellationToken,
    task: JoinHandle<ChatSession>,
}

/// Starts the voice session actor. Returns the command sender and the task, which yields the
/// conversation back after `Shutdown`.
pub fn spawn(
    chat: ChatSession,
    voice: Voice,
    mode: PttMode,
    input_device: Option<String>,
    events: mpsc::UnboundedSender<VoiceEvent>,
) -> (mpsc::UnboundedSender<VoiceCommand>, JoinHandle<ChatSession>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let task = tokio::spawn(actor(chat, voice, mode, input_device, events, rx));
    (tx, task)
}

async fn actor(
    chat: ChatSession,
    voice: Voice,
    mode: PttMode,
    input_device: Option<String>,
    events: mpsc::UnboundedSender<VoiceEvent>,
    mut commands: mpsc::UnboundedReceiver<VoiceCommand>,
) -> ChatSession {
    let _ = events.send(VoiceEvent::context(&chat));
    let mut chat = Some(chat);
    let mut edits: Vec<ChatEdit> = Vec::new();
    let mut key = KeyState::default();
    // Background summary folds finish between turns; this tick brings them into the context.
    let mut summary_tick = tokio::time::interval(Duration::from_millis(250));
    let mut listening: Option<Listening> = None;
    let mut turn: Option<Turn> = None;
    loop {
        let phase = match (&listening, &turn) {
            (Some(_), _) => Phase::Listening,
            (None, Some(_)) => Phase::Thinking,
            (None, None) => Phase::Idle,
        };
        tokio::select! {
            cmd = commands.recv() => {
                let k = match cmd {
                    None | Some(VoiceCommand::Shutdown) => break,
                    Some(VoiceCommand::Edit(edit)) => {
                        edits.push(edit);
                        apply_edits(&mut chat, &mut edits, &events);
                        continue;
                    }
                    Some(VoiceCommand::Refresh) => {
                        if let Some(c) = &chat {
                            let _ = events.send(VoiceEvent::context(c));
                        }
                        continue;
                    }
                    Some(VoiceCommand::Key(k)) => k,
                };
                match decide(mode, phase, &mut key, k) {
                    Action::Nothing => {}
                    Action::BargeIn => {
                        if let Some(t) = &turn {
                            t.cancel.cancel();
                        }
                        listening = start_listening(&voice, input_device.as_deref(), &events);
                    }
                    Action::StartListening => listening = start_listening(&voice, input_device.as_deref(), &events),
                    Action::StopListening => {
                        let Some(l) = listening.take() else { continue };
                        let released_at = Instant::now();
                        l.stop.cancel();
                        let captured = match l.pump.await {
                            Ok(Ok(c)) => c,
                            Ok(Err(e)) => {
                                let _ = events.send(VoiceEvent::failed(&e));
                                let _ = events.send(VoiceEvent::Idle);
                                continue;
                            }
                            Err(_) => continue,
                        };
                        if let Err(reason) = check_utterance(&captured.0) {
                            let _ = events.send(VoiceEvent::NoTurn { reason });
                            if turn.is_none() {
                                let _ = events.send(VoiceEvent::Idle);
                            }
                            continue;
                        }
                        // A barged-in turn is still winding down: it gives the conversation back first.
                        if let Some(t) = turn.take() {
                            chat = Some(rejoin(t.task.await));
                        }
                        let Some(c) = chat.take() else { break };
                        turn = Some(start_turn(c, voice.clone(), captured, released_at, events.clone()));
                    }
                }
            }
            _ = summary_tick.tick(), if chat.as_ref().is_some_and(|c| c.background_running()) => {
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
    // The conversation is only ever out of `chat` while a turn task holds it, and every turn
    // task has been joined back above.
    chat.expect("the conversation is back from every turn")
}

/// The conversation back from a turn task. Turns are stopped with their cancel token, never
/// aborted, so a join error is a panic inside the turn: it is passed on, not swallowed.
fn rejoin(joined: Result<ChatSession, tokio::task::JoinError>) -> ChatSession {
    match joined {
        Ok(chat) => chat,
        Err(e) => std::panic::resume_unwind(
            e.try_into_panic()
                .unwrap_or_else(|_| Box::new("the voice turn was aborted")),
        ),
    }
}

/// Runs queued edits if the actor holds the conversation, then reports the new context.
fn apply_edits(chat: &mut Option<ChatSession>, edits: &mut Vec<ChatEdit>, events: &mpsc::UnboundedSender<VoiceEvent>) {
    let Some(c) = chat.as_mut() else { return };
    for edit in edits.drain(..) {
        if let Err(e) = edit(c) {
            let _ = events.send(VoiceEvent::failed(&e));
        }
    }
    let _ = events.send(VoiceEvent::context(c));
}

fn start_listening(
    voice: &Voice,
    device: Option<&str>,
    events: &mpsc::UnboundedSender<VoiceEvent>,
) -> Option<Listening> {
    let mut capture = match Capture::start(device) {
        Ok(c) => c,
        Err(e) => {
            let _ = events.send(VoiceEvent::Failed {
                kind: "audio".into(),
                message: e.to_string(),
                next_step: "check the microphone, then press again".into(),
            });
            return None;
        }
    };
    let _ = events.send(VoiceEvent::ListeningStarted);
    voice.stt.prepare();
    let stop = CancellationToken::new();
    let s = stop.clone();
    let stt = voice.stt.clone();
    let ev = events.clone();
    let pump = tokio::spawn(async move {
        let (interim_tx, mut interim_rx) = mpsc::unbounded_channel();
        let mut live = stt.live(interim_tx).await?;
        let mut all = Vec::new();
        loop {
            tokio::select! {
                biased;
                _ = s.cancelled() => break,
                Some(text) = interim_rx.recv() => { let _ = ev.send(VoiceEvent::TranscriptInterim { text }); }
                chunk = capture.next_chunk() => {
                    let Some(chunk) = chunk else { break };
                    let _ = ev.send(VoiceEvent::Level { rms: capture.level() });
                    if let Some(l) = live.as_mut() {
                        l.send(&chunk).await?;
                    }
                    all.extend(chunk);
                }
            }
        }
        let rest = capture
            .stop()
            .map_err(|e| ProviderError::new("audio", ErrorKind::Connectivity, e.to_string()))?;
        if let Some(l) = live.as_mut() {
            l.send(&rest).await?;
        }
        all.extend(rest);
        let transcript = match live {
            Some(l) if check_utterance(&all).is_ok() => Some(l.finish().await?),
            _ => None,
        };
        Ok((all, transcript))
    });
    Some(Listening { stop, pump })
}

fn start_turn(
    mut chat: ChatSession,
    voice: Voice,
    (samples, live_transcript): (Vec<f32>, Option<String>),
    released_at: Instant,
    events: mpsc::UnboundedSender<VoiceEvent>,
) -> Turn {
    let cancel = CancellationToken::new();
    let c = cancel.clone();
    let task = tokio::spawn(async move {
        if let Err(e) = answer(&mut chat, &voice, &samples, live_transcript, released_at, &c, &events).await {
            let _ = events.send(VoiceEvent::failed(&e));
        }
        chat
    });
    Turn { cancel, task }
}
