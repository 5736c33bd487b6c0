//! Audio in and out.
//!
//! # Layout
//! - `resample`: downmix + resample to 16 kHz mono (rubato), RMS level.
//! - `silence`: speech and silence in 20 ms frames: where speech ends, what a pause is.
//! - `capture`: a worker thread owns the cpal input stream; the callback only copies samples
//!   into a lock-free ring; the worker converts them off the callback.
//! - `host`: which audio system a stream goes through (ALSA, or PulseAudio's own protocol
//!   for the default microphone on Linux).
//! - `input`: [`input::AudioInput`], where utterances come from: the microphone,
//!   recordings played as live speech (`hark talk --wav FILE --live`, the latency
//!   benchmark), or a scripted source for tests.
//! - `open_mic`: a microphone kept open for hands-free listening: a ring of the last
//!   seconds, a tap for the voice activity detector, and utterances that start in the ring
//!   (the pre-roll keeps the first syllable).
//! - `vad`: voice activity: Silero VAD on ONNX Runtime rates 32 ms frames, and a pure gate
//!   turns the ratings into speech started and speech ended.
//! - `turn`: the end of a turn by how the words sound: Smart Turn v3 on ONNX Runtime,
//!   from the Whisper log-mel features it was trained on.
//! - `echo`: echo cancellation (WebRTC's AEC3, as the pure-Rust `sonora`) with what the
//!   speaker played as the reference, tapped where the output device takes it.
//! - `cue`: the start and stop sounds of push-to-talk.
//! - `playback`: a rodio player fed sentence by sentence, flushed instantly on barge-in,
//!   counting the samples actually played so the "heard" text is known.
//! - `wav`: reading and writing WAV files (`hark talk --wav`, `--out`).

pub mod capture;
pub mod cue;
pub mod echo;
pub(crate) mod host;
pub mod input;
pub mod open_mic;
pub mod playback;
pub mod resample;
pub mod silence;
pub mod turn;
pub mod vad;
pub mod wav;

use cpal::traits::{DeviceTrait, HostTrait};

use crate::error::ErrorKind;
use serde::Serialize;

/// Whether a stream goes on by itself after cpal reported `e` on it: an xrun (cpal prepares
/// the device again: a glitch, not a failure), a default device's stream following a new
/// route, a refused real-time priority. Anything else may have stopped it.
pub(crate) fn stream_goes_on(e: &cpal::Error) -> bool {
    matches!(
        e.kind(),
        cpal::ErrorKind::Xrun | cpal::ErrorKind::DeviceChanged | cpal::ErrorKind::RealtimeDenied
    )
}

/// Audio failures, each naming the device or format at fault. The message is in words a
/// user understands; what the audio library said is kept apart ([`AudioError::detail`]) for
/// a "details" disclosure and the log.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum AudioError {
    #[error("no microphone found")]
    NoInputDevice,
    #[error("no speaker found")]
    NoOutputDevice,
    #[error("the microphone {device:?} cannot be used")]
    Input { device: String, detail: String },
    #[error("the speaker {device:?} cannot be used")]
    Output { device: String, detail: String },
    #[error("the speaker {device:?} stopped playing (nothing was played for {secs} s)")]
    Stalled { device: String, secs: u64 },
    #[error("unsupported audio format: {0}")]
    Format(String),
    #[error("cannot read or write audio file {path}: {message}")]
    File { path: String, message: String },
}

impl AudioError {
    /// Which part of the taxonomy this is (the microphone's failures never read as network
    /// trouble).
    pub fn kind(&self) -> ErrorKind {
        match self {
            AudioError::NoInputDevice | AudioError::Input { .. } => ErrorKind::Microphone,
            AudioError::NoOutputDevice | AudioError::Output { .. } | AudioError::Stalled { .. } => ErrorKind::Speaker,
            AudioError::Format(_) | AudioError::File { .. } => ErrorKind::Audio,
        }
    }

    /// What the audio library said, when it said something.
    pub fn detail(&self) -> Option<&str> {
        match self {
            AudioError::Input { detail, .. } | AudioError::Output { detail, .. } => Some(detail),
            _ => None,
        }
    }

    pub fn input(device: &str, detail: impl std::fmt::Display) -> Self {
        AudioError::Input {
            device: device.to_string(),
            detail: detail.to_string(),
        }
    }

    pub fn output(device: &str, detail: impl std::fmt::Display) -> Self {
        AudioError::Output {
            device: device.to_string(),
            detail: detail.to_string(),
        }
    }
}

pub(crate) fn cpal_error(input: bool, device: &str, e: cpal::Error) -> AudioError {
    let detail = match e.kind() {
        cpal::ErrorKind::DeviceNotAvailable => format!("not available (disconnected?): {e}"),
        _ => e.to_string(),
    };
    if input {
        AudioError::input(device, detail)
    } else {
        AudioError::output(device, detail)
    }
}

/// An audio device, for the settings list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct DeviceInfo {
    /// Stable id to select it with.
    pub id: String,
    /// Human-readable name.
    pub name: String,
    pub is_default: bool,
}

/// Lists input (`true`) or output devices of the default host.
pub fn list_devices(input: bool) -> Result<Vec<DeviceInfo>, AudioError> {
    let host = host::platform_host();
    let default = if input {
        host.default_input_device()
    } else {
        host.default_output_device()
    };
    let default_id = default.and_then(|d| d.id().ok()).map(|i| i.to_string());
    let devices = if input {
        host.input_devices()
    } else {
        host.output_devices()
    };
    let devices = devices.map_err(|e| {
        if input {
            AudioError::input("default", e)
        } else {
            AudioError::output("default", e)
        }
    })?;
    Ok(devices
        .filter_map(|d| {
            let id = d.id().ok()?.to_string();
            let name = d
                .description()
                .map(|x| x.name().to_string())
                .unwrap_or_else(|_| id.clone());
            Some(DeviceInfo {
                is_default: Some(&id) == default_id.as_ref(),
                id,
                name,
            })
        })
        .collect())
}

/// Finds a device by id or name (`None`: the default one).
pub(crate) fn find_device(input: bool, wanted: Option<&str>) -> Result<cpal::Device, AudioError> {
    let host = host::platform_host();
    let Some(wanted) = wanted else {
        let d = if input {
            host.default_input_device()
        } else {
            host.default_output_device()
        };
        return d.ok_or(if input {
            AudioError::NoInputDevice
        } else {
            AudioError::NoOutputDevice
        });
    };
    let devices = if input {
        host.input_devices()
    } else {
        host.output_devices()
    };
    let unavailable = |detail: String| {
        if input {
            AudioError::input(wanted, detail)
        } else {
            AudioError::output(wanted, detail)
        }
    };
    devices
        .map_err(|e| unavailable(e.to_string()))?
        .find(|d| {
            d.id().map(|i| i.to_string() == wanted).unwrap_or(false)
                || d.description().map(|x| x.name() == wanted).unwrap_or(false)
        })
        .ok_or_else(|| unavailable("no such device (disconnected?)".into()))
}
