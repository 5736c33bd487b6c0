//! Echo cancellation with Hark's own playback as the reference (issue 23): what lets Hark
//! listen while it speaks, with the speakers next to the microphone, and be interrupted
//! by voice.
//!
//! Hark plays its voice through its own output, so it holds the exact signal to cancel.
//! [`EchoReference`] collects it where the device takes it: the speaker's relay, which
//! feeds the device stream from Hark's mixer, copies every frame it hands over ([`RefTap`]),
//! silence included, downmixed to mono at the device's rate. That stream runs on the
//! output device's clock, sample for sample as it is played, so its echo in the microphone
//! keeps one delay from reply to reply, which is what AEC3's linear filter needs to stay
//! converged. (Copying each reply's samples as the mixer pulled them, as Hark did first,
//! left a gap wherever nothing played and restarted the timeline at each reply: the delay
//! moved by up to 20 ms from one reply to the next and drifted by 160 ppm within one, the
//! linear filter never converged, and AEC3's suppressor, cancelling on its own, swallowed a
//! "Stop" spoken as the reply resumed after a pause: in one recorded session of 40 turns, 4
//! barge-ins waited some 900 ms for the words after it.)
//!
//! [`EchoCanceller`] is WebRTC's AEC3 (the pure-Rust port `sonora`, which screenpipe, a
//! Tauri app, settled on after a home-made adaptive filter gave ~0 dB): it resamples the
//! reference to 16 kHz, and for each 10 ms of microphone audio first hands AEC3 the
//! reference played meanwhile, then the capture, and keeps what AEC3 leaves of the user's
//! voice. AEC3 finds the delay between the two itself.
//!
//! While the speaker has played only silence for [`REST_AFTER`] there is no echo to
//! cancel, and AEC3 rests: the microphone only goes through the same high-pass filter, so
//! the detector hears the room as it does through AEC3 (whose gain is 1 without an echo).
//! The first frame that is not silence wakes a fresh AEC3, which converges within the
//! reply's first moments on a reference this exact. (Waking the one that rested, with its
//! state, did not work once the reference kept its lead: in replays of one recorded session
//! its linear filter, 20-25 dB on its own when AEC3 never rested, came back diverged, and
//! 23 to 30 of 40 barge-ins came late; with a fresh one, none, and Hark heard itself in
//! none of the replies' first seconds.) Resting saves what AEC3 costs, about 1.5 % of a
//! core here (150 µs per 10 ms), for as long as Hark is silent. A reply paused while a voice
//! over it is checked (issue 49) is no rest: it goes on where it was, with the same echo.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use sonora::config::{EchoCanceller as AecConfig, HighPassFilter};
use sonora::{AudioProcessing, Config, StreamConfig};

use super::resample::{ToMono16k, STT_RATE};

/// Samples in one of AEC3's frames (10 ms at 16 kHz).
pub const AEC_FRAME: usize = STT_RATE as usize / 100;
/// The reference kept at most, in milliseconds: more than this waiting means the
/// microphone's side fell behind (or no canceller is listening), and the oldest is dropped
/// (AEC3 looks for the echo within about half a second).
const REFERENCE_MAX_MS: usize = 300;
/// A device that has taken nothing for this long has stalled (it failed, or is being opened
/// again): the canceller counts it as playing silence.
const STALLED_AFTER: Duration = Duration::from_millis(200);
/// Silence from the speaker this long, in 10 ms frames, lets AEC3 rest: longer than any
/// echo it models (its filter spans a few hundred milliseconds) and a room's reverberation.
pub const REST_AFTER: usize = 100;
/// A reference frame no louder than this (-100 dBFS) is silence.
const SILENT: f32 = 1e-5;
/// How long the microphone may still hear what the speaker played last: the echo's delay
/// and the room's ring (a virtual microphone hears the speaker a buffer late).
pub const ECHO_TAIL_MS: u64 = 300;
/// Device frames the resampler takes at a time (5 ms at 48 kHz): the reference must reach
/// AEC3 before its echo reaches the microphone, a few tens of milliseconds later.
const RESAMPLE_CHUNK: usize = 256;

#[derive(Debug, Default)]
struct Played {
    /// Mono samples at `rate`, not yet handed to the canceller.
    samples: VecDeque<f32>,
    /// The device's rate (0: no device yet).
    rate: u32,
    /// Counts the taps made: a device opened again (perhaps at another rate) starts a new
    /// stream, and the canceller starts its resampler afresh.
    stream: u64,
    /// When a tap last added to it.
    last: Option<Instant>,
}

/// What the speaker has played, as the device took it, for the canceller. Shared between
/// the audio thread (the tap) and the microphone's side; a std mutex, locked about once per
/// 10 ms on either side and never across an await.
#[derive(Debug, Default)]
pub struct EchoReference {
    played: Mutex<Played>,
    /// Cancellers reading it: with none, the tap copies nothing.
    readers: AtomicUsize,
    /// The reply is paused while a voice over it is checked (issue 49): its silence is no
    /// rest, and AEC3 keeps what it learnt, for the reply goes on where it was.
    held: AtomicBool,
}

/// What [`EchoReference::take`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Taken {
    /// Samples at `rate` of the device stream numbered `stream` (perhaps none yet).
    Played { rate: u32, stream: u64 },
    /// The device has taken nothing for [`STALLED_AFTER`], or never opened.
    Stalled,
}

/// Where the speaker's echo may reach, in the cleaned microphone's samples (counted from
/// the canceller's first): [`ECHO_TAIL_MS`] past the last frame in which the speaker
/// played a sound. Until there, a silence in the cleaned audio may be AEC3's: its
/// suppression takes the words said over Hark's voice down with the echo (the double-talk
/// the README's hands-free section describes), so hands-free does not take such a silence
/// for a pause of the user's ([`SpeechGate::hold_pauses_until`]).
///
/// [`SpeechGate::hold_pauses_until`]: super::vad::SpeechGate::hold_pauses_until
#[derive(Debug, Clone, Default)]
pub struct EchoWindow(Arc<AtomicU64>);

impl EchoWindow {
    /// The sample where the echo of what has been played so far ends (0: nothing played).
    pub fn until(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

impl EchoReference {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    fn lock(&self) -> MutexGuard<'_, Played> {
        // Only plain samples behind it; a panic elsewhere cannot leave it half-updated.
        self.played.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The reply is paused (`true`) or plays on (`false`): see [`EchoReference::held`].
    pub fn hold(&self, on: bool) {
        self.held.store(on, Ordering::Relaxed);
    }

    /// A tap for a device stream of `channels` interleaved channels at `rate`; it starts
    /// a new reference stream.
    pub fn tap(self: &Arc<Self>, rate: u32, channels: u16) -> RefTap {
        let mut p = self.lock();
        p.samples.clear();
        p.rate = rate;
        p.stream += 1;
        p.last = None;
        RefTap {
            reference: self.clone(),
            channels: usize::from(channels.max(1)),
            block: Vec::with_capacity(rate as usize / 100 + 64),
            flush_at: (rate as usize / 100).max(1),
        }
    }

    fn add(&self, block: &[f32]) {
        let mut p = self.lock();
        p.samples.extend(block.iter().copied());
        let max = p.rate as usize * REFERENCE_MAX_MS / 1000;
        let over = p.samples.len().saturating_sub(max);
        p.samples.drain(..over);
        p.last = Some(Instant::now());
    }

    /// Moves every sample played since the last call to `out`.
    fn take(&self, out: &mut Vec<f32>) -> Taken {
        let mut p = self.lock();
        out.extend(p.samples.drain(..));
        match p.last {
            Some(t) if t.elapsed() < STALLED_AFTER => Taken::Played {
                rate: p.rate,
                stream: p.stream,
            },
            _ if p.rate > 0 && !out.is_empty() => Taken::Played {
                rate: p.rate,
                stream: p.stream,
            },
            _ => Taken::Stalled,
        }
    }
}

/// Copies what the device takes into the reference, downmixed to mono, 10 ms at a time.
/// Lives in the speaker's relay, on the audio thread: a sum per frame, and a lock per
/// 10 ms only while a canceller reads the reference.
pub struct RefTap {
    reference: Arc<EchoReference>,
    channels: usize,
    block: Vec<f32>,
    flush_at: usize,
}

impl RefTap {
    /// The device took these interleaved samples (whole frames).
    pub fn push(&mut self, interleaved: &[f32]) {
        if self.reference.readers.load(Ordering::Relaxed) == 0 {
            self.block.clear();
            return;
        }
        let ch = self.channels;
        self.block
            .extend(interleaved.chunks_exact(ch).map(|f| f.iter().sum::<f32>() / ch as f32));
        if self.block.len() >= self.flush_at {
            self.reference.add(&self.block);
            self.block.clear();
        }
    }
}

/// AEC3 on the microphone, with the speaker's reference.
pub struct EchoCanceller {
    apm: AudioProcessing,
    /// The same high-pass filter alone, for the microphone while AEC3 rests.
    filter: AudioProcessing,
    reference: Arc<EchoReference>,
    /// The reference stream being resampled, and its resampler.
    stream: Option<(u64, ToMono16k)>,
    /// Device-rate reference just taken.
    device: Vec<f32>,
    /// 16 kHz reference not yet handed to AEC3.
    render: VecDeque<f32>,
    /// Capture samples waiting for a whole frame.
    pending: Vec<f32>,
    /// 10 ms frames of silence in a row from the speaker: AEC3 rests from [`REST_AFTER`] on.
    idle_frames: usize,
    /// Cleaned samples handed out so far: the microphone's position.
    cleaned: u64,
    window: EchoWindow,
}

/// WebRTC's AEC3 and its high-pass filter, at 16 kHz mono.
fn aec3() -> AudioProcessing {
    let config = Config {
        echo_canceller: Some(AecConfig::default()),
        high_pass_filter: Some(HighPassFilter::default()),
        // No noise suppression or gain control: the voice activity model and the
        // recogniser were measured on the microphone's own levels.
        ..Config::default()
    };
    let stream = StreamConfig::new(STT_RATE, 1);
    AudioProcessing::builder()
        .config(config)
        .capture_config(stream)
        .render_config(stream)
        .build()
}

impl EchoCanceller {
    pub fn new(reference: Arc<EchoReference>) -> Self {
        let filter = AudioProcessing::builder()
            .config(Config {
                high_pass_filter: Some(HighPassFilter::default()),
                ..Config::default()
            })
            .capture_config(StreamConfig::new(STT_RATE, 1))
            .build();
        reference.readers.fetch_add(1, Ordering::Relaxed);
        Self {
            apm: aec3(),
            filter,
            reference,
            stream: None,
            device: Vec::new(),
            render: VecDeque::new(),
            pending: Vec::with_capacity(AEC_FRAME),
            idle_frames: 0,
            cleaned: 0,
            window: EchoWindow::default(),
        }
    }

    /// Where the speaker's echo may reach in what this canceller hands out.
    pub fn window(&self) -> EchoWindow {
        self.window.clone()
    }

    /// Whether AEC3 is resting: the speaker has played silence for [`REST_AFTER`] frames.
    pub fn resting(&self) -> bool {
        self.idle_frames >= REST_AFTER
    }

    /// The reference played since the last frame, at 16 kHz, onto `render`.
    fn take_reference(&mut self) {
        self.device.clear();
        match self.reference.take(&mut self.device) {
            Taken::Played { rate, stream } => {
                if self.stream.as_ref().is_none_or(|(s, _)| *s != stream) {
                    // A new device stream: what was waiting of the old one is stale.
                    self.render.clear();
                    self.stream = ToMono16k::with_chunk(rate, 1, RESAMPLE_CHUNK).ok().map(|r| (stream, r));
                }
                // Resting, silence is not worth resampling: only what wakes AEC3 is.
                let quiet = self.resting() && self.device.iter().all(|s| *s == 0.0);
                if let Some((_, resampler)) = self.stream.as_mut().filter(|_| !quiet) {
                    let mut out = Vec::with_capacity(self.device.len() / 2 + AEC_FRAME);
                    resampler.push(&self.device, &mut out);
                    self.render.extend(out);
                }
                let max = STT_RATE as usize * REFERENCE_MAX_MS / 1000;
                let over = self.render.len().saturating_sub(max);
                self.render.drain(..over);
            }
            // Nothing plays: the render stream runs on in silence, as the capture does.
            Taken::Stalled => {
                if self.render.len() < AEC_FRAME {
                    self.render.resize(AEC_FRAME, 0.0);
                }
            }
        }
    }

    /// Cleans a chunk of microphone audio (16 kHz, any length): its whole 10 ms frames,
    /// with what was left of the last chunk before them; the rest waits for the next.
    pub fn process(&mut self, chunk: &[f32]) -> Vec<f32> {
        let mut out = Vec::with_capacity(chunk.len() + AEC_FRAME);
        let mut rest = chunk;
        while !rest.is_empty() {
            let take = (AEC_FRAME - self.pending.len()).min(rest.len());
            self.pending.extend_from_slice(&rest[..take]);
            rest = &rest[take..];
            if self.pending.len() < AEC_FRAME {
                break;
            }
            self.take_reference();
            // The speaker played a sound in this frame's reference.
            let mut sounding = false;
            let silent =
                |r: &VecDeque<f32>, f: usize| r.range(f * AEC_FRAME..(f + 1) * AEC_FRAME).all(|s| s.abs() <= SILENT);
            let whole = self.render.len() / AEC_FRAME;
            if self.resting() {
                if (0..whole).all(|f| silent(&self.render, f)) {
                    // Nothing to cancel: the reference goes by unheard.
                    self.render.drain(..whole * AEC_FRAME);
                } else {
                    self.apm = aec3();
                    self.idle_frames = 0;
                }
            }
            if !self.resting() {
                // Every frame of reference that has come, then the capture: the device
                // takes its audio in bursts ahead of playing it, so the reference leads
                // its echo.
                let mut frame = [0.0f32; AEC_FRAME];
                let mut scratch = [0.0f32; AEC_FRAME];
                let held = self.reference.held.load(Ordering::Relaxed);
                while self.render.len() >= AEC_FRAME {
                    if silent(&self.render, 0) {
                        if !held {
                            self.idle_frames = self.idle_frames.saturating_add(1);
                        }
                    } else {
                        self.idle_frames = 0;
                        sounding = true;
                    }
                    for (d, s) in frame.iter_mut().zip(self.render.drain(..AEC_FRAME)) {
                        *d = s;
                    }
                    // A failure here is a frame of the wrong size, which the array rules out.
                    let _ = self.apm.process_render_f32(&[&frame], &mut [&mut scratch[..]]);
                }
            }
            // A NaN sample (a broken device) would poison AEC3's filter for good.
            for s in self.pending.iter_mut().filter(|s| !s.is_finite()) {
                *s = 0.0;
            }
            let apm = if self.resting() {
                &mut self.filter
            } else {
                &mut self.apm
            };
            let mut cleaned = [0.0f32; AEC_FRAME];
            if apm
                .process_capture_f32(&[&self.pending], &mut [&mut cleaned[..]])
                .is_err()
            {
                cleaned.copy_from_slice(&self.pending);
            }
            out.extend_from_slice(&cleaned);
            self.pending.clear();
            self.cleaned += AEC_FRAME as u64;
            if sounding {
                let tail = ECHO_TAIL_MS * u64::from(STT_RATE) / 1000;
                self.window.0.store(self.cleaned + tail, Ordering::Relaxed);
            }
        }
        out
    }
}

impl Drop for EchoCanceller {
    fn drop(&mut self) {
        self.reference.readers.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Speech-like noise: white noise through a slow envelope, `n` samples.
    fn noise(n: usize, seed: u32) -> Vec<f32> {
        let mut x = seed.max(1);
        (0..n)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                ((x as f32 / u32::MAX as f32) * 2.0 - 1.0) * 0.3 * (0.6 + 0.4 * (i as f32 / 1_600.0).sin())
            })
            .collect()
    }

    #[test]
    fn a_tap_downmixes_what_the_device_takes_and_copies_nothing_without_a_canceller() {
        let reference = EchoReference::new();
        let mut tap = reference.tap(48_000, 2);
        let stereo: Vec<f32> = (0..960).flat_map(|i| [i as f32, i as f32 + 2.0]).collect();
        tap.push(&stereo);
        let mut out = Vec::new();
        reference.take(&mut out);
        assert!(out.is_empty(), "no canceller reads the reference: nothing is kept");

        let _reader = EchoCanceller::new(reference.clone());
        tap.push(&stereo);
        let taken = reference.take(&mut out);
        assert_eq!(
            taken,
            Taken::Played {
                rate: 48_000,
                stream: 1
            }
        );
        // Each frame once, in order, as the mean of its channels.
        assert_eq!(out, (0..960).map(|i| i as f32 + 1.0).collect::<Vec<_>>());
        // A device opened again starts a new stream, and what the old one left is dropped.
        tap.push(&stereo[..100]);
        let _again = reference.tap(44_100, 1);
        out.clear();
        assert_eq!(
            reference.take(&mut out),
            Taken::Stalled,
            "the new device has taken nothing yet"
        );
        assert!(out.is_empty());
    }

    /// The echo window ends [`ECHO_TAIL_MS`] past the last frame in which the speaker
    /// played a sound, in the cleaned microphone's samples; silence played moves it not.
    #[test]
    fn the_echo_window_ends_a_tail_after_the_last_sound_played() {
        let reference = EchoReference::new();
        let mut aec = EchoCanceller::new(reference.clone());
        let window = aec.window();
        let mut tap = reference.tap(16_000, 1);
        let mic = noise(AEC_FRAME, 3);
        let tail = ECHO_TAIL_MS * u64::from(STT_RATE) / 1000;
        // Silence played: no echo to expect.
        for _ in 0..10 {
            tap.push(&[0.0; AEC_FRAME]);
            aec.process(&mic);
        }
        assert_eq!(window.until(), 0);
        // A sound played with the 11th to the 15th frames of the microphone.
        for _ in 0..5 {
            tap.push(&noise(AEC_FRAME, 9));
            aec.process(&mic);
        }
        assert_eq!(window.until(), 15 * AEC_FRAME as u64 + tail);
        for _ in 0..20 {
            tap.push(&[0.0; AEC_FRAME]);
            aec.process(&mic);
        }
        assert_eq!(window.until(), 15 * AEC_FRAME as u64 + tail, "silence moves it not");
    }

    /// A canceller with no speaker, or a speaker that has stopped taking audio, runs on a
    /// reference of silence: the microphone comes through, frame for frame, and a voice
    /// is left as it was (AEC3's gain is 1 without an echo).
    #[test]
    fn with_no_playback_the_microphone_comes_through() {
        let reference = EchoReference::new();
        let mut aec = EchoCanceller::new(reference.clone());
        let mic = noise(AEC_FRAME * 300, 7);
        let out = aec.process(&mic);
        assert_eq!(out.len(), mic.len());
        let energy = |x: &[f32]| x[AEC_FRAME * 100..].iter().map(|s| f64::from(s * s)).sum::<f64>();
        let kept = 10.0 * (energy(&out) / energy(&mic)).log10();
        assert!(kept > -1.0, "the voice lost {kept:.1} dB");
    }

    /// The speaker plays `played` through a device that takes `burst` frames at a time
    /// (a device buffer) and the microphone hears it `delay` samples later at half the
    /// level, delivered `mic_chunk` frames at a time; the echo that comes out over
    /// `measured`, a range of frames, against what went in, in dB.
    fn erle(
        played: &[f32],
        device_rate: u32,
        burst: usize,
        mic_chunk: usize,
        delay: usize,
        measured: std::ops::Range<usize>,
    ) -> f64 {
        let reference = EchoReference::new();
        let mut aec = EchoCanceller::new(reference.clone());
        let ratio = device_rate as usize / STT_RATE as usize;
        // The device's stream: the 16 kHz signal held for `ratio` samples (a crude upsampler,
        // enough for a signal the test only asks to cancel below 8 kHz), in stereo.
        let device: Vec<f32> = played.iter().flat_map(|s| std::iter::repeat_n(*s, ratio * 2)).collect();
        let mut tap = reference.tap(device_rate, 2);
        let per_frame = AEC_FRAME * ratio * 2;
        let frames = played.len() / AEC_FRAME;
        let mic: Vec<f32> = (0..frames * AEC_FRAME)
            .map(|i| if i >= delay { played[i - delay] * 0.5 } else { 0.0 })
            .collect();
        let mut out = Vec::with_capacity(mic.len());
        for f in 0..frames {
            // The device takes a burst ahead, then nothing until it needs more.
            if f % burst == 0 {
                let end = ((f + burst) * per_frame).min(device.len());
                tap.push(&device[f * per_frame..end]);
            }
            // The microphone's chunk is delivered once its last frame has been heard.
            if (f + 1) % mic_chunk == 0 {
                let from = (f + 1 - mic_chunk) * AEC_FRAME;
                let cleaned = aec.process(&mic[from..(f + 1) * AEC_FRAME]);
                assert_eq!(
                    cleaned.len(),
                    mic_chunk * AEC_FRAME,
                    "whole frames in, whole frames out"
                );
                out.extend(cleaned);
            }
        }
        let energy = |x: &[f32]| {
            x[measured.start * AEC_FRAME..measured.end * AEC_FRAME]
                .iter()
                .map(|s| f64::from(s * s))
                .sum::<f64>()
        };
        10.0 * (energy(&mic) / energy(&out).max(1e-12)).log10()
    }

    /// An echo that is the played signal, delayed and quieter, is cancelled: once AEC3
    /// has converged, what comes out while only Hark speaks is far quieter than what went in.
    #[test]
    fn a_delayed_quieter_copy_of_what_the_device_played_is_cancelled() {
        let played = noise(STT_RATE as usize * 8, 0x1234_5678);
        let db = erle(&played, STT_RATE, 1, 1, 480, 400..800);
        assert!(db >= 20.0, "echo reduced by {db:.1} dB");
    }

    /// The same through a 48 kHz stereo device that takes 30 ms at a time: the reference
    /// is downmixed and resampled, and arrives in bursts.
    #[test]
    fn the_echo_of_a_48_khz_stereo_device_taking_bursts_is_cancelled() {
        let played = noise(STT_RATE as usize * 8, 0x2345_6789);
        let db = erle(&played, 48_000, 3, 1, 480, 400..800);
        assert!(db >= 20.0, "echo reduced by {db:.1} dB");
    }

    /// The same, with the microphone delivering 100 ms at a time (a device with a long
    /// period does), while the speaker takes 10 ms at a time: the ten frames of reference
    /// waiting are handed to AEC3 before the chunk's first capture frame, and it still
    /// finds the echo.
    #[test]
    fn an_echo_is_cancelled_when_the_microphone_delivers_100_ms_at_a_time() {
        let played = noise(STT_RATE as usize * 8, 0x1234_5678);
        let db = erle(&played, STT_RATE, 1, 10, 480, 400..800);
        assert!(db >= 20.0, "echo reduced by {db:.1} dB");
    }

    /// AEC3 rests once the speaker has been silent for a second, passing the microphone
    /// through the high-pass filter alone; the next reply wakes it.
    #[test]
    fn a_silent_speaker_lets_aec3_rest_and_the_next_reply_wakes_it() {
        let reference = EchoReference::new();
        let mut aec = EchoCanceller::new(reference.clone());
        let mut tap = reference.tap(STT_RATE, 1);
        // A room tone the microphone hears, with a hum below the high-pass filter's corner.
        let room = |i: usize| {
            0.01 * ((i as f32) * 0.37).sin() + 0.05 * (i as f32 * 2.0 * std::f32::consts::PI * 20.0 / 16_000.0).sin()
        };
        let mut at = 0;
        let mut listen = |aec: &mut EchoCanceller, tap: &mut RefTap, played: &[f32]| {
            let (mut mic, mut out) = (Vec::new(), Vec::new());
            for frame in played.chunks(AEC_FRAME) {
                tap.push(frame);
                let m: Vec<f32> = (at..at + AEC_FRAME).map(room).collect();
                at += AEC_FRAME;
                out.extend(aec.process(&m));
                mic.extend(m);
            }
            (mic, out)
        };
        listen(&mut aec, &mut tap, &vec![0.0; AEC_FRAME * (REST_AFTER - 1)]);
        assert!(!aec.resting(), "rests only after a second of silence");
        let (mic, out) = listen(&mut aec, &mut tap, &vec![0.0; AEC_FRAME * 50]);
        assert!(aec.resting(), "a second of silence from the speaker: AEC3 rests");
        let energy = |x: &[f32]| x.iter().map(|s| f64::from(s * s)).sum::<f64>();
        // Still high-passed while resting: the 20 Hz hum is taken out as AEC3 would.
        assert!(
            energy(&out[1_600..]) < energy(&mic[1_600..]) * 0.2,
            "the hum went through"
        );
        listen(&mut aec, &mut tap, &noise(AEC_FRAME, 3));
        assert!(!aec.resting(), "the reply woke AEC3");
    }

    /// Replies with pauses between them, on a device that takes 30 ms at a time: each
    /// reply's echo is cancelled from its first half second. After a short pause AEC3 goes
    /// on with what it learnt of the room, as the reference keeps its lead on the
    /// microphone through the silence (it is copied where the device takes it, silence
    /// included); after a long one, a fresh AEC3 converges at once.
    #[test]
    fn after_a_pause_the_next_reply_is_cancelled_from_its_start() {
        let second = STT_RATE as usize;
        let mut played = noise(second * 4, 0x3456_789a);
        let mut starts = Vec::new();
        // Pauses that are not a whole number of bursts, so that the device's bursts fall
        // differently against the microphone's frames at each reply; the last one long
        // enough for AEC3 to rest.
        for (i, pause) in [0.31f32, 0.52, 0.73, 3.01].iter().enumerate() {
            played.extend(vec![0.0; (pause * second as f32) as usize]);
            starts.push(played.len() / AEC_FRAME);
            played.extend(noise(second * 2, 0x4567_89ab + i as u32));
        }
        for (k, start) in starts.iter().enumerate() {
            let from = start + 5;
            let db = erle(&played, 48_000, 3, 1, 480, from..from + 50);
            assert!(
                db >= 20.0,
                "reply {}: its first half second's echo reduced by {db:.1} dB",
                k + 2
            );
        }
    }
}
