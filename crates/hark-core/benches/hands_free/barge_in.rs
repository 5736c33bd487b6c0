//! The hands-free benchmark's section 5, barge-in (issue 49): does Hark cut its own
//! reply, and does a voice over the reply still cut it? Measured in the virtual room, where
//! the microphone hears the speaker, with Moonshine (the default recogniser) deciding by
//! the words, side by side with the code before issue 49 (any speech over the reply cuts
//! it: `barge_in_by_words` off), in one run:
//!
//! - Hark's own replies with no voice in the room: a short question played into the room,
//!   the reply spoken by the OS voice, half of them after a rest (AEC3 rests after a second
//!   of silence, so the reply starts a fresh one: the cold canceller) and half back to back
//!   (the next question as soon as Hark listens: about a second between two replies),
//!   quiet and with one core kept busy (a shell loop, as `stress -c 1`). Counted: the
//!   replies Hark cut, and the pauses (a voice heard over the reply that its words showed
//!   was Hark's own) with how long each held the reply.
//! - Voices over a long reply, 1.2 s into it: espeak-ng voices saying "Stop.", "Excuse me…"
//!   and a question, and human recordings (Debian's Asterisk prompts). Counted: the ones
//!   that cut the reply, and the voice's first sound → playback stopped (the reply cut,
//!   before; paused, after), p50 and p95.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hark_core::assembly::Profile;
use hark_core::audio::input::{AudioInput, InputStream, Microphone};
use hark_core::audio::playback::Speaker;
use hark_core::models::{Manifest, ModelStore};
use hark_core::session::voice::VoiceEvent;
use hark_core::stt::moonshine::MoonshineStt;
use hark_core::stt::Transcriber;
use hark_core::testing::{Reply, ScriptedModel};
use tokio::sync::mpsc::UnboundedReceiver;

use super::{espeak, first_sound, percentile, play, room_session, smart_turn};

/// Hark's replies in the self-interruption trials: two to three seconds in the OS voice.
const OWN_REPLIES: [&str; 3] = [
    "The capital of France is Paris, on the river Seine.",
    "A soft boiled egg takes about six minutes.",
    "Your sister's birthday is on the fourth of May.",
];

/// The long reply the voices interrupt.
const STORY: &str = "Once upon a time there was a fox who lived in a deep green wood. Every morning it walked \
                     to the river and watched the fish and the birds for hours.";

/// What the voices over the reply say, in each espeak-ng voice.
const OVER: [&str; 4] = [
    "Stop.",
    "Excuse me, what time is it?",
    "Wait, how long does that take?",
    "Stop, that is enough.",
];
const ESPEAK_VOICES: [&str; 3] = ["en-us", "en-gb-scotland", "en+f3"];

/// Asterisk's prompts played over the reply: human voices (Allison Smith).
const HUMAN: [&str; 4] = [
    "conf-onlyperson",
    "dir-nomatch",
    "pls-hold-while-try",
    "queue-youarenext",
];
const ASTERISK_VOICE: &str = "usr/share/asterisk/sounds/en_US_f_Allison";

/// The code before issue 49, then today's.
const VARIANTS: [(&str, bool); 2] = [
    ("before (any speech over the reply cuts it)", false),
    ("after (the words decide)", true),
];

/// The next event but levels and panels within `wait`.
async fn next(rx: &mut UnboundedReceiver<VoiceEvent>, wait: Duration) -> Option<VoiceEvent> {
    tokio::time::timeout(wait, async {
        loop {
            match rx.recv().await {
                Some(VoiceEvent::Level { .. } | VoiceEvent::ContextChanged { .. }) => continue,
                other => return other,
            }
        }
    })
    .await
    .ok()
    .flatten()
}

/// Waits until the session has said nothing but levels for `quiet`.
async fn settle(rx: &mut UnboundedReceiver<VoiceEvent>, quiet: Duration) {
    while next(rx, quiet).await.is_some() {}
}

/// One core kept busy while it lives (a shell loop, as `stress -c 1`).
struct Busy(Child);

impl Busy {
    fn start() -> Self {
        Self(
            Command::new("sh")
                .args(["-c", "while :; do :; done"])
                .spawn()
                .expect("a busy loop"),
        )
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Hark's own replies, with no voice in the room.
#[derive(Default)]
struct Own {
    replies: usize,
    cut: usize,
    /// How long each pause held the reply, in ms.
    pauses: Vec<f64>,
    /// Questions the room did not answer (not heard, or no reply within 30 s).
    unanswered: usize,
}

/// `n` replies, each after `rest` of silence from the speaker.
async fn own_replies(
    rx: &mut UnboundedReceiver<VoiceEvent>,
    model: &ScriptedModel,
    question: &Path,
    n: usize,
    rest: Duration,
    own: &mut Own,
) {
    for i in 0..n {
        tokio::time::sleep(rest).await;
        while rx.try_recv().is_ok() {}
        let reply = OWN_REPLIES[i % OWN_REPLIES.len()];
        model.push(Reply::text(reply));
        let p = play(question);
        let mut started = false;
        let (mut cut, mut paused_at) = (false, None);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let Some(e) = next(rx, deadline.saturating_duration_since(Instant::now())).await else {
                break;
            };
            match e {
                VoiceEvent::SpeakingStarted => started = true,
                VoiceEvent::ReplyPaused => paused_at = Some(Instant::now()),
                VoiceEvent::ReplyResumed { .. } => {
                    if let Some(t) = paused_at.take() {
                        own.pauses.push(t.elapsed().as_secs_f64() * 1000.0);
                    }
                }
                VoiceEvent::ReplyInterrupted { .. } => {
                    cut = true;
                    break;
                }
                VoiceEvent::TurnFinished { reply: r, .. } if r == reply => break,
                _ => {}
            }
        }
        let _ = p.join();
        if started {
            own.replies += 1;
            own.cut += usize::from(cut);
        } else {
            own.unanswered += 1;
        }
        if cut || !started {
            // Whatever the cut started (a turn of Hark's own words) is over; what the
            // recogniser made of the voice that cut the reply is said, to see why.
            while let Some(e) = next(rx, Duration::from_secs(2)).await {
                if let (true, VoiceEvent::TranscriptFinal { text }) = (cut, &e) {
                    eprintln!("     a cut of {reply:?}: the words that cut it were {text:?}");
                }
            }
        } else {
            // The reply played whole: the next question as soon as Hark listens again.
            while let Some(e) = next(rx, Duration::from_secs(10)).await {
                if e == VoiceEvent::Idle {
                    break;
                }
            }
        }
    }
}

/// Voices over a long reply.
#[derive(Default)]
struct Over {
    played: usize,
    cut: usize,
    /// The voice's first sound → playback stopped, in ms, for the voices that stopped it.
    stopped: Vec<f64>,
    /// Replies that did not start (the question not heard).
    unanswered: usize,
}

async fn voices_over_reply(
    rx: &mut UnboundedReceiver<VoiceEvent>,
    room: &mut Box<dyn InputStream>,
    model: &ScriptedModel,
    question: &(PathBuf, f64),
    voices: &[(PathBuf, f64)],
    by_words: bool,
    over: &mut Over,
) {
    for (voice, first) in voices {
        settle(rx, Duration::from_millis(1500)).await;
        model.push(Reply::text(STORY));
        model.push(Reply::text("Okay."));
        // The question, in a quiet room: paplay's start-up, from its spawn to its first
        // sound in the microphone (the clip's own leading silence taken off).
        while let Ok(Some(_)) = tokio::time::timeout(Duration::ZERO, room.next_chunk()).await {}
        let spawned = Instant::now();
        let p = play(&question.0);
        let heard = first_sound(room).await;
        let start_up = heard
            .saturating_duration_since(spawned)
            .saturating_sub(Duration::from_secs_f64(question.1 / 1000.0));
        let _ = p.join();
        let speaking = loop {
            match next(rx, Duration::from_secs(30)).await {
                Some(VoiceEvent::SpeakingStarted) => break true,
                Some(_) => {}
                None => break false,
            }
        };
        if !speaking {
            over.unanswered += 1;
            continue;
        }
        tokio::time::sleep(Duration::from_millis(1200)).await;
        let spawned = Instant::now();
        let p = play(voice);
        let onset = spawned + start_up + Duration::from_secs_f64(first / 1000.0);
        over.played += 1;
        let mut stopped = None;
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let Some(e) = next(rx, deadline.saturating_duration_since(Instant::now())).await else {
                break;
            };
            match e {
                // Playback stops at the pause (after) or at the cut (before).
                VoiceEvent::ReplyPaused if by_words => stopped = Some(Instant::now()),
                VoiceEvent::ReplyInterrupted { .. } => {
                    let at = *stopped.get_or_insert_with(Instant::now);
                    over.cut += 1;
                    over.stopped
                        .push(at.saturating_duration_since(onset).as_secs_f64() * 1000.0);
                    break;
                }
                VoiceEvent::ReplyResumed { .. } => stopped = None,
                VoiceEvent::TurnFinished { reply, .. } if reply == STORY => break,
                _ => {}
            }
        }
        let _ = p.join();
        settle(rx, Duration::from_secs(2)).await;
    }
}

/// The first sound of a clip, in ms into the file.
fn first_sound_ms(path: &Path) -> f64 {
    let samples = hark_core::audio::wav::read_16k_mono(path).expect("a clip");
    samples.iter().position(|s| s.abs() > 0.02).unwrap_or(0) as f64 / 16.0
}

/// Section 5. `replies`: Hark's own replies with the code before and with today's (a quarter
/// each quiet and loaded, after a rest and back to back); `rounds`: how often each voice is
/// played over a reply.
pub async fn barge_in(dir: &Path, speaker: Arc<Speaker>, replies: [usize; 2], rounds: usize) {
    let manifest = Manifest::load().expect("the manifest");
    let files = Profile::default()
        .moonshine_files(&manifest, &ModelStore::default_dir())
        .expect("Moonshine's files");
    let stt: Arc<dyn Transcriber> =
        Arc::new(MoonshineStt::new(files).expect("Moonshine (scripts/bench-hands-free.sh fetches it)"));
    let (question, _) = espeak("Please go on.", dir, "go-on.wav");
    let question = (question.clone(), first_sound_ms(&question));
    let mut voices = Vec::new();
    for (v, voice) in ESPEAK_VOICES.iter().enumerate() {
        for (t, text) in OVER.iter().enumerate() {
            let path = dir.join(format!("over-{v}-{t}.wav"));
            let ok = Command::new("espeak-ng")
                .args(["-v", voice, "-w"])
                .arg(&path)
                .arg(text)
                .status()
                .expect("espeak-ng");
            assert!(ok.success(), "espeak-ng -v {voice}");
            let first = first_sound_ms(&path);
            voices.push((path, first));
        }
    }
    let speech = std::env::var_os("HARK_BENCH_SPEECH").map(PathBuf::from).expect(
        "HARK_BENCH_SPEECH: where scripts/bench-speech.sh unpacked the human recordings (scripts/bench-hands-free.sh sets it)",
    );
    for name in HUMAN {
        let path = speech.join("asterisk").join(ASTERISK_VOICE).join(format!("{name}.wav"));
        assert!(
            path.is_file(),
            "{} (scripts/bench-speech.sh unpacks it)",
            path.display()
        );
        // paplay plays the 8 kHz original as it is; the first sound is found at 16 kHz.
        let first = first_sound_ms(&path);
        voices.push((path, first));
    }
    println!("5. Barge-in (issue 49), Moonshine deciding by the words; the code before side by side, in this run:");
    for ((label, by_words), replies) in VARIANTS.into_iter().zip(replies) {
        let quarter = replies.div_ceil(4);
        let model = ScriptedModel::new();
        let db = dir.join(format!("barge-in-{by_words}.db"));
        let (session, mut rx) = room_session(&db, &speaker, stt.clone(), &model, Some(smart_turn()), by_words);
        tokio::time::sleep(Duration::from_millis(800)).await;
        let mut lines = Vec::new();
        let mut total = Own::default();
        for loaded in [false, true] {
            let _busy = loaded.then(Busy::start);
            for (rest, kind) in [
                (Duration::from_millis(1500), "after a rest"),
                (Duration::ZERO, "back to back"),
            ] {
                let mut own = Own::default();
                own_replies(&mut rx, &model, &question.0, quarter, rest, &mut own).await;
                lines.push(format!(
                    "{} {kind}: {} cut of {}",
                    if loaded { "loaded" } else { "quiet" },
                    own.cut,
                    own.replies
                ));
                total.replies += own.replies;
                total.cut += own.cut;
                total.unanswered += own.unanswered;
                total.pauses.extend(own.pauses);
            }
        }
        println!("   {label}:");
        println!(
            "     Hark's own replies, no voice in the room: {} cut of {} ({}); questions unanswered {}",
            total.cut,
            total.replies,
            lines.join(", "),
            total.unanswered
        );
        if by_words {
            let n = total.pauses.len();
            println!(
                "     paused by its own voice and played on: {n} times, held p50 {:.0} ms, p95 {:.0} ms",
                percentile(&mut total.pauses.clone(), 0.5),
                percentile(&mut total.pauses, 0.95)
            );
        }
        let mut room = Microphone
            .open(None)
            .expect("a second recorder on the virtual microphone");
        let mut over = Over::default();
        for _ in 0..rounds {
            voices_over_reply(&mut rx, &mut room, &model, &question, &voices, by_words, &mut over).await;
        }
        let _ = room.stop();
        println!(
            "     voices over the reply ({} espeak-ng, {} human recordings, {rounds} rounds): {} of {} cut it ({:.0} %); first sound → playback stopped p50 {:.0} ms, p95 {:.0} ms; replies that did not start {}",
            ESPEAK_VOICES.len() * OVER.len(),
            HUMAN.len(),
            over.cut,
            over.played,
            100.0 * over.cut as f64 / over.played.max(1) as f64,
            percentile(&mut over.stopped.clone(), 0.5),
            percentile(&mut over.stopped, 0.95),
            over.unanswered
        );
        let _ = session.shutdown().await;
    }
}
