//! Echo cancellation with Hark's own playback as the reference (issue 23): what lets Hark
//! listen while it speaks, with the speakers next to the microphone, and be interrupted
//! by voice.
//!
//! Hark plays its voice through its own output, so it holds the exact signal to cancel.
//! [`EchoReference`] collects it: every reply and aside source the speaker plays is
//! wrapped so that each sample is copied, at 16 kHz, the moment the device's mixer pulls
//! it ([`RefTap`]). [`EchoCanceller`] is WebRTC's AEC3 (the pure-Rust port `sonora`,
//! which screenpipe, a Tauri app, settled on after a home-made adaptive filter gave
//! ~0 dB): for each 10 ms of microphone audio it first hands AEC3 the reference played
//! meanwhile (silence when nothing is), then the capture, and keeps what AEC3 leaves of
//! the user's voice. AEC3 finds the delay between the two itself.
//!
//! While the speaker has played nothing for [`REST_AFTER`] there is no echo to cancel,
//! and AEC3 rests: the microphone only goes through the same high-pass filter, so the
//! detector hears the room as it does through AEC3 (whose gain is 1 without an echo).
//! Resting saves about 1 % of a core, a fifth of what listening hands-free cost between
//! turns (`scripts/bench-hands-free.sh`); AEC3 picks up again, with what it had learnt of
//! the room, at the reply's first frame.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use sonora::config::{EchoCanceller as AecConfig, HighPassFilter};
use sonora::{AudioProcessing, Config, StreamConfig};

use super::resample::STT_RATE;

/// Samples in one of AEC3's frames (10 ms at 16 kHz).
pub const AEC_FRAME: usize = STT_RATE as usize / 100;
/// The reference kept at most: more than this waiting means the microphone's side fell
/// behind, and the oldest is dropped (AEC3 looks for the echo within about half a second).
const REFERENCE_MAX: usize = STT_RATE as usize * 3 / 10;
/// A reference that has had nothing new for this long is a speaker playing silence.
const IDLE_AFTER: Duration = Duration::from_millis(60);
/// Silence from the speaker this long, in 10 ms frames, lets AEC3 rest: longer than any
/// echo it models (its filter spans a few hundred milliseconds) and a room's reverberation.
pub const REST_AFTER: usize = 100;

#[derive(Debug, Default)]
struct Played {
    /// 16 kHz reference not yet handed to the canceller.
    samples: VecDeque<f32>,
    /// When a tap last added to it.
    last: Option<Instant>,
}

/// What the speaker has played, at 16 kHz, for the canceller. Shared between the audio
/// thread (the taps) and the microphone's side; a std mutex, locked once per 10 ms block
/// on either side and never across an await.
#[derive(Debug, Default)]
pub struct EchoReference {
    played: Mutex<Played>,
}

impl EchoReference {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    fn lock(&self) -> MutexGuard<'_, Played> {
        // Only plain samples behind it; a panic elsewhere cannot leave it half-updated.
        self.played.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A tap for one source played at `rate`.
    pub fn tap(self: &Arc<Self>, rate: u32) -> RefTap {
        RefTap {
            reference: self.clone(),
            step: f64::from(rate.max(1)) / f64::from(STT_RATE),
            // The first output falls on the first source sample.
            t: 1.0,
            prev: 0.0,
            block: Vec::with_capacity(AEC_FRAME),
        }
    }

    fn add(&self, block: &[f32]) {
        let mut p = self.lock();
        p.samples.extend(block.iter().copied());
        let over = p.samples.len().saturating_sub(REFERENCE_MAX);
        p.samples.drain(..over);
        p.last = Some(Instant::now());
    }

    /// The reference's next 10 ms frames for the canceller: every whole frame waiting
    /// (playback is pulled in bursts of a device buffer), or one frame of silence when the
    /// speaker has been idle, so that AEC3's render stream runs on as the device's does.
    /// Nothing when playback is under way but less than a frame has come since.
    /// Returns whether the speaker is idle (the frame handed over, if any, is silence
    /// that nothing played).
    fn frames(&self, out: &mut Vec<f32>) -> bool {
        let mut p = self.lock();
        let whole = p.samples.len() / AEC_FRAME * AEC_FRAME;
        if whole > 0 {
            out.extend(p.samples.drain(..whole));
            false
        } else if p.last.is_none_or(|t| t.elapsed() >= IDLE_AFTER) {
            // What is left of the last burst, then silence.
            let idle = p.samples.is_empty();
            out.extend(p.samples.drain(..));
            out.resize(AEC_FRAME, 0.0);
            p.last = None;
            idle
        } else {
            false
        }
    }
}

/// Copies one played source into the reference, resampled to 16 kHz on the fly (linear
/// interpolation: AEC3 models the echo path, and a reference without its top octave above
/// 8 kHz loses nothing it can use at a 16 kHz capture).
pub struct RefTap {
    reference: Arc<EchoReference>,
    /// Source samples per 16 kHz sample.
    step: f64,
    /// Where the next output sample falls, in source samples after `prev` (1.0: on the
    /// sample that comes next).
    t: f64,
    prev: f32,
    block: Vec<f32>,
}

impl RefTap {
    /// The source played its next sample.
    pub fn sample(&mut self, s: f32) {
        while self.t <= 1.0 {
            let t = self.t as f32;
            self.block.push(self.prev + (s - self.prev) * t);
            self.t += self.step;
        }
        self.t -= 1.0;
        self.prev = s;
        if self.block.len() >= AEC_FRAME {
            self.reference.add(&self.block);
            self.block.clear();
        }
    }
}

impl Drop for RefTap {
    fn drop(&mut self) {
        if !self.block.is_empty() {
            self.reference.add(&self.block);
        }
    }
}

/// AEC3 on the microphone, with the speaker's reference.
pub struct EchoCanceller {
    apm: AudioProcessing,
    /// The same high-pass filter alone, for the microphone while AEC3 rests.
    filter: AudioProcessing,
    reference: Arc<EchoReference>,
    /// Capture samples waiting for a whole frame.
    pending: Vec<f32>,
    render: Vec<f32>,
    /// 10 ms frames in a row with the speaker idle: AEC3 rests from [`REST_AFTER`] on.
    idle_frames: usize,
}

impl EchoCanceller {
    pub fn new(reference: Arc<EchoReference>) -> Self {
        let config = Config {
            echo_canceller: Some(AecConfig::default()),
            high_pass_filter: Some(HighPassFilter::default()),
            // No noise suppression or gain control: the voice activity model and the
            // recogniser were measured on the microphone's own levels.
            ..Config::default()
        };
        let stream = StreamConfig::new(STT_RATE, 1);
        let apm = AudioProcessing::builder()
            .config(config)
            .capture_config(stream)
            .render_config(stream)
            .build();
        let filter = AudioProcessing::builder()
            .config(Config {
                high_pass_filter: Some(HighPassFilter::default()),
                ..Config::default()
            })
            .capture_config(stream)
            .build();
        Self {
            apm,
            filter,
            reference,
            pending: Vec::with_capacity(AEC_FRAME),
            render: Vec::new(),
            idle_frames: 0,
        }
    }

    /// Whether AEC3 is resting: the speaker has been silent for [`REST_AFTER`] frames.
    pub fn resting(&self) -> bool {
        self.idle_frames >= REST_AFTER
    }

    /// Cleans a chunk of microphone audio (16 kHz, any length): its whole 10 ms frames,
    /// with what was left of the last chunk before them; the rest waits for the next.
    pub fn process(&mut self, chunk: &[f32]) -> Vec<f32> {
        let mut out = Vec::with_capacity(chunk.len() + AEC_FRAME);
        let mut rest = chunk;
        while !rest.is_empty() {
            let take = (AEC_FRAME - self.pending.len()).min(rest.len());
            self.pending.extend_from_slice(&rest[..take]);
            rest = &rest[take..];
            if self.pending.len() < AEC_FRAME {
                break;
            }
            self.render.clear();
            if self.reference.frames(&mut self.render) {
                self.idle_frames = self.idle_frames.saturating_add(1);
            } else if !self.render.is_empty() {
                self.idle_frames = 0;
            }
            // A NaN sample (a broken device) would poison AEC3's filter for good.
            for s in self.pending.iter_mut().filter(|s| !s.is_finite()) {
                *s = 0.0;
            }
            let resting = self.resting();
            if !resting {
                let mut scratch = [0.0f32; AEC_FRAME];
                for frame in self.render.chunks_exact(AEC_FRAME) {
                    // A failure here is a frame of the wrong size, which `chunks_exact` rules out.
                    let _ = self.apm.process_render_f32(&[frame], &mut [&mut scratch[..]]);
                }
            }
            let apm = if resting { &mut self.filter } else { &mut self.apm };
            let mut cleaned = [0.0f32; AEC_FRAME];
            if apm
                .process_capture_f32(&[&self.pending], &mut [&mut cleaned[..]])
                .is_err()
            {
                cleaned.copy_from_slice(&self.pending);
            }
            out.extend_from_slice(&cleaned);
            self.pending.clear();
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tap_resamples_to_16_khz_and_hands_over_whole_frames() {
        let reference = EchoReference::new();
        {
            let mut tap = reference.tap(24_000);
            for i in 0..2_400 {
                tap.sample((i as f32 * 0.01).sin());
            }
        }
        let mut out = Vec::new();
        reference.frames(&mut out);
        // 100 ms at 24 kHz is 100 ms at 16 kHz: ten frames, give or take the last sample.
        assert!((1_590..=1_600).contains(&out.len()), "{}", out.len());
        assert_eq!(out.len() % AEC_FRAME, 0);
        // A 24 kHz ramp keeps its shape at 16 kHz: sample k is source sample 1.5 k.
        let mut direct = Vec::new();
        let r = EchoReference::new();
        let mut tap = r.tap(24_000);
        for i in 0..480 {
            tap.sample(i as f32);
        }
        drop(tap);
        r.frames(&mut direct);
        for (k, v) in direct.iter().enumerate().take(300) {
            assert!((v - 1.5 * k as f32).abs() < 1e-3, "sample {k}: {v}");
        }
        // At the same rate, each sample once, as it was, however many taps there are.
        let r = EchoReference::new();
        for frame in 0..3 {
            let mut tap = r.tap(STT_RATE);
            for i in 0..AEC_FRAME {
                tap.sample((frame * AEC_FRAME + i) as f32);
            }
        }
        let mut same = Vec::new();
        r.frames(&mut same);
        assert_eq!(same, (0..3 * AEC_FRAME).map(|i| i as f32).collect::<Vec<_>>());
    }

    #[test]
    fn an_idle_speaker_is_a_frame_of_silence_and_a_busy_one_waits_for_a_whole_frame() {
        let reference = EchoReference::new();
        let mut out = Vec::new();
        assert!(reference.frames(&mut out), "nothing played yet: idle");
        assert_eq!(out, vec![0.0; AEC_FRAME], "nothing played yet: silence");
        let mut tap = reference.tap(16_000);
        for _ in 0..AEC_FRAME + 10 {
            tap.sample(0.5);
        }
        out.clear();
        assert!(!reference.frames(&mut out), "playing");
        assert_eq!(out.len(), AEC_FRAME, "the whole frame only");
        out.clear();
        assert!(!reference.frames(&mut out), "playing");
        assert!(out.is_empty(), "playback under way: wait for the rest");
    }

    /// AEC3 rests once the speaker has been silent for a second, passing the microphone
    /// through the high-pass filter alone; the next reply wakes it, and its echo is
    /// cancelled with what AEC3 learnt of the room before it rested.
    #[test]
    fn a_silent_speaker_lets_aec3_rest_and_the_next_reply_wakes_it() {
        let reference = EchoReference::new();
        let mut aec = EchoCanceller::new(reference.clone());
        // A room tone the microphone hears, with a hum below the high-pass filter's corner.
        let room = |i: usize| {
            0.01 * ((i as f32) * 0.37).sin() + 0.05 * (i as f32 * 2.0 * std::f32::consts::PI * 20.0 / 16_000.0).sin()
        };
        let mut at = 0;
        let mut listen = |aec: &mut EchoCanceller, frames: usize| {
            let mic: Vec<f32> = (at..at + frames * AEC_FRAME).map(room).collect();
            at += mic.len();
            let out = aec.process(&mic);
            assert_eq!(out.len(), mic.len());
            (mic, out)
        };
        listen(&mut aec, REST_AFTER - 1);
        assert!(!aec.resting(), "rests only after a second of silence");
        let (mic, out) = listen(&mut aec, 50);
        assert!(aec.resting(), "a second of silence from the speaker: AEC3 rests");
        let energy = |x: &[f32]| x.iter().map(|s| f64::from(s * s)).sum::<f64>();
        // Still high-passed while resting: the 20 Hz hum is taken out as AEC3 would.
        assert!(
            energy(&out[1_600..]) < energy(&mic[1_600..]) * 0.2,
            "the hum went through"
        );
        // A reply: AEC3 wakes at its first frame.
        let mut tap = reference.tap(STT_RATE);
        for i in 0..AEC_FRAME {
            tap.sample(0.3 * (i as f32 * 0.2).sin());
        }
        drop(tap);
        listen(&mut aec, 1);
        assert!(!aec.resting(), "the reply woke AEC3");
    }

    /// An echo after a long silence (a reply after minutes of listening) is cancelled as
    /// well as one that comes at once.
    #[test]
    fn an_echo_after_a_rest_is_cancelled() {
        let reference = EchoReference::new();
        let mut aec = EchoCanceller::new(reference.clone());
        let quiet = vec![0.0f32; AEC_FRAME * (REST_AFTER + 200)];
        aec.process(&quiet);
        assert!(aec.resting());
        assert!(erle_after(&reference, &mut aec, AEC_FRAME) >= 20.0);
    }

    /// ERLE in dB when the speaker plays 8 s of speech-like noise, 10 ms at a time, and the
    /// microphone hears it 30 ms later at half the level, delivered `chunk` samples at a
    /// time: over the last 4 s, once AEC3 has converged.
    fn erle_with_chunks(chunk: usize) -> f64 {
        let reference = EchoReference::new();
        let mut aec = EchoCanceller::new(reference.clone());
        erle_after(&reference, &mut aec, chunk)
    }

    /// [`erle_with_chunks`] with a canceller that has already run.
    fn erle_after(reference: &Arc<EchoReference>, aec: &mut EchoCanceller, chunk: usize) -> f64 {
        // Speech-like noise: white noise through a slow envelope.
        let mut x = 0x1234_5678u32;
        let mut noise = || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x as f32 / u32::MAX as f32) * 2.0 - 1.0
        };
        let n = STT_RATE as usize * 8;
        let played: Vec<f32> = (0..n)
            .map(|i| noise() * 0.3 * (0.6 + 0.4 * (i as f32 / 1_600.0).sin()))
            .collect();
        let delay = 480; // 30 ms
        let (mut before, mut after) = (0.0f64, 0.0f64);
        for start in (0..n).step_by(chunk) {
            for frame in played[start..start + chunk].chunks(AEC_FRAME) {
                let mut tap = reference.tap(STT_RATE);
                for s in frame {
                    tap.sample(*s);
                }
            }
            let mic: Vec<f32> = (start..start + chunk)
                .map(|i| if i >= delay { played[i - delay] * 0.5 } else { 0.0 })
                .collect();
            let out = aec.process(&mic);
            assert_eq!(out.len(), chunk, "whole frames in, whole frames out");
            if start >= n / 2 {
                before += mic.iter().map(|s| f64::from(s * s)).sum::<f64>();
                after += out.iter().map(|s| f64::from(s * s)).sum::<f64>();
            }
        }
        10.0 * (before / after.max(1e-12)).log10()
    }

    /// An echo that is the played signal, delayed and quieter, is cancelled: what comes out
    /// while only Hark speaks is far quieter than what went in.
    #[test]
    fn a_delayed_quieter_copy_of_the_reference_is_cancelled() {
        let erle = erle_with_chunks(AEC_FRAME);
        assert!(erle >= 20.0, "echo reduced by {erle:.1} dB");
    }

    /// The same, with the microphone delivering 100 ms at a time (a device with a long
    /// period does), while the speaker is pulled 10 ms at a time: the ten frames of reference waiting are handed to AEC3
    /// before the chunk's first capture frame, and it still finds the echo.
    #[test]
    fn an_echo_is_cancelled_when_the_microphone_delivers_100_ms_at_a_time() {
        let erle = erle_with_chunks(10 * AEC_FRAME);
        assert!(erle >= 20.0, "echo reduced by {erle:.1} dB");
    }
}
