//! The actor driven through its handle, with a scripted microphone, model, transcriber and
//! voice: panics, device failures and stalls, without a sound card or a network.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use super::*;
use crate::audio::input::{Script, Scripted};
use crate::audio::playback::{AudioOut, ClockOut, Heard, Tracker};
use crate::audio::silence::PAUSE_MS;
use crate::conversation::{HistorySettings, MessageKind, Prompt, PromptMessage};
use crate::error::ErrorKind;
use crate::session::voice::VoiceLine;
use crate::session::voice::{respond, Spoken, Utterance};
use crate::store::Store;
use crate::testing::{speech_samples, Reply, ScriptedModel, ScriptedStt, ToneTts};
use crate::tools::Toolbox;

struct Rig {
    session: VoiceSession,
    model: ScriptedModel,
    mic: Scripted,
    events: mpsc::UnboundedReceiver<VoiceEvent>,
    store: Arc<Store>,
    out: Arc<ClockOut>,
}

fn rig(transcripts: &[&str]) -> Rig {
    rig_with(transcripts, Toolbox::none(), None)
}

/// A rig whose session offers `tools` and puts consent questions from `questions`.
fn rig_with(transcripts: &[&str], tools: Toolbox, questions: Option<Arc<VoiceLine>>) -> Rig {
    let store = Arc::new(Store::open_in_memory().unwrap());
    let model = ScriptedModel::new();
    let mut chat = ChatSession::create(
        store.clone(),
        Box::new(model.clone()),
        "Be brief.",
        HistorySettings::default(),
    )
    .unwrap();
    chat.set_tools(tools);
    let out = Arc::new(ClockOut::new());
    let voice = Voice {
        stt: Arc::new(ScriptedStt::new(transcripts)),
        tts: Arc::new(ToneTts { ms_per_char: 1 }),
        out: out.clone(),
    };
    let mic = Scripted::new();
    let (tx, events) = mpsc::unbounded_channel();
    let options = ActorOptions {
        mode: PttMode::Hold,
        input_device: None,
        input: Arc::new(mic.clone()),
        cues: false,
        pipeline: Default::default(),
        questions,
    };
    Rig {
        session: spawn(chat, voice, options, tx),
        model,
        mic,
        events,
        store,
        out,
    }
}

/// The next event matching `want`, failing after 10 s.
async fn wait_for(
    events: &mut mpsc::UnboundedReceiver<VoiceEvent>,
    what: &str,
    want: impl Fn(&VoiceEvent) -> bool,
) -> VoiceEvent {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        match tokio::time::timeout_at(deadline, events.recv()).await {
            Ok(Some(e)) if want(&e) => return e,
            Ok(Some(_)) => {}
            Ok(None) => panic!("the actor ended while waiting for {what}"),
            Err(_) => panic!("timed out waiting for {what}"),
        }
    }
}

/// Holds the key while the scripted microphone delivers `ms` of speech, then releases.
async fn say(r: &mut Rig, ms: u32) {
    r.mic.push(Script::Speak(speech_samples(ms)));
    r.session.handle().key(Key::Press).unwrap();
    wait_for(&mut r.events, "listening", |e| {
        matches!(e, VoiceEvent::ListeningStarted { .. })
    })
    .await;
    tokio::time::sleep(Duration::from_millis(ms as u64 + 60)).await;
    r.session.handle().key(Key::Release).unwrap();
}

mod consent;

/// Issue 9: a panic in one turn (here in the model) used to kill the voice actor and lose
/// the conversation; now that turn fails with an event and the next press works.
#[tokio::test]
async fn a_panic_in_one_turn_fails_that_turn_and_the_next_press_works() {
    let mut r = rig(&["Tell me a story.", "What's my name?"]);
    r.model.push(Reply::Panic("a provider bug".into()));
    say(&mut r, 300).await;
    let failed = wait_for(&mut r.events, "the failure", |e| matches!(e, VoiceEvent::Failed { .. })).await;
    let VoiceEvent::Failed { kind, message, .. } = failed else {
        unreachable!()
    };
    assert_eq!(kind, ErrorKind::Internal);
    assert!(message.contains("a provider bug"), "{message}");
    wait_for(&mut r.events, "idle after the failure", |e| {
        matches!(e, VoiceEvent::Idle)
    })
    .await;

    r.model.push(Reply::text("Your name is Sam."));
    say(&mut r, 300).await;
    let done = wait_for(&mut r.events, "the next turn", |e| {
        matches!(e, VoiceEvent::TurnFinished { .. })
    })
    .await;
    assert!(matches!(done, VoiceEvent::TurnFinished { ref reply, .. } if reply == "Your name is Sam."));
    wait_for(&mut r.events, "idle", |e| matches!(e, VoiceEvent::Idle)).await;

    let chat = r.session.shutdown().await.unwrap();
    let record = chat.conversation().record();
    let kinds: Vec<&str> = record.iter().map(|m| m.kind_name()).collect();
    assert_eq!(kinds, ["user", "user", "assistant"], "both utterances are kept");
    assert_eq!(r.store.load_session(chat.id()).unwrap().messages, record);
    // The second request was valid: one user message (the two merged), not two in a row.
    let last = r.model.prompts().pop().unwrap();
    assert_eq!(last.messages.len(), 1);
}

/// Issue 9: a microphone that vanishes while the key is held is reported at once, not
/// when the key is released.
#[tokio::test]
async fn a_microphone_lost_mid_utterance_is_reported_at_once() {
    let mut r = rig(&["hello"]);
    r.mic.push(Script::SpeakThenFail(
        speech_samples(100),
        crate::audio::AudioError::input("USB mic", "device disconnected"),
    ));
    r.session.handle().key(Key::Press).unwrap();
    let failed = wait_for(&mut r.events, "the failure", |e| matches!(e, VoiceEvent::Failed { .. })).await;
    let VoiceEvent::Failed {
        kind, message, detail, ..
    } = failed
    else {
        unreachable!()
    };
    assert_eq!(kind, ErrorKind::Microphone);
    assert!(message.contains("USB mic"), "{message}");
    assert_eq!(detail.as_deref(), Some("device disconnected"));
    wait_for(&mut r.events, "idle", |e| matches!(e, VoiceEvent::Idle)).await;
    // The key is still held; its release is harmless, and the next press listens again.
    r.session.handle().key(Key::Release).unwrap();
    r.model.push(Reply::text("Hi."));
    say(&mut r, 300).await;
    wait_for(&mut r.events, "a turn", |e| {
        matches!(e, VoiceEvent::TurnFinished { .. })
    })
    .await;
}

#[tokio::test]
async fn a_microphone_that_cannot_open_fails_the_press_with_its_kind() {
    let mut r = rig(&["hello"]);
    r.mic.push(Script::Fail(crate::audio::AudioError::NoInputDevice));
    r.session.handle().key(Key::Press).unwrap();
    let failed = wait_for(&mut r.events, "the failure", |e| matches!(e, VoiceEvent::Failed { .. })).await;
    assert!(
        matches!(failed, VoiceEvent::Failed { kind: ErrorKind::Microphone, ref next_step, .. } if !next_step.contains("network"))
    );
    wait_for(&mut r.events, "idle", |e| matches!(e, VoiceEvent::Idle)).await;
}

#[tokio::test]
async fn edits_answer_their_outcome_and_wait_for_the_turn_in_flight() {
    let mut r = rig(&["hello"]);
    r.model.push(Reply::Text {
        text: "One two three four.".into(),
        delay: Duration::from_millis(50),
    });
    say(&mut r, 300).await;
    wait_for(&mut r.events, "thinking", |e| matches!(e, VoiceEvent::ThinkingStarted)).await;
    let handle = r.session.handle().clone();
    // Queued behind the turn; applied when it is done.
    handle.edit(|chat| Ok(chat.clear()?)).await.unwrap();
    let chat = r.session.shutdown().await.unwrap();
    let kinds: Vec<&str> = chat.conversation().record().iter().map(|m| m.kind_name()).collect();
    assert_eq!(kinds, ["user", "assistant", "context_reset"]);
    assert!(handle.edit(|_| Ok(())).await.is_err(), "a stopped session says so");
}

/// An output that never plays and never goes idle: what is pushed stays queued (a device
/// that stalled), or with `taken`, the device took every sample but the player never says
/// that its last sound ended (it would notice at the device's next pull, which never comes).
#[derive(Default)]
struct StuckOut {
    tracker: Tracker,
    taken: bool,
}

impl AudioOut for StuckOut {
    fn tracker(&self) -> &Tracker {
        &self.tracker
    }
    fn start_reply(&self) {}
    fn push(&self, sentence: usize, samples: Vec<f32>, rate: u32) {
        if !self.taken {
            self.tracker.queue(sentence, samples.len(), rate);
        }
    }
    fn flush(&self) -> Heard {
        self.tracker.heard()
    }
    fn is_idle(&self) -> bool {
        false
    }
    fn name(&self) -> String {
        "stuck speaker".into()
    }
}

/// A reply `text` answered through `out`, with a voice of 20 ms per character (a
/// second's lookahead), under a deadline an hour away on tokio's paused clock: a turn that
/// waits for ever fails the test instead of hanging it. Returns the session with the turn.
async fn reply_through(
    out: Arc<dyn AudioOut>,
    text: &str,
) -> (
    ChatSession,
    Result<Result<Spoken, TurnError>, tokio::time::error::Elapsed>,
) {
    let store = Arc::new(Store::open_in_memory().unwrap());
    let model = ScriptedModel::new();
    model.push(Reply::text(text));
    let mut chat = ChatSession::create(store, Box::new(model), "", HistorySettings::default()).unwrap();
    let voice = Voice {
        stt: Arc::new(ScriptedStt::new(&["hi"])),
        tts: Arc::new(ToneTts { ms_per_char: 20 }),
        out,
    };
    let (tx, _rx) = mpsc::unbounded_channel();
    let now = std::time::Instant::now();
    let u = Utterance {
        transcript: "hi".into(),
        released_at: now,
        transcript_at: now,
        pipeline: Default::default(),
    };
    let r = tokio::time::timeout(
        Duration::from_secs(3_600),
        respond(&mut chat, &voice, &u, &CancellationToken::new(), None, &tx),
    )
    .await;
    (chat, r)
}

/// Issue 9, the other wait: the device stalls while the second sentence waits for room
/// behind the first (which outlasts the voice's one-second lookahead). That wait had no
/// stall check, so the turn waited for ever; now it fails like a stall at the end.
#[tokio::test(start_paused = true)]
async fn a_speaker_that_stalls_while_the_next_sentence_waits_fails_the_turn() {
    let first = "This first sentence is long enough to fill more than a second of speech.";
    let (_, r) = reply_through(Arc::new(StuckOut::default()), &format!("{first} And a second one.")).await;
    let r = r.expect("the turn ended, it did not wait for ever");
    let e = r.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Speaker, "{e}");
    assert!(e.to_string().contains("stuck speaker"), "{e}");
}

/// With nothing left queued, a player that never reports idle ends the turn as played
/// instead of holding it (and the status line on "speaking") for ever.
#[tokio::test(start_paused = true)]
async fn a_player_that_never_reports_idle_once_all_is_taken_ends_the_turn() {
    let taken = StuckOut {
        taken: true,
        ..Default::default()
    };
    let (_, r) = reply_through(Arc::new(taken), "Hello there.").await;
    let r = r.expect("the turn ended, it did not wait for ever");
    let spoken = r.unwrap();
    assert!(!spoken.interrupted);
    assert_eq!(spoken.generated, "Hello there.");
}

/// Issue 9: a stalled output device used to keep the turn waiting forever.
#[tokio::test(start_paused = true)]
async fn a_stalled_speaker_fails_the_turn_instead_of_waiting_forever() {
    let started = tokio::time::Instant::now();
    let (chat, r) = reply_through(Arc::new(StuckOut::default()), "Hello there. How are you?").await;
    let e = r.expect("the turn ended").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Speaker, "{e}");
    assert!(e.to_string().contains("stuck speaker"), "{e}");
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "it gave up after the stall timeout"
    );
    // The reply is recorded, with nothing heard.
    let MessageKind::Assistant(a) = &chat.conversation().record()[1].kind else {
        panic!()
    };
    assert_eq!(a.generated, "Hello there. How are you?");
    assert_eq!(a.heard.as_deref(), Some(""));
}

#[tokio::test]
async fn practice_transcribes_without_answering_or_recording() {
    let mut r = rig(&["hello Hark"]);
    r.session.handle().practice(true).unwrap();
    say(&mut r, 300).await;
    let heard = wait_for(&mut r.events, "the practice transcript", |e| {
        matches!(e, VoiceEvent::PracticeHeard { .. })
    })
    .await;
    assert_eq!(
        heard,
        VoiceEvent::PracticeHeard {
            transcript: "hello Hark".into()
        }
    );
    wait_for(&mut r.events, "idle", |e| matches!(e, VoiceEvent::Idle)).await;
    r.session.handle().practice(false).unwrap();
    let chat = r.session.shutdown().await.unwrap();
    assert!(chat.conversation().record().is_empty(), "nothing recorded");
    assert!(r.model.prompts().is_empty(), "nothing asked");
}

/// The start cue reaches the microphone (a speaker near it, or here a virtual microphone
/// that hears the speaker): it is cut from the utterance.
#[tokio::test]
async fn the_start_cue_is_cut_from_the_utterance() {
    let store = Arc::new(Store::open_in_memory().unwrap());
    let model = ScriptedModel::new();
    let chat = ChatSession::create(store, Box::new(model), "", HistorySettings::default()).unwrap();
    // A transcriber that reports how much audio it got.
    struct Counting;
    #[async_trait::async_trait]
    impl crate::stt::Transcriber for Counting {
        fn name(&self) -> &'static str {
            "counting"
        }
        async fn transcribe(&self, audio: &[f32]) -> Result<String, crate::provider::ProviderError> {
            Ok(format!("{} samples", audio.len()))
        }
    }
    let voice = Voice {
        stt: Arc::new(Counting),
        tts: Arc::new(ToneTts { ms_per_char: 1 }),
        out: Arc::new(ClockOut::new()),
    };
    let mic = Scripted::new();
    mic.push(Script::Speak(speech_samples(600)));
    let (tx, mut events) = mpsc::unbounded_channel();
    let session = spawn(
        chat,
        voice,
        ActorOptions {
            mode: PttMode::Hold,
            input_device: None,
            input: Arc::new(mic),
            cues: true,
            pipeline: Default::default(),
            questions: None,
        },
        tx,
    );
    session.handle().practice(true).unwrap();
    session.handle().key(Key::Press).unwrap();
    tokio::time::sleep(Duration::from_millis(800)).await;
    session.handle().key(Key::Release).unwrap();
    let heard = wait_for(&mut events, "the transcript", |e| {
        matches!(e, VoiceEvent::PracticeHeard { .. })
    })
    .await;
    let skipped = (crate::audio::cue::SKIP_MS * 16) as usize;
    assert_eq!(
        heard,
        VoiceEvent::PracticeHeard {
            transcript: format!("{} samples", 600 * 16 - skipped)
        }
    );
}

/// A local-like engine for the speculation tests: it speculates, takes 150 ms (or
/// `takes`), says how many samples it heard, counts its calls and those it gave up on.
#[derive(Clone, Default)]
struct Measuring {
    calls: Arc<std::sync::Mutex<Vec<usize>>>,
    stopped: Arc<std::sync::Mutex<Vec<usize>>>,
    takes: Option<Duration>,
}

#[async_trait::async_trait]
impl crate::stt::Transcriber for Measuring {
    fn name(&self) -> &'static str {
        "measuring"
    }
    fn speculates(&self) -> bool {
        true
    }
    async fn transcribe(&self, audio: &[f32]) -> Result<String, crate::provider::ProviderError> {
        self.transcribe_until(audio, &CancellationToken::new()).await
    }
    async fn transcribe_until(
        &self,
        audio: &[f32],
        stop: &CancellationToken,
    ) -> Result<String, crate::provider::ProviderError> {
        self.calls.lock().unwrap().push(audio.len());
        tokio::select! {
            _ = tokio::time::sleep(self.takes.unwrap_or(Duration::from_millis(150))) => Ok(format!("{} samples", audio.len())),
            _ = stop.cancelled() => {
                self.stopped.lock().unwrap().push(audio.len());
                Err(crate::provider::ProviderError::new("measuring", ErrorKind::Cancelled, "stopped"))
            }
        }
    }
}

/// A session whose microphone plays `script` (16 kHz samples) once, transcribed by `stt`.
fn scripted_session(
    chat: ChatSession,
    stt: impl crate::stt::Transcriber + 'static,
    script: Vec<f32>,
    pipeline: Pipeline,
) -> (VoiceSession, mpsc::UnboundedReceiver<VoiceEvent>) {
    let voice = Voice {
        stt: Arc::new(stt),
        tts: Arc::new(ToneTts { ms_per_char: 1 }),
        out: Arc::new(ClockOut::new()),
    };
    let mic = Scripted::new();
    mic.push(Script::Speak(script));
    let (tx, events) = mpsc::unbounded_channel();
    let options = ActorOptions {
        mode: PttMode::Hold,
        input_device: None,
        input: Arc::new(mic),
        cues: false,
        pipeline,
        questions: None,
    };
    (spawn(chat, voice, options, tx), events)
}

/// The text of the next final transcript the events report.
async fn transcript_final(events: &mut mpsc::UnboundedReceiver<VoiceEvent>) -> String {
    match wait_for(events, "the transcript", |e| {
        matches!(e, VoiceEvent::TranscriptFinal { .. })
    })
    .await
    {
        VoiceEvent::TranscriptFinal { text } => text,
        _ => unreachable!("wait_for returns what matched"),
    }
}

/// Runs one held utterance of `script` (16 kHz samples) with `pipeline`, released once all
/// of it is delivered; returns the final transcript, the transcriber's calls and the
/// turn's release → transcript time.
async fn held_utterance(script: Vec<f32>, pipeline: Pipeline) -> (String, Vec<usize>, u64) {
    // 20 ms chunks, each after a 20 ms sleep.
    let release = Duration::from_millis(script.len() as u64 / 16 + 300);
    held_utterance_with(script, pipeline, Measuring::default(), release).await
}

/// [`held_utterance`] with this transcriber, released `release` after the press.
async fn held_utterance_with(
    script: Vec<f32>,
    pipeline: Pipeline,
    stt: Measuring,
    release: Duration,
) -> (String, Vec<usize>, u64) {
    let store = Arc::new(Store::open_in_memory().unwrap());
    let model = ScriptedModel::new();
    model.push(Reply::text("Hello."));
    let chat = ChatSession::create(store, Box::new(model), "", HistorySettings::default()).unwrap();
    let (session, mut events) = scripted_session(chat, stt.clone(), script, pipeline);
    session.handle().key(Key::Press).unwrap();
    tokio::time::sleep(release).await;
    session.handle().key(Key::Release).unwrap();
    let text = transcript_final(&mut events).await;
    let VoiceEvent::TurnFinished { metrics, .. } = wait_for(&mut events, "the turn", |e| {
        matches!(e, VoiceEvent::TurnFinished { .. })
    })
    .await
    else {
        unreachable!()
    };
    session.shutdown().await.unwrap();
    let calls = stt.calls.lock().unwrap().clone();
    (text, calls, metrics.transcript_ms.unwrap())
}

fn silence(ms: usize) -> Vec<f32> {
    vec![0.0; ms * 16]
}

/// Issue 12: a release after a pause finds the transcript made while the key was held.
#[tokio::test]
async fn a_release_after_a_pause_uses_the_transcript_made_while_the_key_was_held() {
    let mut script = speech_samples(600);
    script.extend(silence(500));
    let (text, calls, _) = held_utterance(script, Pipeline::Overlapped).await;
    // One transcription, of the speech and the pause that ended it: none after the
    // release (how soon it is ready is the benchmark's to print, not a test's to time).
    assert_eq!(calls, vec![(600 + PAUSE_MS) * 16]);
    assert_eq!(text, format!("{} samples", (600 + PAUSE_MS) * 16));
}

#[tokio::test]
async fn speech_after_the_pause_is_transcribed_whole_after_release() {
    let mut script = speech_samples(400);
    script.extend(silence(300));
    script.extend(speech_samples(400));
    let total = script.len();
    let (text, calls, transcript_ms) = held_utterance(script, Pipeline::Overlapped).await;
    // The speculative one (first phrase) is discarded; the whole clip decides.
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(calls[0], (400 + PAUSE_MS) * 16);
    assert_eq!(text, format!("{total} samples"));
    // A lower bound a sleep guarantees (the fake takes 150 ms), so it cannot flake: the
    // turn's figure counts the transcription made after the release.
    assert!(transcript_ms >= 150, "{transcript_ms} ms");
}

#[tokio::test]
async fn the_sequential_pipeline_transcribes_once_after_release() {
    let mut script = speech_samples(600);
    script.extend(silence(500));
    let total = script.len();
    let (text, calls, transcript_ms) = held_utterance(script, Pipeline::Sequential).await;
    assert_eq!(calls, vec![total]);
    assert_eq!(text, format!("{total} samples"));
    assert!(transcript_ms >= 150, "{transcript_ms} ms");
}

/// A turn (or, with `practice`, a practice utterance) with a local model's prefill on:
/// `script` spoken with the key held for `hold`. Returns the prompts sent before the
/// release, and all of them once the turn is done.
async fn prefilled_turn(
    model: &ScriptedModel,
    script: Vec<f32>,
    hold: Duration,
    practice: bool,
) -> (Vec<Prompt>, Vec<Prompt>) {
    prefilled_turn_with(model, Measuring::default(), script, hold, practice).await
}

/// [`prefilled_turn`] with this transcriber.
async fn prefilled_turn_with(
    model: &ScriptedModel,
    stt: impl crate::stt::Transcriber + 'static,
    script: Vec<f32>,
    hold: Duration,
    practice: bool,
) -> (Vec<Prompt>, Vec<Prompt>) {
    let store = Arc::new(Store::open_in_memory().unwrap());
    let mut chat =
        ChatSession::create(store, Box::new(model.clone()), "Be brief.", HistorySettings::default()).unwrap();
    chat.set_prefill(true);
    let (session, mut events) = scripted_session(chat, stt, script, Pipeline::Overlapped);
    session.handle().practice(practice).unwrap();
    session.handle().key(Key::Press).unwrap();
    tokio::time::sleep(hold).await;
    let before = model.prompts();
    session.handle().key(Key::Release).unwrap();
    wait_for(&mut events, "the turn", |e| {
        matches!(e, VoiceEvent::TurnFinished { .. } | VoiceEvent::PracticeHeard { .. })
    })
    .await;
    let sent = model.prompts();
    session.shutdown().await.unwrap();
    (before, sent)
}

/// Issue 12: with a local model (prefill on), the press evaluates the request's opening
/// (its user turn opened, empty), and a transcript made while the key is still held is
/// evaluated as the whole request before the release: the very prompt the turn sends.
#[tokio::test]
async fn a_transcript_made_while_the_key_is_held_is_evaluated_before_the_release() {
    let model = ScriptedModel::new();
    let mut script = speech_samples(600);
    script.extend(silence(500));
    // The pause ends at 660 ms, its transcript at ~810 ms; the key comes up at 1,400 ms.
    let (before, sent) = prefilled_turn(&model, script, Duration::from_millis(1_400), false).await;

    let heard = format!("{} samples", (600 + PAUSE_MS) * 16);
    assert_eq!(before.len(), 2, "the opening and the held transcript: {before:#?}");
    let (opening, held) = (&before[0], &before[1]);
    assert_eq!(opening.messages, vec![PromptMessage::User { text: String::new() }]);
    assert_eq!(opening.max_tokens, Some(1));
    assert_eq!(held.messages, vec![PromptMessage::User { text: heard.clone() }]);
    assert!(held.ahead, "its reply is generated ahead, for the turn to take over");
    assert_eq!(sent.len(), 3, "{sent:#?}");
    let turn = &sent[2];
    assert_eq!(turn.messages, held.messages, "the turn asks what was evaluated ahead");
    assert_eq!(turn.system, held.system);
    assert_eq!(turn.tools, held.tools);
    assert_eq!(turn.max_tokens, held.max_tokens, "the same budget, so the same reply");
    assert!(!turn.ahead);
    assert_eq!(model.abandoned(), 0, "the reply ahead was not stopped");
}

/// 600 ms of speech, a 300 ms pause the user speaks past, 300 ms more and the 800 ms
/// pause that ends the utterance; the model's replies: the opening's (at the press), then
/// a reply ahead of the first pause that would take a second.
fn spoken_on_past_a_pause(model: &ScriptedModel) -> Vec<f32> {
    model.push(Reply::text("Okay."));
    model.push(Reply::Text {
        text: "one two three four five six seven eight nine ten".into(),
        delay: Duration::from_millis(100),
    });
    let mut script = speech_samples(600);
    script.extend(silence(300));
    script.extend(speech_samples(300));
    script.extend(silence(800));
    script
}

/// Issue 12: a reply generated ahead from a pause's transcript is dropped as soon as the
/// user speaks past that pause (the model stops generating it, and the CPU goes to the
/// transcription that counts); the one from the pause that ends the utterance is the one
/// the turn's identical request takes over.
#[tokio::test]
async fn a_reply_generated_ahead_is_dropped_when_the_user_speaks_on() {
    let model = ScriptedModel::new();
    // A pause at 600 ms: its transcript at ~810 ms starts the first reply ahead (until
    // ~1,810 ms); speech again from 900 to 1,200 ms, the second pause's transcript at ~1,410
    // ms; the key comes up at 2,000 ms.
    let script = spoken_on_past_a_pause(&model);
    let (_, sent) = prefilled_turn(&model, script, Duration::from_millis(2_000), false).await;

    let ahead: Vec<&Prompt> = sent.iter().filter(|p| p.ahead).collect();
    assert_eq!(ahead.len(), 2, "one reply ahead a pause: {sent:#?}");
    assert_eq!(model.abandoned(), 1, "the first was dropped when the user spoke on");
    let turn = sent.last().unwrap();
    assert!(!turn.ahead);
    assert_eq!(
        turn.messages, ahead[1].messages,
        "the turn asks what the last pause heard"
    );
    assert_ne!(turn.messages, ahead[0].messages);
}

/// An offline engine with live words, as Moonshine is: the segmenting live transcription
/// (`stt::segment`), with a decoder that reads back how much speech it heard.
#[derive(Clone, Default)]
struct Settling {
    /// Decodes made after the release.
    after_release: Arc<std::sync::atomic::AtomicUsize>,
    released: Arc<std::sync::atomic::AtomicBool>,
}

impl Settling {
    fn decoder(&self) -> crate::stt::segment::Decoder {
        let this = self.clone();
        Box::new(move |job, _| {
            use std::sync::atomic::Ordering;
            if this.released.load(Ordering::SeqCst) {
                this.after_release.fetch_add(1, Ordering::SeqCst);
            }
            Ok(heard(&job.audio))
        })
    }
}

/// "N ms of speech": from the clip's first voiced sample to its last, to the nearest
/// 100 ms (a segment's audio need not start on a 20 ms frame of the recording).
fn heard(audio: &[f32]) -> String {
    let voiced = |s: &&f32| s.abs() > 0.01;
    let first = audio.iter().position(|s| voiced(&s)).unwrap_or(0);
    let last = audio.iter().rposition(|s| voiced(&s)).unwrap_or(0);
    let ms = (last.saturating_sub(first) as f64 / 16.0 / 100.0).round() * 100.0;
    format!("{ms} ms of speech")
}

/// The live transcription's handle, noting the release for the decoder.
struct SettlingLive {
    inner: Box<dyn crate::stt::LiveTranscription>,
    released: Arc<std::sync::atomic::AtomicBool>,
}

#[async_trait::async_trait]
impl crate::stt::LiveTranscription for SettlingLive {
    async fn send(&mut self, audio: &[f32]) -> Result<(), crate::provider::ProviderError> {
        self.inner.send(audio).await
    }
    async fn finish(self: Box<Self>) -> Result<String, crate::provider::ProviderError> {
        self.released.store(true, std::sync::atomic::Ordering::SeqCst);
        self.inner.finish().await
    }
    fn settled(&self) -> Option<watch::Receiver<Option<String>>> {
        self.inner.settled()
    }
}

#[async_trait::async_trait]
impl crate::stt::Transcriber for Settling {
    fn name(&self) -> &'static str {
        "settling"
    }
    fn speculates(&self) -> bool {
        true
    }
    async fn transcribe(&self, audio: &[f32]) -> Result<String, crate::provider::ProviderError> {
        crate::stt::segment::transcribe_whole(audio, |a| Ok(heard(a)))
    }
    async fn live(
        &self,
        interim: mpsc::UnboundedSender<String>,
    ) -> Result<Option<Box<dyn crate::stt::LiveTranscription>>, crate::provider::ProviderError> {
        let inner = crate::stt::segment::start("settling", self.decoder(), interim)?;
        Ok(Some(Box::new(SettlingLive {
            inner,
            released: self.released.clone(),
        })))
    }
}

/// Issue 20: with live words offline and a local model, the transcript settled in the
/// pause that ends the utterance is answered while the key is still held, and the turn
/// takes that reply over: the release needs no decode and no evaluation of its own.
#[tokio::test]
async fn with_live_words_the_settled_transcript_is_answered_ahead_of_the_release() {
    let model = ScriptedModel::new();
    let stt = Settling::default();
    let mut script = speech_samples(600);
    script.extend(silence(500));
    // The pause is decoded at ~660 ms; the key comes up at 1,400 ms.
    let (before, sent) = prefilled_turn_with(&model, stt.clone(), script, Duration::from_millis(1_400), false).await;
    // The words shown while the user spoke were evaluated too, left open (the next test).
    let (before, sent) = (answered(before), answered(sent));

    let said = PromptMessage::User {
        text: "600 ms of speech".into(),
    };
    assert_eq!(before.len(), 2, "the opening and the settled transcript: {before:#?}");
    assert_eq!(before[0].messages, vec![PromptMessage::User { text: String::new() }]);
    let held = &before[1];
    assert_eq!(held.messages, vec![said]);
    assert!(held.ahead, "its reply is generated ahead, for the turn to take over");
    assert_eq!(sent.len(), 3, "{sent:#?}");
    let turn = &sent[2];
    assert_eq!(turn.messages, held.messages, "the turn asks what was answered ahead");
    assert_eq!(turn.max_tokens, held.max_tokens, "the same budget, so the same reply");
    assert!(!turn.ahead);
    assert_eq!(model.abandoned(), 0, "the reply ahead was not stopped");
    assert_eq!(
        stt.after_release.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "the release found the transcript decoded"
    );
}

/// The requests that want a reply: not those of the words so far, left open.
fn answered(prompts: Vec<Prompt>) -> Vec<Prompt> {
    prompts.into_iter().filter(|p| !p.open).collect()
}

/// Issue 20: before the pause, the model follows the words as they are shown: each new
/// interim transcript is evaluated left open (`Prompt::open`: up to its last word, nothing
/// generated), so the pause's request evaluates only its end. The words so far are the
/// request the turn will make, but for the closed message: same system prompt, same
/// history. Nothing open is sent after a pause settled the words, nor twice for the same
/// words.
#[tokio::test]
async fn with_live_words_the_words_so_far_are_evaluated_while_the_user_speaks() {
    let model = ScriptedModel::new();
    // 900 ms of speech: interim words at each tick (every 300 ms of new speech), and the
    // pause after them; the key comes up at 1,600 ms.
    let mut script = speech_samples(900);
    script.extend(silence(500));
    let (before, sent) =
        prefilled_turn_with(&model, Settling::default(), script, Duration::from_millis(1_600), false).await;

    let open: Vec<&Prompt> = before.iter().filter(|p| p.open).collect();
    let words: Vec<String> = open
        .iter()
        .map(|p| match p.messages.as_slice() {
            [PromptMessage::User { text }] => text.clone(),
            other => panic!("one user message, the words so far: {other:?}"),
        })
        .collect();
    assert!(
        words.iter().any(|w| w != "900 ms of speech"),
        "words before the whole utterance were evaluated: {words:?}"
    );
    let mut unique = words.clone();
    unique.dedup();
    assert_eq!(unique, words, "the same words are not sent twice in a row");
    let turn = sent.last().unwrap();
    assert!(!turn.open && !turn.ahead);
    for p in &open {
        assert!(!p.ahead, "nothing is generated for words still being spoken");
        assert_eq!(
            p.system, turn.system,
            "the same system prompt, so its evaluation is kept"
        );
    }
    // After the settled transcript's reply ahead nothing more is sent open.
    let settled_at = before.iter().position(|p| p.ahead).expect("a reply ahead of the pause");
    assert!(before[settled_at..].iter().all(|p| !p.open), "{before:#?}");
    assert_eq!(model.abandoned(), 0, "the reply ahead was not stopped");
}

/// Issue 20: the reply ahead of a pause is dropped when the user speaks on (the model stops
/// at its next token), and the next pause's settled transcript, the whole utterance so
/// far, is the one the turn takes over.
#[tokio::test]
async fn with_live_words_a_reply_ahead_is_dropped_when_the_user_speaks_on() {
    let model = ScriptedModel::new();
    // A pause at 600 ms settles the first phrase (its reply ahead would take a second);
    // speech again from 900 to 1,200 ms, settled with the pause after it; the key comes up
    // at 2,000 ms.
    let script = spoken_on_past_a_pause(&model);
    let (_, sent) = prefilled_turn_with(&model, Settling::default(), script, Duration::from_millis(2_000), false).await;
    let sent = answered(sent);

    let ahead: Vec<&Prompt> = sent.iter().filter(|p| p.ahead).collect();
    assert_eq!(ahead.len(), 2, "one reply ahead of each pause: {sent:#?}");
    assert_eq!(
        ahead[0].messages,
        vec![PromptMessage::User {
            text: "600 ms of speech".into()
        }]
    );
    assert_eq!(model.abandoned(), 1, "the first was dropped when the user spoke on");
    let turn = sent.last().unwrap();
    assert!(!turn.ahead);
    assert_eq!(
        turn.messages,
        vec![PromptMessage::User {
            text: "600 ms of speech 300 ms of speech".into()
        }]
    );
    assert_eq!(turn.messages, ahead[1].messages, "the turn takes over the last one");
}

/// Practice makes no request, so with a local model's prefill on nothing is sent either:
/// no opening at the press, no reply ahead from the pause's transcript.
#[tokio::test]
async fn practice_sends_a_local_model_nothing() {
    let model = ScriptedModel::new();
    let mut script = speech_samples(600);
    script.extend(silence(500));
    let (_, sent) = prefilled_turn(&model, script, Duration::from_millis(1_400), true).await;
    assert!(sent.is_empty(), "{sent:#?}");
}

/// Without prefill (a cloud model: it would bill each one) nothing is sent before the turn.
#[tokio::test]
async fn without_prefill_only_the_turn_reaches_the_model() {
    let mut r = rig(&["hello there"]);
    say(&mut r, 600).await;
    wait_for(&mut r.events, "the turn", |e| {
        matches!(e, VoiceEvent::TurnFinished { .. })
    })
    .await;
    assert_eq!(r.model.prompts().len(), 1);
}

/// A transcription made at a pause that the user speaks past is stopped as soon as the
/// next word comes (whisper gives up midway): the next pause's transcription does not wait
/// for it or share the CPU with it, and the whole speech decides the transcript.
#[tokio::test]
async fn a_transcription_the_user_speaks_past_is_stopped_at_the_next_word() {
    // A pause at 600 ms (its transcription would run 660 → 1,460 ms), more speech from 740
    // to 1,060 ms, a pause: its transcription runs 1,120 → 1,920 ms. The release at 2,000
    // ms finds it done; had the first run been left to finish, the second would only start
    // at 1,460 ms and end at 2,260 ms. (Lengths in whole 20 ms frames of the detector.)
    let mut script = speech_samples(600);
    script.extend(silence(140));
    script.extend(speech_samples(320));
    script.extend(silence(1_000));
    let spoken = (600 + 140 + 320 + PAUSE_MS) * 16;
    let stt = Measuring {
        takes: Some(Duration::from_millis(800)),
        ..Default::default()
    };
    let (text, calls, waited) =
        held_utterance_with(script, Pipeline::Overlapped, stt.clone(), Duration::from_millis(2_000)).await;
    assert_eq!(
        calls,
        vec![(600 + PAUSE_MS) * 16, spoken],
        "the pause's, then the whole speech's"
    );
    assert_eq!(*stt.stopped.lock().unwrap(), vec![calls[0]], "the first was stopped");
    assert_eq!(text, format!("{spoken} samples"));
    assert!(waited < 200, "the transcript was ready at the release: {waited} ms");
}

/// A transcriber that keeps the audio it was given, and hears "hello" in it.
#[derive(Clone, Default)]
struct Keeps(Arc<std::sync::Mutex<Vec<f32>>>);

#[async_trait::async_trait]
impl crate::stt::Transcriber for Keeps {
    fn name(&self) -> &'static str {
        "keeps"
    }
    async fn transcribe(&self, audio: &[f32]) -> Result<String, crate::provider::ProviderError> {
        *self.0.lock().unwrap() = audio.to_vec();
        Ok("hello".into())
    }
}

/// Issue 20: a recording played live (`hark talk --wav F --live`, the latency benchmark)
/// is a turn through the microphone's path: the session listens on the recording, the key
/// is held from its first sample to after its last, so the engine hears all of it and
/// then the silence before the release.
#[tokio::test]
async fn a_recording_played_live_is_heard_whole_then_the_key_comes_up() {
    let store = Arc::new(Store::open_in_memory().unwrap());
    let model = ScriptedModel::new();
    let chat = ChatSession::create(store, Box::new(model.clone()), "", HistorySettings::default()).unwrap();
    let heard = Keeps::default();
    let voice = Voice {
        stt: Arc::new(heard.clone()),
        tts: Arc::new(ToneTts { ms_per_char: 1 }),
        out: Arc::new(ClockOut::new()),
    };
    let recordings = Recordings::new();
    let (tx, mut events) = mpsc::unbounded_channel();
    let options = ActorOptions {
        mode: PttMode::Hold,
        input_device: None,
        input: Arc::new(recordings.clone()),
        cues: false,
        pipeline: Default::default(),
        questions: None,
    };
    let session = spawn(chat, voice, options, tx);
    let said = speech_samples(300);
    play_live(
        session.handle(),
        &recordings,
        "question.wav",
        said.clone(),
        Duration::from_millis(100),
    )
    .await
    .unwrap();
    let listening = wait_for(&mut events, "listening", |e| {
        matches!(e, VoiceEvent::ListeningStarted { .. })
    })
    .await;
    assert_eq!(
        listening,
        VoiceEvent::ListeningStarted {
            device: "question.wav".into()
        }
    );
    assert_eq!(transcript_final(&mut events).await, "hello");
    wait_for(&mut events, "the turn", |e| {
        matches!(e, VoiceEvent::TurnFinished { .. })
    })
    .await;
    wait_for(&mut events, "idle", |e| matches!(e, VoiceEvent::Idle)).await;
    let audio = heard.0.lock().unwrap().clone();
    assert!(audio.len() > said.len(), "{} samples of {}", audio.len(), said.len());
    assert_eq!(audio[..said.len()], said[..], "every sample, from the first");
    assert!(
        audio[said.len()..].iter().all(|&s| s == 0.0),
        "then the silence before the release"
    );
    assert_eq!(model.prompts().len(), 1);
    session.shutdown().await.unwrap();
}
