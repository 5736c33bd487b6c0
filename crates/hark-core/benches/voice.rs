//! Voice latency: what Hark itself adds between releasing the push-to-talk key and the first
//! reply sample reaching the speaker, with simulated providers at fixed delays; and the CPU
//! the microphone capture takes.
//!
//! Run: `cargo bench -p hark-core --bench voice` (under `scripts/virtual-audio.sh` to use a
//! real output device and measure capture; otherwise a real-time clock output is used).
//! - app-added latency = release → first sample out − (STT + LLM first token + TTS first
//!   byte delays), p50/p95 over 60 turns (goal p95 ≤ 30 ms)
//! - capture CPU while recording (goal ≤ 1 % of a core)

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use hark_core::audio::capture::Capture;
use hark_core::audio::playback::{AudioOut, ClockOut, Speaker};
use hark_core::conversation::{HistorySettings, Prompt};
use hark_core::provider::{ChatModel, Completion, DeltaSink, ProviderError};
use hark_core::session::voice::{respond, Pipeline, Utterance, Voice};
use hark_core::session::ChatSession;
use hark_core::store::Store;
use hark_core::stt::Transcriber;
use hark_core::tts::{AudioChunk, Synthesizer};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

const STT_DELAY: Duration = Duration::from_millis(100);
const LLM_FIRST_TOKEN: Duration = Duration::from_millis(200);
const TTS_FIRST_BYTE: Duration = Duration::from_millis(80);
const TURNS: usize = 60;

struct FixedStt;

#[async_trait]
impl Transcriber for FixedStt {
    fn name(&self) -> &'static str {
        "fixed"
    }
    async fn transcribe(&self, _: &[f32]) -> Result<String, ProviderError> {
        tokio::time::sleep(STT_DELAY).await;
        Ok("Tell me something short.".into())
    }
}

struct FixedLlm;

#[async_trait]
impl ChatModel for FixedLlm {
    fn provider(&self) -> &'static str {
        "fixed"
    }
    fn model(&self) -> &str {
        "fixed"
    }
    async fn stream(&self, _: &Prompt, on_delta: &DeltaSink) -> Result<Completion, ProviderError> {
        tokio::time::sleep(LLM_FIRST_TOKEN).await;
        // The first sentence arrives whole, so no token gaps sit on the critical path.
        let parts = [
            "Here is a short answer. ",
            "It has a second sentence ",
            "that comes later.",
        ];
        for (i, p) in parts.iter().enumerate() {
            if i > 0 {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            let _ = on_delta.send(p.to_string());
        }
        Ok(Completion {
            text: parts.concat(),
            ..Default::default()
        })
    }
}

struct FixedTts;

#[async_trait]
impl Synthesizer for FixedTts {
    fn name(&self) -> &'static str {
        "fixed"
    }
    async fn synthesize(&self, text: &str, out: &mpsc::UnboundedSender<AudioChunk>) -> Result<(), ProviderError> {
        tokio::time::sleep(TTS_FIRST_BYTE).await;
        // 40 ms of audio per character, in 20 ms chunks, as a streaming voice delivers it.
        let total = text.len() * 960;
        for start in (0..total).step_by(480) {
            let n = 480.min(total - start);
            let samples = (0..n).map(|i| ((start + i) as f32 * 0.05).sin() * 0.2).collect();
            let _ = out.send(AudioChunk { samples, rate: 24_000 });
        }
        Ok(())
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn cpu_seconds() -> f64 {
    // utime + stime of this process, in clock ticks (fields 14 and 15 of /proc/self/stat).
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit(')').next().unwrap_or_default();
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks: f64 =
        f.get(11).and_then(|v| v.parse().ok()).unwrap_or(0.0) + f.get(12).and_then(|v| v.parse().ok()).unwrap_or(0.0);
    ticks / 100.0
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let have_audio = std::env::var_os("PULSE_SERVER").is_some();
    if std::env::var_os("HARK_BENCH_CAPTURE_ONLY").is_some() {
        measure_capture();
        return;
    }
    let out: Arc<dyn AudioOut> = match have_audio.then(|| Speaker::open(None)) {
        Some(Ok(s)) => Arc::new(s),
        _ => Arc::new(ClockOut::new()),
    };
    let device = if have_audio {
        "the default output device (rodio)"
    } else {
        "a real-time clock output (no device)"
    };
    println!("Hark voice benchmarks ({TURNS} turns; playback to {device})");
    println!(
        "injected delays: STT {} ms, LLM first token {} ms, TTS first byte {} ms\n",
        STT_DELAY.as_millis(),
        LLM_FIRST_TOKEN.as_millis(),
        TTS_FIRST_BYTE.as_millis()
    );
    let injected = (STT_DELAY + LLM_FIRST_TOKEN + TTS_FIRST_BYTE).as_secs_f64() * 1e3;
    let mut added = rt.block_on(async {
        let store = Arc::new(Store::open_in_memory().expect("sqlite"));
        let mut chat =
            ChatSession::create(store, Box::new(FixedLlm), "Be brief.", HistorySettings::default()).expect("session");
        let voice = Voice {
            stt: Arc::new(FixedStt),
            tts: Arc::new(FixedTts),
            out: out.clone(),
        };
        let (tx, _rx) = mpsc::unbounded_channel();
        let mut added = Vec::with_capacity(TURNS);
        for _ in 0..TURNS {
            let released_at = Instant::now();
            let transcript = voice.stt.transcribe(&[]).await.expect("stt");
            let u = Utterance {
                transcript,
                released_at,
                transcript_at: Instant::now(),
                pipeline: Pipeline::default(),
            };
            // Cut each reply once its first audio is out, to keep the run short.
            let cut = CancellationToken::new();
            let c = cut.clone();
            let o = out.clone();
            let watch = tokio::spawn(async move {
                while o.first_sample_at().is_none_or(|t| t < released_at) {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                tokio::time::sleep(Duration::from_millis(30)).await;
                c.cancel();
            });
            respond(&mut chat, &voice, &u, &cut, None, &tx).await.expect("turn");
            watch.abort();
            let first = out.first_sample_at().expect("audio came out");
            added.push((first - released_at).as_secs_f64() * 1e3 - injected);
        }
        added
    });
    added.sort_by(f64::total_cmp);
    let p95 = percentile(&added, 0.95);
    println!(
        "app-added latency, release → first sample out      p50 {:>6.1} ms  p95 {:>6.1} ms  max {:>6.1} ms  ({} goal p95 ≤ 30 ms)",
        percentile(&added, 0.5),
        p95,
        added[added.len() - 1],
        if p95 <= 30.0 { "meets" } else { "MISSES" }
    );

    if !have_audio {
        println!("capture CPU: skipped (no audio devices; run under scripts/virtual-audio.sh)");
        return;
    }
    drop(out);
    measure_capture();
}

fn measure_capture() {
    let capture = Capture::start(None).expect("the default microphone");
    std::thread::sleep(Duration::from_millis(500)); // past the stream start-up
    let (cpu0, t0) = (cpu_seconds(), Instant::now());
    std::thread::sleep(Duration::from_secs(10));
    let share = (cpu_seconds() - cpu0) / t0.elapsed().as_secs_f64() * 100.0;
    let info = capture.info().clone();
    let samples = capture.stop().expect("capture").len();
    println!(
        "capture CPU while recording ({} Hz × {} ch → 16 kHz mono)  {:>5.2} % of a core  ({} goal ≤ 1 %; {} samples kept)",
        info.sample_rate,
        info.channels,
        share,
        if share <= 1.0 { "meets" } else { "MISSES" },
        samples
    );
}
