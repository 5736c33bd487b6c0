//! Hands-free conversation (issue 23) with the real voice activity model (Silero VAD,
//! fetched by scripts/test.sh) and, for the spoken conversation, the virtual speaker and
//! microphone of scripts/virtual-audio.sh, where the microphone hears the speaker: the
//! worst case, speakers next to the microphone.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use hark_core::assembly::Profile;
use hark_core::audio::input::Microphone;
use hark_core::audio::playback::Speaker;
use hark_core::audio::turn::SmartTurn;
use hark_core::audio::vad::{Detector, Edge, GateSettings, Silero};
use hark_core::audio::wav::read_16k_mono;
use hark_core::conversation::{HistorySettings, MessageKind};
use hark_core::models::{Manifest, ModelStore};
use hark_core::provider::{ProviderConfig, ProviderKind};
use hark_core::session::ptt::PttMode;
use hark_core::session::voice::hands_free::{self, HandsFreeOptions};
use hark_core::session::voice::{ActorOptions, Voice, VoiceEvent};
use hark_core::session::ChatSession;
use hark_core::store::Store;
use hark_core::stt::whisper::WhisperStt;
use hark_core::testing::{no_speech_set, Noise};
use hark_core::tts::system::SystemVoice;
use hark_e2e::{espeak_wav, wait_for_event as wait_for, whisper_model, Behaviour, FakeLlm};
use tokio::sync::mpsc::UnboundedReceiver;

const RATE: usize = 16_000;

/// The spoken tests share one room: two at once would hear each other (a CI run of the
/// suite ran them side by side, and the half-duplex one heard the other's question after
/// its own reply). The five minutes of no speech take it too: they compete for the two
/// cores that a spoken test's capture and echo canceller need in real time. Side by side,
/// the full-duplex test failed 2 of 5 runs (once the words over the reply came out as "I
/// hate it."); waiting its turn, it passed 4 of 4.
static ROOM: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Silero VAD from `HARK_MODELS_DIR` (scripts/test.sh fetches it); its absence fails.
fn silero() -> Silero {
    assert!(
        std::env::var_os("HARK_MODELS_DIR").is_some(),
        "HARK_MODELS_DIR is not set: run the tests through scripts/test.sh"
    );
    let manifest = Manifest::load().unwrap();
    let files = Profile::default()
        .vad_files(&manifest, &ModelStore::default_dir())
        .unwrap();
    Silero::load(&files).expect("Silero VAD (scripts/test.sh fetches it into HARK_MODELS_DIR)")
}

/// Smart Turn from `HARK_MODELS_DIR` (scripts/test.sh fetches it); its absence fails.
fn smart_turn() -> SmartTurn {
    let manifest = Manifest::load().unwrap();
    let files = Profile::default()
        .turn_files(&manifest, &ModelStore::default_dir())
        .unwrap();
    SmartTurn::load(&files).expect("Smart Turn (scripts/test.sh fetches it into HARK_MODELS_DIR)")
}

#[test]
#[ignore = "needs Silero VAD (scripts/test.sh)"]
fn five_minutes_of_silence_noise_music_and_typing_start_no_speech_and_a_sentence_starts_it_once() {
    let _room = ROOM.blocking_lock();
    let parts = no_speech_set();
    let total: usize = parts.iter().map(|(_, p)| p.len()).sum();
    assert!(total >= 300 * RATE, "{} s", total / RATE);
    for (name, audio) in &parts {
        let mut d = Detector::new(Box::new(silero()), GateSettings::default());
        let mut edges = Vec::new();
        for chunk in audio.chunks(320) {
            edges.extend(d.push(chunk).unwrap());
        }
        assert_eq!(edges, vec![], "{name} started speech");
    }

    // A sentence between two seconds of room tone: one start, one end, around the words.
    let dir = tempfile::tempdir().unwrap();
    let wav = dir.path().join("q.wav");
    espeak_wav("What is the capital of France?", &wav);
    let speech = read_16k_mono(&wav).unwrap();
    let mut n = Noise::new(7);
    let lead = 2 * RATE;
    let mut audio: Vec<f32> = (0..lead).map(|_| n.next() * 0.002).collect();
    audio.extend(speech.iter().map(|s| s + n.next() * 0.002));
    audio.extend((0..2 * RATE).map(|_| n.next() * 0.002));
    let onset = lead + speech.iter().position(|s| s.abs() > 0.02).unwrap();
    let end = lead + speech.len() - speech.iter().rev().position(|s| s.abs() > 0.02).unwrap();
    let mut d = Detector::new(Box::new(silero()), GateSettings::default());
    let mut edges = Vec::new();
    for chunk in audio.chunks(320) {
        edges.extend(d.push(chunk).unwrap());
    }
    let [Edge::Started { at: start }, Edge::Ended { at: stop }] = edges[..] else {
        panic!("one start and one end: {edges:?}")
    };
    // Within a frame or two of the first and last sounds (32 ms frames).
    let (start, stop) = (start as usize, stop as usize);
    assert!(
        start + 1_200 >= onset && start <= onset + 1_200,
        "speech started at {start}, the voice at {onset}"
    );
    assert!(
        stop + 1_200 >= end && stop <= end + 3_200,
        "speech ended at {stop}, the voice at {end}"
    );
}

/// Plays a WAV into the virtual speaker (and so into the virtual microphone).
fn play(path: &Path) {
    let ok = Command::new("paplay").arg("--device=spk").arg(path).status().unwrap();
    assert!(ok.success());
}

/// A hands-free session on the virtual devices: whisper, the loopback model, the OS voice.
fn session_on_the_room(
    dir: &Path,
    echo_cancellation: bool,
) -> (hands_free::HandsFreeSession, UnboundedReceiver<VoiceEvent>, FakeLlm) {
    assert!(
        std::env::var_os("PULSE_SERVER").is_some(),
        "no PulseAudio: run the tests through scripts/test.sh (virtual speaker and microphone)"
    );
    // What the gate, Smart Turn and the words over a reply decided, shown if a test fails.
    let _ = tracing_subscriber::fmt()
        .with_env_filter("hark_core=debug")
        .with_test_writer()
        .try_init();
    let llm = FakeLlm::openai(None);
    let mut c = ProviderConfig::new(ProviderKind::OpenAi);
    c.base_url = llm.base_url();
    c.model = "local".into();
    let store = Arc::new(Store::open(dir.join("hark.db")).unwrap());
    let chat = ChatSession::create(store, c.build().unwrap(), "Be brief.", HistorySettings::default()).unwrap();
    let voice = Voice {
        stt: Arc::new(WhisperStt::load(&whisper_model()).unwrap()),
        tts: Arc::new(SystemVoice::default()),
        out: Arc::new(Speaker::open(None).expect("the virtual speaker")),
    };
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let session = hands_free::spawn(
        chat,
        voice,
        ActorOptions {
            // Hands-free holds the key itself and plays no cues, whatever is asked here.
            mode: PttMode::Toggle,
            input_device: None,
            input: Arc::new(Microphone),
            cues: true,
            pipeline: Default::default(),
            questions: None,
        },
        Box::new(silero()),
        Some(Box::new(smart_turn())),
        HandsFreeOptions {
            echo_cancellation,
            ..HandsFreeOptions::default()
        },
        tx,
    )
    .expect("the virtual microphone");
    assert_eq!(session.full_duplex(), echo_cancellation);
    (session, rx, llm)
}

/// Plays a WAV into the room on a thread of its own (the test goes on listening).
fn play_in_background(path: &Path) -> std::thread::JoinHandle<()> {
    let path = path.to_path_buf();
    std::thread::spawn(move || play(&path))
}

/// What the record holds as the user's words.
fn user_lines(chat: &ChatSession) -> Vec<String> {
    chat.conversation()
        .record()
        .iter()
        .filter_map(|m| match &m.kind {
            MessageKind::User { text } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

/// Waits `quiet` for any event but the level and the panel's; returns what came, if any.
async fn next_within(rx: &mut UnboundedReceiver<VoiceEvent>, quiet: Duration) -> Option<VoiceEvent> {
    tokio::time::timeout(quiet, async {
        loop {
            match rx.recv().await {
                Some(VoiceEvent::Level { .. }) | Some(VoiceEvent::ContextChanged { .. }) => continue,
                other => return other,
            }
        }
    })
    .await
    .ok()
    .flatten()
}

/// Plays "My name is Sam." into the room with no key, and checks that it was heard whole
/// (the pre-roll kept the first word), answered, and that the reply, which the microphone
/// heard, started nothing, then or in the two seconds after.
async fn the_room_says_my_name_is_sam(dir: &Path, rx: &mut UnboundedReceiver<VoiceEvent>) {
    let u1 = dir.join("u1.wav");
    espeak_wav("My name is Sam.", &u1);
    let mut seen = Vec::new();
    tokio::time::sleep(Duration::from_millis(500)).await;
    play_in_background(&u1);
    wait_for(rx, &mut seen, "speech started", |e| *e == VoiceEvent::SpeechStarted).await;
    wait_for(rx, &mut seen, "speech ended", |e| *e == VoiceEvent::SpeechEnded).await;
    let VoiceEvent::TranscriptFinal { text } = wait_for(rx, &mut seen, "transcript", |e| {
        matches!(e, VoiceEvent::TranscriptFinal { .. })
    })
    .await
    else {
        unreachable!()
    };
    assert!(text.to_lowercase().contains("my name is sam"), "heard: {text}");
    let VoiceEvent::TurnFinished { reply, .. } =
        wait_for(rx, &mut seen, "reply", |e| matches!(e, VoiceEvent::TurnFinished { .. })).await
    else {
        unreachable!()
    };
    assert_eq!(reply, "Nice to meet you, Sam!");
    wait_for(rx, &mut seen, "idle", |e| *e == VoiceEvent::Idle).await;
    let after_release = seen.iter().skip_while(|e| **e != VoiceEvent::SpeechEnded).skip(1);
    let restarted: Vec<_> = after_release
        .filter(|e| matches!(e, VoiceEvent::SpeechStarted | VoiceEvent::ReplyInterrupted { .. }))
        .collect();
    assert!(restarted.is_empty(), "Hark heard itself: {seen:?}");
    let stray = next_within(rx, Duration::from_secs(2)).await;
    assert!(stray.is_none(), "a turn started by itself: {stray:?}");
}

/// Issue 23's must-shows 1–3 with the speakers next to the microphone: a question played
/// into the room is answered with no key; the reply, which the microphone hears, starts
/// nothing; a voice over a long reply interrupts it, what was heard is recorded, and the
/// new question is answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs virtual audio devices, Silero VAD and the whisper model (scripts/test.sh)"]
async fn hands_free_answers_the_room_never_itself_and_a_voice_over_its_reply_interrupts_it() {
    let _room = ROOM.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let (session, mut rx, llm) = session_on_the_room(dir.path(), true);
    let (u2, u3) = (dir.path().join("u2.wav"), dir.path().join("u3.wav"));
    espeak_wav("Tell me a story.", &u3);
    // The interruption opens with words that carry the barge-in ("Stop." alone is shorter
    // than the 250 ms that speech must last to count), so the question itself comes after
    // the reply stopped. Words spoken while the reply still plays reach the recogniser
    // through AEC3's double-talk suppression, which damaged them now and then ("What if I
    // came?" for "what is my name" in a CI run, with "Stop. Tell me, …"): the README's
    // hands-free section says so, and that is not what this test is about. No comma or
    // full stop: espeak pauses there, and Smart Turn, asked at a pause, may call a
    // synthetic voice's half sentence finished (it did, at "Excuse me, I have a
    // question. Tell me, what…").
    espeak_wav("Excuse me Hark tell me what is my name?", &u2);

    // 1 and 2. A question with no key, answered; its reply starts nothing.
    the_room_says_my_name_is_sam(dir.path(), &mut rx).await;

    // 3. A long reply, and a voice over it.
    llm.push(Behaviour::Text(
        "Once upon a time there was a fox who lived in a deep green wood. Every morning it walked to the river. \
         It watched the fish and the birds for hours. Then it went home and slept until the moon came up."
            .into(),
    ));
    let mut seen = Vec::new();
    play_in_background(&u3);
    wait_for(&mut rx, &mut seen, "speaking", |e| *e == VoiceEvent::SpeakingStarted).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    play_in_background(&u2);
    let VoiceEvent::ReplyInterrupted { heard, generated, .. } = wait_for(&mut rx, &mut seen, "the interruption", |e| {
        matches!(e, VoiceEvent::ReplyInterrupted { .. })
    })
    .await
    else {
        unreachable!()
    };
    assert!(generated.starts_with("Once upon a time"), "{generated}");
    assert!(
        !heard.is_empty() && heard.len() < generated.len() && generated.starts_with(&heard),
        "heard {heard:?} of {generated:?}"
    );
    let VoiceEvent::TranscriptFinal { text } = wait_for(&mut rx, &mut seen, "transcript 3", |e| {
        matches!(e, VoiceEvent::TranscriptFinal { .. })
    })
    .await
    else {
        unreachable!()
    };
    assert!(
        text.to_lowercase().contains("what is my name"),
        "heard over the reply: {text}; events: {seen:?}"
    );
    let VoiceEvent::TurnFinished { reply, .. } = wait_for(&mut rx, &mut seen, "reply 3", |e| {
        matches!(e, VoiceEvent::TurnFinished { .. })
    })
    .await
    else {
        unreachable!()
    };
    assert_eq!(reply, "Your name is Sam.");
    wait_for(&mut rx, &mut seen, "idle 3", |e| *e == VoiceEvent::Idle).await;

    let chat = session.shutdown().await.unwrap();
    assert_eq!(
        user_lines(&chat).len(),
        3,
        "three turns, no more: {:?}",
        user_lines(&chat)
    );
    // The interrupted reply keeps what was heard (rule 9).
    let interrupted = chat.conversation().record().iter().any(|m| match &m.kind {
        MessageKind::Assistant(a) => a.interrupted && a.heard.as_deref() == Some(heard.as_str()),
        _ => false,
    });
    assert!(interrupted, "the record keeps the heard text");
}

/// Muted, a question played into the room starts nothing; unmuted, the next one is heard
/// whole and answered (issue 23: the mute pauses listening).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs virtual audio devices, Silero VAD and the whisper model (scripts/test.sh)"]
async fn muted_hands_free_hears_nothing_and_listens_again_when_unmuted() {
    let _room = ROOM.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let (session, mut rx, _llm) = session_on_the_room(dir.path(), true);
    session.mute().set(true);
    let muted = dir.path().join("muted.wav");
    espeak_wav("Tell me, what is my name?", &muted);
    tokio::time::sleep(Duration::from_millis(500)).await;
    tokio::task::spawn_blocking(move || play(&muted)).await.unwrap();
    let stray = next_within(&mut rx, Duration::from_secs(2)).await;
    assert!(stray.is_none(), "Hark listened while muted: {stray:?}");

    session.mute().set(false);
    the_room_says_my_name_is_sam(dir.path(), &mut rx).await;
    let chat = session.shutdown().await.unwrap();
    // One turn: the muted question never became one.
    assert_eq!(user_lines(&chat).len(), 1, "{:?}", user_lines(&chat));
}

/// Echo cancellation off: half-duplex. The question is answered, and Hark, which does
/// not listen while it speaks, neither answers its own reply nor is interrupted by it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs virtual audio devices, Silero VAD and the whisper model (scripts/test.sh)"]
async fn half_duplex_hands_free_answers_the_room_and_not_its_own_reply() {
    let _room = ROOM.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let (session, mut rx, _llm) = session_on_the_room(dir.path(), false);
    the_room_says_my_name_is_sam(dir.path(), &mut rx).await;
    let chat = session.shutdown().await.unwrap();
    assert_eq!(user_lines(&chat).len(), 1, "{:?}", user_lines(&chat));
}

/// Issue 49: on a fresh, busy machine Hark heard its own reply through a canceller that had
/// not converged (AEC3 let 30 ms of it through) and cut it. Here a stretch of Hark's own
/// voice reaches the microphone that the canceller cannot take out, as a cold one lets it
/// through: the first words of the reply, in the same voice, played into the room as the
/// reply starts (the canceller's reference does not hold them), and, as Hark's own voice
/// does, it stops when the reply pauses. (Until 2026-12-08 it played on to its end with
/// the reply paused: a voice no reply makes, and whisper read it once in three under load
/// as "That wasn't a fault.", someone else's words.) The detector hears it and pauses the
/// reply, the voice ended within Hark's echo and its words are no word that stops a
/// speaker, and the reply plays on to its end, uncut, with no turn made of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs virtual audio devices, Silero VAD and the whisper model (scripts/test.sh)"]
async fn hark_s_own_voice_let_through_a_cold_canceller_does_not_interrupt_its_reply() {
    let _room = ROOM.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let (session, mut rx, llm) = session_on_the_room(dir.path(), true);
    let (question, leak) = (dir.path().join("q.wav"), dir.path().join("leak.wav"));
    espeak_wav("Tell me a story.", &question);
    espeak_wav("Once upon a time there was a fox.", &leak);
    llm.push(Behaviour::Text(
        "Once upon a time there was a fox who lived in a deep green wood. Every morning it walked to the river.".into(),
    ));
    tokio::time::sleep(Duration::from_millis(500)).await;
    play_in_background(&question);
    let mut seen = Vec::new();
    wait_for(&mut rx, &mut seen, "speaking", |e| *e == VoiceEvent::SpeakingStarted).await;
    let mut leaking = Command::new("paplay")
        .args(["--device=spk", "--latency-msec=20"])
        .arg(&leak)
        .spawn()
        .unwrap();
    // The premise: Hark's voice reached the detector, and the reply paused for it; so does
    // the voice let through.
    wait_for(&mut rx, &mut seen, "the reply paused for the voice", |e| {
        *e == VoiceEvent::ReplyPaused
    })
    .await;
    let _ = leaking.kill();
    let _ = leaking.wait();
    let VoiceEvent::TurnFinished { reply, .. } = wait_for(&mut rx, &mut seen, "the reply played whole", |e| {
        matches!(e, VoiceEvent::TurnFinished { .. } | VoiceEvent::ReplyInterrupted { .. })
    })
    .await
    else {
        panic!("Hark cut its own reply: {seen:?}")
    };
    assert!(reply.starts_with("Once upon a time"), "{reply}");
    assert!(seen.contains(&VoiceEvent::ReplyResumed { speaking: true }), "{seen:?}");
    wait_for(&mut rx, &mut seen, "idle", |e| *e == VoiceEvent::Idle).await;
    let stray = next_within(&mut rx, Duration::from_secs(2)).await;
    assert!(stray.is_none(), "a turn started by itself: {stray:?}");
    let chat = session.shutdown().await.unwrap();
    assert_eq!(user_lines(&chat), ["Tell me a story."], "no turn of Hark's own words");
}
