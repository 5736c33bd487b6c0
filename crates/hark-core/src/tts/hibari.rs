//! The quick Heart voice: Hibari, Kokoro's `af_heart` distilled into a 6 M-parameter model
//! (int8 ONNX, 7.9 MB), through ONNX Runtime.
//!
//! Kokoro (`natural`) renders a piece in 0.8–1.8 s on one core of a small machine, so its
//! first sound comes seconds after the reply's first words. Hibari was trained on Kokoro's
//! own output for its Heart voice (Kokoro's default) and renders about twenty-five times
//! faster than real time on one core, espeak-ng's phonemes included: a first clause takes a
//! few tens of milliseconds. It speaks American English only. It loads, frees and renders as
//! the other quick voice does ([`super::quick`]).
//!
//! Text becomes phonemes with espeak-ng, with its tie marks (`--tie=^`), mapped to the
//! symbols Kokoro was trained on the way misaki, Kokoro's own phonemiser, maps espeak's for
//! words it does not know ([`misaki_from_espeak`]). Hibari's package brings misaki's
//! lexicons and a tagger for this in Python; espeak-ng is already Hark's phonemiser for the
//! other offline voices, and on 20 test sentences whisper read both back without a word
//! wrong. The ids are Kokoro's vocabulary ([`super::natural::tokenize`]: the package's
//! `vocab.json` is the same table).
//!
//! The model does not output audio but a spectrum per 12.5 ms frame in five parts and a
//! pitch curve; [`synthesize`] turns them into 24 kHz samples as the package's `dsp.py`
//! does: a band-limited pulse train at the pitch, its STFT shaped by the harmonic part,
//! plus shaped noise, plus a free-phase part, then one inverse STFT. It is written here,
//! with `realfft` (already built for the end-of-turn model's features), because no crate
//! does this model's signal chain.

use std::sync::Mutex;

use realfft::num_complex::Complex32;
use realfft::RealFftPlanner;

use super::natural::{espeak_phonemes_with, tokenize, trim_silence};
use super::quick::{PhonemeModel, QuickVoice, VoiceFiles};
use crate::provider::{ErrorKind, ProviderError};

const PROVIDER: &str = "hibari";

/// The manifest's id of the voice.
pub const MODEL_ID: &str = "hibari-heart";

/// The voice's output rate.
pub const SAMPLE_RATE: u32 = 24_000;

/// espeak-ng's voice for its phonemes.
const ESPEAK_VOICE: &str = "en-us";

/// The most phonemes rendered in one run (the package's `MAX_PHONEMES`): a longer piece is
/// cut at punctuation or a space.
const MAX_PHONEMES: usize = 400;

/// The STFT of the model's spectra: 1,200-point frames every 300 samples (12.5 ms).
const N_FFT: usize = 1200;
const HOP: usize = 300;
const BINS: usize = N_FFT / 2 + 1;

/// A frame below this pitch is unvoiced; harmonics above `F_MAX` are left out.
const VOICED_HZ: f32 = 40.0;
const F_MAX: f32 = 11_000.0;

/// The spectral parts are log magnitudes, clamped here before `exp` (as the package does).
const LOG_MAX: f32 = 7.0;

/// espeak-ng's IPA (with `^` ties) → misaki's American English symbols, longest first:
/// misaki's `EspeakFallback` table and its American rules, then flapped t as `T` (misaki
/// writes every flap so). `oː^ɹ`/`ɔː^ɹ` become `ɔɹ`, the lexicon's "four" and "or".
const ESPEAK_TO_MISAKI: &[(&str, &str)] = &[
    ("ʔˌn\u{329}", "tᵊn"),
    ("ʔn\u{329}", "tᵊn"),
    ("ʔn", "tᵊn"),
    ("ʔ", "t"),
    ("a^ɪ", "I"),
    ("a^ʊ", "W"),
    ("d^ʒ", "ʤ"),
    ("e^ɪ", "A"),
    ("t^ʃ", "ʧ"),
    ("ɔ^ɪ", "Y"),
    ("ə^l", "ᵊl"),
    ("o^ʊ", "O"),
    ("oː^ɹ", "ɔɹ"),
    ("ɔː^ɹ", "ɔɹ"),
    ("ɚɹ", "əɹ"),
    ("ɚ", "əɹ"),
    ("e", "A"),
    ("r", "ɹ"),
    ("x", "k"),
    ("ç", "k"),
    ("ɐ", "ə"),
    ("ɬ", "l"),
    ("ʲ", ""),
    ("ɜːɹ", "ɜɹ"),
    ("ɜː", "ɜɹ"),
    ("ɪə", "iə"),
    ("ː", ""),
    ("^", ""),
    ("n\u{329}", "ᵊn"),
    ("l\u{329}", "ᵊl"),
    ("\u{329}", ""),
    ("ɾ", "T"),
];

/// espeak-ng's tied IPA in misaki's symbols (American English), which Hibari was trained on.
pub fn misaki_from_espeak(ipa: &str) -> String {
    ESPEAK_TO_MISAKI
        .iter()
        .fold(ipa.to_string(), |s, (from, to)| s.replace(from, to))
}

fn err(kind: ErrorKind, m: impl Into<String>) -> ProviderError {
    ProviderError::new(PROVIDER, kind, m)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The model's output for one piece: five spectral parts, each `[BINS][frames]` flattened
/// bin-major as the model lays them out, and the pitch per frame in Hz (0: unvoiced).
pub struct Spectra<'a> {
    pub harmonic: &'a [f32],
    pub theta: &'a [f32],
    pub noise: &'a [f32],
    pub residual: &'a [f32],
    pub phi: &'a [f32],
    pub f0: &'a [f32],
}

/// The periodic Hann window of `N_FFT` points.
fn hann() -> Vec<f32> {
    (0..N_FFT)
        .map(|n| 0.5 - 0.5 * (2.0 * std::f64::consts::PI * n as f64 / N_FFT as f64).cos() as f32)
        .collect()
}

/// The band-limited pulse train of a pitch curve (`dsp.pulses`): the curve is interpolated
/// linearly to one value per sample (frame centres at half a hop), and each voiced sample is
/// the sum of every harmonic below `F_MAX` at unit amplitude, in closed form:
/// `sin((H + ½)t) / (2 sin(t/2)) − ½`. Unvoiced samples are 0.
pub fn pulses(f0: &[f32]) -> Vec<f32> {
    let frames = f0.len();
    let mut out = Vec::with_capacity(frames * HOP);
    let at = |i: isize| f0[i.clamp(0, frames as isize - 1) as usize];
    let mut phase = 0.0f64;
    for k in 0..frames {
        for j in 0..HOP {
            let x = (j as f32 + 0.5) / HOP as f32 - 0.5;
            let (a, b, u) = if j < HOP / 2 {
                (at(k as isize - 1), at(k as isize), x + 1.0)
            } else {
                (at(k as isize), at(k as isize + 1), x)
            };
            let f = a * (1.0 - u) + b * u;
            let voiced = f > VOICED_HZ;
            let f = f.max(VOICED_HZ);
            phase += f64::from(f);
            let t = ((phase / f64::from(SAMPLE_RATE)).fract() * 2.0 * std::f64::consts::PI) as f32;
            if !voiced {
                out.push(0.0);
                continue;
            }
            let h = (F_MAX / f).floor() + 0.5;
            let s = 2.0 * (0.5 * t).sin();
            let sum = if s.abs() <= 2e-3 { h } else { (h * t).sin() / s };
            out.push(sum - 0.5);
        }
    }
    out
}

/// Standard normal samples (Box–Muller over `rand`'s uniform ones: `rand_distr` is not in
/// the tree for two lines).
fn gaussian_pair(rng: &mut impl rand::Rng) -> (f32, f32) {
    let u: f64 = 1.0 - rng.random::<f64>(); // (0, 1]
    let v: f64 = rng.random::<f64>();
    let r = (-2.0 * u.ln()).sqrt();
    let a = 2.0 * std::f64::consts::PI * v;
    ((r * a.cos()) as f32, (r * a.sin()) as f32)
}

/// The waveform of one piece's spectra (`dsp.synth`), `frames × HOP` samples:
/// `S = e^lh · e^{iπ·tanh θ} · STFT(pulses(f0)) + e^ln · Z + e^lr · e^{iφ}`, with Z complex
/// Gaussian noise, then the inverse STFT (centred, overlap-added, normalised by the summed
/// squared window).
pub fn synthesize(s: &Spectra<'_>, rng: &mut impl rand::Rng) -> Vec<f32> {
    let frames = s.f0.len();
    if frames == 0 {
        return Vec::new();
    }
    let win = hann();
    let mut planner = RealFftPlanner::<f32>::new();
    let forward = planner.plan_fft_forward(N_FFT);
    let inverse = planner.plan_fft_inverse(N_FFT);

    // The pulse train, reflect-padded by half a frame on each side (a centred STFT).
    let x = pulses(s.f0);
    let half = N_FFT / 2;
    let padded: Vec<f32> = (0..x.len() + N_FFT)
        .map(|i| {
            let i = i as isize - half as isize;
            let n = x.len() as isize;
            let r = if i < 0 {
                -i
            } else if i >= n {
                2 * (n - 1) - i
            } else {
                i
            };
            x[r.clamp(0, n - 1) as usize]
        })
        .collect();

    let ex = |v: f32| v.min(LOG_MAX).exp();
    let mut out = vec![0.0f32; (frames + N_FFT / HOP - 1) * HOP];
    let mut frame = vec![0.0f32; N_FFT];
    let mut spec = vec![Complex32::new(0.0, 0.0); BINS];
    for k in 0..frames {
        // A unit cosine peaks at sum(window)/2 in the STFT: scaled so e^lh is the harmonic's
        // own magnitude.
        for (n, v) in frame.iter_mut().enumerate() {
            *v = padded[k * HOP + n] * win[n] / (N_FFT as f32 / 4.0);
        }
        forward
            .process(&mut frame, &mut spec)
            .expect("buffers sized by the plan");
        for (b, c) in spec.iter_mut().enumerate() {
            let at = b * frames + k;
            let angle = std::f32::consts::PI * s.theta[at].tanh();
            let mut v = *c * Complex32::from_polar(ex(s.harmonic[at]), angle);
            let (zr, zi) = gaussian_pair(rng);
            v += Complex32::new(zr, zi) * ex(s.noise[at]);
            v += Complex32::from_polar(ex(s.residual[at]), s.phi[at]);
            *c = v;
        }
        // An inverse real FFT takes the DC and Nyquist bins as real (numpy's irfft too).
        spec[0].im = 0.0;
        spec[BINS - 1].im = 0.0;
        inverse
            .process(&mut spec, &mut frame)
            .expect("buffers sized by the plan");
        for (n, v) in frame.iter().enumerate() {
            // realfft's inverse is unnormalised.
            out[k * HOP + n] += v / N_FFT as f32 * win[n];
        }
    }
    // Normalise by the summed squared window at each sample, then drop the centring pad.
    let mut norm = vec![0.0f32; out.len()];
    for k in 0..frames {
        for (n, w) in win.iter().enumerate() {
            norm[k * HOP + n] += w * w;
        }
    }
    for (v, n) in out.iter_mut().zip(&norm) {
        *v /= n.max(1e-11);
    }
    out[half..half + frames * HOP].to_vec()
}

/// Where the voice's two files are.
pub type HibariFiles = VoiceFiles;

/// The quick Heart voice as a [`super::Synthesizer`].
pub type HibariVoice = QuickVoice<Hibari>;

/// The loaded model.
pub struct Hibari {
    session: Mutex<ort::session::Session>,
}

impl PhonemeModel for Hibari {
    const PROVIDER: &'static str = PROVIDER;
    const WHAT: &'static str = "quick Heart voice";
    const SAMPLE_RATE: u32 = SAMPLE_RATE;
    const MAX_PHONEMES: usize = MAX_PHONEMES;

    fn load(files: &VoiceFiles, threads: usize) -> Result<Self, ProviderError> {
        Ok(Self {
            session: super::quick::session::<Self>(MODEL_ID, files, threads)?,
        })
    }

    /// espeak-ng's phonemes with its tie marks, in misaki's symbols.
    async fn phonemes(text: &str) -> Result<String, ProviderError> {
        let ipa = espeak_phonemes_with(PROVIDER, text, ESPEAK_VOICE, &["--tie=^"]).await?;
        Ok(misaki_from_espeak(&ipa))
    }

    /// Silence around the speech is cut, as for Kokoro (the voice turn joins pieces and
    /// adds its own pauses).
    fn render(&self, phonemes: &str) -> Result<Vec<f32>, ProviderError> {
        let tokens = tokenize(phonemes);
        if tokens.is_empty() {
            return Ok(Vec::new());
        }
        let mut ids = Vec::with_capacity(tokens.len() + 2);
        ids.push(0);
        ids.extend(tokens);
        ids.push(0);
        let n = ids.len();
        let run_err = |e: ort::Error| err(ErrorKind::LocalEngine, format!("the quick Heart voice failed: {e}"));
        let inputs = ort::inputs![
            "ids" => ort::value::Tensor::from_array(([1usize, n], ids)).map_err(run_err)?,
            "speed" => ort::value::Tensor::from_array(([1usize], vec![1.0f32])).map_err(run_err)?,
        ];
        let mut session = lock(&self.session);
        let outputs = session.run(inputs).map_err(run_err)?;
        let part = |name: &str| -> Result<(Vec<i64>, &[f32]), ProviderError> {
            let (shape, data) = outputs[name].try_extract_tensor::<f32>().map_err(run_err)?;
            Ok((shape.iter().copied().collect(), data))
        };
        let (shape, harmonic) = part("lh")?;
        let (_, f0) = part("f0")?;
        let frames = f0.len();
        if shape.len() != 3 || shape[1] as usize != BINS || shape[2] as usize != frames {
            return Err(err(
                ErrorKind::LocalEngine,
                format!("the quick Heart voice's model gave spectra of shape {shape:?}, not [1, {BINS}, {frames}]: is it Hibari's?"),
            ));
        }
        let spectra = Spectra {
            harmonic,
            theta: part("theta")?.1,
            noise: part("ln")?.1,
            residual: part("lr")?.1,
            phi: part("phi")?.1,
            f0,
        };
        for p in [spectra.theta, spectra.noise, spectra.residual, spectra.phi] {
            if p.len() != harmonic.len() {
                return Err(err(
                    ErrorKind::LocalEngine,
                    "the quick Heart voice's spectra differ in size",
                ));
            }
        }
        let audio = synthesize(&spectra, &mut rand::rng());
        Ok(trim_silence(&audio, SAMPLE_RATE).to_vec())
    }
}

#[cfg(test)]
mod tests;
