//! The WAV decoders (16 kHz mono for speech-to-text, mono at its rate for voices) on any
//! bytes: samples or a format error, never a panic or a runaway allocation.
#![no_main]

use hark_core::audio::wav;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = wav::bytes_16k_mono(data) {
        assert!(s.iter().all(|x| x.is_finite() || x.is_nan()));
    }
    let _ = wav::decode_wav_bytes(data);
});
