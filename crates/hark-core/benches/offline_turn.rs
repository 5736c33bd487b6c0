//! The offline spoken turn, end to end, scheduled both ways in one run (issue 12):
//! espeak-recorded questions are "spoken" into the voice actor in real time with the key
//! held, then released; whisper (tiny.en) → the local chat model in `hark-llm` → the OS
//! voice. The same models, the same model server and the same clips serve both pipelines:
//!
//! - `sequential`: transcribe after release, evaluate the whole prompt after that, speak
//!   from the first whole sentence (Hark before issue 12);
//! - `overlapped`: the prompt's prefix is evaluated at the press, whisper transcribes at
//!   each pause while the key is held, speech starts at the reply's first clause.
//!
//! The overlapped pipeline runs a second time with the natural voice (Kokoro) instead of
//! the OS voice (issue 13), in the same run.
//!
//! It prints release → transcript, → first token and → first reply sample out, p50 and p95
//! for each, the ratios, the word error rate of the transcripts against the clips' text,
//! and each voice's real-time factor (compute time / audio time, warm).
//!
//! Then the first turn after a start against the second (issue 21): a speech model just
//! loaded, as a session's start leaves it, with whisper's warm-up decode (Hark now) and
//! without (loaded only, Hark before), the overlapped pipeline and the OS voice, in the
//! same run. The app's first-run test asserted this ratio once; it lives here now.
//!
//! Run: `scripts/bench-offline-turn.sh [RUNS]` (release builds; fetches the models).
//! `HARK_BENCH_RUNS` (default 5) conversations per pipeline, each of every clip in turn;
//! `HARK_BENCH_RELEASE_MS` (default 300) how long after the last word the key comes up;
//! `HARK_BENCH_VERBOSE` prints each turn's figures, transcript and reply on stderr;
//! `HARK_BENCH_LLM` picks the chat model (a manifest id; default: the default one);
//! `HARK_BENCH_PIPELINES` (default `sequential,overlapped,overlapped/natural`) picks the
//! pipelines, each with a voice after `/` (`system` when none is named).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use hark_core::audio::input::{AudioInput, InputStream};
use hark_core::audio::playback::ClockOut;
use hark_core::audio::resample::rms;
use hark_core::audio::wav::read_16k_mono;
use hark_core::audio::AudioError;
use hark_core::conversation::HistorySettings;
use hark_core::local::{LocalLlm, DEFAULT_CONTEXT};
use hark_core::models::{Manifest, ModelKind, ModelStore};
use hark_core::session::ptt::{Key, PttMode};
use hark_core::session::voice::{self, ActorOptions, Pipeline, TurnMetrics, Voice, VoiceEvent};
use hark_core::session::ChatSession;
use hark_core::store::Store;
use hark_core::stt::whisper::WhisperStt;
use hark_core::tts::natural::NaturalVoice;
use hark_core::tts::system::SystemVoice;
use hark_core::tts::{AudioChunk, Synthesizer};
use tokio::sync::{mpsc, Notify};

/// The questions, spoken by espeak-ng at its default voice and speed.
const CLIPS: &[&str] = &[
    "What is the capital of France?",
    "Tell me a fun fact about octopuses.",
    "How many legs does a spider have?",
];

/// The key comes up this long after the last word by default (people release after they
/// finish); `HARK_BENCH_RELEASE_MS` changes it.
const RELEASE_AFTER_MS: usize = 300;

fn release_after_ms() -> usize {
    std::env::var("HARK_BENCH_RELEASE_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(RELEASE_AFTER_MS)
}

/// A microphone that plays a clip in real time (20 ms chunks on absolute deadlines, so
/// no drift) and says when it has delivered all of it.
#[derive(Clone, Default)]
struct ClipMic {
    next: Arc<Mutex<VecDeque<Vec<f32>>>>,
    delivered: Arc<Notify>,
}

struct ClipStream {
    chunks: VecDeque<Vec<f32>>,
    start: tokio::time::Instant,
    sent: u32,
    level: f32,
    delivered: Arc<Notify>,
}

impl AudioInput for ClipMic {
    fn open(&self, _device: Option<&str>) -> Result<Box<dyn InputStream>, AudioError> {
        let clip = self.next.lock().unwrap().pop_front().unwrap_or_default();
        Ok(Box::new(ClipStream {
            chunks: clip.chunks(320).map(<[f32]>::to_vec).collect(),
            start: tokio::time::Instant::now(),
            sent: 0,
            level: 0.0,
            delivered: self.delivered.clone(),
        }))
    }
}

#[async_trait]
impl InputStream for ClipStream {
    async fn next_chunk(&mut self) -> Option<Vec<f32>> {
        match self.chunks.pop_front() {
            Some(c) => {
                self.sent += 1;
                tokio::time::sleep_until(self.start + Duration::from_millis(20 * self.sent as u64)).await;
                self.level = rms(&c);
                if self.chunks.is_empty() {
                    self.delivered.notify_one();
                }
                Some(c)
            }
            None => std::future::pending().await,
        }
    }
    fn level(&self) -> f32 {
        self.level
    }
    fn device(&self) -> String {
        "clip".into()
    }
    fn stop(self: Box<Self>) -> Result<Vec<f32>, AudioError> {
        Ok(Vec::new())
    }
}

/// One turn's figures from release, in ms, and what was heard.
struct Measured {
    transcript: f64,
    first_token: f64,
    first_audio: f64,
    heard: String,
}

fn percentile(v: &[f64], p: f64) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s[((s.len() as f64 - 1.0) * p).round() as usize]
}

fn words(s: &str) -> Vec<String> {
    s.split_whitespace()
        .map(|w| {
            w.chars()
                .filter(|c| c.is_alphanumeric())
                .collect::<String>()
                .to_lowercase()
        })
        .filter(|w| !w.is_empty())
        .collect()
}

/// Word edit distance between a reference and a hypothesis.
fn word_errors(reference: &[String], hypothesis: &[String]) -> usize {
    let mut prev: Vec<usize> = (0..=hypothesis.len()).collect();
    for (i, r) in reference.iter().enumerate() {
        let mut cur = vec![i + 1; hypothesis.len() + 1];
        for (j, h) in hypothesis.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(r != h)).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[hypothesis.len()]
}

/// A clip of `text`: espeak-ng's recording, its trailing silence cut, then the silence
/// before the release.
fn clip(text: &str, dir: &std::path::Path, n: usize) -> Vec<f32> {
    let path = dir.join(format!("clip-{n}.wav"));
    let ok = std::process::Command::new("espeak-ng")
        .arg("-w")
        .arg(&path)
        .arg(text)
        .status()
        .expect("espeak-ng (scripts/install-deps.sh installs it)");
    assert!(ok.success());
    let mut samples = read_16k_mono(&path).expect("espeak's WAV");
    let end = samples
        .chunks(320)
        .rposition(|c| rms(c) >= hark_core::session::ptt::SILENCE_RMS)
        .map_or(samples.len(), |i| (i + 1) * 320);
    samples.truncate(end);
    samples.extend(std::iter::repeat_n(0.0, release_after_ms() * 16));
    samples
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{cpu}, {cores} cores")
}

async fn conversation(pipeline: Pipeline, server: &LocalLlm, voice: &Voice, clips: &[Vec<f32>]) -> Vec<Measured> {
    let store = Arc::new(Store::open_in_memory().expect("sqlite"));
    let mut chat = ChatSession::create(
        store,
        server.config().build().expect("the local model's client"),
        hark_core::assembly::DEFAULT_SYSTEM_PROMPT,
        HistorySettings::default(),
    )
    .expect("session");
    chat.set_reply_budget(48);
    chat.set_model_window(server.context_window());
    chat.set_prefill(true);
    let mic = ClipMic::default();
    let (tx, mut events) = mpsc::unbounded_channel();
    let session = voice::spawn(
        chat,
        voice.clone(),
        ActorOptions {
            mode: PttMode::Hold,
            input_device: None,
            input: Arc::new(mic.clone()),
            cues: false,
            pipeline,
        },
        tx,
    );
    let mut out = Vec::new();
    for c in clips {
        mic.next.lock().unwrap().push_back(c.clone());
        session.handle().key(Key::Press).expect("actor");
        mic.delivered.notified().await;
        session.handle().key(Key::Release).expect("actor");
        let mut heard = String::new();
        let metrics: TurnMetrics = loop {
            match tokio::time::timeout(Duration::from_secs(120), events.recv()).await {
                Ok(Some(VoiceEvent::TranscriptFinal { text })) => heard = text,
                Ok(Some(VoiceEvent::TurnFinished { metrics, reply })) => {
                    if std::env::var_os("HARK_BENCH_VERBOSE").is_some() {
                        eprintln!(
                            "{pipeline:?}: transcript {:?} ms, first token {:?} ms after it, first audio {:?} ms: {heard:?} → {reply:?}",
                            metrics.transcript_ms, metrics.first_token_ms, metrics.first_audio_out_ms
                        );
                    }
                    break metrics;
                }
                Ok(Some(VoiceEvent::Failed { message, .. })) => panic!("the turn failed: {message}"),
                Ok(Some(VoiceEvent::NoTurn { reason })) => panic!("no turn: {reason:?}"),
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => panic!("no turn finished within two minutes"),
            }
        };
        loop {
            if let Some(VoiceEvent::Idle) = events.recv().await {
                break;
            }
        }
        let transcript = metrics.transcript_ms.unwrap_or(0) as f64;
        out.push(Measured {
            transcript,
            // The request starts when the transcript is there.
            first_token: transcript + metrics.first_token_ms.unwrap_or(0) as f64,
            first_audio: metrics.first_audio_out_ms.unwrap_or(0) as f64,
            heard,
        });
    }
    session.shutdown().await.expect("actor");
    out
}

fn main() {
    let runs: usize = std::env::var("HARK_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let pipelines: Vec<(Pipeline, &'static str)> = std::env::var("HARK_BENCH_PIPELINES")
        .unwrap_or_else(|_| "sequential,overlapped,overlapped/natural".into())
        .split(',')
        .map(|p| {
            let (pipeline, voice) = p.trim().split_once('/').unwrap_or((p.trim(), "system"));
            let pipeline = match pipeline {
                "sequential" => Pipeline::Sequential,
                "overlapped" => Pipeline::Overlapped,
                other => panic!("HARK_BENCH_PIPELINES: unknown pipeline {other:?} (sequential, overlapped)"),
            };
            let voice = match voice {
                "system" => "system",
                "natural" => "natural",
                other => panic!("HARK_BENCH_PIPELINES: unknown voice {other:?} (system, natural)"),
            };
            (pipeline, voice)
        })
        .collect();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let manifest = Manifest::load().expect("the models manifest");
        let models = ModelStore::default_dir();
        let llm = match std::env::var("HARK_BENCH_LLM") {
            Ok(id) => manifest.find(&id).expect("HARK_BENCH_LLM: a chat model of the manifest"),
            Err(_) => manifest.default_for(ModelKind::Llm).expect("a default chat model"),
        };
        let stt = manifest.default_for(ModelKind::Stt).expect("a default speech model");
        let profile = hark_core::assembly::Profile::default();
        let natural_specs = profile.natural_specs(&manifest).expect("the natural voice in the manifest");
        for spec in [llm, stt].into_iter().chain(natural_specs) {
            models.ensure(spec, &|_| {}).await.expect("the model (scripts/fetch-models.sh)");
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let clips: Vec<Vec<f32>> = CLIPS.iter().enumerate().map(|(n, t)| clip(t, dir.path(), n)).collect();
        let server = LocalLlm::start(&models.path(llm), &llm.id, DEFAULT_CONTEXT, None)
            .await
            .expect("hark-llm (set HARK_LLM_BIN to the release build)");
        let whisper = WhisperStt::load(&models.path(stt)).expect("whisper");
        whisper.set_unload_after(None);
        let system: Arc<dyn Synthesizer> = Arc::new(SystemVoice::default());
        let natural_voice =
            NaturalVoice::new(profile.natural_files(&manifest, &models).expect("its files"), None).expect("af_heart");
        let natural: Arc<dyn Synthesizer> = Arc::new(natural_voice);
        let voice_for = |name: &str| Voice {
            stt: Arc::new(whisper.clone()),
            tts: if name == "natural" { natural.clone() } else { system.clone() },
            out: Arc::new(ClockOut::new()),
        };
        // Every pipeline starts warm: the speech model and the voices loaded, the model
        // server serving.
        use hark_core::stt::Transcriber;
        let _ = whisper.transcribe(&clips[0]).await;
        for name in ["system", "natural"] {
            let _ = conversation(Pipeline::Sequential, &server, &voice_for(name), &clips[..1]).await;
        }

        // Each voice's real-time factor on the replies' kind of sentence, warm.
        let sentences = [
            "The capital of France is Paris.",
            "Octopuses have three hearts and blue blood.",
            "A spider has eight legs.",
        ];
        let mut rtf = Vec::new();
        for (name, tts) in [("system", &system), ("natural", &natural)] {
            let (mut compute, mut audio) = (0.0, 0.0);
            for s in sentences {
                let (tx, mut rx) = mpsc::unbounded_channel::<AudioChunk>();
                let started = std::time::Instant::now();
                tts.synthesize(s, &tx).await.expect("synthesis");
                compute += started.elapsed().as_secs_f64();
                drop(tx);
                while let Some(c) = rx.recv().await {
                    audio += c.samples.len() as f64 / f64::from(c.rate);
                }
            }
            rtf.push((name, compute / audio, audio));
        }

        println!("Offline spoken turn, {} ({} runs × {} clips per pipeline)", machine(), runs, clips.len());
        println!(
            "whisper {} → {} in hark-llm → the OS voice (espeak-ng) or the natural voice (Kokoro, {} thread(s)); release {} ms after the last word\n",
            stt.id,
            llm.id,
            hark_core::tts::natural::thread_budget(),
            release_after_ms()
        );
        let mut results: Vec<((Pipeline, &str), Vec<Measured>)> =
            pipelines.iter().map(|p| (*p, Vec::new())).collect();
        for run in 0..runs {
            // Alternate which pipeline goes first, so neither always follows the other.
            let mut order: Vec<usize> = (0..results.len()).collect();
            if run % 2 == 1 {
                order.reverse();
            }
            for i in order {
                let (p, v) = results[i].0;
                let m = conversation(p, &server, &voice_for(v), &clips).await;
                results[i].1.extend(m);
            }
        }
        println!(
            "{:<19} {:>22} {:>22} {:>22} {:>7}",
            "pipeline/voice", "release → transcript", "release → 1st token", "release → 1st audio", "WER"
        );
        for ((p, v), m) in &results {
            let col = |f: fn(&Measured) -> f64| {
                let v: Vec<f64> = m.iter().map(f).collect();
                format!("p50 {:>5.0} p95 {:>5.0}", percentile(&v, 0.5), percentile(&v, 0.95))
            };
            let (mut errors, mut total) = (0, 0);
            for (k, t) in m.iter().enumerate() {
                let reference = words(CLIPS[k % CLIPS.len()]);
                errors += word_errors(&reference, &words(&t.heard));
                total += reference.len();
            }
            println!(
                "{:<19} {:>22} {:>22} {:>22} {:>6.1}%",
                format!("{p:?}/{v}").to_lowercase(),
                col(|t| t.transcript),
                col(|t| t.first_token),
                col(|t| t.first_audio),
                errors as f64 * 100.0 / total as f64
            );
        }
        let find = |p: Pipeline, v: &str| results.iter().find(|(k, _)| *k == (p, v)).map(|(_, m)| m);
        let p50 = |m: &[Measured], f: fn(&Measured) -> f64| percentile(&m.iter().map(f).collect::<Vec<_>>(), 0.5);
        let p95 = |m: &[Measured], f: fn(&Measured) -> f64| percentile(&m.iter().map(f).collect::<Vec<_>>(), 0.95);
        let a: fn(&Measured) -> f64 = |t| t.first_audio;
        if let (Some(old), Some(new)) = (
            find(Pipeline::Sequential, "system"),
            find(Pipeline::Overlapped, "system"),
        ) {
            let same = old.iter().zip(new).filter(|(a, b)| a.heard == b.heard).count();
            println!(
                "\noverlapped / sequential, release → first audio: p50 {:.2}×, p95 {:.2}× (goal: p50 ≤ 700 ms and ≤ 0.6×: {})",
                p50(new, a) / p50(old, a),
                p95(new, a) / p95(old, a),
                if p50(new, a) <= 700.0 && p50(new, a) / p50(old, a) <= 0.6 { "met" } else { "NOT met" }
            );
            println!("identical transcripts: {same} of {}", old.len().min(new.len()));
        }
        if let (Some(os), Some(nat)) = (
            find(Pipeline::Overlapped, "system"),
            find(Pipeline::Overlapped, "natural"),
        ) {
            println!(
                "natural / OS voice (overlapped), release → first audio: p50 {:.0} vs {:.0} ms ({:.2}×); goal natural p50 ≤ 1,100 ms: {}",
                p50(nat, a),
                p50(os, a),
                p50(nat, a) / p50(os, a),
                if p50(nat, a) <= 1100.0 { "met" } else { "NOT met" }
            );
        }
        println!();
        for (name, factor, secs) in rtf {
            println!("real-time factor, {name} voice: {factor:.2} ({secs:.1} s of speech, warm)");
        }

        // The first turn after a start: a speech model just loaded (a new engine each
        // time), warmed up or not, then two turns.
        println!("\nThe first turn after a start against the second ({runs} starts each; overlapped, OS voice)");
        println!(
            "{:<24} {:>26} {:>26} {:>8}",
            "start", "1st turn → transcript/audio", "2nd turn → transcript/audio", "1st/2nd"
        );
        for (name, warm) in [("loaded only (before)", false), ("loaded + warm-up (now)", true)] {
            let (mut first, mut second) = (Vec::new(), Vec::new());
            for _ in 0..runs {
                let fresh = WhisperStt::load(&models.path(stt)).expect("whisper");
                fresh.set_unload_after(None);
                if warm {
                    fresh.warm_up();
                    let deadline = std::time::Instant::now() + Duration::from_secs(60);
                    while !fresh.is_warm() {
                        assert!(std::time::Instant::now() < deadline, "whisper did not warm up in 60 s");
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                } else {
                    fresh.load_weights().expect("whisper loads");
                }
                let voice = Voice {
                    stt: Arc::new(fresh),
                    tts: system.clone(),
                    out: Arc::new(ClockOut::new()),
                };
                let m = conversation(Pipeline::Overlapped, &server, &voice, &clips[1..3]).await;
                first.push((m[0].transcript, m[0].first_audio));
                second.push((m[1].transcript, m[1].first_audio));
            }
            let med = |v: &[(f64, f64)], f: fn(&(f64, f64)) -> f64| percentile(&v.iter().map(f).collect::<Vec<_>>(), 0.5);
            let t: fn(&(f64, f64)) -> f64 = |x| x.0;
            let a: fn(&(f64, f64)) -> f64 = |x| x.1;
            println!(
                "{:<24} {:>26} {:>26} {:>7.2}×",
                name,
                format!("p50 {:.0} / {:.0} ms", med(&first, t), med(&first, a)),
                format!("p50 {:.0} / {:.0} ms", med(&second, t), med(&second, a)),
                med(&first, a) / med(&second, a)
            );
        }
    });
}
