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

/// Sample rates Hark accepts in a WAV header: telephone quality to studio masters.
const RATES: std::ops::RangeInclusive<u32> = 4_000..=384_000;
/// Channel counts Hark accepts (up to a 7.1.4 mix and then some).
const CHANNELS: std::ops::RangeInclusive<u16> = 1..=32;

/// Refuses a header no real recording has (a sample rate of 0 or four billion, no
/// channels, a sample width the decoder would shift by nonsense) before any sample is read
/// (issue 9).
fn check_spec(spec: &hound::WavSpec) -> Result<(), AudioError> {
    let bits_ok = match spec.sample_format {
        hound::SampleFormat::Int => (8..=32).contains(&spec.bits_per_sample),
        hound::SampleFormat::Float => spec.bits_per_sample == 32,
    };
    if !RATES.contains(&spec.sample_rate) {
        return Err(AudioError::Format(format!(
            "a sample rate of {} Hz (Hark reads {} to {} Hz)",
            spec.sample_rate,
            RATES.start(),
            RATES.end()
        )));
    }
    if !CHANNELS.contains(&spec.channels) {
        return Err(AudioError::Format(format!(
            "{} channels (Hark reads 1 to {})",
            spec.channels,
            CHANNELS.end()
        )));
    }
    if !bits_ok {
        return Err(AudioError::Format(format!(
            "{}-bit {:?} samples (Hark reads 8 to 32-bit integers and 32-bit floats)",
            spec.bits_per_sample, spec.sample_format
        )));
    }
    Ok(())
}

/// Any PCM WAV (8/16/24/32-bit integer or 32-bit float, any plausible rate and channels)
/// as 16 kHz mono.
fn to_16k_mono<R: std::io::Read>(mut r: hound::WavReader<R>) -> Result<Vec<f32>, AudioError> {
    let spec = r.spec();
    check_spec(&spec)?;
    let samples = samples_f32(&mut r).map_err(|e| AudioError::Format(format!("WAV data: {e}")))?;
    let mut conv = ToMono16k::new(spec.sample_rate, spec.channels)?;
    let mut out = Vec::with_capacity(samples.len() * STT_RATE as usize / spec.sample_rate as usize + 16);
    conv.push(&samples, &mut out);
    conv.finish(&mut out);
    Ok(out)
}

/// Reads a WAV file as 16 kHz mono.
pub fn read_16k_mono(path: &Path) -> Result<Vec<f32>, AudioError> {
    let r = hound::WavReader::open(path).map_err(|e| file_err(path, e))?;
    to_16k_mono(r).map_err(|e| match e {
        AudioError::Format(m) => file_err(path, m),
        other => other,
    })
}

/// WAV bytes as 16 kHz mono (what `read_16k_mono` does, from memory: uploads, fuzzing).
pub fn bytes_16k_mono(bytes: &[u8]) -> Result<Vec<f32>, AudioError> {
    let r =
        hound::WavReader::new(std::io::Cursor::new(bytes)).map_err(|e| AudioError::Format(format!("WAV data: {e}")))?;
    to_16k_mono(r)
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
    check_spec(&spec)?;
    let ch = spec.channels as usize;
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

    /// A WAV header with the given rate, channels and bits, and a few bytes of data.
    fn header(rate: u32, channels: u16, bits: u16) -> Vec<u8> {
        let data = [0u8; 16];
        let block = channels.wrapping_mul(bits / 8);
        let mut w = Vec::new();
        w.extend_from_slice(b"RIFF");
        w.extend_from_slice(&(36 + data.len() as u32).to_le_bytes());
        w.extend_from_slice(b"WAVEfmt ");
        w.extend_from_slice(&16u32.to_le_bytes());
        w.extend_from_slice(&1u16.to_le_bytes());
        w.extend_from_slice(&channels.to_le_bytes());
        w.extend_from_slice(&rate.to_le_bytes());
        w.extend_from_slice(&rate.wrapping_mul(block as u32).to_le_bytes());
        w.extend_from_slice(&block.to_le_bytes());
        w.extend_from_slice(&bits.to_le_bytes());
        w.extend_from_slice(b"data");
        w.extend_from_slice(&(data.len() as u32).to_le_bytes());
        w.extend_from_slice(&data);
        w
    }

    /// Issue 9: implausible sample rates or channel counts reached the resampler (a rate of
    /// 0 divided by zero; billions of Hz asked for gigabytes).
    #[test]
    fn wav_headers_with_implausible_rates_or_channels_are_refused() {
        assert!(bytes_16k_mono(&header(16_000, 1, 16)).is_ok(), "a sane header reads");
        for (rate, ch, bits) in [
            (0, 1, 16),
            (1, 1, 16),
            (4_000_000_000, 1, 16),
            (48_000, 200, 16),
            (48_000, 1, 64),
        ] {
            let e = bytes_16k_mono(&header(rate, ch, bits)).unwrap_err();
            assert!(
                matches!(e, AudioError::Format(_)),
                "{rate} Hz, {ch} ch, {bits} bit: {e:?}"
            );
            assert!(decode_wav_bytes(&header(rate, ch, bits)).is_err());
        }
        let e = bytes_16k_mono(&header(1_000_000_000, 1, 16)).unwrap_err();
        assert!(e.to_string().contains("1000000000 Hz"), "{e}");
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
