//! Reply playback: sentences queued as they are synthesised, flushed instantly on barge-in,
//! with every played sample counted so Hark knows what the user actually heard (rule 9).
//!
//! [`AudioOut`] is the capability; [`Speaker`] plays through rodio on an output device,
//! [`WavOut`] collects the reply for `hark talk --out`, and [`ClockOut`] (in `clock.rs`)
//! plays in real time into nothing, for tests and benchmarks. All share [`Tracker`], whose
//! bookkeeping (and the pure [`heard_text`]) is tested without a sound card.

use std::num::NonZero;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cpal::traits::DeviceTrait;

use super::echo::{EchoReference, RefTap};
use super::{find_device, stream_goes_on, AudioError};

mod clock;
pub use clock::ClockOut;

/// What was heard of a reply.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Heard {
    /// The heard text: whole sentences played, then the played share of the words of the
    /// sentence that was cut.
    pub text: String,
    /// Milliseconds of reply audio played.
    pub ms: u64,
    /// Whether everything queued was played.
    pub complete: bool,
}

/// One sentence being played.
#[derive(Debug)]
struct Segment {
    text: String,
    rate: AtomicU64,
    frames_total: AtomicU64,
    frames_played: AtomicU64,
    /// All its audio has been queued.
    complete: AtomicBool,
}

/// Shared bookkeeping between the queue and the sources the audio thread pulls from.
#[derive(Debug, Default)]
pub struct Tracker {
    segments: Mutex<Vec<Arc<Segment>>>,
    /// Set by a flush: every source returns `None` at its next sample.
    stopped: AtomicBool,
    /// The reply is paused ([`AudioOut::hold`]): nothing is played, and a speaker that
    /// plays nothing meanwhile has not stalled.
    held: AtomicBool,
    first_sample_at: Mutex<Option<Instant>>,
}

impl Tracker {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Arc<Segment>>> {
        // Only plain data behind it; a panic elsewhere cannot leave it half-updated.
        self.segments.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn begin(&self, text: &str) -> usize {
        let mut s = self.lock();
        s.push(Arc::new(Segment {
            text: text.to_string(),
            rate: AtomicU64::new(0),
            frames_total: AtomicU64::new(0),
            frames_played: AtomicU64::new(0),
            complete: AtomicBool::new(false),
        }));
        s.len() - 1
    }

    fn segment(&self, i: usize) -> Option<Arc<Segment>> {
        self.lock().get(i).cloned()
    }

    /// Records `frames` more of audio for sentence `i`.
    fn add(&self, i: usize, frames: usize, rate: u32) -> Option<Arc<Segment>> {
        let seg = self.segment(i)?;
        seg.rate.store(rate as u64, Ordering::Relaxed);
        seg.frames_total.fetch_add(frames as u64, Ordering::Relaxed);
        Some(seg)
    }

    /// Counts `frames` more audio queued for sentence `i` (test outputs outside this module).
    #[cfg(test)]
    pub(crate) fn queue(&self, i: usize, frames: usize, rate: u32) {
        self.add(i, frames, rate);
    }

    fn end(&self, i: usize) {
        if let Some(seg) = self.segment(i) {
            seg.complete.store(true, Ordering::Relaxed);
        }
    }

    fn reset(&self) {
        self.lock().clear();
        self.stopped.store(false, Ordering::SeqCst);
        self.held.store(false, Ordering::SeqCst);
        *self.first_sample_at.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    fn played_one(&self, seg: &Segment) {
        if seg.frames_played.fetch_add(1, Ordering::Relaxed) == 0 {
            let mut first = self.first_sample_at.lock().unwrap_or_else(|p| p.into_inner());
            first.get_or_insert_with(Instant::now);
        }
    }

    /// Whether the reply is paused ([`AudioOut::hold`]).
    pub fn is_held(&self) -> bool {
        self.held.load(Ordering::SeqCst)
    }

    /// The reply's text queued so far (what Hark's own voice, let through by echo
    /// cancellation, can be heard saying); the last reply's until the next one starts.
    pub fn reply_text(&self) -> String {
        self.lock()
            .iter()
            .map(|s| s.text.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// What has been heard so far.
    pub fn heard(&self) -> Heard {
        let segs = self.lock();
        let view: Vec<SegmentView<'_>> = segs
            .iter()
            .map(|s| SegmentView {
                text: &s.text,
                total: s.frames_total.load(Ordering::Relaxed),
                played: s.frames_played.load(Ordering::Relaxed),
                complete: s.complete.load(Ordering::Relaxed),
            })
            .collect();
        let ms = segs
            .iter()
            .map(|s| {
                let rate = s.rate.load(Ordering::Relaxed).max(1);
                s.frames_played.load(Ordering::Relaxed) * 1000 / rate
            })
            .sum();
        let complete = view.iter().all(|v| v.complete && v.played >= v.total);
        Heard {
            text: heard_text(&view),
            ms,
            complete,
        }
    }

    pub fn first_sample_at(&self) -> Option<Instant> {
        *self.first_sample_at.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Milliseconds of audio queued but not played yet.
    pub fn queued_ms(&self) -> u64 {
        if self.stopped.load(Ordering::SeqCst) {
            return 0;
        }
        self.lock()
            .iter()
            .map(|s| {
                let left = s
                    .frames_total
                    .load(Ordering::Relaxed)
                    .saturating_sub(s.frames_played.load(Ordering::Relaxed));
                left * 1000 / s.rate.load(Ordering::Relaxed).max(1)
            })
            .sum()
    }
}

/// A sentence's playback state, for [`heard_text`].
#[derive(Debug, Clone, Copy)]
pub struct SegmentView<'a> {
    pub text: &'a str,
    pub total: u64,
    pub played: u64,
    pub complete: bool,
}

/// The heard text: every sentence played to its end, then the share of the cut sentence's
/// words that fits the share of its audio played (rounded down: a half-heard word is not
/// claimed as heard).
pub fn heard_text(segments: &[SegmentView<'_>]) -> String {
    let mut parts: Vec<String> = Vec::new();
    for s in segments {
        if s.played == 0 {
            break;
        }
        if s.complete && s.played >= s.total {
            parts.push(s.text.trim().to_string());
            continue;
        }
        let words: Vec<&str> = s.text.split_whitespace().collect();
        let n = (words.len() as u64 * s.played / s.total.max(1)) as usize;
        if n > 0 {
            parts.push(words[..n].join(" "));
        }
        break;
    }
    parts.join(" ")
}

/// Where reply audio goes.
pub trait AudioOut: Send + Sync {
    /// The bookkeeping of what was queued and played; the default methods read it.
    fn tracker(&self) -> &Tracker;
    /// Starts a new reply (forgets the previous one's bookkeeping).
    fn start_reply(&self);
    /// Queues mono audio of a sentence, as it arrives from the synthesiser.
    fn push(&self, sentence: usize, samples: Vec<f32>, rate: u32);
    /// Barge-in: stops at once and says what was heard.
    fn flush(&self) -> Heard;
    /// Pauses the reply where it is (`true`) or plays on from there (`false`): a voice heard
    /// over it is being checked (issue 49). Cues and asides are not paused; a new reply
    /// starts unpaused. Outputs that play instantly only keep the flag.
    fn hold(&self, on: bool) {
        self.tracker().held.store(on, Ordering::SeqCst);
    }
    /// Whether everything queued has been played.
    fn is_idle(&self) -> bool;
    /// The output's name, for messages.
    fn name(&self) -> String {
        "speaker".into()
    }
    /// Plays a short sound (a push-to-talk cue) beside the reply: not counted as reply
    /// audio, not cut by a flush. Outputs without a device ignore it.
    fn cue(&self, samples: Vec<f32>, rate: u32) {
        let _ = (samples, rate);
    }
    /// Says something aside from the reply (a consent question): queued after earlier
    /// asides, not counted as reply audio, not cut by a flush; [`AudioOut::hush`] stops it.
    fn aside(&self, samples: Vec<f32>, rate: u32) {
        self.cue(samples, rate)
    }
    /// Stops what is being said aside (the question was answered, or the user pressed the
    /// key to answer it: the microphone must not hear the question).
    fn hush(&self) {}
    /// What this output plays, as echo cancellation's reference (hands-free listening while
    /// Hark speaks); `None` for outputs the microphone cannot hear.
    fn echo_reference(&self) -> Option<Arc<EchoReference>> {
        None
    }

    /// Starts a sentence; returns its index for `push` and `end_sentence`.
    fn begin_sentence(&self, text: &str) -> usize {
        self.tracker().begin(text)
    }
    /// All of the sentence's audio is queued.
    fn end_sentence(&self, sentence: usize) {
        self.tracker().end(sentence)
    }
    /// What was heard so far.
    fn heard(&self) -> Heard {
        self.tracker().heard()
    }
    /// When the first sample of the reply reached the device.
    fn first_sample_at(&self) -> Option<Instant> {
        self.tracker().first_sample_at()
    }
    /// Milliseconds of audio queued and not yet played (synthesis waits while this is high,
    /// so a barge-in does not waste synthesis on sentences nobody will hear).
    fn queued_ms(&self) -> u64 {
        self.tracker().queued_ms()
    }
}

/// A source that counts what the audio thread takes from it and stops on a flush.
struct Tracked {
    data: Vec<f32>,
    pos: usize,
    rate: NonZero<u32>,
    seg: Arc<Segment>,
    tracker: Arc<Tracker>,
}

impl Iterator for Tracked {
    type Item = f32;
    fn next(&mut self) -> Option<f32> {
        if self.tracker.stopped.load(Ordering::Relaxed) || self.pos >= self.data.len() {
            return None;
        }
        let s = self.data[self.pos];
        self.pos += 1;
        self.tracker.played_one(&self.seg);
        Some(s)
    }
}

impl rodio::Source for Tracked {
    fn current_span_len(&self) -> Option<usize> {
        Some(self.data.len() - self.pos)
    }
    fn channels(&self) -> rodio::ChannelCount {
        NonZero::<u16>::MIN
    }
    fn sample_rate(&self) -> rodio::SampleRate {
        self.rate
    }
    fn total_duration(&self) -> Option<Duration> {
        Some(Duration::from_secs_f64(self.data.len() as f64 / self.rate.get() as f64))
    }
}

/// Plays through an output device with rodio.
pub struct Speaker {
    player: rodio::Player,
    /// The cues' own player on the same device, so a cue never mixes into the reply's
    /// bookkeeping or is flushed with it.
    cues: rodio::Player,
    /// What is said aside from the reply (consent questions): its own player, so a hush
    /// stops it alone.
    asides: rodio::Player,
    /// The device's name, for messages.
    name: String,
    tracker: Arc<Tracker>,
    /// What the replies and asides played (the microphone hears them), for echo
    /// cancellation.
    reference: Arc<EchoReference>,
    /// Keeps the device stream's thread alive; dropping it closes the device.
    _keepalive: std::sync::mpsc::Sender<()>,
}

/// How often the playback thread looks at its stream's faults.
const FAULT_CHECK: Duration = Duration::from_millis(200);

/// What the device stream's error callback reported since the playback thread last looked.
#[derive(Debug, Default)]
struct Faults {
    /// Errors that cpal does not recover from by itself.
    errors: AtomicU64,
    /// The device went away: the stream's worker has stopped.
    gone: AtomicBool,
}

impl Faults {
    fn report(&self, e: &cpal::Error) {
        if stream_goes_on(e) {
            tracing::debug!("output stream: {e}");
            return;
        }
        if matches!(
            e.kind(),
            cpal::ErrorKind::DeviceNotAvailable | cpal::ErrorKind::StreamInvalidated
        ) {
            self.gone.store(true, Ordering::SeqCst);
        }
        // A failed stream reports at every poll (PulseAudio's ALSA plugin, once its server
        // connection dropped, answered each one with EIO); one line of log is enough.
        if self.errors.fetch_add(1, Ordering::SeqCst) == 0 {
            tracing::warn!("output stream error: {e}");
        }
    }

    /// Whether the stream is past saving: its device went, or errors kept coming (two
    /// or more since the last look; a single one, such as a refused priority, is not).
    fn take_broken(&self) -> bool {
        let errors = self.errors.swap(0, Ordering::SeqCst);
        self.gone.swap(false, Ordering::SeqCst) || errors >= 2
    }
}

/// Opens the device's stream (`None`: the default device), reporting to `faults`.
fn open_sink(wanted: Option<&str>, faults: &Arc<Faults>) -> Result<(rodio::MixerDeviceSink, String), AudioError> {
    let dev = find_device(false, wanted)?;
    let name = dev
        .description()
        .map(|d| d.name().to_string())
        .unwrap_or_else(|_| "output".into());
    let on_error = {
        let faults = faults.clone();
        move |e: cpal::Error| faults.report(&e)
    };
    // A ~10 ms device buffer: a barge-in is silent within it, and the first reply sample
    // waits at most that long for the next callback. Devices that refuse it get their
    // default.
    let builder = |d: cpal::Device| {
        rodio::DeviceSinkBuilder::from_device(d)
            .map(|b| b.with_error_callback(on_error.clone()))
            .map_err(|e| AudioError::output(&name, e))
    };
    let mut sink = builder(dev.clone())
        .and_then(|b| {
            b.with_buffer_size(cpal::BufferSize::Fixed(512))
                .open_stream()
                .map_err(|e| AudioError::output(&name, e))
        })
        .or_else(|_| builder(dev)?.open_stream().map_err(|e| AudioError::output(&name, e)))?;
    sink.log_on_drop(false);
    Ok((sink, name))
}

/// Samples the relay takes from the speaker's mixer at a time (one lock per batch).
const RELAY_BATCH_FRAMES: usize = 32;

/// Carries the speaker's own mixer, where its players live, into whichever device stream
/// is open: when a stream fails and the device is opened again, the new stream plays the
/// same players, with what they still have queued and their bookkeeping.
///
/// rodio ties players to one stream's mixer and has no way to move them; a source that
/// reads a shared mixer is the smallest bridge (32 frames at a time, under 1 ms).
///
/// It is also where the echo canceller's reference is taken ([`RefTap`]): every frame the
/// device plays, silence included, on the device's clock.
struct Relay {
    mixer: Arc<Mutex<rodio::mixer::MixerSource>>,
    channels: rodio::ChannelCount,
    rate: rodio::SampleRate,
    batch: Vec<f32>,
    pos: usize,
    tap: RefTap,
}

impl Relay {
    fn new(mixer: &Arc<Mutex<rodio::mixer::MixerSource>>, reference: &Arc<EchoReference>) -> Self {
        let (channels, rate) = {
            let m = mixer.lock().unwrap_or_else(|p| p.into_inner());
            (rodio::Source::channels(&*m), rodio::Source::sample_rate(&*m))
        };
        Self {
            mixer: mixer.clone(),
            channels,
            rate,
            batch: Vec::new(),
            pos: 0,
            tap: reference.tap(rate.get(), channels.get()),
        }
    }
}

impl Iterator for Relay {
    type Item = f32;
    fn next(&mut self) -> Option<f32> {
        if self.pos == self.batch.len() {
            self.batch.clear();
            self.pos = 0;
            // Whole frames only, so the channels stay in step across streams.
            let n = RELAY_BATCH_FRAMES * usize::from(self.channels.get());
            let mut m = self.mixer.lock().unwrap_or_else(|p| p.into_inner());
            // The players keep the mixer from running dry; silence if it ever does, so
            // the stream never drops the relay.
            self.batch.extend((0..n).map(|_| m.next().unwrap_or(0.0)));
            drop(m);
            self.tap.push(&self.batch);
        }
        let s = self.batch[self.pos];
        self.pos += 1;
        Some(s)
    }
}

impl rodio::Source for Relay {
    fn current_span_len(&self) -> Option<usize> {
        None
    }
    fn channels(&self) -> rodio::ChannelCount {
        self.channels
    }
    fn sample_rate(&self) -> rodio::SampleRate {
        self.rate
    }
    fn total_duration(&self) -> Option<Duration> {
        None
    }
}

impl Speaker {
    /// Opens the output device (`None`: the default). A stream that fails later (the
    /// device unplugged, the sound server dropping the connection) is opened again, and
    /// playback goes on where it was.
    pub fn open(device: Option<&str>) -> Result<Self, AudioError> {
        // The device stream lives on its own thread (cpal streams are not `Send` everywhere);
        // the mixer handle it hands back is.
        let (mixer_tx, mixer_rx) = std::sync::mpsc::channel();
        let reference = EchoReference::new();
        let relay_reference = reference.clone();
        let (keep_tx, keep_rx) = std::sync::mpsc::channel::<()>();
        let wanted = device.map(str::to_string);
        std::thread::Builder::new()
            .name("hark-playback".into())
            .spawn(move || {
                let faults = Arc::new(Faults::default());
                let (sink, name) = match open_sink(wanted.as_deref(), &faults) {
                    Ok(opened) => opened,
                    Err(e) => {
                        let _ = mixer_tx.send(Err(e));
                        return;
                    }
                };
                let config = *sink.config();
                let (mixer, source) = rodio::mixer::mixer(config.channel_count(), config.sample_rate());
                let source = Arc::new(Mutex::new(source));
                sink.mixer().add(Relay::new(&source, &relay_reference));
                let _ = mixer_tx.send(Ok((mixer, name.clone())));
                let mut sink = Some(sink);
                // Until the Speaker is dropped (the channel disconnects).
                while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = keep_rx.recv_timeout(FAULT_CHECK) {
                    if sink.is_some() && !faults.take_broken() {
                        continue;
                    }
                    if sink.take().is_some() {
                        tracing::warn!("the speaker {name:?} stopped working; opening it again");
                    }
                    match open_sink(wanted.as_deref(), &faults) {
                        Ok((s, _)) => {
                            s.mixer().add(Relay::new(&source, &relay_reference));
                            sink = Some(s);
                            tracing::info!("the speaker {name:?} is playing again");
                        }
                        // Tried again at the next look; a reply meanwhile fails as stalled.
                        Err(e) => tracing::debug!("the speaker {name:?} cannot be opened yet: {e}"),
                    }
                }
            })
            .map_err(|e| AudioError::output("default", format!("cannot start the playback thread: {e}")))?;
        let (mixer, name) = mixer_rx.recv_timeout(Duration::from_secs(10)).map_err(|_| {
            AudioError::output(
                device.unwrap_or("default"),
                "the output device did not open within 10 s",
            )
        })??;
        let player = rodio::Player::connect_new(&mixer);
        let cues = rodio::Player::connect_new(&mixer);
        let asides = rodio::Player::connect_new(&mixer);
        Ok(Self {
            player,
            cues,
            asides,
            name,
            tracker: Arc::new(Tracker::default()),
            reference,
            _keepalive: keep_tx,
        })
    }
}

impl AudioOut for Speaker {
    fn tracker(&self) -> &Tracker {
        &self.tracker
    }

    fn start_reply(&self) {
        self.player.clear();
        self.player.play();
        self.tracker.reset();
        self.reference.hold(false);
    }

    fn push(&self, sentence: usize, samples: Vec<f32>, rate: u32) {
        let Some(rate_nz) = NonZero::new(rate) else { return };
        if self.tracker.stopped.load(Ordering::SeqCst) || samples.is_empty() {
            return;
        }
        let Some(seg) = self.tracker.add(sentence, samples.len(), rate) else {
            return;
        };
        self.player.append(Tracked {
            data: samples,
            pos: 0,
            rate: rate_nz,
            seg,
            tracker: self.tracker.clone(),
        });
    }

    fn flush(&self) -> Heard {
        // Sources see the flag at their next sample, i.e. within the current device buffer.
        self.tracker.stopped.store(true, Ordering::SeqCst);
        self.reference.hold(false);
        self.player.stop();
        let heard = self.tracker.heard();
        self.player.clear();
        heard
    }

    fn hold(&self, on: bool) {
        self.tracker.held.store(on, Ordering::SeqCst);
        self.reference.hold(on);
        // rodio's player applies a pause at its next periodic check (every 5 ms), and plays
        // silence meanwhile, so the device stream and the echo reference run on.
        if on {
            self.player.pause();
        } else {
            self.player.play();
        }
    }

    fn is_idle(&self) -> bool {
        self.player.empty()
    }

    fn name(&self) -> String {
        self.name.clone()
    }

    fn cue(&self, samples: Vec<f32>, rate: u32) {
        if let Some(rate) = NonZero::new(rate) {
            self.cues
                .append(rodio::buffer::SamplesBuffer::new(NonZero::<u16>::MIN, rate, samples));
        }
    }

    fn aside(&self, samples: Vec<f32>, rate: u32) {
        if let Some(rate_nz) = NonZero::new(rate) {
            self.asides
                .append(rodio::buffer::SamplesBuffer::new(NonZero::<u16>::MIN, rate_nz, samples));
        }
    }

    fn echo_reference(&self) -> Option<Arc<EchoReference>> {
        Some(self.reference.clone())
    }

    fn hush(&self) {
        self.asides.clear();
        self.asides.play();
    }
}

/// Collects reply audio instead of playing it (`hark talk --out`); "plays" instantly.
#[derive(Default)]
pub struct WavOut {
    tracker: Arc<Tracker>,
    /// The reply so far and its rate.
    audio: Mutex<(Vec<f32>, u32)>,
}

impl WavOut {
    /// Takes the collected reply audio.
    pub fn take(&self) -> (Vec<f32>, u32) {
        std::mem::take(&mut *self.audio.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

impl AudioOut for WavOut {
    fn tracker(&self) -> &Tracker {
        &self.tracker
    }

    fn start_reply(&self) {
        self.tracker.reset();
        self.audio.lock().unwrap_or_else(|p| p.into_inner()).0.clear();
    }
    fn push(&self, sentence: usize, samples: Vec<f32>, rate: u32) {
        if let Some(seg) = self.tracker.add(sentence, samples.len(), rate) {
            for _ in 0..samples.len() {
                self.tracker.played_one(&seg);
            }
        }
        let mut a = self.audio.lock().unwrap_or_else(|p| p.into_inner());
        a.1 = rate;
        a.0.extend(samples);
    }
    fn flush(&self) -> Heard {
        self.tracker.heard()
    }
    fn is_idle(&self) -> bool {
        true
    }
    fn queued_ms(&self) -> u64 {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(text: &str, total: u64, played: u64, complete: bool) -> SegmentView<'_> {
        SegmentView {
            text,
            total,
            played,
            complete,
        }
    }

    #[test]
    fn heard_text_counts_whole_sentences_then_the_played_share_of_words() {
        let segs = [
            v("Once upon a time.", 100, 100, true),
            v("There was a fox in the wood.", 700, 350, true),
            v("It was clever.", 100, 0, true),
        ];
        assert_eq!(heard_text(&segs), "Once upon a time. There was a");
        assert_eq!(heard_text(&[v("Hello there.", 100, 0, true)]), "");
        assert_eq!(
            heard_text(&[v("Hello there.", 100, 40, true)]),
            "",
            "less than a word's share"
        );
        // A sentence still being synthesised is never "fully heard".
        assert_eq!(
            heard_text(&[v("One two three four", 100, 100, false)]),
            "One two three four"
        );
    }

    #[test]
    fn wav_out_collects_and_tracks_everything_as_heard() {
        let out = WavOut::default();
        out.start_reply();
        let s = out.begin_sentence("Hello there.");
        out.push(s, vec![0.1; 2400], 24_000);
        out.end_sentence(s);
        let h = out.heard();
        assert_eq!(
            h,
            Heard {
                text: "Hello there.".into(),
                ms: 100,
                complete: true
            }
        );
        assert!(out.first_sample_at().is_some());
        assert_eq!(out.take().0.len(), 2400);
    }

    #[test]
    fn a_flushed_source_stops_at_its_next_sample() {
        let tracker = Arc::new(Tracker::default());
        let i = tracker.begin("One two three four.");
        let seg = tracker.add(i, 10, 10).unwrap();
        tracker.end(i);
        let mut src = Tracked {
            data: vec![0.5; 10],
            pos: 0,
            rate: NonZero::new(10).unwrap(),
            seg,
            tracker: tracker.clone(),
        };
        for _ in 0..5 {
            assert!(src.next().is_some());
        }
        tracker.stopped.store(true, Ordering::SeqCst);
        assert_eq!(src.next(), None);
        let h = tracker.heard();
        assert_eq!((h.text.as_str(), h.ms, h.complete), ("One two", 500, false));
    }
}
