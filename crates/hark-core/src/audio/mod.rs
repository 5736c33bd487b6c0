//! Audio in and out.
//!
//! # Layout
//! - `resample`: downmix + resample to 16 kHz mono (rubato), RMS level.
//! - `capture`: a worker thread owns the cpal input stream; the callback only copies samples
//!   into a lock-free ring; the worker converts them off the callback.
//! - `playback`: a rodio player fed sentence by sentence, flushed instantly on barge-in,
//!   counting the samples actually played so the "heard" text is known.
//! - `wav`: reading and writing WAV files (`hark talk --wav`, `--out`).

pub mod capture;
pub mod playback;
pub mod resample;
pub mod wav;

use cpal::traits::{DeviceTrait, HostTrait};
use serde::Serialize;

/// Audio failures, each naming the device or format at fault.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum AudioError {
    #[error("no microphone found: connect one or choose another input device")]
    NoInputDevice,
    #[error("no speaker found: connect one or choose another output device")]
    NoOutputDevice,
    #[error("the audio device {0:?} is not available (disconnected?)")]
    DeviceNotAvailable(String),
    #[error("the audio stream failed: {0}")]
    Stream(String),
    #[error("unsupported audio format: {0}")]
    Format(String),
    #[error("cannot read or write audio file {path}: {message}")]
    File { path: String, message: String },
}

pub(crate) fn cpal_error(device: &str, e: cpal::Error) -> AudioError {
    match e.kind() {
        cpal::ErrorKind::DeviceNotAvailable => AudioError::DeviceNotAvailable(device.to_string()),
        _ => AudioError::Stream(format!("{device}: {e}")),
    }
}

/// An audio device, for the settings list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeviceInfo {
    /// Stable id to select it with.
    pub id: String,
    /// Human-readable name.
    pub name: String,
    pub is_default: bool,
}

/// Lists input (`true`) or output devices of the default host.
pub fn list_devices(input: bool) -> Result<Vec<DeviceInfo>, AudioError> {
    let host = cpal::default_host();
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
    let devices = devices.map_err(|e| AudioError::Stream(e.to_string()))?;
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
    let host = cpal::default_host();
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
    devices
        .map_err(|e| AudioError::Stream(e.to_string()))?
        .find(|d| {
            d.id().map(|i| i.to_string() == wanted).unwrap_or(false)
                || d.description().map(|x| x.name() == wanted).unwrap_or(false)
        })
        .ok_or_else(|| AudioError::DeviceNotAvailable(wanted.to_string()))
}
