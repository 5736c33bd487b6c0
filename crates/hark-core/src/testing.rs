//! In-process stand-ins for the model, the transcriber and the voice, for tests and
//! benchmarks that exercise Hark's own scheduling (the voice actor, barge-in, panics,
//! stalls) without sockets, so they can run under `tokio::time::pause()`.
//!
//! The wire formats are tested elsewhere, against loopback servers (`hark-e2e`).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::mpsc;

use crate::conversation::Prompt;
use crate::provider::{ChatModel, Completion, DeltaSink, ErrorKind, ProviderError, ReportedUsage};
use crate::stt::Transcriber;
use crate::tts::{AudioChunk, Synthesizer};

/// What the scripted model does with its next request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// Streams this text word by word, `delay` before each word.
    Text { text: String, delay: Duration },
    /// Panics (a bug in a provider, for the tests that prove a turn survives one).
    Panic(String),
    /// Fails with this error before streaming anything.
    Fail(ErrorKind, String),
    /// Calls one tool (id `call-1`) and says nothing.
    Call { name: String, arguments: String },
}

impl Reply {
    /// Streams `text` at once.
    pub fn text(text: &str) -> Self {
        Reply::Text {
            text: text.into(),
            delay: Duration::ZERO,
        }
    }
}

/// A chat model that replies from a script (and "Okay." when the script is empty), and
/// records every prompt it was sent.
#[derive(Clone, Default)]
pub struct ScriptedModel {
    script: Arc<Mutex<VecDeque<Reply>>>,
    prompts: Arc<Mutex<Vec<Prompt>>>,
    abandoned: Arc<AtomicUsize>,
}

/// Counts a request whose caller dropped it before its reply was done.
struct Unfinished(Option<Arc<AtomicUsize>>);

impl Drop for Unfinished {
    fn drop(&mut self) {
        if let Some(n) = self.0.take() {
            n.fetch_add(1, Ordering::SeqCst);
        }
    }
}

impl ScriptedModel {
    pub fn new() -> Self {
        Self::default()
    }

    /// Queues the reply to the next request.
    pub fn push(&self, r: Reply) {
        self.script.lock().unwrap_or_else(|p| p.into_inner()).push_back(r);
    }

    /// Every prompt sent so far.
    pub fn prompts(&self) -> Vec<Prompt> {
        self.prompts.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// How many requests were dropped by their callers before the reply was done.
    pub fn abandoned(&self) -> usize {
        self.abandoned.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl ChatModel for ScriptedModel {
    fn provider(&self) -> &'static str {
        "scripted"
    }

    fn model(&self) -> &str {
        "scripted"
    }

    async fn stream(&self, prompt: &Prompt, on_delta: &DeltaSink) -> Result<Completion, ProviderError> {
        self.prompts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(prompt.clone());
        if prompt.open {
            // As `hark-llm` does: evaluated, nothing generated, no scripted reply used.
            return Ok(Completion {
                stop_reason: Some("length".into()),
                ..Default::default()
            });
        }
        let next = self.script.lock().unwrap_or_else(|p| p.into_inner()).pop_front();
        let (text, delay) = match next.unwrap_or_else(|| Reply::text("Okay.")) {
            Reply::Text { text, delay } => (text, delay),
            Reply::Panic(what) => panic!("{what}"),
            Reply::Fail(kind, message) => return Err(ProviderError::new("scripted", kind, message)),
            Reply::Call { name, arguments } => {
                return Ok(Completion {
                    tool_calls: vec![crate::conversation::ToolCall {
                        id: "call-1".into(),
                        name,
                        arguments,
                        client_side: true,
                    }],
                    stop_reason: Some("tool_calls".into()),
                    ..Default::default()
                })
            }
        };
        let mut unfinished = Unfinished(Some(self.abandoned.clone()));
        let mut sent = String::new();
        for (i, word) in text.split(' ').enumerate() {
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            let piece = if i == 0 { word.to_string() } else { format!(" {word}") };
            sent.push_str(&piece);
            let _ = on_delta.send(piece);
        }
        unfinished.0 = None;
        Ok(Completion {
            text: sent,
            usage: ReportedUsage {
                input_tokens: Some(prompt.estimated_tokens),
                output_tokens: Some(text.split_whitespace().count() as u32),
                cached_input_tokens: None,
            },
            stop_reason: Some("stop".into()),
            ..Default::default()
        })
    }
}

/// A transcriber that hears the next transcript of its list in any audio (the last one
/// again once the list is used up).
#[derive(Clone)]
pub struct ScriptedStt {
    transcripts: Arc<Mutex<VecDeque<String>>>,
}

impl ScriptedStt {
    pub fn new(transcripts: &[&str]) -> Self {
        Self {
            transcripts: Arc::new(Mutex::new(transcripts.iter().map(|t| t.to_string()).collect())),
        }
    }
}

#[async_trait]
impl Transcriber for ScriptedStt {
    fn name(&self) -> &'static str {
        "scripted"
    }

    async fn transcribe(&self, _audio: &[f32]) -> Result<String, ProviderError> {
        let mut t = self.transcripts.lock().unwrap_or_else(|p| p.into_inner());
        let next = if t.len() > 1 { t.pop_front() } else { t.front().cloned() };
        Ok(next.unwrap_or_default())
    }
}

/// A voice that "speaks" a quiet tone of `ms_per_char` per character, at 16 kHz.
#[derive(Debug, Clone, Copy)]
pub struct ToneTts {
    pub ms_per_char: u32,
}

#[async_trait]
impl Synthesizer for ToneTts {
    fn name(&self) -> &'static str {
        "tone"
    }

    async fn synthesize(&self, text: &str, out: &mpsc::UnboundedSender<AudioChunk>) -> Result<(), ProviderError> {
        let n = text.chars().count() * self.ms_per_char as usize * 16;
        let _ = out.send(AudioChunk {
            samples: vec![0.01; n.max(16)],
            rate: 16_000,
        });
        Ok(())
    }
}

/// Speech for a scripted microphone: `ms` of a tone loud enough to make a turn.
pub fn speech_samples(ms: u32) -> Vec<f32> {
    (0..ms as usize * 16).map(|i| 0.2 * ((i as f32) * 0.05).sin()).collect()
}

/// A small deterministic noise source (xorshift), uniform in -1..1.
pub struct Noise(u32);

impl Noise {
    pub fn new(seed: u32) -> Self {
        Self(seed.max(1))
    }

    #[allow(clippy::should_implement_trait)] // an endless source, not an iterator
    pub fn next(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 17;
        self.0 ^= self.0 << 5;
        (self.0 as f32 / u32::MAX as f32) * 2.0 - 1.0
    }
}

/// Five minutes (16 kHz) of what must start no hands-free turn (issue 23): silence, room tone, white noise at three
/// levels, a fan's low rumble (brown noise), music (chords of harmonic tones with a beat,
/// and a melody), and keyboard clicks.
pub fn no_speech_set() -> Vec<(&'static str, Vec<f32>)> {
    const RATE: usize = 16_000;
    let secs = |s: usize| s * RATE;
    let mut n = Noise::new(0x2545_f491);
    let mut parts = Vec::new();
    parts.push(("silence", vec![0.0; secs(40)]));
    parts.push(("room tone", (0..secs(30)).map(|_| n.next() * 0.002).collect()));
    for (name, level) in [("quiet hiss", 0.01), ("hiss", 0.05), ("loud hiss", 0.2)] {
        parts.push((name, (0..secs(30)).map(|_| n.next() * level).collect()));
    }
    let mut brown = 0.0f32;
    parts.push((
        "fan rumble",
        (0..secs(30))
            .map(|_| {
                brown = (brown + n.next() * 0.02).clamp(-0.3, 0.3) * 0.999;
                brown
            })
            .collect(),
    ));
    // Music: four bars of chords, each chord's notes with three harmonics, on a beat.
    let chords: [[f32; 3]; 4] = [
        [261.6, 329.6, 392.0],
        [220.0, 261.6, 329.6],
        [174.6, 220.0, 261.6],
        [196.0, 246.9, 293.7],
    ];
    parts.push((
        "chords",
        (0..secs(45))
            .map(|i| {
                let t = i as f32 / RATE as f32;
                let chord = chords[(t / 2.0) as usize % 4];
                let beat = 0.5 + 0.5 * (-(t % 0.5) * 8.0).exp();
                let s: f32 = chord
                    .iter()
                    .flat_map(|f| {
                        (1..=3).map(move |h| (2.0 * std::f32::consts::PI * f * h as f32 * t).sin() / h as f32)
                    })
                    .sum();
                s * 0.05 * beat
            })
            .collect(),
    ));
    let melody = [523.3, 587.3, 659.3, 698.5, 784.0, 698.5, 659.3, 587.3];
    parts.push((
        "melody",
        (0..secs(45))
            .map(|i| {
                let t = i as f32 / RATE as f32;
                let f = melody[(t / 0.25) as usize % melody.len()];
                let env = (-(t % 0.25) * 6.0).exp();
                ((2.0 * std::f32::consts::PI * f * t).sin() + 0.3 * (4.0 * std::f32::consts::PI * f * t).sin())
                    * 0.2
                    * env
            })
            .collect(),
    ));
    // Typing: 5 ms clicks, about eight a second, at uneven intervals.
    let mut clicks = vec![0.0f32; secs(30)];
    let mut at = 0usize;
    while at + 80 < clicks.len() {
        for (k, s) in clicks[at..at + 80].iter_mut().enumerate() {
            *s = n.next() * 0.6 * (-(k as f32) / 15.0).exp();
        }
        at += 1_000 + ((n.next() + 1.0) * 1_500.0) as usize;
    }
    parts.push(("typing", clicks));
    parts
}
