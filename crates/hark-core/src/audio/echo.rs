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
    fn frames(&self, out: &mut Vec<f32>) {
        let mut p = self.lock();
        let whole = p.samples.len() / AEC_FRAME * AEC_FRAME;
        if whole > 0 {
            out.extend(p.samples.drain(..whole));
        } else if p.last.is_none_or(|t| t.elapsed() >= IDLE_AFTER) {
            // What is left of the last burst, then silence.
            out.extend(p.samples.drain(..));
            out.resize(AEC_FRAME, 0.0);
            p.last = None;
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
    reference: Arc<EchoReference>,
    /// Capture samples waiting for a whole frame.
    pending: Vec<f32>,
    render: Vec<f32>,
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
        Self {
            apm,
            reference,
            pending: Vec::with_capacity(AEC_FRAME),
            render: Vec::new(),
        }
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
            self.reference.frames(&mut self.render);
            let mut scratch = [0.0f32; AEC_FRAME];
            for frame in self.render.chunks_exact(AEC_FRAME) {
                // A failure here is a frame of the wrong size, which `chunks_exact` rules out.
                let _ = self.apm.process_render_f32(&[frame], &mut [&mut scratch[..]]);
            }
            // A NaN sample (a broken device) would poison AEC3's filter for good.
            for s in self.pending.iter_mut().filter(|s| !s.is_finite()) {
                *s = 0.0;
            }
            let mut cleaned = [0.0f32; AEC_FRAME];
            if self
                .apm
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
        reference.frames(&mut out);
        assert_eq!(out, vec![0.0; AEC_FRAME], "nothing played yet: silence");
        let mut tap = reference.tap(16_000);
        for _ in 0..AEC_FRAME + 10 {
            tap.sample(0.5);
        }
        out.clear();
        reference.frames(&mut out);
        assert_eq!(out.len(), AEC_FRAME, "the whole frame only");
        out.clear();
        reference.frames(&mut out);
        assert!(out.is_empty(), "playback under way: wait for the rest");
    }

    /// ERLE in dB when the speaker plays 8 s of speech-like noise, 10 ms at a time, and the
    /// microphone hears it 30 ms later at half the level, delivered `chunk` samples at a
    /// time: over the last 4 s, once AEC3 has converged.
    fn erle_with_chunks(chunk: usize) -> f64 {
        let reference = EchoReference::new();
        let mut aec = EchoCanceller::new(reference.clone());
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
