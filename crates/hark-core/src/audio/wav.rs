//! WAV files: utterances to transcribe (`hark talk --wav`) and reply audio (`--out`).

use std::path::Path;

use super::resample::{ToMono16k, STT_RATE};
use super::AudioError;

fn file_err(path: &Path, e: impl std::fmt::Display) -> AudioError {
    AudioError::File {
        path: path.display().to_string(),
        message: e.to_string(),
    }
}

/// All samples of a WAV as f32, interleaved: integer formats of any width are scaled to
/// -1.0..1.0, float is taken as it is.
fn samples_f32<R: std::io::Read>(r: &mut hound::WavReader<R>) -> Result<Vec<f32>, hound::Error> {
    let spec = r.spec();
    match spec.sample_format {
        hound::SampleFormat::Float => r.samples::<f32>().collect(),
        hound::SampleFormat::Int => {
            let scale = 1.0 / (1u64 << (spec.bits_per_sample - 1)) as f32;
            r.samples::<i32>().map(|s| s.map(|v| v as f32 * scale)).collect()
        }
    }
}

/// Reads any PCM WAV (8/16/24/32-bit integer or 32-bit float, any rate and channels) as
/// 16 kHz mono.
pub fn read_16k_mono(path: &Path) -> Result<Vec<f32>, AudioError> {
    let mut r = hound::WavReader::open(path).map_err(|e| file_err(path, e))?;
    let spec = r.spec();
    let samples = samples_f32(&mut r).map_err(|e| file_err(path, e))?;
    let mut conv = ToMono16k::new(spec.sample_rate, spec.channels)?;
    let mut out = Vec::with_capacity(samples.len() * STT_RATE as usize / spec.sample_rate.max(1) as usize + 16);
    conv.push(&samples, &mut out);
    conv.finish(&mut out);
    Ok(out)
}

/// 16-bit PCM mono at `rate`: what Hark writes.
fn mono_16bit(rate: u32) -> hound::WavSpec {
    hound::WavSpec {
        channels: 1,
        sample_rate: rate,
        bits_per_sample: 16,
        sample_format: hound::SampleFormat::Int,
    }
}

fn write_samples<W: std::io::Write + std::io::Seek>(
    mut w: hound::WavWriter<W>,
    samples: &[f32],
) -> Result<(), hound::Error> {
    for s in samples {
        w.write_sample((s.clamp(-1.0, 1.0) * i16::MAX as f32) as i16)?;
    }
    w.finalize()
}

/// Writes mono samples as 16-bit PCM WAV.
pub fn write_mono(path: &Path, samples: &[f32], rate: u32) -> Result<(), AudioError> {
    let w = hound::WavWriter::create(path, mono_16bit(rate)).map_err(|e| file_err(path, e))?;
    write_samples(w, samples).map_err(|e| file_err(path, e))
}

/// 16 kHz mono samples as an in-memory 16-bit PCM WAV file (uploads to transcription APIs).
pub fn encode_16k_mono(samples: &[f32]) -> Vec<u8> {
    let mut buf = std::io::Cursor::new(Vec::with_capacity(44 + samples.len() * 2));
    // Writing to memory cannot fail: hound's only errors here would be I/O errors.
    if let Ok(w) = hound::WavWriter::new(&mut buf, mono_16bit(STT_RATE)) {
        let _ = write_samples(w, samples);
    }
    buf.into_inner()
}

/// Parses WAV bytes (e.g. from a TTS engine's stdout) into mono f32 samples and the rate.
pub fn decode_wav_bytes(bytes: &[u8]) -> Result<(Vec<f32>, u32), AudioError> {
    let err = |e: hound::Error| AudioError::Format(format!("WAV data: {e}"));
    let mut r = hound::WavReader::new(std::io::Cursor::new(bytes)).map_err(err)?;
    let spec = r.spec();
    let ch = spec.channels.max(1) as usize;
    let all = samples_f32(&mut r).map_err(err)?;
    let mono = all
        .chunks_exact(ch)
        .map(|f| f.iter().sum::<f32>() / ch as f32)
        .collect();
    Ok((mono, spec.sample_rate))
}

/// Converts little-endian signed 16-bit PCM bytes to samples (an odd trailing byte is kept
/// by the caller for the next chunk).
pub fn pcm16le_to_f32(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(2)
        .map(|b| i16::from_le_bytes([b[0], b[1]]) as f32 / 32768.0)
        .collect()
}

/// Converts samples to little-endian signed 16-bit PCM bytes.
pub fn f32_to_pcm16le(samples: &[f32]) -> Vec<u8> {
    samples
        .iter()
        .flat_map(|s| ((s.clamp(-1.0, 1.0) * i16::MAX as f32) as i16).to_le_bytes())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wav_round_trip_at_16k() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.wav");
        let s: Vec<f32> = (0..1600).map(|i| ((i as f32) * 0.05).sin() * 0.5).collect();
        write_mono(&p, &s, 16_000).unwrap();
        let back = read_16k_mono(&p).unwrap();
        assert_eq!(back.len(), 1600);
        assert!(back.iter().zip(&s).all(|(a, b)| (a - b).abs() < 1e-3));
        assert!(matches!(
            read_16k_mono(&dir.path().join("missing.wav")),
            Err(AudioError::File { .. })
        ));
    }

    #[test]
    fn encoded_16k_wav_decodes_back() {
        let w = encode_16k_mono(&[0.0, 0.5, -0.5]);
        let (s, rate) = decode_wav_bytes(&w).unwrap();
        assert_eq!((s.len(), rate), (3, 16_000));
        assert!((s[1] - 0.5).abs() < 1e-3);
    }

    #[test]
    fn pcm16_conversions() {
        let b = f32_to_pcm16le(&[0.0, 0.5, -1.0]);
        let back = pcm16le_to_f32(&b);
        assert!((back[1] - 0.5).abs() < 1e-3 && (back[2] + 1.0).abs() < 1e-3);
    }
}
