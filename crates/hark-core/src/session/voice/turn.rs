//! One spoken turn: [`answer`] turns captured audio into a transcript, [`respond`] speaks
//! the reply as it streams. Reply tokens go through the sentence splitter; each sentence is
//! synthesised and queued for playback as soon as it is complete, at most about a second
//! ahead of what is playing. Cancelling the barge-in token interrupts it at any point.

use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::FutureExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::ask::{say_aside, Aside};
use super::{TurnMetrics, Voice, VoiceEvent};
use crate::audio::playback::{AudioOut, Heard};
use crate::audio::AudioError;
use crate::conversation::MessageKind;
use crate::provider::{ErrorKind, ProviderError};
use crate::session::ptt::NoTurn;
use crate::session::{ChatSession, TurnError, TurnEvent};
use crate::stt::Transcriber;
use crate::tts::{AudioChunk, Synthesizer};

/// A transcript ready to answer, with its timing.
#[derive(Debug, Clone)]
pub struct Utterance {
    pub transcript: String,
    /// When the push-to-talk key was released.
    pub released_at: Instant,
    /// When the final transcript was there.
    pub transcript_at: Instant,
    /// How the reply is cut for speech (and how the turn was scheduled).
    pub pipeline: super::Pipeline,
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

/// Timestamps the speaking task shares with the turn.
#[derive(Default)]
struct Timing {
    first_sentence: Option<Instant>,
    first_byte: Option<Instant>,
}

/// Why the speaking task stopped short.
#[derive(Debug)]
enum Unspoken {
    /// The voice failed.
    Voice(ProviderError),
    /// The speaker stopped playing while the next sentence waited for room.
    Speaker(AudioError),
}

/// Speaks sentences as they arrive: synthesise, queue for playback, next. Something to
/// say aside (a consent question, asked while a tool waits) is said in its turn, after the
/// sentences queued before it have played.
async fn speak(
    tts: Arc<dyn Synthesizer>,
    out: Arc<dyn AudioOut>,
    mut sentences: mpsc::UnboundedReceiver<String>,
    mut asides: Option<mpsc::UnboundedReceiver<Aside>>,
    timing: Arc<Mutex<Timing>>,
    events: mpsc::UnboundedSender<VoiceEvent>,
) -> Result<(), Unspoken> {
    let mut started = false;
    let lookahead = tts.lookahead_ms();
    loop {
        // Biased: a sentence queued before a question was put is said before it.
        let sentence = tokio::select! {
            biased;
            s = sentences.recv() => match s {
                Some(s) => s,
                None => break,
            },
            Some(aside) = async { asides.as_mut()?.recv().await } => {
                say_aside(tts.as_ref(), out.as_ref(), aside).await;
                continue;
            }
        };
        // Stay the voice's lookahead ahead of playback, no more (a second for a cloud voice:
        // synthesis is faster than speech, and audio synthesised past a barge-in is paid for
        // and never heard). A barge-in aborts this task, so it needs no token of its own.
        drained(out.as_ref(), Drain::To(lookahead), &CancellationToken::new())
            .await
            .map_err(Unspoken::Speaker)?;
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
        result.map_err(Unspoken::Voice)?;
    }
    Ok(())
}

/// Answers a transcript aloud. Cancelling `barge_in` interrupts it at any point. What
/// arrives on `asides` while the reply is made (consent questions) is said in its turn.
pub async fn respond(
    chat: &mut ChatSession,
    voice: &Voice,
    utterance: &Utterance,
    barge_in: &CancellationToken,
    asides: Option<mpsc::UnboundedReceiver<Aside>>,
    events: &mpsc::UnboundedSender<VoiceEvent>,
) -> Result<Spoken, TurnError> {
    voice.out.start_reply();
    let timing = Arc::new(Mutex::new(Timing::default()));
    let (sentence_tx, sentence_rx) = mpsc::unbounded_channel::<String>();
    let mut speaking = tokio::spawn(speak(
        voice.tts.clone(),
        voice.out.clone(),
        sentence_rx,
        asides,
        timing.clone(),
        events.clone(),
    ));
    let record_len = chat.conversation().record().len();
    let _ = events.send(VoiceEvent::ThinkingStarted);

    let mut splitter = utterance.pipeline.splitter();
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
                    let _ = events.send(VoiceEvent::ToolStarted {
                        id: call.id,
                        name: call.name,
                        arguments: call.arguments,
                    });
                }
                TurnEvent::ToolFinished {
                    call_id,
                    name,
                    state,
                    content,
                } => {
                    let state = serde_json::to_value(state)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_string))
                        .unwrap_or_default();
                    let _ = events.send(VoiceEvent::ToolFinished {
                        id: call_id,
                        name,
                        state,
                        content,
                    });
                }
                TurnEvent::UserRecorded(_) => {}
            }
        })
        .await;
    let mut notice = None;
    let failure = match sent {
        Ok(reply) => {
            if let Some(rest) = splitter.finish() {
                queue(rest);
            }
            // Said after the reply, never recorded as the model's words.
            notice = crate::session::notice(&reply);
            if let Some(n) = notice {
                queue(n.to_string());
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
    let mut out_error = None;
    if failure.is_none() && !barge_in.is_cancelled() {
        tokio::select! {
            r = &mut speaking => match r {
                Ok(Err(Unspoken::Voice(e))) => tts_error = Some(e),
                Ok(Err(Unspoken::Speaker(e))) => out_error = Some(e),
                _ => {}
            },
            _ = barge_in.cancelled() => {}
        }
        if tts_error.is_none() && out_error.is_none() {
            out_error = drained(voice.out.as_ref(), Drain::Idle, barge_in).await.err();
        }
    }
    let interrupted = barge_in.is_cancelled();
    let heard = if interrupted || failure.is_some() || tts_error.is_some() || out_error.is_some() {
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
    if let Some(e) = out_error {
        // The reply is recorded; what was heard of it, too. The turn fails for the speaker.
        chat.mark_interrupted(&reply.id, &heard.text, heard.ms)?;
        let _ = events.send(VoiceEvent::context(chat));
        return Err(TurnError::Audio(e));
    }
    let _ = events.send(VoiceEvent::context(chat));
    let _ = events.send(VoiceEvent::TurnFinished {
        reply: a.generated.clone(),
        metrics,
        notice: notice.map(str::to_string),
    });
    Ok(Spoken {
        reply_id: reply.id,
        generated: a.generated.clone(),
        heard,
        interrupted,
        metrics,
    })
}

/// How long the speaker may play nothing while audio is queued before the turn fails.
const STALL_AFTER: Duration = Duration::from_secs(5);

/// How far [`drained`] waits the output down.
#[derive(Debug, Clone, Copy)]
pub(super) enum Drain {
    /// Until at most this many milliseconds are queued (room for the next sentence).
    To(u64),
    /// Until everything queued has been played and the output is idle.
    Idle,
}

/// Waits until the output has drained as far as `until` says, or the user barges in. A
/// device that stopped consuming audio fails the turn, not hangs it (issue 9), whether
/// the turn waits for the end of the reply or for room for its next sentence (the second
/// wait had no such check: a reply whose first sentence outlasts the voice's lookahead
/// hung there for ever). When every sample has been taken and the player still has not
/// said it is idle (it notices that its last source ended at the device's next pull,
/// which a stalled device never makes), the reply has been played: the turn ends so.
pub(super) async fn drained(out: &dyn AudioOut, until: Drain, barge_in: &CancellationToken) -> Result<(), AudioError> {
    // tokio's clock, so tests can run this under `tokio::time::pause()`.
    let mut last = out.heard().ms;
    let mut still_since = tokio::time::Instant::now();
    // What may stay queued.
    let keep = match until {
        Drain::To(ms) => ms,
        Drain::Idle => 0,
    };
    loop {
        let queued = out.queued_ms();
        let room = match until {
            Drain::To(_) => queued <= keep,
            Drain::Idle => out.is_idle(),
        };
        if room || barge_in.is_cancelled() {
            return Ok(());
        }
        // Sleep about as long as the excess lasts (at least 5 ms, at most a second), so a
        // five-second reply costs a handful of wake-ups rather than a thousand.
        let wait = Duration::from_millis(queued.saturating_sub(keep).clamp(5, 1_000));
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = barge_in.cancelled() => return Ok(()),
        }
        let played = out.heard().ms;
        // A paused reply plays nothing on purpose (a voice over it is being checked).
        if played != last || out.tracker().is_held() {
            last = played;
            still_since = tokio::time::Instant::now();
        } else if still_since.elapsed() >= STALL_AFTER {
            if out.queued_ms() > 0 {
                return Err(AudioError::Stalled {
                    device: out.name(),
                    secs: STALL_AFTER.as_secs(),
                });
            }
            tracing::debug!("the speaker took every sample but never went idle: the reply has played");
            return Ok(());
        }
    }
}

/// Answers captured audio aloud: the final transcript (from the live session, or by
/// transcribing the samples), then [`respond`] (with `asides`, said in their turn).
/// `Ok(None)` when no words were heard (a `NoTurn` event says so).
///
/// A panic anywhere in the turn fails this turn only: the error says so, playback stops,
/// and the conversation is reloaded from the store, which holds everything committed (the
/// in-memory copy may be half-updated). The next press works as before (issue 9).
#[allow(clippy::too_many_arguments)] // one turn's inputs; a struct would only rename them
pub async fn answer(
    chat: &mut ChatSession,
    voice: &Voice,
    samples: &[f32],
    live_transcript: Option<String>,
    released_at: Instant,
    pipeline: super::Pipeline,
    barge_in: &CancellationToken,
    asides: Option<mpsc::UnboundedReceiver<Aside>>,
    events: &mpsc::UnboundedSender<VoiceEvent>,
) -> Result<Option<Spoken>, TurnError> {
    // AssertUnwindSafe: after a panic nothing of the turn's state is used again; the
    // conversation is rebuilt from SQLite and the output is flushed.
    let turn = AssertUnwindSafe(answer_unguarded(
        chat,
        voice,
        samples,
        live_transcript,
        released_at,
        pipeline,
        barge_in,
        asides,
        events,
    ))
    .catch_unwind()
    .await;
    match turn {
        Ok(result) => result,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".into());
            tracing::error!("a voice turn panicked: {what}");
            voice.out.flush();
            chat.reload()?;
            let _ = events.send(VoiceEvent::context(chat));
            Err(TurnError::Internal(what))
        }
    }
}

#[allow(clippy::too_many_arguments)]
async fn answer_unguarded(
    chat: &mut ChatSession,
    voice: &Voice,
    samples: &[f32],
    live_transcript: Option<String>,
    released_at: Instant,
    pipeline: super::Pipeline,
    barge_in: &CancellationToken,
    asides: Option<mpsc::UnboundedReceiver<Aside>>,
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
        pipeline,
    };
    respond(chat, voice, &u, barge_in, asides, events).await.map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audio::playback::Tracker;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    /// An output that never plays: once anything is queued, five seconds stay queued.
    #[derive(Default)]
    struct Backlog {
        tracker: Tracker,
        pushed: AtomicBool,
    }

    impl AudioOut for Backlog {
        fn tracker(&self) -> &Tracker {
            &self.tracker
        }
        fn start_reply(&self) {}
        fn push(&self, _sentence: usize, _samples: Vec<f32>, _rate: u32) {
            self.pushed.store(true, Ordering::SeqCst);
        }
        fn flush(&self) -> Heard {
            self.tracker.heard()
        }
        fn is_idle(&self) -> bool {
            false
        }
        fn queued_ms(&self) -> u64 {
            if self.pushed.load(Ordering::SeqCst) {
                5_000
            } else {
                0
            }
        }
    }

    struct Counting {
        lookahead: Option<u64>,
        calls: AtomicUsize,
    }

    #[async_trait::async_trait]
    impl Synthesizer for Counting {
        fn name(&self) -> &'static str {
            "counting"
        }
        fn lookahead_ms(&self) -> u64 {
            self.lookahead.unwrap_or(1_000)
        }
        async fn synthesize(&self, _text: &str, out: &mpsc::UnboundedSender<AudioChunk>) -> Result<(), ProviderError> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            let _ = out.send(AudioChunk {
                samples: vec![0.0; 160],
                rate: 16_000,
            });
            Ok(())
        }
    }

    #[tokio::test(start_paused = true)]
    async fn each_voice_synthesises_as_far_ahead_as_it_asks() {
        // (the voice's lookahead, sentences synthesised while five seconds stay queued)
        for (lookahead, expected) in [(None, 1), (Some(u64::MAX), 3)] {
            let tts = Arc::new(Counting {
                lookahead,
                calls: AtomicUsize::new(0),
            });
            let (tx, rx) = mpsc::unbounded_channel();
            for s in ["One.", "Two.", "Three."] {
                tx.send(s.to_string()).unwrap();
            }
            let (events, _keep) = mpsc::unbounded_channel();
            let task = tokio::spawn(speak(
                tts.clone(),
                Arc::new(Backlog::default()),
                rx,
                None,
                Arc::new(Mutex::new(Timing::default())),
                events,
            ));
            tokio::time::sleep(Duration::from_secs(60)).await;
            assert_eq!(tts.calls.load(Ordering::SeqCst), expected, "lookahead {lookahead:?}");
            task.abort();
        }
    }
}
