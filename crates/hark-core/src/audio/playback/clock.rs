//! [`ClockOut`]: an output without a device, for tests, benchmarks and headless runs. A
//! child module of `playback`, so it shares the tracker's bookkeeping without widening it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{AudioOut, Heard, Segment, Tracker};

/// Audio waiting on the clock: its sentence, frames left, sample rate.
type Queued = (Arc<Segment>, usize, u32);

/// Plays in real time into nothing: a clock consumes queued audio at its sample rate.
/// For headless runs and for measuring the turn loop without a sound card; barge-in,
/// heard text and first-sample timing behave as with a real device.
pub struct ClockOut {
    tracker: Arc<Tracker>,
    queue: Arc<Mutex<std::collections::VecDeque<Queued>>>,
    /// Stops the clock thread when the output is dropped.
    alive: Arc<AtomicBool>,
    /// Milliseconds said aside so far, and how many hushes (for tests: asides are not
    /// played on the clock).
    asides: Mutex<(u64, usize)>,
}

impl Default for ClockOut {
    fn default() -> Self {
        Self::new()
    }
}

impl ClockOut {
    /// Tick of the clock: like a device buffer of 5 ms.
    const TICK: Duration = Duration::from_millis(5);

    pub fn new() -> Self {
        let out = Self {
            tracker: Arc::new(Tracker::default()),
            queue: Arc::new(Mutex::new(std::collections::VecDeque::new())),
            alive: Arc::new(AtomicBool::new(true)),
            asides: Mutex::default(),
        };
        let (tracker, queue, alive) = (out.tracker.clone(), out.queue.clone(), out.alive.clone());
        std::thread::spawn(move || {
            let mut last = Instant::now();
            while alive.load(Ordering::Relaxed) {
                std::thread::sleep(Self::TICK);
                let now = Instant::now();
                let elapsed = now - last;
                last = now;
                let mut q = queue.lock().unwrap_or_else(|p| p.into_inner());
                // Paused (a voice over the reply is being checked): the clock plays nothing.
                let mut budget = if tracker.held.load(Ordering::SeqCst) {
                    0.0
                } else {
                    elapsed.as_secs_f64()
                };
                while budget > 0.0 {
                    let Some((seg, left, rate)) = q.front_mut() else { break };
                    if tracker.stopped.load(Ordering::SeqCst) {
                        q.clear();
                        break;
                    }
                    let frames = ((budget * *rate as f64) as usize).min(*left);
                    if frames == 0 {
                        break;
                    }
                    if seg.frames_played.fetch_add(frames as u64, Ordering::Relaxed) == 0 {
                        let mut first = tracker.first_sample_at.lock().unwrap_or_else(|p| p.into_inner());
                        first.get_or_insert(now - elapsed);
                    }
                    *left -= frames;
                    budget -= frames as f64 / *rate as f64;
                    if *left == 0 {
                        q.pop_front();
                    }
                }
            }
        });
        out
    }

    /// Milliseconds of audio said aside so far.
    pub fn aside_ms(&self) -> u64 {
        self.asides.lock().unwrap_or_else(|p| p.into_inner()).0
    }

    /// How many times what was said aside was hushed.
    pub fn hushes(&self) -> usize {
        self.asides.lock().unwrap_or_else(|p| p.into_inner()).1
    }
}

impl Drop for ClockOut {
    fn drop(&mut self) {
        self.alive.store(false, Ordering::Relaxed);
    }
}

impl AudioOut for ClockOut {
    fn tracker(&self) -> &Tracker {
        &self.tracker
    }

    fn start_reply(&self) {
        self.queue.lock().unwrap_or_else(|p| p.into_inner()).clear();
        self.tracker.reset();
    }
    fn push(&self, sentence: usize, samples: Vec<f32>, rate: u32) {
        if self.tracker.stopped.load(Ordering::SeqCst) || samples.is_empty() || rate == 0 {
            return;
        }
        if let Some(seg) = self.tracker.add(sentence, samples.len(), rate) {
            self.queue
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push_back((seg, samples.len(), rate));
        }
    }
    fn flush(&self) -> Heard {
        self.tracker.stopped.store(true, Ordering::SeqCst);
        let mut q = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        q.clear();
        self.tracker.heard()
    }
    fn is_idle(&self) -> bool {
        self.queue.lock().unwrap_or_else(|p| p.into_inner()).is_empty()
    }
    fn aside(&self, samples: Vec<f32>, rate: u32) {
        if rate > 0 {
            self.asides.lock().unwrap_or_else(|p| p.into_inner()).0 += samples.len() as u64 * 1000 / u64::from(rate);
        }
    }
    fn hush(&self) {
        self.asides.lock().unwrap_or_else(|p| p.into_inner()).1 += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_plays_in_real_time_and_stops_on_flush() {
        let out = ClockOut::new();
        out.start_reply();
        let s = out.begin_sentence("one two three four five six seven eight nine ten");
        out.push(s, vec![0.0; 10_000], 10_000); // one second
        out.end_sentence(s);
        std::thread::sleep(Duration::from_millis(300));
        let h = out.flush();
        assert!((200..=450).contains(&h.ms), "{h:?}");
        assert!(h.text.starts_with("one two") && !h.text.contains("ten"), "{h:?}");
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(out.heard().ms, h.ms, "nothing plays after a flush");
        assert!(out.is_idle());
    }
}
