//! Live transcription for an offline engine that decodes whole clips (Moonshine).
//!
//! The audio since the last cut is the *open segment*. It is decoded again as speech
//! comes, so its words show while the user speaks; at a pause it is *committed* (its final
//! text is kept, its audio dropped), so a decode costs what one phrase costs however long
//! the utterance is, and the release decodes only the phrase still open.
//!
//! # Rules
//! - The open segment is decoded when it holds speech no decode has heard, a tick after
//!   that speech began ([`TICK_MS`], or twice the last interim decode's time if longer;
//!   half a tick, [`RETRY_TICK_MS`], after a decode that brought no new words), or at
//!   once at a pause ([`PAUSE_MS`] of silence after it).
//!   One decode at a time: audio that comes during a decode waits for the next one, which
//!   hears it all (a tick that falls during a decode is skipped, never queued).
//! - [`COMMIT_PAUSE_MS`] of silence after speech ends the segment there. Its final text is
//!   that of the decode that heard all its speech and the start of the pause, if one did
//!   (the clip differs only by trailing silence, as in the voice actor's speculation),
//!   else one more decode of it.
//! - Every clip decoded ends [`COMMIT_PAUSE_MS`] after its speech, with silence added
//!   where the audio has not come yet: a decode at a pause then hears what the committed
//!   segment will hold. (Moonshine's words change with the silence after them: an
//!   espeak-ng clip of "My name is Sam." came out as "Like maybe the term." with 60 ms of
//!   silence after it, and right with 200 ms, in a check with Python's onnxruntime.)
//! - A segment that reaches [`FORCE_MS`] without such a pause is cut at the quietest 20 ms
//!   frame of its last [`LOOKBACK_MS`]: the gap between two words, so no word is cut in
//!   two; the audio after the cut stays open, so none is lost.
//! - Committed text never changes. The interim text is the committed segments' text, then
//!   the open segment's latest decode.
//! - An interim decode that heard no pause after the speech (less than [`PAUSE_MS`] of
//!   silence) may be *rough* ([`Job::may_be_rough`]): the engine may take a shortcut
//!   that can change a word, as Moonshine's draft does. Its text is shown, never final:
//!   a segment whose last decode was rough is decoded again at its cut or the release.
//!   (Its speech goes on, or it ends with the key held; the decode at the pause is exact.)
//! - At release only what is not final is decoded: a cut segment still waiting for its
//!   decode, then the open segment, unless a decode already heard all its speech.
//! - The transcript is *settled* while a release would need no decode: no cut segment
//!   waits, and the open segment holds no speech or a decode heard all of it and a pause
//!   ([`PAUSE_MS`]) has followed. The settled text is then what the release gives, and
//!   the voice actor has the local model answer it ahead; new speech unsettles it.
//! - Cuts depend on the audio alone (each 20 ms frame is judged once, as it completes),
//!   not on how it was chunked or how fast the decoder is: a clip transcribed whole
//!   ([`transcribe_whole`]) is cut where its live transcription is.
//!
//! [`Segmenter`] makes these decisions with no model and no thread (its tests use a fake
//! decoder); [`start`] runs one on a thread of its own with the engine's decoder.
//!
//! [`PAUSE_MS`]: crate::audio::silence::PAUSE_MS

use std::collections::VecDeque;
use std::sync::mpsc as std_mpsc;

use async_trait::async_trait;
use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::sync::{CancellationToken, DropGuard};

use super::{join_text, LiveTranscription};
use crate::audio::resample::{rms, STT_RATE};
use crate::audio::silence::{voiced_end, FRAME, PAUSE, SILENCE_RMS};
use crate::provider::{ErrorKind, ProviderError};

/// How long after new speech begins the open segment is decoded again, at least: 200 ms,
/// or twice the last interim decode's time when that is longer ([`Segmenter::paced_by`]),
/// so the recogniser takes at most about half a core while the local chat model evaluates
/// the request on the other. A decode of half a second of speech took 45 ms on one core of
/// the 2-core test machine, of a second 95 ms, of a few seconds 100-200 ms: a short phrase
/// is decoded every 200 ms and a long one less often.
///
/// At 300 ms for every decode (before 2026-12-06), the first words of each phrase came
/// about 350 ms after it began, and a phrase's first word after a pause, or a long word,
/// left up to 680 ms of speech with no new words (issue 20's goal is 500). At a fixed
/// 200 ms, in one run of the benchmark's human clips, the decodes of its two longest
/// phrases (4-5 s) ran nearly back to back and the one at their end finished after the
/// release: their transcripts came 52 and 102 ms after it, where the others' came at once.
/// At 150 ms (paced the same way) the waits were no shorter: a word still shows only once
/// Moonshine has heard most of it (one run: p95 691 ms against 450 ms at 200 on the same
/// clips within the hour).
pub const TICK_MS: usize = 200;

/// How long after new speech begins the open segment is decoded again, at least, when its
/// last decode brought no new words (none at all, or the text shown already): half a
/// tick, or twice that decode's time when longer. Moonshine shows a word once it has
/// heard most of it: it often makes nothing of a phrase's first 200 ms (the start of a
/// word), or the same text again in the middle of a long word. In a run of the benchmark's
/// human clips at a whole tick, a phrase's first words came about 240 ms after it began
/// or, when that first decode was empty, about 460 ms (issue 20's goal is 500), and the
/// longest waits for new words were two ticks with one such decode between them.
pub const RETRY_TICK_MS: usize = TICK_MS / 2;

/// Silence after speech that ends a segment. Longer than the pause at which the open
/// segment is decoded ([`PAUSE_MS`]): a cut is final, and in real speech a 60 ms gap can
/// fall inside a word (a stop consonant's closure), while 200 ms falls between phrases
/// (espeak-ng's commas are 120-140 ms of silence, its full stops 340 ms; the gaps between
/// the phrases of the Beckett recording shipped with Moonshine are 200 ms and longer).
///
/// [`PAUSE_MS`]: crate::audio::silence::PAUSE_MS
pub const COMMIT_PAUSE_MS: usize = 200;

/// The longest segment: one without a pause is cut when it reaches this, so a decode costs
/// at most what 8 s cost (the 10 s Beckett recording took 250-315 ms on one core).
pub const FORCE_MS: usize = 8_000;

/// Where a forced cut may fall: the segment's last 2 s, which hold several gaps between
/// words at any speaking rate.
pub const LOOKBACK_MS: usize = 2_000;

/// Silence kept before the first speech of a segment: enough for a soft onset below the
/// silence level, without decoding the seconds a user may wait before speaking.
pub const LEAD_IN_MS: usize = 200;

const fn samples(ms: usize) -> usize {
    ms * STT_RATE as usize / 1000
}

/// What a decode is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// The open segment while the key is held: interim words.
    Interim,
    /// A segment's final text (a cut one, or the open one at release).
    Final,
}

/// One decode to run: `audio` in, its text back through [`Segmenter::complete`].
#[derive(Debug)]
pub struct Job {
    pub purpose: Purpose,
    /// The clip: the segment's audio, then silence up to [`COMMIT_PAUSE_MS`] after its
    /// speech.
    pub audio: Vec<f32>,
    /// The segment it decodes (numbered from 0 as they open).
    segment: u64,
    /// The voiced end of its audio: where the speech it heard ends.
    covers: usize,
    /// How much of `audio` is the segment's (the rest is added silence).
    heard: usize,
}

impl Job {
    /// A decode of `audio`, the start of a segment whose speech ends at `covers`.
    fn new(purpose: Purpose, segment: u64, mut audio: Vec<f32>, covers: usize) -> Self {
        let heard = audio.len();
        audio.resize(heard.max(covers + samples(COMMIT_PAUSE_MS)), 0.0);
        Self {
            purpose,
            audio,
            segment,
            covers,
            heard,
        }
    }

    /// Samples of the segment it heard after the speech: whether it heard a pause begin.
    fn tail(&self) -> usize {
        self.heard - self.covers
    }

    /// The segment it decodes (numbered from 0 as they open).
    pub fn segment(&self) -> u64 {
        self.segment
    }

    /// Whether its text may be rough (see the module's rules): an interim decode that
    /// heard no pause, whose text is only shown.
    pub fn may_be_rough(&self) -> bool {
        self.purpose == Purpose::Interim && self.tail() < PAUSE
    }
}

/// A finished decode: what it heard, and its text (the open segment keeps its latest).
struct Heard {
    covers: usize,
    tail: usize,
    /// It was rough: never final.
    rough: bool,
    text: String,
}

impl Heard {
    /// Whether it is the final text of a segment whose speech ends at `voiced_end`, `len`
    /// samples long: an exact decode that heard all the speech and the start of the pause
    /// after it (or all there is of one), and nothing past the segment's end (a forced cut
    /// falls mid-phrase: what follows it is the next segment's).
    fn is_final_of(&self, voiced_end: usize, len: usize) -> bool {
        !self.rough
            && self.covers == voiced_end
            && self.tail >= PAUSE.min(len - voiced_end)
            && self.covers + self.tail <= len
    }
}

/// A segment cut off, waiting for its final text (cut segments commit in order).
struct Cut {
    segment: u64,
    /// Its audio, until its decode takes it.
    audio: Vec<f32>,
    /// Its length in samples.
    len: usize,
    voiced_end: usize,
    text: Option<String>,
}

/// The decisions of a live transcription (see the module's rules), with no model and no
/// thread: audio goes in with [`push`](Self::push), decodes come out of
/// [`next_job`](Self::next_job) and their texts go back with [`complete`](Self::complete).
pub struct Segmenter {
    /// Final texts of committed segments, in order; never changed.
    committed: Vec<String>,
    /// Segments cut off and not yet committed, oldest first.
    cuts: VecDeque<Cut>,
    /// The open segment's audio (non-finite samples made silence).
    open: Vec<f32>,
    /// The open segment's number.
    segment: u64,
    /// RMS of each whole frame of `open` judged so far (each is judged once).
    levels: Vec<f32>,
    /// Where the speech in `open` ends (0: none yet).
    voiced_end: usize,
    /// The end of the first voiced frame that no decode has heard, if any.
    unheard_since: Option<usize>,
    /// The latest finished decode of the open segment.
    heard: Option<Heard>,
    /// A decode is running (one at a time).
    running: bool,
    /// Twice the time of the open segment's last interim decode, in samples (0 before its
    /// first): the least [`tick`](Self::tick) ([`Self::paced_by`]).
    paced: usize,
    /// The open segment's last interim decode brought no new words.
    nothing_new: bool,
    /// The key was released: no more audio; what is left is decoded as final.
    released: bool,
    /// The interim text sent last, so the same text is not sent twice.
    shown: String,
}

impl Default for Segmenter {
    fn default() -> Self {
        Self::new()
    }
}

impl Segmenter {
    pub fn new() -> Self {
        Self {
            committed: Vec::new(),
            cuts: VecDeque::new(),
            open: Vec::new(),
            segment: 0,
            levels: Vec::new(),
            voiced_end: 0,
            unheard_since: None,
            heard: None,
            running: false,
            paced: 0,
            nothing_new: false,
            released: false,
            shown: String::new(),
        }
    }

    /// Captured audio (16 kHz mono). Ignored after [`release`](Self::release).
    pub fn push(&mut self, audio: &[f32]) {
        if self.released {
            return;
        }
        self.open
            .extend(audio.iter().map(|s| if s.is_finite() { *s } else { 0.0 }));
        self.judge();
    }

    /// Judges each whole frame not judged yet, cutting where the rules say.
    fn judge(&mut self) {
        while (self.levels.len() + 1) * FRAME <= self.open.len() {
            let end = (self.levels.len() + 1) * FRAME;
            // The level rule of `audio::silence::is_voiced`, kept per frame for a forced cut.
            let level = rms(&self.open[end - FRAME..end]);
            self.levels.push(level);
            if level >= SILENCE_RMS {
                self.voiced_end = end;
                if self.unheard_since.is_none() {
                    self.unheard_since = Some(end);
                }
            }
            if self.voiced_end > 0 && end - self.voiced_end >= samples(COMMIT_PAUSE_MS) {
                self.cut(end);
            } else if end >= samples(FORCE_MS) {
                let at = self.quietest_point(end);
                self.cut(at);
            } else if self.voiced_end == 0 && end > samples(LEAD_IN_MS) {
                // Only silence so far: keep the lead-in (whole frames, so the frames
                // judged stay aligned).
                let drop = end - samples(LEAD_IN_MS);
                self.open.drain(..drop);
                self.levels.drain(..drop / FRAME);
            }
        }
    }

    /// The middle of the quietest frame among the last [`LOOKBACK_MS`] before `end` (the
    /// latest of equally quiet ones, so segments stay long).
    fn quietest_point(&self, end: usize) -> usize {
        let last = end / FRAME;
        let first = last.saturating_sub(samples(LOOKBACK_MS) / FRAME);
        // Searched from the end: `min_by` keeps the first of equal ones.
        let best = (first..last)
            .rev()
            .min_by(|&a, &b| self.levels[a].total_cmp(&self.levels[b]))
            .unwrap_or(first);
        best * FRAME + FRAME / 2
    }

    /// Ends the open segment at `at`; the audio after it opens the next one.
    fn cut(&mut self, at: usize) {
        let rest = self.open.split_off(at);
        let audio = std::mem::replace(&mut self.open, rest);
        let voiced_end = voiced_end(&audio);
        let text = if voiced_end == 0 {
            Some(String::new())
        } else {
            self.heard
                .as_ref()
                .filter(|h| h.is_final_of(voiced_end, audio.len()))
                .map(|h| h.text.clone())
        };
        self.cuts.push_back(Cut {
            segment: self.segment,
            len: audio.len(),
            audio: if text.is_some() { Vec::new() } else { audio },
            voiced_end,
            text,
        });
        self.segment += 1;
        // A new phrase: its decodes are short again.
        self.paced = 0;
        self.nothing_new = false;
        self.heard = None;
        self.levels.clear();
        self.voiced_end = 0;
        self.unheard_since = None;
        self.settle();
        // `judge` goes on from the new segment's first frame.
    }

    /// Commits the cut segments at the front that have their final text.
    fn settle(&mut self) {
        while let Some(text) = self.cuts.front().and_then(|c| c.text.clone()) {
            self.cuts.pop_front();
            self.committed.push(text);
        }
    }

    /// Whether a decode of the open segment heard all its speech.
    fn open_heard_all(&self) -> bool {
        self.heard
            .as_ref()
            .is_some_and(|h| h.is_final_of(self.voiced_end, self.open.len()))
    }

    /// Whether [`next_job`](Self::next_job) has a decode to give now.
    pub fn has_job(&self) -> bool {
        if self.running {
            return false;
        }
        if !self.cuts.is_empty() {
            return true;
        }
        if self.voiced_end == 0 || self.open_heard_all() {
            return false;
        }
        let len = self.open.len();
        self.released
            || len - self.voiced_end >= PAUSE
            || self.unheard_since.is_some_and(|since| len - since >= self.tick())
    }

    /// How long (samples) after new speech begins the open segment is decoded again:
    /// [`TICK_MS`], or [`RETRY_TICK_MS`] after a decode that brought no new words, or
    /// twice the last decode's time when that is longer.
    fn tick(&self) -> usize {
        let least = if self.nothing_new { RETRY_TICK_MS } else { TICK_MS };
        samples(least).max(self.paced)
    }

    /// The next decode to run, if one is due and none is running: a cut segment's final
    /// decode first, then the open segment's.
    pub fn next_job(&mut self) -> Option<Job> {
        if !self.has_job() {
            return None;
        }
        self.running = true;
        if let Some(cut) = self.cuts.front_mut() {
            let audio = std::mem::take(&mut cut.audio);
            return Some(Job::new(Purpose::Final, cut.segment, audio, cut.voiced_end));
        }
        // Trailing silence beyond a commit pause adds nothing to hear.
        let end = (self.voiced_end + samples(COMMIT_PAUSE_MS)).min(self.open.len());
        self.unheard_since = None;
        let purpose = if self.released {
            Purpose::Final
        } else {
            Purpose::Interim
        };
        Some(Job::new(
            purpose,
            self.segment,
            self.open[..end].to_vec(),
            self.voiced_end,
        ))
    }

    /// How long `job` took to decode. After an interim decode of the open segment, the next
    /// is due [`TICK_MS`] after new speech begins (half a tick when it brought no new words:
    /// [`complete`](Self::complete) knows), or twice this when that is longer, so decoding
    /// takes at most about half of the time (and of one core) while the user speaks. A
    /// decode of another segment (a final one, or one of a phrase cut while it ran) says
    /// nothing of what the open one's cost.
    pub fn paced_by(&mut self, job: &Job, decode: std::time::Duration) {
        if job.purpose == Purpose::Interim && job.segment == self.segment {
            self.paced = (decode.as_secs_f64() * 2.0 * f64::from(STT_RATE)) as usize;
        }
    }

    /// A decode's text. Returns the interim text to show when this changed it.
    pub fn complete(&mut self, job: Job, text: &str) -> Option<String> {
        self.running = false;
        // Punctuation alone is no words (Moonshine can make a "." of a breath).
        let text = if text.chars().any(char::is_alphanumeric) {
            text.trim().to_string()
        } else {
            String::new()
        };
        let heard = Heard {
            covers: job.covers,
            tail: job.tail(),
            rough: job.may_be_rough(),
            text,
        };
        let of_open = job.segment == self.segment;
        if of_open {
            if job.purpose == Purpose::Interim {
                // No new words: look again sooner (see RETRY_TICK_MS).
                self.nothing_new = heard.text.is_empty() || self.heard.as_ref().is_some_and(|h| h.text == heard.text);
            }
            self.heard = Some(heard);
        } else if let Some(cut) = self.cuts.iter_mut().find(|c| c.segment == job.segment) {
            // Its final decode, or a decode of it while it was open that the cut
            // overtook and that heard all of it.
            let final_text = job.purpose == Purpose::Final || heard.is_final_of(cut.voiced_end, cut.len);
            if cut.text.is_none() && final_text {
                cut.text = Some(heard.text);
                cut.audio = Vec::new();
            }
            self.settle();
        }
        // Not shown: at release (the transcript is the answer), and after a cut segment's
        // decode while the open one holds speech not decoded since the cut, whose words
        // would vanish until its decode, the next job, shows them again.
        if self.released || (!of_open && self.voiced_end > 0) {
            return None;
        }
        let now = self.text();
        (now != self.shown).then(|| {
            self.shown = now.clone();
            now
        })
    }

    /// The key was released: from now on every decode is final.
    pub fn release(&mut self) {
        self.released = true;
    }

    /// The transcript a release now would give without another decode (see the module's
    /// rules), when it has words; `None` while speech that no decode heard is open, or the
    /// gap after the last word is still shorter than a pause.
    pub fn settled(&self) -> Option<String> {
        if !self.cuts.is_empty() {
            return None;
        }
        let quiet = self.voiced_end == 0 || (self.open_heard_all() && self.open.len() - self.voiced_end >= PAUSE);
        quiet.then(|| self.text()).filter(|t| !t.is_empty())
    }

    /// The committed text, then the open segment's latest decode (when no cut segment
    /// waits before it).
    pub fn text(&self) -> String {
        let open = self
            .heard
            .as_ref()
            .filter(|_| self.cuts.is_empty() && self.voiced_end > 0)
            .map(|h| h.text.as_str());
        join_text(self.committed.iter().map(String::as_str).chain(open))
    }
}

/// A whole clip through the same segments, with no interim decodes: one decode per
/// segment (`decode` gets each segment's audio).
pub fn transcribe_whole<E>(audio: &[f32], mut decode: impl FnMut(&[f32]) -> Result<String, E>) -> Result<String, E> {
    let mut s = Segmenter::new();
    s.push(audio);
    s.release();
    while let Some(job) = s.next_job() {
        let text = decode(&job.audio)?;
        s.complete(job, &text);
    }
    Ok(s.text())
}

/// How a live transcription decodes: a job's clip (`job.audio`) in, its text out, giving
/// up (an error) once the token is cancelled. Called on the live transcription's own
/// thread.
pub type Decoder = Box<dyn FnMut(&Job, &CancellationToken) -> Result<String, ProviderError> + Send>;

/// What the handle sends the thread.
enum Msg {
    Audio(Vec<f32>),
    /// Released: the final transcript goes back on this.
    Finish(oneshot::Sender<Result<String, ProviderError>>),
}

/// Starts a live transcription on a thread of its own (`provider` names it in errors).
/// Decoding blocks, so it stays off the async runtime; the thread takes all the audio
/// that came before each decode, so decodes never queue up behind one another. Dropping
/// the returned handle without finishing (a cancelled turn) stops a decode at its next
/// step, and the thread ends.
pub fn start(
    provider: &'static str,
    decoder: Decoder,
    interim: mpsc::UnboundedSender<String>,
) -> Result<Box<dyn LiveTranscription>, ProviderError> {
    let (tx, rx) = std_mpsc::channel();
    let (settled_tx, settled) = watch::channel(None);
    let stop = CancellationToken::new();
    let thread_stop = stop.clone();
    std::thread::Builder::new()
        .name(format!("hark-{provider}-live"))
        .spawn(move || run(rx, decoder, interim, &settled_tx, &thread_stop))
        .map_err(|e| {
            ProviderError::new(
                provider,
                ErrorKind::LocalEngine,
                format!("cannot start the live transcription: {e}"),
            )
        })?;
    Ok(Box::new(SegmentedLive {
        audio: tx,
        settled,
        provider,
        _stop: stop.drop_guard(),
    }))
}

/// The live transcription's thread: audio in, a decode whenever one is due, the settled
/// transcript published as it changes, the final transcript at release.
fn run(
    rx: std_mpsc::Receiver<Msg>,
    mut decode: Decoder,
    interim: mpsc::UnboundedSender<String>,
    settled: &watch::Sender<Option<String>>,
    stop: &CancellationToken,
) {
    // Only a change wakes the voice actor.
    let publish = |now: Option<String>| {
        settled.send_if_modified(|was| {
            let changed = *was != now;
            *was = now;
            changed
        });
    };
    let mut s = Segmenter::new();
    // The first failure; later audio is taken but not decoded, and the release gets it.
    let mut failed: Option<ProviderError> = None;
    loop {
        let mut msgs = Vec::new();
        // Wait only when there is nothing to decode, then take all that has come.
        if failed.is_some() || !s.has_job() {
            match rx.recv() {
                Ok(m) => msgs.push(m),
                Err(_) => return, // dropped without a release
            }
        }
        msgs.extend(rx.try_iter());
        for m in msgs {
            match m {
                Msg::Audio(a) => s.push(&a),
                Msg::Finish(reply) => {
                    let result = match failed.take() {
                        Some(e) => Err(e),
                        None => finish(&mut s, &mut decode, stop),
                    };
                    let _ = reply.send(result);
                    return;
                }
            }
        }
        if failed.is_some() {
            continue;
        }
        publish(s.settled());
        if let Some(job) = s.next_job() {
            let started = std::time::Instant::now();
            match decode(&job, stop) {
                Ok(text) => {
                    let took = started.elapsed();
                    tracing::debug!(
                        "live {:?} decode of {} ms of audio in {took:?}",
                        job.purpose,
                        job.audio.len() * 1000 / STT_RATE as usize,
                    );
                    s.paced_by(&job, took);
                    if let Some(text) = s.complete(job, &text) {
                        let _ = interim.send(text);
                    }
                    publish(s.settled());
                }
                Err(e) => {
                    // The release reports it; nothing is settled that it would not give.
                    publish(None);
                    failed = Some(e);
                }
            }
        }
    }
}

/// At release: the decodes still needed, then the whole transcript.
fn finish(s: &mut Segmenter, decode: &mut Decoder, stop: &CancellationToken) -> Result<String, ProviderError> {
    s.release();
    while let Some(job) = s.next_job() {
        let text = decode(&job, stop)?;
        s.complete(job, &text);
    }
    Ok(s.text())
}

/// The handle the voice actor holds.
struct SegmentedLive {
    audio: std_mpsc::Sender<Msg>,
    /// The settled transcript, as the thread publishes it.
    settled: watch::Receiver<Option<String>>,
    provider: &'static str,
    /// Cancels a decode in progress when the handle is dropped (a turn cancelled).
    _stop: DropGuard,
}

impl SegmentedLive {
    fn gone(&self) -> ProviderError {
        ProviderError::new(
            self.provider,
            ErrorKind::LocalEngine,
            "the live transcription's thread stopped",
        )
    }
}

#[async_trait]
impl LiveTranscription for SegmentedLive {
    async fn send(&mut self, audio: &[f32]) -> Result<(), ProviderError> {
        self.audio.send(Msg::Audio(audio.to_vec())).map_err(|_| self.gone())
    }

    async fn finish(self: Box<Self>) -> Result<String, ProviderError> {
        let (tx, rx) = oneshot::channel();
        self.audio.send(Msg::Finish(tx)).map_err(|_| self.gone())?;
        rx.await.map_err(|_| self.gone())?
    }

    fn settled(&self) -> Option<watch::Receiver<Option<String>>> {
        Some(self.settled.clone())
    }
}

#[cfg(test)]
mod tests;
