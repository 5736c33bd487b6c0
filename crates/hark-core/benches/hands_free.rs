//! Hands-free listening (issue 23), measured in the virtual room of
//! `scripts/virtual-audio.sh`, where the microphone hears the speaker (the worst case:
//! speakers next to the microphone). `scripts/bench-hands-free.sh` starts the room and
//! fetches the models. Everything runs side by side in one run:
//!
//! 1. False starts: five minutes of silence, noise, music and typing through Silero VAD and
//!    the gate; and each of the espeak questions must start speech exactly once.
//! 2. Echo cancellation on Hark's own replies (the OS voice and, when its files are there,
//!    the natural voice) played into the room: ERLE (the microphone's energy against what
//!    is left after AEC3, while Hark speaks), and the speech starts that the detector finds
//!    in the raw and in the cleaned microphone.
//! 3. A hands-free session with a scripted model and transcriber, twice: with silence
//!    alone ending a turn (the fixed-silence endpoint, as before Smart Turn) and with Smart
//!    Turn deciding (the default): end of turn (the last
//!    sound of the question → `speech_ended`) and barge-in (the
//!    first sound of a voice over the reply → the reply stopped), p50 and p95. A clip is
//!    played with `paplay`; its start is taken from the microphone itself (the first frame
//!    louder than the room), so paplay's start-up does not count.
//! 4. The CPU that listening costs: the session idle for 20 s, its process's CPU time
//!    over that time (the capture, AEC3, the VAD, and the playback stream's silence).
//! 5. Barge-in (issue 49, `barge_in`): the replies Hark cut by hearing itself, and the
//!    voices over a reply that cut it, with the code before side by side.
//!
//! `HARK_BENCH_SECTIONS` picks sections (default `1,2,3,4,5`; 3 and 4 run together).

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hark_core::assembly::Profile;
use hark_core::audio::echo::EchoCanceller;
use hark_core::audio::input::{AudioInput, Microphone};
use hark_core::audio::playback::{AudioOut, Speaker};
use hark_core::audio::resample::rms;
use hark_core::audio::turn::{Features, SmartTurn, TurnModel, WINDOW};
use hark_core::audio::vad::{Detector, Edge, GateSettings, Silero};
use hark_core::audio::wav;
use hark_core::conversation::HistorySettings;
use hark_core::models::{Manifest, ModelStore};
use hark_core::session::ptt::PttMode;
use hark_core::session::voice::hands_free::{self, HandsFreeOptions, HandsFreeSession};
use hark_core::session::voice::{ActorOptions, Voice, VoiceEvent};
use hark_core::session::ChatSession;
use hark_core::store::Store;
use hark_core::stt::Transcriber;
use hark_core::testing::{no_speech_set, Reply, ScriptedModel, ScriptedStt};
use hark_core::tts::natural::NaturalVoice;
use hark_core::tts::system::SystemVoice;
use hark_core::tts::Synthesizer;
use tokio::sync::mpsc::UnboundedReceiver;

#[path = "hands_free/barge_in.rs"]
mod barge_in;

const RATE: usize = 16_000;
const QUESTIONS: [&str; 6] = [
    "What is the capital of France?",
    "Tell me a story about a fox.",
    "How long does it take to boil an egg?",
    "Remind me to call my sister tomorrow.",
    "What is the weather like in Lisbon?",
    "Play some quiet music, please.",
];
const REPLIES: [&str; 3] = [
    "The capital of France is Paris, a city on the Seine with about two million people.",
    "Once upon a time a fox lived in a deep green wood, and every morning it walked to the river.",
    "A soft boiled egg takes about six minutes, and a hard boiled one takes about ten.",
];

fn silero() -> Silero {
    let manifest = Manifest::load().expect("the manifest");
    let files = Profile::default()
        .vad_files(&manifest, &ModelStore::default_dir())
        .expect("the VAD's files");
    Silero::load(&files).expect("Silero VAD (scripts/bench-hands-free.sh fetches it)")
}

/// The gate's settings: the defaults, or an experiment's (`HARK_BENCH_PAUSE_MS`,
/// `HARK_BENCH_BARGE_IN_MS`: the pause that asks Smart Turn, the speech that a barge-in
/// needs), so a setting is tried without a rebuild.
fn gate() -> GateSettings {
    let env = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u32>().ok());
    let d = GateSettings::default();
    GateSettings {
        pause_ms: env("HARK_BENCH_PAUSE_MS").unwrap_or(d.pause_ms),
        barge_in_min_speech_ms: env("HARK_BENCH_BARGE_IN_MS").unwrap_or(d.barge_in_min_speech_ms),
        ..d
    }
}

/// Sentences with a pause in the middle, in the natural voice (on espeak's flat voice
/// Smart Turn guesses): the first part broken off after "and", "that", "if" or "um", 700
/// ms of silence, the rest. A turn that ends in the pause has cut the speaker off.
const BROKEN: [(&str, &str); 4] = [
    ("I would like to order a pizza and", "extra cheese, please."),
    ("I think that", "we should leave at noon."),
    ("So I was wondering if", "you could call my sister."),
    ("I'd like to book a table for, um,", "four people tonight."),
];

/// The [`BROKEN`] clips as WAVs, with each one's first and last sound (ms into the file).
async fn broken_clips(dir: &std::path::Path) -> Vec<(PathBuf, f64, f64)> {
    let manifest = Manifest::load().expect("the manifest");
    let Ok(files) = Profile::default().natural_files(&manifest, &ModelStore::default_dir()) else {
        return Vec::new();
    };
    let Ok(voice) = NaturalVoice::new(files, None) else {
        return Vec::new();
    };
    let mut clips = Vec::new();
    for (i, (head, tail)) in BROKEN.iter().enumerate() {
        let mut audio = Vec::new();
        let mut rate = 24_000;
        for (n, part) in [head, tail].iter().enumerate() {
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
            voice.synthesize(part, &tx).await.expect("the natural voice");
            drop(tx);
            let mut piece = Vec::new();
            while let Some(chunk) = rx.recv().await {
                rate = chunk.rate;
                piece.extend(chunk.samples);
            }
            // Trimmed to its sounds, so the pause is exactly the one put between them.
            let first = piece.iter().position(|s| s.abs() > 0.02).unwrap_or(0);
            let last = piece.iter().rposition(|s| s.abs() > 0.02).unwrap_or(0);
            if n == 1 {
                audio.extend(std::iter::repeat_n(0.0, rate as usize * 7 / 10));
            }
            audio.extend_from_slice(&piece[first..=last.max(first)]);
        }
        let mut file = vec![0.0; rate as usize / 5];
        file.extend(&audio);
        file.extend(std::iter::repeat_n(0.0, rate as usize / 5));
        let path = dir.join(format!("broken-{i}.wav"));
        wav::write_mono(&path, &file, rate).expect("the clip");
        let ms = |n: usize| n as f64 * 1000.0 / f64::from(rate);
        clips.push((path, ms(rate as usize / 5), ms(rate as usize / 5 + audio.len())));
    }
    clips
}

fn smart_turn() -> SmartTurn {
    let manifest = Manifest::load().expect("the manifest");
    let files = Profile::default()
        .turn_files(&manifest, &ModelStore::default_dir())
        .expect("Smart Turn's files");
    SmartTurn::load(&files).expect("Smart Turn (scripts/bench-hands-free.sh fetches it)")
}

fn percentile(v: &mut [f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

fn espeak(text: &str, dir: &std::path::Path, name: &str) -> (PathBuf, Vec<f32>) {
    let path = dir.join(name);
    let ok = Command::new("espeak-ng")
        .arg("-w")
        .arg(&path)
        .arg(text)
        .status()
        .expect("espeak-ng");
    assert!(ok.success());
    let samples = wav::read_16k_mono(&path).expect("espeak's WAV");
    (path, samples)
}

fn edges(detector: &mut Detector, audio: &[f32]) -> Vec<Edge> {
    audio
        .chunks(320)
        .flat_map(|c| detector.push(c).expect("the VAD"))
        .collect()
}

/// 1. False starts on no speech, and detection of the questions.
fn false_starts(dir: &std::path::Path) {
    let set = no_speech_set();
    let seconds: usize = set.iter().map(|(_, a)| a.len()).sum::<usize>() / RATE;
    let mut starts = 0;
    let mut per_part = Vec::new();
    let t = Instant::now();
    let mut frames = 0usize;
    for (name, audio) in &set {
        let mut d = Detector::new(Box::new(silero()), gate());
        let n = edges(&mut d, audio)
            .iter()
            .filter(|e| matches!(e, Edge::Started { .. }))
            .count();
        frames += audio.len() / 512;
        starts += n;
        per_part.push(format!("{name} {n}"));
    }
    let per_frame_us = t.elapsed().as_secs_f64() * 1e6 / frames as f64;
    println!(
        "1. False starts: {starts} in {seconds} s of silence, noise, music and typing ({})",
        per_part.join(", ")
    );
    // The same sounds while Hark speaks, where speech needs only the barge-in minimum:
    // what would interrupt a reply.
    let mut barge_ins = Vec::new();
    for (name, audio) in &set {
        let mut d = Detector::new(Box::new(silero()), gate());
        d.set_barge_in(true);
        let n = edges(&mut d, audio)
            .iter()
            .filter(|e| matches!(e, Edge::Started { .. }))
            .count();
        barge_ins.push((name, n));
    }
    println!(
        "   The same while Hark speaks (barge-ins, {} ms of speech): {} ({})",
        gate().barge_in_min_speech_ms,
        barge_ins.iter().map(|(_, n)| n).sum::<usize>(),
        barge_ins
            .iter()
            .map(|(name, n)| format!("{name} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let mut detected = 0;
    let mut onset_err = Vec::new();
    for (i, q) in QUESTIONS.iter().enumerate() {
        let (_, speech) = espeak(q, dir, &format!("fs-{i}.wav"));
        let mut audio = vec![0.0f32; RATE];
        audio.extend(&speech);
        audio.extend(vec![0.0f32; RATE * 2]);
        let onset = RATE + speech.iter().position(|s| s.abs() > 0.02).unwrap_or(0);
        let mut d = Detector::new(Box::new(silero()), gate());
        let e = edges(&mut d, &audio);
        if let [Edge::Started { at }, Edge::Ended { .. }] = e[..] {
            detected += 1;
            onset_err.push((at as f64 - onset as f64) / 16.0);
        }
    }
    println!(
        "   Questions heard as exactly one utterance: {detected}/{}; its start vs the first sound: p50 {:+.0} ms",
        QUESTIONS.len(),
        percentile(&mut onset_err, 0.5)
    );
    println!("   Silero VAD: {per_frame_us:.0} µs per 32 ms frame on one thread");
}

/// Plays `samples` as a reply through the speaker while the microphone records; returns
/// the raw microphone and the speaker's echo reference consumer's output.
async fn play_and_record(speaker: &Arc<Speaker>, samples: Vec<f32>, rate: u32) -> (Vec<f32>, Vec<f32>, f64) {
    let reference = speaker.echo_reference().expect("the speaker's reference");
    let mut aec = EchoCanceller::new(reference);
    let mut mic = Microphone.open(None).expect("the virtual microphone");
    // Let the microphone and AEC3 settle on the room's silence.
    let settle = Instant::now();
    let (mut raw, mut clean) = (Vec::new(), Vec::new());
    while settle.elapsed() < Duration::from_millis(500) {
        if let Some(c) = mic.next_chunk().await {
            aec.process(&c);
        }
    }
    let length = Duration::from_secs_f64(samples.len() as f64 / f64::from(rate));
    speaker.start_reply();
    let s = speaker.begin_sentence("reply");
    speaker.push(s, samples, rate);
    speaker.end_sentence(s);
    let start = Instant::now();
    let mut cpu = Duration::ZERO;
    while start.elapsed() < length + Duration::from_millis(500) {
        let Some(c) = mic.next_chunk().await else { break };
        let t = Instant::now();
        let out = aec.process(&c);
        cpu += t.elapsed();
        raw.extend(c);
        clean.extend(out);
    }
    let _ = mic.stop();
    let per_10ms_us = cpu.as_secs_f64() * 1e6 / (raw.len() as f64 / 160.0);
    (raw, clean, per_10ms_us)
}

/// ERLE over the frames where the raw microphone is louder than the room, skipping the
/// first `skip` samples (AEC3 converging).
fn erle(raw: &[f32], clean: &[f32], skip: usize) -> f64 {
    let (mut e_raw, mut e_clean) = (0.0f64, 0.0f64);
    for (r, c) in raw.chunks(160).zip(clean.chunks(160)).skip(skip / 160) {
        if rms(r) > 0.01 {
            e_raw += r.iter().map(|s| f64::from(s * s)).sum::<f64>();
            e_clean += c.iter().map(|s| f64::from(s * s)).sum::<f64>();
        }
    }
    10.0 * (e_raw / e_clean.max(1e-12)).log10()
}

/// 2. Echo cancellation on Hark's own replies.
async fn echo(speaker: &Arc<Speaker>) {
    let mut voices: Vec<(&str, Arc<dyn Synthesizer>)> = vec![("OS voice", Arc::new(SystemVoice::default()))];
    let manifest = Manifest::load().expect("the manifest");
    if let Ok(files) = Profile::default().natural_files(&manifest, &ModelStore::default_dir()) {
        if let Ok(v) = NaturalVoice::new(files, None) {
            voices.push(("natural voice", Arc::new(v)));
        }
    }
    let mic = Microphone.open(None).expect("the virtual microphone");
    println!(
        "2. Echo cancellation on Hark's replies played into the room (AEC3, sonora 0.2), heard on {:?}:",
        mic.device()
    );
    let _ = mic.stop();
    for (name, voice) in voices {
        let (mut whole, mut converged, mut raw_starts, mut clean_starts, mut cost) = (vec![], vec![], 0, 0, vec![]);
        for text in REPLIES {
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
            voice.synthesize(text, &tx).await.expect("the voice");
            drop(tx);
            let (mut samples, mut rate) = (Vec::new(), 16_000);
            while let Some(chunk) = rx.recv().await {
                rate = chunk.rate;
                samples.extend(chunk.samples);
            }
            let (raw, clean, us) = play_and_record(speaker, samples, rate).await;
            whole.push(erle(&raw, &clean, 0));
            converged.push(erle(&raw, &clean, RATE));
            cost.push(us);
            // As the detector listens while Hark speaks: with the barge-in minimum.
            let count = |audio: &[f32]| {
                let mut d = Detector::new(Box::new(silero()), gate());
                d.set_barge_in(true);
                edges(&mut d, audio)
                    .iter()
                    .filter(|e| matches!(e, Edge::Started { .. }))
                    .count()
            };
            raw_starts += count(&raw);
            clean_starts += count(&clean);
        }
        println!(
            "   {name}: ERLE p50 {:.1} dB over the whole reply, {:.1} dB after its first second; barge-ins by Hark's own voice: {raw_starts} heard raw, {clean_starts} after AEC3; AEC3 {:.0} µs per 10 ms",
            percentile(&mut whole, 0.5),
            percentile(&mut converged, 0.5),
            percentile(&mut cost, 0.5)
        );
    }
}

/// Waits for the first event that `pred` accepts; its arrival time.
async fn until(rx: &mut UnboundedReceiver<VoiceEvent>, what: &str, pred: impl Fn(&VoiceEvent) -> bool) -> Instant {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let e = tokio::time::timeout_at(deadline, rx.recv())
            .await
            .unwrap_or_else(|_| panic!("timed out waiting for {what}"))
            .unwrap_or_else(|| panic!("the session ended before {what}"));
        if let VoiceEvent::Failed { .. } = &e {
            panic!("failed waiting for {what}: {e:?}");
        }
        if pred(&e) {
            return Instant::now();
        }
    }
}

/// A hands-free session in the room: the virtual speaker and microphone, Silero VAD with
/// the benchmark's gate, `turn` asked at pauses, the OS voice, `stt`, and `model` replying;
/// `barge_in_by_words` off, any speech over the reply cuts it (the code before issue 49).
fn room_session(
    db: &std::path::Path,
    speaker: &Arc<Speaker>,
    stt: Arc<dyn Transcriber>,
    model: &ScriptedModel,
    turn: Option<SmartTurn>,
    barge_in_by_words: bool,
) -> (HandsFreeSession, UnboundedReceiver<VoiceEvent>) {
    let store = Arc::new(Store::open(db).expect("the store"));
    let chat = ChatSession::create(store, Box::new(model.clone()), "Be brief.", HistorySettings::default())
        .expect("the session");
    let voice = Voice {
        stt,
        tts: Arc::new(SystemVoice::default()),
        out: speaker.clone(),
    };
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let session = hands_free::spawn(
        chat,
        voice,
        ActorOptions {
            mode: PttMode::Hold,
            input_device: None,
            input: Arc::new(Microphone),
            cues: false,
            pipeline: Default::default(),
            questions: None,
        },
        Box::new(silero()),
        turn.map(|t| Box::new(t) as Box<dyn TurnModel>),
        HandsFreeOptions {
            gate: gate(),
            barge_in_by_words,
            ..HandsFreeOptions::default()
        },
        tx,
    )
    .expect("the virtual microphone");
    assert!(session.full_duplex(), "echo cancellation runs on the speaker");
    (session, rx)
}

/// Plays a clip into the room, on a thread of its own.
fn play(path: &std::path::Path) -> std::thread::JoinHandle<()> {
    let path = path.to_path_buf();
    std::thread::spawn(move || {
        let _ = Command::new("paplay").arg("--device=spk").arg(&path).status();
    })
}

/// When the next sound louder than the room reaches the microphone.
async fn first_sound(mic: &mut Box<dyn hark_core::audio::input::InputStream>) -> Instant {
    loop {
        let c = mic.next_chunk().await.expect("the room's microphone");
        if rms(&c) > 0.01 {
            // The chunk's end is now; its loud part began up to 20 ms before.
            return Instant::now() - Duration::from_millis(10);
        }
    }
}

/// 3 and 4: a hands-free session.
async fn session(dir: &std::path::Path, speaker: Arc<Speaker>, trials: usize, turn: Option<SmartTurn>, baseline: f64) {
    let smart = turn.is_some();
    println!(
        "{}",
        if smart {
            "With Smart Turn deciding the end of a turn (the default):"
        } else {
            "With silence alone deciding the end of a turn (no end-of-turn model; before Smart Turn):"
        }
    );
    let model = ScriptedModel::new();
    let stt = Arc::new(ScriptedStt::new(&["tell me a story"]));
    let (session, mut rx) = room_session(&dir.join("bench.db"), &speaker, stt, &model, turn, true);
    let (q, q_samples) = espeak("Tell me a story.", dir, "q.wav");
    let (over, over_samples) = espeak("Stop, that is enough.", dir, "over.wav");
    let over_first = over_samples.iter().position(|s| s.abs() > 0.02).unwrap_or(0) as f64 / 16.0;
    let voiced = q_samples.iter().rposition(|s| s.abs() > 0.02).unwrap_or(0) as f64 / 16.0;
    let first = q_samples.iter().position(|s| s.abs() > 0.02).unwrap_or(0) as f64 / 16.0;
    let story = "Once upon a time there was a fox who lived in a deep green wood. Every morning it walked \
                 to the river and watched the fish and the birds for hours, and then it went home to sleep.";
    // A recorder of the room's own: when each clip's first sound arrives.
    let mut room = Microphone
        .open(None)
        .expect("a second recorder on the virtual microphone");
    let (mut end_of_turn, mut barge_in) = (Vec::new(), Vec::new());
    let (mut detection, mut stopping) = (Vec::new(), Vec::new());
    tokio::time::sleep(Duration::from_millis(800)).await;
    for _ in 0..trials {
        model.push(Reply::text(story));
        model.push(Reply::text("Okay."));
        // The recorder's backlog (Hark's last reply) is not the question.
        while let Ok(Some(_)) = tokio::time::timeout(Duration::ZERO, room.next_chunk()).await {}
        let spawned_q = Instant::now();
        let p = play(&q);
        let heard = first_sound(&mut room).await;
        // From paplay's start to the clip's first sample reaching the microphone.
        let start_up = heard.saturating_duration_since(spawned_q)
            - Duration::from_secs_f64(first / 1000.0).min(heard.saturating_duration_since(spawned_q));
        let ended = until(&mut rx, "speech_ended", |e| *e == VoiceEvent::SpeechEnded).await;
        // The question's last sound came (voiced - first) ms after its first.
        let last_sound = heard + Duration::from_secs_f64((voiced - first) / 1000.0);
        end_of_turn.push(ended.saturating_duration_since(last_sound).as_secs_f64() * 1000.0);
        let _ = p.join();
        until(&mut rx, "speaking", |e| *e == VoiceEvent::SpeakingStarted).await;
        tokio::time::sleep(Duration::from_millis(1200)).await;
        // The room is loud with Hark now, so the voice's first sound is placed by this
        // trial's paplay start-up (measured on the question, in a quiet room) and the
        // clip's own leading silence.
        let spawned = Instant::now();
        let p = play(&over);
        let onset = spawned + start_up + Duration::from_secs_f64(over_first / 1000.0);
        let heard = until(&mut rx, "the voice over the reply", |e| *e == VoiceEvent::SpeechStarted).await;
        // Playback stops at the pause, while the words are checked (issue 49).
        let stopped = until(&mut rx, "the barge-in", |e| {
            matches!(e, VoiceEvent::ReplyPaused | VoiceEvent::ReplyInterrupted { .. })
        })
        .await;
        barge_in.push(stopped.saturating_duration_since(onset).as_secs_f64() * 1000.0);
        detection.push(heard.saturating_duration_since(onset).as_secs_f64() * 1000.0);
        stopping.push(stopped.saturating_duration_since(heard).as_secs_f64() * 1000.0);
        let _ = p.join();
        until(&mut rx, "the interrupting turn's end", |e| *e == VoiceEvent::Idle).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let rule = if smart {
        format!("Smart Turn asked after {} ms of silence", gate().pause_ms)
    } else {
        format!("fixed {} ms of silence", gate().patience_ms)
    };
    println!(
        "3. End of turn (last sound → speech_ended, {rule}): p50 {:.0} ms, p95 {:.0} ms ({trials} turns)",
        percentile(&mut end_of_turn.clone(), 0.5),
        percentile(&mut end_of_turn, 0.95)
    );
    println!(
        "   Barge-in (the voice's first sound → the reply stopped): p50 {:.0} ms, p95 {:.0} ms",
        percentile(&mut barge_in.clone(), 0.5),
        percentile(&mut barge_in, 0.95)
    );
    println!(
        "     of which the first sound → speech_started p50 {:.0} ms (the minimum speech while Hark speaks is {} ms), speech_started → stopped p50 {:.0} ms",
        percentile(&mut detection, 0.5),
        gate().barge_in_min_speech_ms,
        percentile(&mut stopping, 0.5)
    );

    // Sentences with a pause in the middle: does the turn end in the pause?
    let clips = broken_clips(dir).await;
    let mut cut = 0;
    for (clip, first, last) in &clips {
        model.push(Reply::text("Okay."));
        model.push(Reply::text("Okay."));
        while let Ok(Some(_)) = tokio::time::timeout(Duration::ZERO, room.next_chunk()).await {}
        while let Ok(Some(_)) = tokio::time::timeout(Duration::ZERO, rx.recv()).await {}
        let p = play(clip);
        let heard = first_sound(&mut room).await;
        let last_sound = heard + Duration::from_secs_f64((last - first) / 1000.0);
        let ended = until(&mut rx, "speech_ended", |e| *e == VoiceEvent::SpeechEnded).await;
        if ended + Duration::from_millis(100) < last_sound {
            cut += 1;
        }
        let _ = p.join();
        // Every turn the clip made is over (a cut-off makes two): 3 s with nothing but levels.
        loop {
            let quiet = tokio::time::timeout(Duration::from_secs(3), async {
                loop {
                    match rx.recv().await {
                        Some(VoiceEvent::Level { .. }) | Some(VoiceEvent::ContextChanged { .. }) => continue,
                        other => return other,
                    }
                }
            })
            .await;
            if !matches!(quiet, Ok(Some(_))) {
                break;
            }
        }
    }
    if clips.is_empty() {
        println!("   Sentences with a pause in the middle: skipped (no natural voice)");
    } else {
        println!(
            "   Sentences with a 700 ms pause in the middle (natural voice): {cut} of {} cut off in the pause",
            clips.len()
        );
    }

    let _ = room.stop();

    // 4. Listening, idle.
    if let Some((share, threads)) = idle_cpu().await {
        println!(
            "4. Listening hands-free, idle for 20 s: {share:.1} % of one core (the whole process); listening adds {:.1} % to push-to-talk's idle",
            share - baseline
        );
        println!("   {threads}");
    }
    let _ = session.shutdown().await;
}

/// The process's CPU over the next 20 s, as a share of one core, and the threads it went
/// to (by name; threads that ended or began meanwhile are left out). `None` off Unix.
async fn idle_cpu() -> Option<(f64, String)> {
    let (c0, threads0, t0) = (cpu_time()?, thread_times(), Instant::now());
    tokio::time::sleep(Duration::from_secs(20)).await;
    let c1 = cpu_time()?;
    let wall = t0.elapsed().as_secs_f64();
    let mut by_name: Vec<(String, f64)> = Vec::new();
    for (tid, (name, t1)) in thread_times() {
        if let Some((_, t0)) = threads0.get(&tid) {
            let pct = (t1 - t0) / wall * 100.0;
            match by_name.iter_mut().find(|(n, _)| *n == name) {
                Some((_, p)) => *p += pct,
                None => by_name.push((name, pct)),
            }
        }
    }
    by_name.sort_by(|a, b| b.1.total_cmp(&a.1));
    let threads: Vec<String> = by_name
        .iter()
        .filter(|(_, p)| *p >= 0.1)
        .map(|(n, p)| format!("{n} {p:.1} %"))
        .collect();
    Some((
        (c1 - c0).as_secs_f64() / wall * 100.0,
        format!("by thread: {}", threads.join(", ")),
    ))
}

/// This process's CPU time so far (user and system).
#[cfg(unix)]
fn cpu_time() -> Option<Duration> {
    // SAFETY: getrusage fills the zeroed struct it is given; RUSAGE_SELF is always valid.
    let mut u = unsafe { std::mem::zeroed::<libc::rusage>() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) } != 0 {
        return None;
    }
    let t = |v: libc::timeval| Duration::new(v.tv_sec as u64, v.tv_usec as u32 * 1000);
    Some(t(u.ru_utime) + t(u.ru_stime))
}

#[cfg(not(unix))]
fn cpu_time() -> Option<Duration> {
    None
}

/// Each thread's name and CPU seconds so far, by thread id (Linux's /proc; empty elsewhere).
fn thread_times() -> std::collections::HashMap<String, (String, f64)> {
    let mut out = std::collections::HashMap::new();
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return out;
    };
    for t in tasks.flatten() {
        let Ok(stat) = std::fs::read_to_string(t.path().join("stat")) else {
            continue;
        };
        // "tid (name) state ... utime stime": the name may hold spaces; fields after ")".
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let f: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
        // utime and stime are fields 14 and 15 of the line, 11 and 12 after the name; in
        // clock ticks, 100 a second on Linux.
        let secs = (ticks(11) + ticks(12)) / 100.0;
        out.insert(
            t.file_name().to_string_lossy().into_owned(),
            (stat[open + 1..close].to_string(), secs),
        );
    }
    out
}

fn main() {
    assert!(
        std::env::var_os("PULSE_SERVER").is_some(),
        "no PulseAudio: run scripts/bench-hands-free.sh (it starts the virtual room)"
    );
    let number = |name: &str, default: usize| std::env::var(name).ok().and_then(|t| t.parse().ok()).unwrap_or(default);
    let trials = number("HARK_BENCH_TRIALS", 10);
    let sections = std::env::var("HARK_BENCH_SECTIONS").unwrap_or_else(|_| "1,2,3,4,5".into());
    let section = |n: &str| sections.split(',').any(|s| s.trim() == n);
    let dir = tempfile::tempdir().expect("a temporary folder");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    println!(
        "Hands-free listening in the virtual room (the microphone hears the speaker), {} cores",
        num_cpus()
    );
    if section("1") {
        false_starts(dir.path());
    }
    rt.block_on(async {
        let speaker = Arc::new(Speaker::open(None).expect("the virtual speaker"));
        if section("5") {
            barge_in::barge_in(
                dir.path(),
                speaker.clone(),
                [
                    number("HARK_BENCH_REPLIES_BEFORE", 100),
                    number("HARK_BENCH_REPLIES", 200),
                ],
                number("HARK_BENCH_ROUNDS", 3),
            )
            .await;
        }
        if section("2") {
            echo(&speaker).await;
        }
        if !section("3") && !section("4") {
            return;
        }
        let turn = smart_turn();
        let eight_seconds: Vec<f32> = (0..WINDOW).map(|i| ((i % 160) as f32 / 160.0 - 0.5) * 0.1).collect();
        let mut timed = smart_turn();
        let t = Instant::now();
        for _ in 0..5 {
            timed.completion(&eight_seconds).expect("Smart Turn runs");
        }
        let decision = t.elapsed().as_secs_f64() * 1000.0 / 5.0;
        let features = Features::new();
        let t = Instant::now();
        for _ in 0..5 {
            std::hint::black_box(features.compute(&eight_seconds));
        }
        println!(
            "   Smart Turn v3.2, one decision on 8 s of audio (as Hark runs it): {decision:.0} ms, of which the log-mel features {:.0} ms",
            t.elapsed().as_secs_f64() * 1000.0 / 5.0
        );
        // What push-to-talk costs between turns: the speaker open (as a session keeps it),
        // the microphone closed. Listening hands-free is measured against it.
        let baseline = match idle_cpu().await {
            Some((share, threads)) => {
                println!("   Idle between push-to-talk turns (the speaker open, the microphone closed), 20 s: {share:.1} % of one core ({threads})");
                share
            }
            None => 0.0,
        };
        session(dir.path(), speaker.clone(), trials, None, baseline).await;
        session(dir.path(), speaker, trials, Some(turn), baseline).await;
    });
}

fn num_cpus() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}
