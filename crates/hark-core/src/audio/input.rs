//! Where utterances come from: [`AudioInput`] opens an [`InputStream`] of 16 kHz mono
//! chunks. [`Microphone`] is the real one (cpal, see `capture`); [`Recordings`] plays
//! recorded utterances as live speech, at a capture device's pace (`hark talk --wav FILE
//! --live`, the latency benchmark); [`Scripted`] plays prepared utterances and failures, so
//! the voice actor can be tested without a sound card and with `tokio::time::pause()`.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::capture::Capture;
use super::resample::{rms, STT_RATE};
use super::silence::FRAME;
use super::AudioError;

/// How much audio a played or scripted input delivers at a time: one 20 ms frame, as a
/// capture device's callback does.
const CHUNK: usize = FRAME;

/// A source of utterances: opened at each push-to-talk press.
pub trait AudioInput: Send + Sync {
    /// Opens the input (`device`: an id or name; `None`: the default) and starts delivering.
    fn open(&self, device: Option<&str>) -> Result<Box<dyn InputStream>, AudioError>;
}

/// An open input: chunks of 16 kHz mono until it is stopped or its device fails.
#[async_trait]
pub trait InputStream: Send {
    /// The next chunk; `None` once the input has ended by itself (its device failed or
    /// vanished: [`InputStream::stop`] then says why).
    async fn next_chunk(&mut self) -> Option<Vec<f32>>;
    /// The current input level (RMS of the last ~20 ms), 0.0–1.0.
    fn level(&self) -> f32;
    /// The device's name, for the UI.
    fn device(&self) -> String;
    /// Stops; returns the samples not yet taken, or the device error that ended the input.
    fn stop(self: Box<Self>) -> Result<Vec<f32>, AudioError>;
}

/// The microphone, through cpal.
#[derive(Debug, Default, Clone, Copy)]
pub struct Microphone;

impl AudioInput for Microphone {
    fn open(&self, device: Option<&str>) -> Result<Box<dyn InputStream>, AudioError> {
        Ok(Box::new(Capture::start(device)?))
    }
}

#[async_trait]
impl InputStream for Capture {
    async fn next_chunk(&mut self) -> Option<Vec<f32>> {
        Capture::next_chunk(self).await
    }
    fn level(&self) -> f32 {
        Capture::level(self)
    }
    fn device(&self) -> String {
        self.info().device.clone()
    }
    fn stop(self: Box<Self>) -> Result<Vec<f32>, AudioError> {
        Capture::stop(*self)
    }
}

/// What a scripted input does at its next opening.
#[derive(Debug, Clone)]
pub enum Script {
    /// Delivers these 16 kHz samples in 20 ms chunks, then waits to be stopped.
    Speak(Vec<f32>),
    /// Delivers these samples, then fails as a device that vanished.
    SpeakThenFail(Vec<f32>, AudioError),
    /// Refuses to open.
    Fail(AudioError),
}

/// Prepared utterances, one per opening, for tests and benchmarks. With nothing scripted an
/// opening delivers silence.
#[derive(Debug, Clone, Default)]
pub struct Scripted {
    queue: Arc<Mutex<VecDeque<Script>>>,
}

impl Scripted {
    pub fn new() -> Self {
        Self::default()
    }

    /// Queues what the next opening does.
    pub fn push(&self, script: Script) {
        self.queue.lock().unwrap_or_else(|p| p.into_inner()).push_back(script);
    }
}

impl AudioInput for Scripted {
    fn open(&self, _device: Option<&str>) -> Result<Box<dyn InputStream>, AudioError> {
        let next = self.queue.lock().unwrap_or_else(|p| p.into_inner()).pop_front();
        let (samples, failure) = match next {
            Some(Script::Fail(e)) => return Err(e),
            Some(Script::Speak(s)) => (s, None),
            Some(Script::SpeakThenFail(s, e)) => (s, Some(e)),
            None => (Vec::new(), None),
        };
        Ok(Box::new(ScriptedStream {
            chunks: samples.chunks(CHUNK).map(<[f32]>::to_vec).collect(),
            failure,
            level: 0.0,
        }))
    }
}

struct ScriptedStream {
    chunks: VecDeque<Vec<f32>>,
    failure: Option<AudioError>,
    level: f32,
}

#[async_trait]
impl InputStream for ScriptedStream {
    async fn next_chunk(&mut self) -> Option<Vec<f32>> {
        match self.chunks.pop_front() {
            Some(c) => {
                // Real time: one 20 ms chunk per 20 ms (instant under a paused clock).
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                self.level = rms(&c);
                Some(c)
            }
            None if self.failure.is_some() => None,
            // Held: a real microphone keeps delivering until the key is released.
            None => std::future::pending().await,
        }
    }
    fn level(&self) -> f32 {
        self.level
    }
    fn device(&self) -> String {
        "scripted input".into()
    }
    fn stop(self: Box<Self>) -> Result<Vec<f32>, AudioError> {
        match self.failure {
            Some(e) => Err(e),
            None => Ok(self.chunks.into_iter().flatten().collect()),
        }
    }
}

/// Recorded utterances played as live speech, one per opening (a push-to-talk press), the
/// way a capture device delivers: 20 ms chunks, chunk `k` handed over once its last sample
/// has been "spoken", `20 × (k + 1)` ms after the opening. The deadlines are absolute, so
/// the pace never drifts and a reader that fell behind gets what is due at once, as from
/// a microphone's ring. After the recording's last sample comes silence (a quiet room)
/// until the key is released. An opening with nothing queued delivers silence.
///
/// The voice actor cannot tell it from the microphone: interim words, the overlapped
/// pipeline and the latency figures are those of a live turn (see
/// `session::voice::play_live`, which holds the key for a recording).
#[derive(Debug, Clone, Default)]
pub struct Recordings {
    queue: Arc<Mutex<VecDeque<Recording>>>,
}

/// A recording waiting for its opening.
#[derive(Debug)]
struct Recording {
    /// Shown as the input device's name ("listening on …").
    name: String,
    samples: Vec<f32>,
    /// Told the instant its first sample is "spoken" (the opening).
    opened: oneshot::Sender<Instant>,
}

impl Recordings {
    pub fn new() -> Self {
        Self::default()
    }

    /// Queues 16 kHz mono `samples` for the next opening. The receiver gets the instant
    /// the recording starts playing (its first sample), so a caller can release the key
    /// a set time after its last one, wherever the reader of the chunks is. It waits as
    /// long as no opening comes.
    pub fn push(&self, name: impl Into<String>, samples: Vec<f32>) -> oneshot::Receiver<Instant> {
        let (opened, rx) = oneshot::channel();
        self.queue
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push_back(Recording {
                name: name.into(),
                samples,
                opened,
            });
        rx
    }
}

impl AudioInput for Recordings {
    fn open(&self, _device: Option<&str>) -> Result<Box<dyn InputStream>, AudioError> {
        let next = self.queue.lock().unwrap_or_else(|p| p.into_inner()).pop_front();
        let start = Instant::now();
        let (name, samples) = match next {
            Some(r) => {
                // The caller may have stopped waiting; the recording plays all the same.
                let _ = r.opened.send(start);
                (r.name, r.samples)
            }
            None => ("silence".to_string(), Vec::new()),
        };
        Ok(Box::new(RecordingStream {
            name,
            samples,
            start,
            sent: 0,
            level: 0.0,
        }))
    }
}

/// One recording being played.
struct RecordingStream {
    name: String,
    samples: Vec<f32>,
    /// The opening: the instant the first sample is "spoken".
    start: Instant,
    /// Chunks handed over so far.
    sent: usize,
    /// RMS of the last chunk handed over.
    level: f32,
}

impl RecordingStream {
    /// When chunk `k` is due: once its last sample has been spoken.
    fn due(&self, k: usize) -> Instant {
        self.start + Duration::from_micros(((k + 1) * CHUNK) as u64 * 1_000_000 / u64::from(STT_RATE))
    }

    /// Chunk `k`: the recording's samples, padded with silence past its end.
    fn chunk(&self, k: usize) -> Vec<f32> {
        let from = (k * CHUNK).min(self.samples.len());
        let to = ((k + 1) * CHUNK).min(self.samples.len());
        let mut c = self.samples[from..to].to_vec();
        c.resize(CHUNK, 0.0);
        c
    }
}

#[async_trait]
impl InputStream for RecordingStream {
    /// Cancel-safe (the voice actor polls it in a `select!`): nothing changes before the
    /// deadline has passed, and nothing is awaited after.
    async fn next_chunk(&mut self) -> Option<Vec<f32>> {
        tokio::time::sleep_until(self.due(self.sent)).await;
        let c = self.chunk(self.sent);
        self.sent += 1;
        self.level = rms(&c);
        Some(c)
    }
    fn level(&self) -> f32 {
        self.level
    }
    fn device(&self) -> String {
        self.name.clone()
    }
    /// What a capture device's ring holds at the release: the chunks already due but not
    /// yet taken.
    fn stop(self: Box<Self>) -> Result<Vec<f32>, AudioError> {
        let now = Instant::now();
        let mut rest = Vec::new();
        let mut k = self.sent;
        while self.due(k) <= now {
            rest.extend(self.chunk(k));
            k += 1;
        }
        Ok(rest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A recording plays at a capture device's pace from the opening, then silence; the
    /// caller learns when it started; the release takes what is due and not yet read.
    #[tokio::test(start_paused = true)]
    async fn a_recording_plays_in_20_ms_chunks_from_the_opening_then_silence() {
        let recordings = Recordings::new();
        let said: Vec<f32> = (0..CHUNK * 2 + 100).map(|i| 0.1 + i as f32 * 1e-6).collect();
        let opened = recordings.push("question.wav", said.clone());
        let before = Instant::now();
        let mut input = recordings.open(None).unwrap();
        let start = opened.await.unwrap();
        assert_eq!(start, before, "the first sample is spoken at the opening");
        assert_eq!(input.device(), "question.wav");

        let mut heard = Vec::new();
        for k in 0..5u64 {
            heard.extend(input.next_chunk().await.unwrap());
            assert_eq!(Instant::now(), start + Duration::from_millis(20 * (k + 1)), "chunk {k}");
        }
        assert_eq!(heard.len(), CHUNK * 5);
        assert_eq!(heard[..said.len()], said[..], "the recording, whole and in order");
        assert!(heard[said.len()..].iter().all(|&s| s == 0.0), "then silence");
        assert_eq!(input.level(), 0.0);

        // A reader that fell 50 ms behind gets the two chunks due at the release.
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(input.stop().unwrap().len(), CHUNK * 2);

        // Nothing queued: silence, named as such.
        let mut idle = recordings.open(None).unwrap();
        assert_eq!(idle.device(), "silence");
        assert_eq!(idle.next_chunk().await.unwrap(), vec![0.0; CHUNK]);
    }
}
