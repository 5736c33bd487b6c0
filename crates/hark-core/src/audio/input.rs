//! Where utterances come from: [`AudioInput`] opens an [`InputStream`] of 16 kHz mono
//! chunks. [`Microphone`] is the real one (cpal, see `capture`); [`Scripted`] plays prepared
//! utterances, so the voice actor can be tested and benchmarked without a sound card and
//! with `tokio::time::pause()`.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use super::capture::Capture;
use super::resample::rms;
use super::AudioError;

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
            chunks: samples.chunks(320).map(<[f32]>::to_vec).collect(),
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
