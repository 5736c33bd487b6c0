//! A microphone that stays open, with a pre-roll (hands-free conversation, issue 23).
//!
//! [`OpenMic`] opens an input once and keeps it running: every chunk goes into a ring of
//! the last [`RING_MS`], to a tap (the voice activity detector reads it), and to the
//! utterance being captured, if one is. [`OpenMic::input`] is an [`AudioInput`] for the
//! voice actor: each opening is an utterance that starts in the ring, before the moment it
//! was opened, so the first syllable, spoken before the detector could know it was speech,
//! is kept (GLaDOS keeps 800 ms; Handy #1283 and #1879 are users losing their first word).
//! Stopping an utterance leaves the microphone open; closing the [`OpenMic`] closes it.
//! With an [`EchoCanceller`], every chunk is cleaned of what the speaker played before it
//! goes anywhere, so the ring, the tap and the utterances all hear the room without Hark.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::echo::EchoCanceller;
use super::input::{AudioInput, InputStream};
use super::resample::STT_RATE;
use super::silence::FRAME;
use super::AudioError;

/// How much audio the ring keeps: the pre-roll plus the time the detector takes to be
/// sure of speech, with room to spare.
pub const RING_MS: u64 = 2_000;
const RING: usize = (RING_MS * STT_RATE as u64 / 1000) as usize;
/// The pre-roll of an opening nobody placed (a key press while the microphone is open).
pub const PREROLL_MS: u64 = 300;

/// What the pump and the openings share. A std mutex: it is held only to copy samples in
/// or out, never across an await.
struct Inner {
    ring: VecDeque<f32>,
    /// The position (samples since the microphone opened) of `ring[0]`.
    ring_start: u64,
    /// The utterance being captured (its number, and where each new chunk also goes).
    consumer: Option<(u64, mpsc::UnboundedSender<Vec<f32>>)>,
    /// The number of the next opening.
    openings: u64,
    /// Where the next opening starts, if placed ([`OpenMic::start_next_at`]).
    next_start: Option<u64>,
    /// Why the microphone stopped, once it has.
    ended: Option<AudioError>,
}

impl Inner {
    fn position(&self) -> u64 {
        self.ring_start + self.ring.len() as u64
    }
}

struct Shared {
    inner: Mutex<Inner>,
    /// The last chunk's RMS level (an f32's bits).
    level: AtomicU32,
    device: String,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A poisoned lock only means a panic elsewhere mid-copy of plain samples.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// An input kept open, with its pump task.
pub struct OpenMic {
    shared: Arc<Shared>,
    stop: CancellationToken,
    pump: Option<JoinHandle<()>>,
}

impl OpenMic {
    /// Opens `input` (`device`: an id or name; `None`: the default) and keeps it open,
    /// cleaning it with `echo` if given. The receiver is the tap: every chunk, in order,
    /// from the first (position 0) on; it closes when the microphone stops (a device that
    /// failed or vanished: see [`OpenMic::ended`]).
    pub fn open(
        input: &dyn AudioInput,
        device: Option<&str>,
        echo: Option<EchoCanceller>,
    ) -> Result<(Self, mpsc::UnboundedReceiver<Vec<f32>>), AudioError> {
        let stream = input.open(device)?;
        let shared = Arc::new(Shared {
            inner: Mutex::new(Inner {
                ring: VecDeque::with_capacity(RING),
                ring_start: 0,
                consumer: None,
                openings: 0,
                next_start: None,
                ended: None,
            }),
            level: AtomicU32::new(0),
            device: stream.device(),
        });
        let (tap, frames) = mpsc::unbounded_channel();
        let stop = CancellationToken::new();
        let pump = tokio::spawn(pump(stream, echo, shared.clone(), tap, stop.clone()));
        Ok((
            Self {
                shared,
                stop,
                pump: Some(pump),
            },
            frames,
        ))
    }

    /// The voice actor's input: each opening captures from the ring on, then live.
    pub fn input(&self) -> Arc<dyn AudioInput> {
        Arc::new(OpenMicInput {
            shared: self.shared.clone(),
        })
    }

    /// The next opening starts at `position` (samples since the microphone opened), or as
    /// far back as the ring reaches.
    pub fn start_next_at(&self, position: u64) {
        self.placer().start_next_at(position);
    }

    /// What places the next opening, for another task.
    pub fn placer(&self) -> Placer {
        Placer {
            shared: self.shared.clone(),
        }
    }

    /// Why the microphone stopped, once it has stopped by itself.
    pub fn ended(&self) -> Option<AudioError> {
        self.shared.lock().ended.clone()
    }

    /// The device's name.
    pub fn device(&self) -> String {
        self.shared.device.clone()
    }

    /// Closes the microphone.
    pub async fn close(mut self) {
        self.stop.cancel();
        if let Some(p) = self.pump.take() {
            let _ = p.await;
        }
    }
}

impl Drop for OpenMic {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

async fn pump(
    mut stream: Box<dyn InputStream>,
    mut echo: Option<EchoCanceller>,
    shared: Arc<Shared>,
    tap: mpsc::UnboundedSender<Vec<f32>>,
    stop: CancellationToken,
) {
    loop {
        let chunk = tokio::select! {
            biased;
            _ = stop.cancelled() => break,
            c = stream.next_chunk() => c,
        };
        let Some(chunk) = chunk else {
            // The device failed or vanished: what it said goes to the openings and the tap's
            // reader. The tap closes as this returns.
            let why = match stream.stop() {
                Err(e) => e,
                Ok(_) => AudioError::input(&shared.device, "the input ended by itself"),
            };
            let mut inner = shared.lock();
            inner.ended = Some(why);
            inner.consumer = None;
            return;
        };
        shared.level.store(stream.level().to_bits(), Ordering::Relaxed);
        let chunk = match echo.as_mut() {
            Some(aec) => aec.process(&chunk),
            None => chunk,
        };
        if chunk.is_empty() {
            continue;
        }
        {
            let mut inner = shared.lock();
            inner.ring.extend(chunk.iter().copied());
            let over = inner.ring.len().saturating_sub(RING);
            inner.ring.drain(..over);
            inner.ring_start += over as u64;
            if let Some((_, c)) = &inner.consumer {
                if c.send(chunk.clone()).is_err() {
                    inner.consumer = None;
                }
            }
        }
        let _ = tap.send(chunk);
    }
    let _ = stream.stop();
    shared.lock().consumer = None;
}

/// Places the next opening of an [`OpenMic`] (see [`OpenMic::start_next_at`]).
#[derive(Clone)]
pub struct Placer {
    shared: Arc<Shared>,
}

impl Placer {
    pub fn start_next_at(&self, position: u64) {
        self.shared.lock().next_start = Some(position);
    }
}

struct OpenMicInput {
    shared: Arc<Shared>,
}

impl AudioInput for OpenMicInput {
    fn open(&self, _device: Option<&str>) -> Result<Box<dyn InputStream>, AudioError> {
        let mut inner = self.shared.lock();
        if let Some(e) = &inner.ended {
            return Err(e.clone());
        }
        let now = inner.position();
        let default = now.saturating_sub(PREROLL_MS * u64::from(STT_RATE) / 1000);
        let from = inner.next_start.take().unwrap_or(default).clamp(inner.ring_start, now);
        let skip = (from - inner.ring_start) as usize;
        let preroll: Vec<f32> = inner.ring.iter().skip(skip).copied().collect();
        let (tx, rx) = mpsc::unbounded_channel();
        // Taking the ring and attaching under one lock: no chunk is lost or repeated between.
        let id = inner.openings;
        inner.openings += 1;
        inner.consumer = Some((id, tx));
        Ok(Box::new(Utterance {
            preroll: preroll.chunks(FRAME).map(<[f32]>::to_vec).collect(),
            rx,
            id,
            shared: self.shared.clone(),
        }))
    }
}

/// One utterance from the open microphone.
struct Utterance {
    /// The ring's audio before the opening, in 20 ms chunks, delivered first.
    preroll: VecDeque<Vec<f32>>,
    rx: mpsc::UnboundedReceiver<Vec<f32>>,
    /// Its opening's number, to tell whether it is still the one attached.
    id: u64,
    shared: Arc<Shared>,
}

#[async_trait]
impl InputStream for Utterance {
    async fn next_chunk(&mut self) -> Option<Vec<f32>> {
        if let Some(c) = self.preroll.pop_front() {
            return Some(c);
        }
        self.rx.recv().await
    }
    fn level(&self) -> f32 {
        f32::from_bits(self.shared.level.load(Ordering::Relaxed))
    }
    fn device(&self) -> String {
        self.shared.device.clone()
    }
    fn stop(mut self: Box<Self>) -> Result<Vec<f32>, AudioError> {
        let ended = {
            let mut inner = self.shared.lock();
            if inner.consumer.as_ref().is_some_and(|(id, _)| *id == self.id) {
                inner.consumer = None;
            }
            inner.ended.clone()
        };
        let mut rest: Vec<f32> = self.preroll.drain(..).flatten().collect();
        while let Ok(c) = self.rx.try_recv() {
            rest.extend(c);
        }
        match ended {
            Some(e) => Err(e),
            None => Ok(rest),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audio::input::{Script, Scripted};

    /// A ramp, so every sample says where it came from.
    fn ramp(n: usize) -> Vec<f32> {
        (0..n).map(|i| i as f32).collect()
    }

    async fn take(stream: &mut Box<dyn InputStream>, n: usize) -> Vec<f32> {
        let mut got = Vec::new();
        while got.len() < n {
            got.extend(stream.next_chunk().await.expect("a chunk"));
        }
        got
    }

    #[tokio::test(start_paused = true)]
    async fn an_opening_starts_in_the_ring_where_it_was_placed_and_goes_on_live_without_a_gap() {
        let scripted = Scripted::new();
        scripted.push(Script::Speak(ramp(16_000)));
        let (mic, mut tap) = OpenMic::open(&scripted, None, None).unwrap();
        let mut seen = 0;
        while seen < 8_000 {
            seen += tap.recv().await.unwrap().len();
        }
        mic.start_next_at(5_000);
        let mut utterance = mic.input().open(None).unwrap();
        let got = take(&mut utterance, 6_000).await;
        // From the placed start on, every sample once (a ramp: sample i is i).
        let wrong = got.iter().enumerate().find(|(i, v)| **v != (5_000 + i) as f32);
        assert_eq!(wrong, None, "from sample 5000 on, each once");
        // Stopped, the utterance lets go; the microphone goes on for the tap.
        utterance.stop().unwrap();
        while seen < 16_000 {
            seen += tap.recv().await.unwrap().len();
        }
        mic.close().await;
    }

    #[tokio::test(start_paused = true)]
    async fn an_opening_nobody_placed_keeps_the_pre_roll_and_a_place_before_the_ring_is_its_start() {
        let scripted = Scripted::new();
        scripted.push(Script::Speak(ramp(48_000)));
        let (mic, mut tap) = OpenMic::open(&scripted, None, None).unwrap();
        let mut seen = 0;
        while seen < 40_000 {
            seen += tap.recv().await.unwrap().len();
        }
        let preroll = (PREROLL_MS * 16) as usize;
        let mut u = mic.input().open(None).unwrap();
        let first = u.next_chunk().await.unwrap();
        assert_eq!(first[0] as usize, seen - preroll);
        u.stop().unwrap();
        mic.start_next_at(0); // long gone from the ring
        let mut u = mic.input().open(None).unwrap();
        let first = u.next_chunk().await.unwrap();
        assert!(first[0] as usize >= seen - RING, "{}", first[0]);
        u.stop().unwrap();
        mic.close().await;
    }

    #[tokio::test(start_paused = true)]
    async fn a_microphone_that_fails_says_why_to_the_utterance_and_closes_the_tap() {
        let scripted = Scripted::new();
        let vanished = AudioError::input("scripted input", "the device was unplugged");
        scripted.push(Script::SpeakThenFail(ramp(3_200), vanished.clone()));
        let (mic, mut tap) = OpenMic::open(&scripted, None, None).unwrap();
        let mut u = mic.input().open(None).unwrap();
        while u.next_chunk().await.is_some() {}
        assert_eq!(u.stop().unwrap_err(), vanished);
        while tap.recv().await.is_some() {}
        assert_eq!(mic.ended(), Some(vanished.clone()));
        assert_eq!(mic.input().open(None).err(), Some(vanished));
    }
}
