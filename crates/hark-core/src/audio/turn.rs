//! The end of a turn by how the words sound, not by silence alone (issue 23).
//!
//! [`SmartTurn`] runs Smart Turn v3.2 (pipecat-ai's, BSD-2-Clause; its int8 CPU ONNX from
//! the PyPI wheel `pipecat-ai`) on the ONNX Runtime the other offline models use: given
//! the last 8 s of an utterance, it says how likely the speaker has finished their turn,
//! from intonation and rhythm as well as the words' shape. Hands-free listening asks it
//! after a short pause ([`GateSettings::pause_ms`](super::vad::GateSettings)); "finished"
//! ends the turn there, and "not yet" keeps listening, up to the longer silence that ends
//! a turn anyway.
//!
//! [`Features`] computes the Whisper log-mel features the model was trained on, exactly as
//! pipecat's `_whisper_features.py` (a copy of transformers' `WhisperFeatureExtractor`):
//! the waveform normalised, a centred 400-point STFT with a periodic Hann window every 160
//! samples, 80 Slaney mel bands up to 8 kHz, log10, the top 8 decades kept, scaled by
//! (x + 4) / 4. Written here because the crates that compute log-mels (whisper's own
//! inside whisper.cpp, `mel_spec`) differ in padding, scale or normalisation, and the
//! model only answers right on the features it was trained on; `realfft` (already built,
//! for `rubato`) does the transforms.

use std::path::PathBuf;

use ort::session::Session;
use ort::value::Tensor;
use realfft::{RealFftPlanner, RealToComplex};

use super::resample::STT_RATE;
use crate::provider::{ErrorKind, ProviderError};

/// The manifest's id of Smart Turn's model.
pub const MODEL_ID: &str = "smart-turn-v3";
const PROVIDER: &str = "smart-turn";

/// Samples the model hears: the last 8 s (shorter audio is padded with silence before it).
pub const WINDOW: usize = 8 * STT_RATE as usize;
const N_FFT: usize = 400;
const HOP: usize = 160;
const BINS: usize = N_FFT / 2 + 1;
/// Mel bands per frame.
pub const MELS: usize = 80;
/// Frames the model takes: 801 centred frames, the last dropped (as the reference does).
pub const FRAMES: usize = WINDOW / HOP;
/// A probability above this is a finished turn (pipecat's cut).
pub const FINISHED: f32 = 0.5;

/// Whether the speaker has finished. [`SmartTurn`] is the real one; tests script their own.
pub trait TurnModel: Send {
    /// The probability (0–1) that `audio` (16 kHz: the utterance so far, ending now) is a
    /// finished turn.
    fn completion(&mut self, audio: &[f32]) -> Result<f32, ProviderError>;
}

/// Where Smart Turn's files are.
#[derive(Debug, Clone)]
pub struct SmartTurnFiles {
    pub model: PathBuf,
    /// The ONNX Runtime library it runs on.
    pub runtime: PathBuf,
}

fn engine_err(msg: impl Into<String>) -> ProviderError {
    ProviderError::new(PROVIDER, ErrorKind::LocalEngine, msg)
}

/// Smart Turn v3 on ONNX Runtime, on two threads that sleep between runs: it runs once
/// per pause, where its time is the end of the turn's wait (on this 2-core machine one
/// thread took 93 ms a decision, two 55 ms: `scripts/bench-hands-free.sh`), and it
/// must cost nothing while Hark only listens.
pub struct SmartTurn {
    session: Session,
    features: Features,
}

impl SmartTurn {
    pub fn load(files: &SmartTurnFiles) -> Result<Self, ProviderError> {
        crate::onnx::load_runtime(PROVIDER, &files.runtime, MODEL_ID)?;
        if !files.model.exists() {
            return Err(engine_err(format!(
                "the end-of-turn model {} is not there: fetch it with `hark models fetch {MODEL_ID}`",
                files.model.display()
            )));
        }
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(2));
        let session = crate::onnx::session_with(PROVIDER, &files.model, threads, false, "the end-of-turn model")?;
        Ok(Self {
            session,
            features: Features::new(),
        })
    }
}

impl TurnModel for SmartTurn {
    fn completion(&mut self, audio: &[f32]) -> Result<f32, ProviderError> {
        let run_err = |e: ort::Error| engine_err(format!("the end-of-turn model failed: {e}"));
        let input = self.features.compute(audio);
        let input = Tensor::from_array(([1usize, MELS, FRAMES], input)).map_err(run_err)?;
        let mut out = self
            .session
            .run(ort::inputs!["input_features" => input])
            .map_err(run_err)?;
        let logits = out
            .remove("logits")
            .ok_or_else(|| engine_err("the end-of-turn model returned no output"))?;
        let (_, p) = logits.try_extract_tensor::<f32>().map_err(run_err)?;
        // The graph ends in a sigmoid: this is already a probability.
        let p = p.first().copied().unwrap_or(0.0);
        Ok(if p.is_finite() { p.clamp(0.0, 1.0) } else { 0.0 })
    }
}

/// Whisper's log-mel features for Smart Turn (see the module's opening), with the window,
/// the filters and the FFT plan made once.
pub struct Features {
    window: Vec<f64>,
    /// `[BINS][MELS]`: the weight of each FFT bin in each mel band.
    filters: Vec<f64>,
    fft: std::sync::Arc<dyn RealToComplex<f64>>,
}

impl Default for Features {
    fn default() -> Self {
        Self::new()
    }
}

fn hertz_to_mel(f: f64) -> f64 {
    if f >= 1000.0 {
        15.0 + (f / 1000.0).ln() * (27.0 / 6.4f64.ln())
    } else {
        3.0 * f / 200.0
    }
}

fn mel_to_hertz(m: f64) -> f64 {
    if m >= 15.0 {
        1000.0 * ((6.4f64.ln() / 27.0) * (m - 15.0)).exp()
    } else {
        200.0 * m / 3.0
    }
}

impl Features {
    pub fn new() -> Self {
        // np.hanning(401)[:-1]: periodic Hann.
        let window = (0..N_FFT)
            .map(|n| 0.5 - 0.5 * (2.0 * std::f64::consts::PI * n as f64 / N_FFT as f64).cos())
            .collect();
        let (lo, hi) = (hertz_to_mel(0.0), hertz_to_mel(f64::from(STT_RATE) / 2.0));
        let edges: Vec<f64> = (0..MELS + 2)
            .map(|i| mel_to_hertz(lo + (hi - lo) * i as f64 / (MELS + 1) as f64))
            .collect();
        let nyquist = f64::from(STT_RATE / 2);
        let mut filters = vec![0.0; BINS * MELS];
        for bin in 0..BINS {
            let f = nyquist * bin as f64 / (BINS - 1) as f64;
            for m in 0..MELS {
                let down = (f - edges[m]) / (edges[m + 1] - edges[m]);
                let up = (edges[m + 2] - f) / (edges[m + 2] - edges[m + 1]);
                // Slaney area normalisation.
                let norm = 2.0 / (edges[m + 2] - edges[m]);
                filters[bin * MELS + m] = down.min(up).max(0.0) * norm;
            }
        }
        Self {
            window,
            filters,
            fft: RealFftPlanner::<f64>::new().plan_fft_forward(N_FFT),
        }
    }

    /// The model's input for `audio` (16 kHz): `[MELS][FRAMES]`, row by row.
    pub fn compute(&self, audio: &[f32]) -> Vec<f32> {
        // The last 8 s, silence before when shorter.
        let tail = &audio[audio.len().saturating_sub(WINDOW)..];
        let mut x = vec![0.0f32; WINDOW - tail.len()];
        x.extend(tail.iter().map(|s| if s.is_finite() { *s } else { 0.0 }));
        // Zero mean, unit variance.
        let mean = x.iter().map(|s| f64::from(*s)).sum::<f64>() / WINDOW as f64;
        let var = x.iter().map(|s| (f64::from(*s) - mean).powi(2)).sum::<f64>() / WINDOW as f64;
        let scale = 1.0 / (var + 1e-7).sqrt();
        let x: Vec<f64> = x
            .iter()
            .map(|s| f64::from(((f64::from(*s) - mean) * scale) as f32))
            .collect();
        // Reflect padding of half a window on each side (the edge sample not repeated).
        let pad = N_FFT / 2;
        let at = |i: usize| -> f64 {
            let n = WINDOW as isize;
            let mut j = i as isize - pad as isize;
            if j < 0 {
                j = -j;
            }
            if j >= n {
                j = 2 * (n - 1) - j;
            }
            x[j as usize]
        };
        let mut frame = self.fft.make_input_vec();
        let mut spectrum = self.fft.make_output_vec();
        let mut scratch = self.fft.make_scratch_vec();
        let mut logs = vec![0.0f64; MELS * FRAMES];
        let mut power = [0.0f64; BINS];
        for t in 0..FRAMES {
            for (n, v) in frame.iter_mut().enumerate() {
                *v = at(t * HOP + n) * self.window[n];
            }
            // Lengths are the plan's own: this cannot fail.
            let _ = self.fft.process_with_scratch(&mut frame, &mut spectrum, &mut scratch);
            for (p, c) in power.iter_mut().zip(&spectrum) {
                *p = c.norm_sqr();
            }
            for m in 0..MELS {
                let e: f64 = (0..BINS).map(|b| power[b] * self.filters[b * MELS + m]).sum();
                logs[m * FRAMES + t] = e.max(1e-10).log10();
            }
        }
        let top = logs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        logs.iter().map(|v| ((v.max(top - 8.0) + 4.0) / 4.0) as f32).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// pipecat's `compute_whisper_log_mel_features` (numpy, pipecat-ai 1.14.0) on 3 s of a
    /// chirp and a sine, padded with silence before to 8 s as pipecat does, gave these.
    #[test]
    fn features_match_pipecats_reference_extractor() {
        let n = 48_000;
        let x: Vec<f32> = (0..n)
            .map(|i| {
                let t = i as f64 / 16_000.0;
                (0.3 * (2.0 * std::f64::consts::PI * (200.0 * t + 300.0 * t * t)).sin()
                    + 0.1 * (2.0 * std::f64::consts::PI * 1234.5 * t).sin()) as f32
            })
            .collect();
        let f = Features::new().compute(&x);
        assert_eq!(f.len(), MELS * FRAMES);
        let at = |m: usize, t: usize| f[m * FRAMES + t];
        for (m, t, want) in [
            (0, 0, -0.223_516_7),
            (20, 600, 1.725_694_2),
            (30, 560, 1.310_853_8),
            (45, 700, -0.223_516_7),
            (5, 520, 0.846_053_9),
            (35, 505, 0.119_495_33),
            (50, 499, 0.011_509_515),
            (79, 799, -0.057_753_75),
        ] {
            assert!(
                (at(m, t) - want).abs() < 1e-4,
                "mel {m}, frame {t}: {} for {want}",
                at(m, t)
            );
        }
        let voiced: f64 = (0..MELS)
            .flat_map(|m| (500..FRAMES).map(move |t| (m, t)))
            .map(|(m, t)| f64::from(at(m, t)))
            .sum();
        assert!((voiced - 1225.575).abs() < 0.05, "{voiced}");
        let max = f.iter().copied().fold(f32::MIN, f32::max);
        assert!((max - 1.776_483_3).abs() < 1e-4, "{max}");
    }

    #[test]
    fn longer_audio_keeps_its_last_8_seconds_and_bad_samples_are_silence() {
        let feats = Features::new();
        let mut long = vec![0.25f32; WINDOW + 5_000];
        for (i, s) in long.iter_mut().enumerate().skip(5_000) {
            *s = ((i % 97) as f32 / 97.0 - 0.5) * 0.2;
        }
        let tail = long[5_000..].to_vec();
        assert_eq!(feats.compute(&long), feats.compute(&tail));
        let mut bad = tail.clone();
        bad[100] = f32::NAN;
        bad[200] = f32::INFINITY;
        assert!(feats.compute(&bad).iter().all(|v| v.is_finite()));
        assert!(feats.compute(&[]).iter().all(|v| v.is_finite()), "silence alone");
    }
}
