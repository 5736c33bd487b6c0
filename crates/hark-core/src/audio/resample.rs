//! Downmix to mono and resample to 16 kHz for speech-to-text, with rubato.
//!
//! Pure over buffers: push interleaved device frames, take 16 kHz mono samples. Runs on the
//! capture worker thread, never in the audio callback.

use rubato::{FftFixedIn, Resampler};

use super::AudioError;

/// The sample rate every speech-to-text engine here takes.
pub const STT_RATE: u32 = 16_000;

/// Input frames per resampler call (about 21 ms at 48 kHz).
const CHUNK: usize = 1024;

/// Interleaved frames at any rate and channel count in, 16 kHz mono out.
pub struct ToMono16k {
    channels: usize,
    /// `None` when the input is already at 16 kHz.
    resampler: Option<FftFixedIn<f32>>,
    /// Mono input not yet resampled (less than one chunk).
    pending: Vec<f32>,
    /// Output frames still to drop: the resampler's delay, so output lines up with input.
    skip: usize,
    /// Input frames seen, to size the output exactly at the end.
    frames_in: u64,
    /// Output frames produced (after skipping the delay).
    frames_out: u64,
    rate: u32,
    /// Input frames per resampler call.
    chunk: usize,
}

impl ToMono16k {
    pub fn new(rate: u32, channels: u16) -> Result<Self, AudioError> {
        Self::with_chunk(rate, channels, CHUNK)
    }

    /// The same, resampling `chunk` input frames at a time: a smaller chunk holds audio
    /// back for less time (the echo canceller's reference must reach AEC3 before its echo
    /// does), at a little more cost per sample.
    pub fn with_chunk(rate: u32, channels: u16, chunk: usize) -> Result<Self, AudioError> {
        if rate == 0 || channels == 0 {
            return Err(AudioError::Format(format!("{channels} channels at {rate} Hz")));
        }
        let resampler = if rate == STT_RATE {
            None
        } else {
            Some(
                FftFixedIn::<f32>::new(rate as usize, STT_RATE as usize, chunk.max(1), 2, 1)
                    .map_err(|e| AudioError::Format(format!("cannot resample {rate} Hz to 16 kHz: {e}")))?,
            )
        };
        let skip = resampler.as_ref().map(|r| r.output_delay()).unwrap_or(0);
        Ok(Self {
            channels: channels as usize,
            resampler,
            pending: Vec::new(),
            skip,
            frames_in: 0,
            frames_out: 0,
            rate,
            chunk: chunk.max(1),
        })
    }

    /// Adds interleaved samples; appends whatever 16 kHz output is ready to `out`.
    pub fn push(&mut self, interleaved: &[f32], out: &mut Vec<f32>) {
        let ch = self.channels;
        for frame in interleaved.chunks_exact(ch) {
            self.pending.push(frame.iter().sum::<f32>() / ch as f32);
        }
        self.frames_in += (interleaved.len() / ch) as u64;
        self.drain(out, false);
    }

    /// Flushes the tail; afterwards the total output is the input's duration at 16 kHz.
    pub fn finish(&mut self, out: &mut Vec<f32>) {
        self.drain(out, true);
        let expected = (self.frames_in as f64 * STT_RATE as f64 / self.rate as f64).round() as u64;
        // The FFT resampler works in whole chunks: trim its zero padding, or pad a sample.
        while self.frames_out > expected {
            out.pop();
            self.frames_out -= 1;
        }
        while self.frames_out < expected {
            out.push(0.0);
            self.frames_out += 1;
        }
    }

    fn drain(&mut self, out: &mut Vec<f32>, last: bool) {
        let Some(r) = self.resampler.as_mut() else {
            self.frames_out += self.pending.len() as u64;
            out.append(&mut self.pending);
            return;
        };
        let mut emit = |block: &[f32], skip: &mut usize, frames_out: &mut u64| {
            let start = (*skip).min(block.len());
            *skip -= start;
            out.extend_from_slice(&block[start..]);
            *frames_out += (block.len() - start) as u64;
        };
        let mut offset = 0;
        while self.pending.len() - offset >= self.chunk {
            if let Ok(res) = r.process(&[&self.pending[offset..offset + self.chunk]], None) {
                emit(&res[0], &mut self.skip, &mut self.frames_out);
            }
            offset += self.chunk;
        }
        self.pending.drain(..offset);
        if last {
            // The rest, then enough silence to push the delayed tail out.
            let rest = std::mem::take(&mut self.pending);
            if let Ok(res) = r.process_partial(Some(&[&rest[..]]), None) {
                emit(&res[0], &mut self.skip, &mut self.frames_out);
            }
            if let Ok(res) = r.process_partial::<&[f32]>(None, None) {
                emit(&res[0], &mut self.skip, &mut self.frames_out);
            }
        }
    }
}

/// Root-mean-square level of samples (0.0 for none).
pub fn rms(samples: &[f32]) -> f32 {
    if samples.is_empty() {
        return 0.0;
    }
    (samples.iter().map(|s| s * s).sum::<f32>() / samples.len() as f32).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sine(rate: u32, channels: u16, secs: f32, freq: f32) -> Vec<f32> {
        let n = (rate as f32 * secs) as usize;
        let mut v = Vec::with_capacity(n * channels as usize);
        for i in 0..n {
            let s = (2.0 * std::f32::consts::PI * freq * i as f32 / rate as f32).sin() * 0.5;
            for _ in 0..channels {
                v.push(s);
            }
        }
        v
    }

    fn run(rate: u32, channels: u16, input: &[f32], piece: usize) -> Vec<f32> {
        let mut r = ToMono16k::new(rate, channels).unwrap();
        let mut out = Vec::new();
        for p in input.chunks(piece * channels as usize) {
            r.push(p, &mut out);
        }
        r.finish(&mut out);
        out
    }

    #[test]
    fn stereo_48k_becomes_mono_16k_of_the_same_duration_and_level() {
        let input = sine(48_000, 2, 1.0, 440.0);
        for piece in [1, 480, 1024, 5000] {
            let out = run(48_000, 2, &input, piece);
            assert_eq!(out.len(), 16_000, "piece {piece}");
            // A 0.5-amplitude sine has an RMS of 0.354; the middle must keep it.
            let level = rms(&out[2000..14000]);
            assert!((level - 0.3535).abs() < 0.01, "rms {level}");
        }
    }

    #[test]
    fn the_signal_is_aligned_not_delayed() {
        // A click at 0.5 s must come out at 0.5 s (±1 ms).
        let mut input = vec![0.0f32; 44_100];
        input[22_050] = 1.0;
        let out = run(44_100, 1, &input, 441);
        let peak = out
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.abs().total_cmp(&b.1.abs()))
            .unwrap()
            .0;
        assert!((peak as i64 - 8000).abs() <= 16, "peak at {peak}");
    }

    #[test]
    fn sixteen_khz_mono_passes_through_untouched() {
        let input = sine(16_000, 1, 0.25, 300.0);
        assert_eq!(run(16_000, 1, &input, 100), input);
    }

    #[test]
    fn downmix_averages_channels() {
        let mut r = ToMono16k::new(16_000, 2).unwrap();
        let mut out = Vec::new();
        r.push(&[1.0, 0.0, 0.5, 0.5], &mut out);
        assert_eq!(out, vec![0.5, 0.5]);
        assert!(ToMono16k::new(0, 2).is_err());
    }
}
