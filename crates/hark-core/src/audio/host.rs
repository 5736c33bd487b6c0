//! Which audio system a stream goes through.
//!
//! Devices are listed, found by id or name, and played on through the platform's own host:
//! ALSA on Linux (also when a sound server runs: its ALSA plugin is the `default` device),
//! WASAPI on Windows, CoreAudio on macOS. The ids saved in the settings are that host's.
//!
//! The default microphone on Linux is captured through PulseAudio's own protocol when a
//! PulseAudio server (or PipeWire's pulse server) answers: [`default_pulse_input`]. Over
//! the ALSA plugin a 20 ms capture period costs most of a core, as cpal's ALSA backend
//! polls the plugin's file descriptors in a loop (measured side by side in a test program:
//! 97 % of a core at 16 kHz mono against 2.3 % natively; `scripts/bench-hands-free.sh`
//! prints what listening costs, by thread); hands-free listening keeps the microphone open
//! for hours. The server also resamples to 16 kHz mono, so
//! nothing is resampled here. A named device, or a machine without a server, goes
//! through ALSA as before.

/// The host devices are listed, found and played on.
pub(crate) fn platform_host() -> cpal::Host {
    #[cfg(target_os = "linux")]
    {
        // cpal's `default_host()` prefers PulseAudio once its `pulseaudio` feature is on;
        // listing and playback stay on ALSA, whose device ids the settings hold.
        if let Ok(h) = cpal::host_from_id(cpal::HostId::Alsa) {
            return h;
        }
    }
    cpal::default_host()
}

/// The default PulseAudio source, through the process's one connection to the server, or
/// `None` where no server answers (then the caller takes ALSA). A connection found dead
/// (the server restarted) is made again once.
#[cfg(target_os = "linux")]
pub(crate) fn default_pulse_input() -> Option<cpal::Device> {
    use cpal::traits::HostTrait;
    use std::sync::Mutex;
    // One client for the process: the `pulseaudio` crate's client keeps a reactor thread
    // in a blocking poll that nothing wakes when the client is dropped, so a client per
    // push-to-talk press would leave a thread and a socket behind each time.
    static CLIENT: Mutex<Option<cpal::Host>> = Mutex::new(None);
    // Whether a server's socket is named in the environment (nothing is connected yet).
    if !cpal::available_hosts().contains(&cpal::HostId::PulseAudio) {
        return None;
    }
    let mut client = CLIENT.lock().unwrap_or_else(|p| p.into_inner());
    for _ in 0..2 {
        if client.is_none() {
            match cpal::host_from_id(cpal::HostId::PulseAudio) {
                Ok(h) => *client = Some(h),
                Err(e) => {
                    tracing::debug!("no PulseAudio server, capturing through ALSA: {e}");
                    return None;
                }
            }
        }
        if let Some(d) = client.as_ref().and_then(|h| h.default_input_device()) {
            return Some(d);
        }
        // The server went away or restarted: connect again, once.
        *client = None;
    }
    None
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn default_pulse_input() -> Option<cpal::Device> {
    None
}
