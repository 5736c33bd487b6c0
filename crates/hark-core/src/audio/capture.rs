//! Microphone capture: cpal stream on a worker thread, 16 kHz mono out.
//!
//! The cpal callback only copies samples into a lock-free ring buffer (no allocation, no
//! lock); the worker thread drains it every 20 ms, downmixes and resamples (rubato), updates
//! the input level and sends 16 kHz chunks to the async side. The stream is opened per
//! utterance, so a device that vanished and came back simply works on the next press.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use cpal::traits::{DeviceTrait, StreamTrait};
use cpal::SizedSample;
use tokio::sync::mpsc;

use super::host;
use super::resample::{rms, ToMono16k, STT_RATE};
use super::{cpal_error, find_device, stream_goes_on, AudioError};

/// What the opened device delivers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureInfo {
    pub device: String,
    pub sample_rate: u32,
    pub channels: u16,
    pub sample_format: String,
}

/// A running capture. Drop or [`Capture::stop`] ends it.
pub struct Capture {
    info: CaptureInfo,
    /// Tells the worker to finish.
    stop: Arc<AtomicBool>,
    worker: Option<JoinHandle<()>>,
    /// RMS level of the last 20 ms, as f32 bits (read by the UI meter at any time).
    level: Arc<AtomicU32>,
    /// 16 kHz mono chunks, in order; closed when the worker ends.
    chunks: mpsc::UnboundedReceiver<Vec<f32>>,
    /// A stream error reported by cpal (device vanished), if any.
    failure: Arc<Mutex<Option<AudioError>>>,
    /// When the first samples arrived.
    first_data: Arc<Mutex<Option<Instant>>>,
}

/// How long the device may take to open before the press fails.
const OPEN_TIMEOUT: Duration = Duration::from_secs(10);

impl Capture {
    /// Opens the input device (`None`: the default) and starts capturing.
    pub fn start(device: Option<&str>) -> Result<Self, AudioError> {
        let wanted = device.map(str::to_string);
        Self::start_with(move |failure| open(wanted.as_deref(), failure), OPEN_TIMEOUT)
    }

    /// Opens a source on the worker thread with `open` and starts capturing. If it does not
    /// open within `timeout` the press fails, and the worker lets go of the device the moment
    /// the late open returns: a timed-out open never keeps the microphone (issue 9).
    fn start_with<S: 'static>(
        open: impl FnOnce(Arc<Mutex<Option<AudioError>>>) -> Result<(S, CaptureInfo, rtrb::Consumer<f32>), AudioError>
            + Send
            + 'static,
        timeout: Duration,
    ) -> Result<Self, AudioError> {
        let stop = Arc::new(AtomicBool::new(false));
        let level = Arc::new(AtomicU32::new(0));
        let failure = Arc::new(Mutex::new(None));
        let first_data = Arc::new(Mutex::new(None));
        let (chunk_tx, chunks) = mpsc::unbounded_channel();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (s, l, f, fd) = (stop.clone(), level.clone(), failure.clone(), first_data.clone());
        let worker = std::thread::Builder::new()
            .name("hark-capture".into())
            .spawn(move || {
                let opened = open(f.clone());
                worker(opened, s, l, f, fd, chunk_tx, ready_tx)
            })
            .map_err(|e| AudioError::input("default", format!("cannot start the capture thread: {e}")))?;
        let info = match ready_rx.recv_timeout(timeout) {
            Ok(r) => r?,
            Err(_) => {
                // The worker sees `stop` (and the closed channel) once the open returns.
                stop.store(true, Ordering::SeqCst);
                drop(ready_rx);
                drop(worker);
                return Err(AudioError::input(
                    "default",
                    format!("the input device did not open within {} s", timeout.as_secs()),
                ));
            }
        };
        Ok(Self {
            info,
            stop,
            worker: Some(worker),
            level,
            chunks,
            failure,
            first_data,
        })
    }

    pub fn info(&self) -> &CaptureInfo {
        &self.info
    }

    /// The current input level (RMS of the last ~20 ms), 0.0–1.0.
    pub fn level(&self) -> f32 {
        f32::from_bits(self.level.load(Ordering::Relaxed))
    }

    /// When the device delivered its first samples.
    pub fn first_data_at(&self) -> Option<Instant> {
        *self.first_data.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The next 16 kHz chunk; `None` once the capture has ended.
    pub async fn next_chunk(&mut self) -> Option<Vec<f32>> {
        self.chunks.recv().await
    }

    /// Stops and returns every sample not yet taken with `next_chunk`, or the device error
    /// that ended the capture.
    pub fn stop(mut self) -> Result<Vec<f32>, AudioError> {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
        let mut rest = Vec::new();
        while let Ok(c) = self.chunks.try_recv() {
            rest.extend(c);
        }
        match self.failure.lock().unwrap_or_else(|p| p.into_inner()).take() {
            Some(e) => Err(e),
            None => Ok(rest),
        }
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
    }
}

fn worker<S>(
    opened: Result<(S, CaptureInfo, rtrb::Consumer<f32>), AudioError>,
    stop: Arc<AtomicBool>,
    level: Arc<AtomicU32>,
    failure: Arc<Mutex<Option<AudioError>>>,
    first_data: Arc<Mutex<Option<Instant>>>,
    chunk_tx: mpsc::UnboundedSender<Vec<f32>>,
    ready: std::sync::mpsc::Sender<Result<CaptureInfo, AudioError>>,
) {
    let (stream, info, mut consumer) = match opened {
        Ok(x) => x,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    // Nobody waits any more (the open timed out): close the device at once.
    if stop.load(Ordering::SeqCst) || ready.send(Ok(info.clone())).is_err() {
        drop(stream);
        return;
    }
    let mut conv = match ToMono16k::new(info.sample_rate, info.channels) {
        Ok(c) => c,
        Err(e) => {
            *failure.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
            return;
        }
    };
    let mut raw = Vec::with_capacity(info.sample_rate as usize);
    let mut out = Vec::new();
    loop {
        let stopping = stop.load(Ordering::SeqCst);
        let n = consumer.slots();
        if n > 0 {
            if let Ok(chunk) = consumer.read_chunk(n) {
                raw.extend(chunk);
            }
            let mut first = first_data.lock().unwrap_or_else(|p| p.into_inner());
            first.get_or_insert_with(Instant::now);
        }
        if !raw.is_empty() {
            level.store(rms(&raw).to_bits(), Ordering::Relaxed);
            conv.push(&raw, &mut out);
            raw.clear();
        }
        if stopping {
            conv.finish(&mut out);
        }
        if !out.is_empty() {
            let _ = chunk_tx.send(std::mem::take(&mut out));
        }
        if stopping || failure.lock().map(|f| f.is_some()).unwrap_or(true) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(stream);
}

type Opened = (cpal::Stream, CaptureInfo, rtrb::Consumer<f32>);

/// cpal's error callback for the input `name`: an error the stream does not go on from
/// ends the capture with it; an xrun (an overrun when the machine is busy: cpal prepares
/// the device again, and a few milliseconds are lost) is only logged. Ending on an xrun
/// stopped hands-free listening for good, and failed a push-to-talk turn, on a busy
/// machine.
fn on_stream_error(name: String, failure: Arc<Mutex<Option<AudioError>>>) -> impl FnMut(cpal::Error) + Send + 'static {
    move |e: cpal::Error| {
        if stream_goes_on(&e) {
            tracing::debug!("input stream on {name}: {e}");
            return;
        }
        tracing::warn!("input stream error on {name}: {e}");
        *failure.lock().unwrap_or_else(|p| p.into_inner()) = Some(cpal_error(true, &name, e));
    }
}

fn open(wanted: Option<&str>, failure: Arc<Mutex<Option<AudioError>>>) -> Result<Opened, AudioError> {
    if wanted.is_none() {
        if let Some(device) = host::default_pulse_input() {
            // The server converts to what the recogniser takes: 16 kHz mono, 20 ms at a time.
            let config = cpal::StreamConfig {
                channels: 1,
                sample_rate: STT_RATE,
                buffer_size: cpal::BufferSize::Fixed(STT_RATE / 50),
            };
            match open_device(device, Some((config, cpal::SampleFormat::F32)), failure.clone()) {
                Ok(opened) => {
                    tracing::debug!("capturing from {} through PulseAudio", opened.1.device);
                    return Ok(opened);
                }
                // A server that refused the stream: ALSA's plugin may still reach it.
                Err(e) => tracing::warn!("PulseAudio capture failed, trying ALSA: {e} ({:?})", e.detail()),
            }
        }
    }
    open_device(find_device(true, wanted)?, None, failure)
}

/// Opens `device` with `config` (`None`: its default format, about 20 ms a callback).
fn open_device(
    device: cpal::Device,
    config: Option<(cpal::StreamConfig, cpal::SampleFormat)>,
    failure: Arc<Mutex<Option<AudioError>>>,
) -> Result<Opened, AudioError> {
    let name = device
        .description()
        .map(|d| d.name().to_string())
        .unwrap_or_else(|_| "input".into());
    let (config, format) = match config {
        Some(c) => c,
        None => {
            let supported = device.default_input_config().map_err(|e| cpal_error(true, &name, e))?;
            let mut config = supported.config();
            config.buffer_size = buffer_size(supported.buffer_size(), config.sample_rate);
            (config, supported.sample_format())
        }
    };
    let info = CaptureInfo {
        device: name.clone(),
        sample_rate: config.sample_rate,
        channels: config.channels,
        sample_format: format!("{format:?}"),
    };
    // Two seconds of room: the worker drains every 20 ms, so this only fills if it stalls.
    let (producer, consumer) = rtrb::RingBuffer::<f32>::new(config.sample_rate as usize * config.channels as usize * 2);
    let on_error = on_stream_error(name.clone(), failure);
    let stream = match format {
        cpal::SampleFormat::F32 => build::<f32>(&device, config, producer, on_error),
        cpal::SampleFormat::I16 => build::<i16>(&device, config, producer, on_error),
        cpal::SampleFormat::U16 => build::<u16>(&device, config, producer, on_error),
        cpal::SampleFormat::I32 => build::<i32>(&device, config, producer, on_error),
        cpal::SampleFormat::U8 => build::<u8>(&device, config, producer, on_error),
        other => return Err(AudioError::Format(format!("{name} delivers {other:?} samples"))),
    }
    .map_err(|e| cpal_error(true, &name, e))?;
    stream.play().map_err(|e| cpal_error(true, &name, e))?;
    Ok((stream, info, consumer))
}

/// About 20 ms per callback. The host's default can be a tiny period that makes the ALSA
/// backend poll continuously (half a core on the PulseAudio plugin); 20 ms costs a fraction
/// of a percent and adds no latency that matters to push-to-talk.
pub(crate) fn buffer_size(range: &cpal::SupportedBufferSize, rate: u32) -> cpal::BufferSize {
    let want = (rate / 50).max(64);
    match range {
        cpal::SupportedBufferSize::Range { min, max } => cpal::BufferSize::Fixed(want.clamp(*min, *max)),
        cpal::SupportedBufferSize::Unknown => cpal::BufferSize::Default,
    }
}

fn build<T: SizedSample>(
    device: &cpal::Device,
    config: cpal::StreamConfig,
    mut producer: rtrb::Producer<f32>,
    on_error: impl FnMut(cpal::Error) + Send + 'static,
) -> Result<cpal::Stream, cpal::Error>
where
    f32: cpal::FromSample<T>,
{
    device.build_input_stream::<T, _, _>(
        config,
        // The real-time callback: copy out, nothing else. A full ring drops samples rather
        // than block the audio thread.
        move |data: &[T], _| {
            for &s in data {
                let _ = producer.push(s.to_sample::<f32>());
            }
        },
        on_error,
        None,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Drops are counted: the stand-in for a device that holds the microphone while open.
    struct Held(Arc<AtomicBool>);
    impl Drop for Held {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    fn info() -> CaptureInfo {
        CaptureInfo {
            device: "slow mic".into(),
            sample_rate: 16_000,
            channels: 1,
            sample_format: "F32".into(),
        }
    }

    /// Issue 9: a device that opens after the press gave up used to stay open on the
    /// orphaned worker thread, holding the microphone for good.
    #[test]
    fn the_capture_thread_never_outlives_a_timed_out_open() {
        let released = Arc::new(AtomicBool::new(false));
        let r = released.clone();
        // The device opens only when the test lets it, after the press has returned: an
        // ordering, not a stopwatch (issue 21), that the press did not wait for it.
        let (open_now, opening) = std::sync::mpsc::channel::<()>();
        let result = Capture::start_with(
            move |_| {
                let _ = opening.recv();
                let (_p, c) = rtrb::RingBuffer::<f32>::new(16);
                Ok((Held(r), info(), c))
            },
            Duration::from_millis(50),
        );
        assert!(
            matches!(result, Err(AudioError::Input { .. })),
            "the press fails at the timeout, without waiting for the device"
        );
        assert!(!released.load(Ordering::SeqCst), "the device has not opened yet");
        open_now.send(()).unwrap();
        // Opening and dropping the stand-in takes microseconds; 5 s only catches a device
        // that is never let go.
        let deadline = Instant::now() + Duration::from_secs(5);
        while !released.load(Ordering::SeqCst) {
            assert!(Instant::now() < deadline, "the late device was never let go");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn an_overrun_is_a_glitch_and_a_lost_device_ends_the_capture() {
        let failure = Arc::new(Mutex::new(None));
        let mut report = on_stream_error("usb mic".into(), failure.clone());
        for kind in [
            cpal::ErrorKind::Xrun,
            cpal::ErrorKind::DeviceChanged,
            cpal::ErrorKind::RealtimeDenied,
        ] {
            report(cpal::Error::new(kind));
            assert_eq!(*failure.lock().unwrap(), None, "{kind:?} ended the capture");
        }
        report(cpal::Error::new(cpal::ErrorKind::DeviceNotAvailable));
        assert!(matches!(
            failure.lock().unwrap().as_ref(),
            Some(AudioError::Input { device, .. }) if device == "usb mic"
        ));
    }

    #[test]
    fn a_device_lost_mid_capture_ends_the_stream_with_its_error() {
        let lost = Arc::new(AtomicBool::new(false));
        let l = lost.clone();
        let mut cap = Capture::start_with(
            move |failure| {
                let (mut p, c) = rtrb::RingBuffer::<f32>::new(16_000);
                for _ in 0..3200 {
                    let _ = p.push(0.1);
                }
                // The device vanishes a little later, as cpal's error callback reports it.
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(100));
                    *failure.lock().unwrap() = Some(AudioError::input("usb mic", "device disconnected"));
                    drop(p);
                });
                Ok((Held(l), info(), c))
            },
            Duration::from_secs(5),
        )
        .unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let got: usize = rt.block_on(async {
            let mut n = 0;
            while let Some(c) = cap.next_chunk().await {
                n += c.len();
            }
            n
        });
        assert!(got > 0, "the audio before the loss is kept");
        assert!(lost.load(Ordering::SeqCst), "the worker let go of the device");
        assert!(matches!(cap.stop(), Err(AudioError::Input { ref device, .. }) if device == "usb mic"));
    }
}
