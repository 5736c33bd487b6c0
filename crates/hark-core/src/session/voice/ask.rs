//! Consent asked by voice (issue 25): a tool set to *ask* puts its question aloud, besides
//! wherever the adapter shows it (the window's dialog), and the next press of the
//! push-to-talk key answers it instead of interrupting.
//!
//! - [`SpokenAsker`] is the [`Asker`] the tool servers are given. It hands each question to
//!   the voice session through a [`VoiceLine`] and waits for the first answer: the voice's
//!   or the inner asker's (the window). The one that did not answer is withdrawn.
//! - The actor speaks the question *aside*: after the reply so far has played, through the
//!   output's aside channel, so it is not part of what was heard of the reply (rule 9).
//!   During a turn it goes through the turn's speaking task, which keeps it after the words
//!   said before the call.
//! - The answer's transcript is read by [`Answer::from_words`]: "no" wins over anything
//!   else, so an unclear answer that contains it refuses. An answer with none of the words
//!   is asked for again; no answer within the tool's time limit is a no.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::turn::{drained, Drain};
use crate::audio::playback::AudioOut;
use crate::tools::consent::{Answer, Asker, ConsentRequest};
use crate::tts::{AudioChunk, Synthesizer};

/// What is spoken when an answer had none of the words.
pub const SAY_AGAIN: &str = "Please say yes, no, or always.";

/// A question on its way to the voice session.
pub struct Question {
    pub request: ConsentRequest,
    answer: oneshot::Sender<Answer>,
}

impl Question {
    /// Settles the question; `false` when nobody waits for it any more.
    pub(super) fn answer(self, answer: Answer) -> bool {
        self.answer.send(answer).is_ok()
    }

    /// Whether nobody waits for the answer any more.
    pub(super) fn is_settled(&self) -> bool {
        self.answer.is_closed()
    }

    /// Resolves when nobody waits for the answer any more (the window answered, the time
    /// limit passed, or the turn was cancelled).
    pub(super) async fn withdrawn(&mut self) {
        self.answer.closed().await
    }
}

/// Where questions reach the running voice session. The app keeps one for its life and
/// each voice session it starts attaches to it; questions asked while none is attached are
/// only asked by the inner asker.
#[derive(Default)]
pub struct VoiceLine {
    tx: Mutex<Option<mpsc::UnboundedSender<Question>>>,
}

impl VoiceLine {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// The voice session's end of the line (replacing any earlier one).
    pub(super) fn attach(&self) -> mpsc::UnboundedReceiver<Question> {
        let (tx, rx) = mpsc::unbounded_channel();
        *self.tx.lock().unwrap_or_else(|p| p.into_inner()) = Some(tx);
        rx
    }

    /// Hands a question to the voice session; `None` when no session is listening.
    fn put(&self, request: &ConsentRequest) -> Option<oneshot::Receiver<Answer>> {
        let (answer, rx) = oneshot::channel();
        let question = Question {
            request: request.clone(),
            answer,
        };
        let guard = self.tx.lock().unwrap_or_else(|p| p.into_inner());
        guard.as_ref()?.send(question).ok()?;
        Some(rx)
    }
}

/// Asks by voice and through `inner` (the window) at once; the first answer wins. With no
/// inner asker (`hark talk`, whose terminal is the push-to-talk key) only the voice asks.
pub struct SpokenAsker {
    inner: Option<Arc<dyn Asker>>,
    line: Arc<VoiceLine>,
}

impl SpokenAsker {
    pub fn new(inner: Option<Arc<dyn Asker>>, line: Arc<VoiceLine>) -> Self {
        Self { inner, line }
    }
}

#[async_trait]
impl Asker for SpokenAsker {
    async fn ask(&self, request: &ConsentRequest) -> Answer {
        let voice = self.line.put(request);
        let by_voice = async {
            match voice {
                Some(rx) => rx.await.ok(),
                None => None,
            }
        };
        match &self.inner {
            // Whichever answers first; dropping the other withdraws its question.
            Some(inner) => tokio::select! {
                a = inner.ask(request) => a,
                Some(a) = by_voice => a,
            },
            None => by_voice.await.unwrap_or(Answer::No),
        }
    }
}

/// Something said aside from the reply, dropped unsaid once `settled` is cancelled.
pub struct Aside {
    pub text: String,
    pub settled: CancellationToken,
}

/// Says `aside` once the reply queued so far has played: synthesised with the session's
/// voice and played through the output's aside channel. Stops as soon as it is settled.
/// It waits for the reply as the turn does ([`drained`]): a speaker that stopped playing
/// the reply is not waited on for ever, and is not given the question either.
pub async fn say_aside(tts: &dyn Synthesizer, out: &dyn AudioOut, aside: Aside) {
    if let Err(e) = drained(out, Drain::Idle, &aside.settled).await {
        tracing::warn!("the consent question was not spoken: {e}");
        return;
    }
    if aside.settled.is_cancelled() {
        return;
    }
    let (tx, mut rx) = mpsc::unbounded_channel::<AudioChunk>();
    let synth = tts.synthesize(&aside.text, &tx);
    tokio::pin!(synth);
    let play = |chunk: AudioChunk| {
        if !aside.settled.is_cancelled() {
            out.aside(chunk.samples, chunk.rate);
        }
    };
    loop {
        tokio::select! {
            Some(chunk) = rx.recv() => play(chunk),
            r = &mut synth => {
                if let Err(e) = r {
                    tracing::warn!("the consent question could not be spoken: {e}");
                }
                break;
            }
            _ = aside.settled.cancelled() => return,
        }
    }
    while let Ok(chunk) = rx.try_recv() {
        play(chunk);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;
    use crate::audio::playback::{Heard, Tracker};
    use crate::testing::ToneTts;
    use crate::tools::consent::Refuse;

    fn request() -> ConsentRequest {
        ConsentRequest {
            id: "q1".into(),
            server: "calendar".into(),
            tool: "create_event".into(),
            arguments: "{}".into(),
        }
    }

    /// An asker that never answers (a window nobody looks at).
    struct Silent;

    #[async_trait]
    impl Asker for Silent {
        async fn ask(&self, _: &ConsentRequest) -> Answer {
            std::future::pending().await
        }
    }

    #[tokio::test]
    async fn the_voice_answers_when_the_window_does_not() {
        let line = VoiceLine::new();
        let mut questions = line.attach();
        let asker = SpokenAsker::new(Some(Arc::new(Silent)), line.clone());
        let asking = tokio::spawn(async move { asker.ask(&request()).await });
        let q = questions.recv().await.unwrap();
        assert_eq!(q.request.tool, "create_event");
        assert!(q.answer(Answer::Always));
        assert_eq!(asking.await.unwrap(), Answer::Always);
    }

    #[tokio::test]
    async fn the_window_answering_first_withdraws_the_spoken_question() {
        let line = VoiceLine::new();
        let mut questions = line.attach();
        let asker = SpokenAsker::new(Some(Arc::new(Refuse)), line.clone());
        assert_eq!(asker.ask(&request()).await, Answer::No);
        let mut q = questions.recv().await.unwrap();
        tokio::time::timeout(Duration::from_secs(10), q.withdrawn())
            .await
            .expect("the spoken question is withdrawn");
        assert!(!q.answer(Answer::Yes), "nobody waits for it");
    }

    /// A speaker that took a reply and plays none of it, and counts what it is given to
    /// say aside.
    #[derive(Default)]
    struct Stalled {
        tracker: Tracker,
        asides: AtomicUsize,
    }

    impl AudioOut for Stalled {
        fn tracker(&self) -> &Tracker {
            &self.tracker
        }
        fn start_reply(&self) {}
        fn push(&self, sentence: usize, samples: Vec<f32>, rate: u32) {
            self.tracker.queue(sentence, samples.len(), rate);
        }
        fn flush(&self) -> Heard {
            self.tracker.heard()
        }
        fn is_idle(&self) -> bool {
            false
        }
        fn aside(&self, _: Vec<f32>, _: u32) {
            self.asides.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// The question waits for the reply queued before it, as the turn does: when the
    /// speaker stops playing that reply, the wait ends (it waited for ever, until the
    /// question was settled) and the question is not queued behind audio that will never
    /// play. On tokio's paused clock, with an hour's deadline.
    #[tokio::test(start_paused = true)]
    async fn a_question_after_a_reply_the_speaker_stopped_playing_does_not_wait_for_ever() {
        let out = Stalled::default();
        let sentence = out.begin_sentence("Here is your reply.");
        out.push(sentence, vec![0.0; 16_000], 16_000);
        let aside = Aside {
            text: "May I create the event?".into(),
            settled: CancellationToken::new(),
        };
        tokio::time::timeout(
            Duration::from_secs(3_600),
            say_aside(&ToneTts { ms_per_char: 20 }, &out, aside),
        )
        .await
        .expect("the wait for the reply ends");
        assert_eq!(
            out.asides.load(Ordering::SeqCst),
            0,
            "nothing is queued behind a stalled reply"
        );
    }

    #[tokio::test]
    async fn with_no_voice_session_only_the_inner_asker_asks() {
        let asker = SpokenAsker::new(Some(Arc::new(Refuse)), VoiceLine::new());
        assert_eq!(asker.ask(&request()).await, Answer::No);
        // No inner asker and no voice session: a refusal, at once.
        let asker = SpokenAsker::new(None, VoiceLine::new());
        assert_eq!(asker.ask(&request()).await, Answer::No);
    }
}
