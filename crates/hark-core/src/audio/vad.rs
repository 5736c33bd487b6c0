//! Voice activity: where speech starts and ends in live 16 kHz audio, for hands-free
//! conversation (issue 23).
//!
//! - [`Silero`] runs Silero VAD (its 16 kHz ONNX, MIT, from the PyPI package `silero-vad`) on the
//!   ONNX Runtime the other offline models use: one speech probability per 32 ms frame,
//!   with the model's recurrent state and the 64 samples of context that the reference
//!   wrapper (`silero_vad/utils_vad.py`, `OnnxWrapper`) carries from frame to frame.
//! - [`SpeechGate`] turns those probabilities into the two edges a conversation needs,
//!   speech started and speech ended, with the reference's hysteresis (on at `threshold`,
//!   off below `threshold - 0.15`), a minimum speech length (so a click or a cough starts
//!   nothing) and a patience for silence (the end of a turn, until Smart Turn decides it).
//!   It is pure, so what starts a turn is decided in one place and unit-tested.
//! - [`Detector`] feeds chunks of any length through a model and a gate, and says where,
//!   in samples since it started, each edge fell.

use std::path::{Path, PathBuf};

use ort::session::Session;
use ort::value::Tensor;

use super::resample::STT_RATE;
use crate::provider::{ErrorKind, ProviderError};

/// The manifest's id of Silero VAD's model.
pub const MODEL_ID: &str = "silero-vad";
const PROVIDER: &str = "silero-vad";

/// Samples in one frame the model rates (32 ms at 16 kHz: the only size it takes there).
pub const VAD_FRAME: usize = 512;
/// Samples of the previous frame the model sees before each frame (the reference
/// wrapper's `context_size` at 16 kHz).
const CONTEXT: usize = 64;
/// The model's recurrent state: `[2, 1, 128]`.
const STATE: usize = 2 * 128;

/// A speech probability for each 32 ms frame, in order. [`Silero`] is the real one; tests
/// script their own.
pub trait SpeechProbability: Send {
    /// The probability (0–1) that `frame` ([`VAD_FRAME`] samples) is speech.
    fn probability(&mut self, frame: &[f32]) -> Result<f32, ProviderError>;
    /// Forgets what was heard (a new stretch of audio starts).
    fn reset(&mut self);
}

/// Where Silero VAD's files are.
#[derive(Debug, Clone)]
pub struct SileroFiles {
    pub model: PathBuf,
    /// The ONNX Runtime library it runs on.
    pub runtime: PathBuf,
}

/// Silero VAD on ONNX Runtime, one thread: a frame costs a fraction of a millisecond, and
/// hands-free listening must stay a small part of one core (issue 23's 5 % goal).
pub struct Silero {
    session: Session,
    /// The model's recurrent state, carried from frame to frame.
    state: Vec<f32>,
    /// The last samples of the previous frame, which the model sees before the next.
    context: Vec<f32>,
}

fn engine_err(msg: impl Into<String>) -> ProviderError {
    ProviderError::new(PROVIDER, ErrorKind::LocalEngine, msg)
}

impl Silero {
    pub fn load(files: &SileroFiles) -> Result<Self, ProviderError> {
        crate::onnx::load_runtime(PROVIDER, &files.runtime, MODEL_ID)?;
        if !files.model.exists() {
            return Err(missing(&files.model));
        }
        let session = crate::onnx::session(PROVIDER, &files.model, 1, "the voice activity model")?;
        Ok(Self {
            session,
            state: vec![0.0; STATE],
            context: vec![0.0; CONTEXT],
        })
    }
}

fn missing(model: &Path) -> ProviderError {
    engine_err(format!(
        "the voice activity model {} is not there: fetch it with `hark models fetch {MODEL_ID}`",
        model.display()
    ))
}

impl SpeechProbability for Silero {
    fn probability(&mut self, frame: &[f32]) -> Result<f32, ProviderError> {
        if frame.len() != VAD_FRAME {
            return Err(engine_err(format!(
                "a voice activity frame has {} samples, not {VAD_FRAME}",
                frame.len()
            )));
        }
        let run_err = |e: ort::Error| engine_err(format!("the voice activity model failed: {e}"));
        let mut input = Vec::with_capacity(CONTEXT + VAD_FRAME);
        input.extend_from_slice(&self.context);
        // A NaN sample (a broken device) would poison the recurrent state for good.
        input.extend(frame.iter().map(|s| if s.is_finite() { *s } else { 0.0 }));
        self.context.copy_from_slice(&input[input.len() - CONTEXT..]);
        let audio = Tensor::from_array(([1usize, CONTEXT + VAD_FRAME], input)).map_err(run_err)?;
        let state = Tensor::from_array(([2usize, 1, 128], self.state.clone())).map_err(run_err)?;
        // `sr` is a scalar (rank 0), as the reference passes `np.array(16000)`.
        let sr = Tensor::from_array(((), vec![i64::from(STT_RATE)])).map_err(run_err)?;
        let mut out = self
            .session
            .run(ort::inputs!["input" => audio, "state" => state, "sr" => sr])
            .map_err(run_err)?;
        let output = out
            .remove("output")
            .ok_or_else(|| engine_err("the voice activity model returned no output"))?;
        let (_, p) = output.try_extract_tensor::<f32>().map_err(run_err)?;
        let p = p.first().copied().unwrap_or(0.0);
        let next = out
            .remove("stateN")
            .ok_or_else(|| engine_err("the voice activity model returned no state"))?;
        let (_, next) = next.try_extract_tensor::<f32>().map_err(run_err)?;
        if next.len() == STATE {
            self.state.copy_from_slice(next);
        }
        Ok(if p.is_finite() { p.clamp(0.0, 1.0) } else { 0.0 })
    }

    fn reset(&mut self) {
        self.state.fill(0.0);
        self.context.fill(0.0);
    }
}

/// What starts and ends speech.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GateSettings {
    /// A frame at or above this probability is speech; speech goes on while frames stay
    /// above `threshold - 0.15` (the reference's hysteresis).
    pub threshold: f32,
    /// Speech must last this long before it counts (a click, a cough or a door is shorter).
    pub min_speech_ms: u32,
    /// The same while Hark speaks, for a barge-in: shorter, so "Stop!" is enough. At 120
    /// ms the benchmark's barge-in came in 269 ms (p95, against 1,149 ms at 250 ms, which
    /// waited for the word after "Stop,"), Hark's own voice after AEC3 and five minutes of
    /// noise, music and typing started none, and the words spoken over the reply reached
    /// the recogniser whole in 5 of 5 runs of the full-duplex test (an earlier test, whose
    /// question came after a pause, heard "I name" for "what is my name" in 3 of 7 at 120).
    pub barge_in_min_speech_ms: u32,
    /// Silence after speech that ends it: the end of a turn, when no end-of-turn model
    /// is asked.
    pub patience_ms: u32,
    /// With an end-of-turn model: a pause this long asks it whether the turn is over
    /// ([`Edge::Paused`]). Counted in whole 32 ms frames: 64 ms is two. pipecat asks
    /// Smart Turn after 200 ms; the benchmark's end of turn (p50) was 403 ms at 200, 303 ms
    /// at 100 (which the frames make 128), 307 ms at 96 and 271 ms at 64 on a slower day
    /// (2026-12-05), and none of its sentences with a pause after "and", "that", "if" or
    /// "um" was cut off at any of them.
    pub pause_ms: u32,
    /// With an end-of-turn model: the silence that ends a turn it has not called finished
    /// (someone thinking mid-sentence). pipecat waits 3 s; 2 s ends a turn the model
    /// misjudged sooner, and a thinking pause is rarely longer. Speech that began while Hark
    /// spoke waits `patience_ms` instead: the reply is paused until it ends (issue 49), and
    /// a fragment of Hark's own voice, which Smart Turn calls unfinished, must not hold it
    /// for two seconds.
    pub unfinished_patience_ms: u32,
    /// Speech that runs on this long is ended anyway (steady noise the model takes for a
    /// voice must not hold the turn open for ever).
    pub max_speech_ms: u32,
}

impl GateSettings {
    /// Whether a frame of probability `p` is speech: at or above the threshold, or, once
    /// speech has begun (`speaking`), above the threshold less 0.15 (the reference's
    /// hysteresis).
    pub fn is_speech(&self, p: f32, speaking: bool) -> bool {
        if speaking {
            p >= (self.threshold - 0.15).max(0.0)
        } else {
            p >= self.threshold
        }
    }
}

impl Default for GateSettings {
    fn default() -> Self {
        Self {
            threshold: 0.5,
            min_speech_ms: 250,
            barge_in_min_speech_ms: 120,
            patience_ms: 800,
            pause_ms: 64,
            unfinished_patience_ms: 2_000,
            max_speech_ms: 60_000,
        }
    }
}

/// An edge of speech, at a sample position counted from the detector's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edge {
    /// Speech began at `at` (the first frame above the threshold), and has lasted the
    /// minimum speech length.
    Started { at: u64 },
    /// Speech ended at `at` (just past its last speech frame); `patience` later (or at
    /// the maximum length, or when the end-of-turn model called it finished) it was
    /// declared over.
    Ended { at: u64 },
    /// With an end-of-turn model: speech has paused since `at` for `pause_ms`; whether the
    /// turn is over is the model's to say ([`SpeechGate::end_turn`] if it is). Once per
    /// pause.
    Paused { at: u64 },
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum GateState {
    Quiet,
    /// Above the threshold since `start`; `last` is past the last frame that was.
    Onset {
        start: u64,
        last: u64,
    },
    Speaking {
        start: u64,
        last: u64,
        /// This pause was reported ([`Edge::Paused`]).
        asked: bool,
        /// It began while Hark spoke (the barge-in minimum applied).
        over_hark: bool,
    },
}

/// Probabilities in, edges out (pure).
#[derive(Debug, Clone)]
pub struct SpeechGate {
    settings: GateSettings,
    state: GateState,
    /// Hark is speaking: the barge-in minimum applies.
    barge_in: bool,
    /// An end-of-turn model is asked at pauses.
    turn_model: bool,
    /// Silence before this sample is no pause ([`Self::hold_pauses_until`]).
    hold_until: u64,
}

fn samples(ms: u32) -> u64 {
    u64::from(ms) * u64::from(STT_RATE) / 1000
}

impl SpeechGate {
    pub fn new(settings: GateSettings) -> Self {
        Self {
            settings,
            state: GateState::Quiet,
            barge_in: false,
            turn_model: false,
            hold_until: 0,
        }
    }

    /// Whether an end-of-turn model decides: pauses are reported, and silence alone ends
    /// a turn only after `unfinished_patience_ms`.
    pub fn set_turn_model(&mut self, on: bool) {
        self.turn_model = on;
    }

    /// The end-of-turn model called the turn finished: speech under way ends, where its
    /// last speech frame was.
    pub fn end_turn(&mut self) -> Option<Edge> {
        let GateState::Speaking { last, .. } = self.state else {
            return None;
        };
        self.state = GateState::Quiet;
        Some(Edge::Ended { at: last })
    }

    /// Whether Hark is speaking (speech then needs only the barge-in minimum).
    pub fn set_barge_in(&mut self, on: bool) {
        self.barge_in = on;
    }

    /// Silence before sample `until` is not a pause to ask the end-of-turn model about:
    /// a pause is counted from there ([`EchoWindow`]: the silence may be the echo
    /// canceller's, which took the words said over Hark's voice for its echo). Only the
    /// question waits: silence still ends speech after its patience.
    ///
    /// [`EchoWindow`]: super::echo::EchoWindow
    pub fn hold_pauses_until(&mut self, until: u64) {
        self.hold_until = until;
    }

    fn min_speech(&self) -> u64 {
        samples(if self.barge_in {
            self.settings.barge_in_min_speech_ms
        } else {
            self.settings.min_speech_ms
        })
    }

    /// Whether speech is under way (started and not yet ended).
    pub fn speaking(&self) -> bool {
        matches!(self.state, GateState::Speaking { .. })
    }

    /// Back to quiet, forgetting an onset or speech under way.
    pub fn reset(&mut self) {
        self.state = GateState::Quiet;
    }

    /// The frame that ends at sample `end` had probability `p`.
    pub fn frame(&mut self, end: u64, p: f32) -> Option<Edge> {
        let s = self.settings;
        let start_of_frame = end.saturating_sub(VAD_FRAME as u64);
        let on = s.is_speech(p, false);
        let still = s.is_speech(p, true);
        match self.state {
            GateState::Quiet => {
                if on {
                    self.state = GateState::Onset {
                        start: start_of_frame,
                        last: end,
                    };
                    return self.confirm(end);
                }
                None
            }
            GateState::Onset { start, last } => {
                if still {
                    self.state = GateState::Onset { start, last: end };
                    self.confirm(end)
                } else if end - last >= self.min_speech() {
                    // A blip that did not last: forgotten.
                    self.state = GateState::Quiet;
                    None
                } else {
                    None
                }
            }
            GateState::Speaking {
                start,
                last,
                asked,
                over_hark,
            } => {
                let (last, asked) = if still { (end, false) } else { (last, asked) };
                self.state = GateState::Speaking {
                    start,
                    last,
                    asked,
                    over_hark,
                };
                let patience = if self.turn_model && !over_hark {
                    s.unfinished_patience_ms
                } else {
                    s.patience_ms
                };
                if end - last >= samples(patience) || end - start >= samples(s.max_speech_ms) {
                    self.state = GateState::Quiet;
                    return Some(Edge::Ended { at: last });
                }
                let paused = end.saturating_sub(last.max(self.hold_until));
                if self.turn_model && !asked && paused >= samples(s.pause_ms) {
                    self.state = GateState::Speaking {
                        start,
                        last,
                        asked: true,
                        over_hark,
                    };
                    return Some(Edge::Paused { at: last });
                }
                None
            }
        }
    }

    /// An onset that has lasted the minimum speech length becomes speech.
    fn confirm(&mut self, end: u64) -> Option<Edge> {
        let GateState::Onset { start, last } = self.state else {
            return None;
        };
        if end - start >= self.min_speech() {
            self.state = GateState::Speaking {
                start,
                last,
                over_hark: self.barge_in,
                asked: false,
            };
            return Some(Edge::Started { at: start });
        }
        None
    }
}

/// Chunks of any length through a model and a gate.
pub struct Detector {
    model: Box<dyn SpeechProbability>,
    gate: SpeechGate,
    /// Samples waiting to fill the next frame.
    pending: Vec<f32>,
    /// Samples rated so far: the position of the next frame's start.
    rated: u64,
}

impl Detector {
    pub fn new(model: Box<dyn SpeechProbability>, settings: GateSettings) -> Self {
        Self {
            model,
            gate: SpeechGate::new(settings),
            pending: Vec::with_capacity(VAD_FRAME),
            rated: 0,
        }
    }

    /// Samples taken so far (every sample of every chunk, rated or waiting).
    pub fn position(&self) -> u64 {
        self.rated + self.pending.len() as u64
    }

    /// Whether Hark is speaking (see [`SpeechGate::set_barge_in`]).
    pub fn set_barge_in(&mut self, on: bool) {
        self.gate.set_barge_in(on);
    }

    /// Whether an end-of-turn model decides (see [`SpeechGate::set_turn_model`]).
    pub fn set_turn_model(&mut self, on: bool) {
        self.gate.set_turn_model(on);
    }

    /// The end-of-turn model called the turn finished (see [`SpeechGate::end_turn`]).
    pub fn end_turn(&mut self) -> Option<Edge> {
        self.gate.end_turn()
    }

    /// Silence before `until` is no pause (see [`SpeechGate::hold_pauses_until`]).
    pub fn hold_pauses_until(&mut self, until: u64) {
        self.gate.hold_pauses_until(until);
    }

    /// The next chunk; the edges it completed, in order.
    pub fn push(&mut self, chunk: &[f32]) -> Result<Vec<Edge>, ProviderError> {
        let mut edges = Vec::new();
        let mut rest = chunk;
        while !rest.is_empty() {
            let take = (VAD_FRAME - self.pending.len()).min(rest.len());
            self.pending.extend_from_slice(&rest[..take]);
            rest = &rest[take..];
            if self.pending.len() == VAD_FRAME {
                let p = self.model.probability(&self.pending)?;
                self.pending.clear();
                self.rated += VAD_FRAME as u64;
                edges.extend(self.gate.frame(self.rated, p));
            }
        }
        Ok(edges)
    }

    /// `n` samples went by unheard (the listener was deaf): the position moves on past
    /// them, and a frame begun before them is dropped.
    pub fn skip(&mut self, n: usize) {
        self.rated += (self.pending.len() + n) as u64;
        self.pending.clear();
    }

    /// Forgets the speech under way and the model's memory of the audio (what follows is
    /// heard afresh); the position keeps counting.
    pub fn reset(&mut self) {
        self.gate.reset();
        self.model.reset();
    }
}

/// A stand-in voice activity model for tests: speech wherever a frame's RMS is above the
/// level it holds.
#[cfg(test)]
pub(crate) struct Loud(pub f32);

#[cfg(test)]
impl SpeechProbability for Loud {
    fn probability(&mut self, frame: &[f32]) -> Result<f32, ProviderError> {
        Ok(if crate::audio::resample::rms(frame) > self.0 {
            1.0
        } else {
            0.0
        })
    }
    fn reset(&mut self) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    const F: u64 = VAD_FRAME as u64;

    /// Feeds one probability per frame; returns each edge with the frame index it came at.
    fn run(gate: &mut SpeechGate, ps: &[f32]) -> Vec<(usize, Edge)> {
        ps.iter()
            .enumerate()
            .filter_map(|(i, p)| gate.frame((i as u64 + 1) * F, *p).map(|e| (i, e)))
            .collect()
    }

    fn settings() -> GateSettings {
        GateSettings {
            threshold: 0.5,
            min_speech_ms: 256, // 8 frames
            barge_in_min_speech_ms: 256,
            patience_ms: 320,            // 10 frames
            pause_ms: 192,               // 6 frames
            unfinished_patience_ms: 640, // 20 frames
            max_speech_ms: 60_000,
        }
    }

    #[test]
    fn with_a_turn_model_a_pause_asks_it_once_and_silence_alone_waits_longer() {
        let mut g = SpeechGate::new(settings());
        g.set_turn_model(true);
        let mut ps = vec![0.0; 5];
        ps.extend([0.9; 20]); // speech in frames 5..25
        ps.extend([0.0; 3]); // a short gap: no question
        ps.extend([0.9; 2]); // speech again, last in frame 29
        ps.extend([0.0; 25]);
        let edges = run(&mut g, &ps);
        assert_eq!(
            edges,
            vec![
                (12, Edge::Started { at: 5 * F }),
                // 6 frames after the last speech frame (29), once, though silence goes on.
                (35, Edge::Paused { at: 30 * F }),
                // Nobody ended it: the unfinished patience (20 frames), not the 10.
                (49, Edge::Ended { at: 30 * F }),
            ]
        );
    }

    /// Issue 49: speech that began while Hark spoke pauses the reply until it ends, so a
    /// pause the model calls unfinished ends it after the plain patience, not the long one.
    #[test]
    fn speech_begun_over_hark_waits_the_plain_patience_when_the_model_says_unfinished() {
        let mut g = SpeechGate::new(settings());
        g.set_turn_model(true);
        g.set_barge_in(true);
        let mut edges = Vec::new();
        for i in 0..35u64 {
            if let Some(e) = g.frame((i + 1) * F, if i < 10 { 0.9 } else { 0.0 }) {
                edges.push((i, e));
                g.set_barge_in(false); // the key went down for it: Hark listens
            }
        }
        assert_eq!(
            edges,
            vec![
                (7, Edge::Started { at: 0 }),
                (15, Edge::Paused { at: 10 * F }),
                // 10 frames of silence after the last speech frame (9), not 20.
                (19, Edge::Ended { at: 10 * F }),
            ]
        );
    }

    #[test]
    fn a_finished_turn_ends_where_the_speech_did_and_a_new_pause_asks_again() {
        let mut g = SpeechGate::new(settings());
        g.set_turn_model(true);
        let mut ps = vec![0.9; 10];
        ps.extend([0.0; 6]);
        let edges = run(&mut g, &ps);
        assert_eq!(edges.last(), Some(&(15, Edge::Paused { at: 10 * F })));
        // "Not yet": the speaker goes on, and pauses again.
        let more: Vec<_> = (16..30)
            .filter_map(|i| g.frame((i + 1) * F, if i < 22 { 0.9 } else { 0.0 }).map(|e| (i, e)))
            .collect();
        assert_eq!(more, vec![(27, Edge::Paused { at: 22 * F })]);
        // "Finished": the turn ends there, at its last speech frame.
        assert_eq!(g.end_turn(), Some(Edge::Ended { at: 22 * F }));
        assert!(!g.speaking());
        assert_eq!(g.end_turn(), None, "nothing under way");
    }

    /// Silence while the speaker's echo may still be in the microphone (a barge-in over
    /// the reply) is no pause: the question waits until the pause has lasted past it, and
    /// speech resumed before then asks nothing. Silence still ends the speech on time.
    #[test]
    fn silence_that_the_echo_canceller_may_have_made_is_no_pause() {
        let mut g = SpeechGate::new(settings());
        g.set_turn_model(true);
        // The reply's echo reaches frame 20.
        g.hold_pauses_until(20 * F);
        let mut ps = vec![0.9; 10]; // a word over the reply, frames 0..10
        ps.extend([0.0; 8]); // the canceller's silence, frames 10..18: no question
        ps.extend([0.9; 6]); // the words after it, frames 18..24
        ps.extend([0.0; 25]);
        let edges = run(&mut g, &ps);
        assert_eq!(
            edges,
            vec![
                (7, Edge::Started { at: 0 }),
                (29, Edge::Paused { at: 24 * F }),
                (43, Edge::Ended { at: 24 * F }),
            ]
        );

        // A pause that began inside the echo is asked about 6 frames after the echo ends.
        let mut g = SpeechGate::new(settings());
        g.set_turn_model(true);
        g.hold_pauses_until(14 * F);
        let mut ps = vec![0.9; 10];
        ps.extend([0.0; 30]);
        let edges = run(&mut g, &ps);
        assert_eq!(edges[1], (19, Edge::Paused { at: 10 * F }), "{edges:?}");
        // The silence's patience counts from the last word, echo or not.
        assert_eq!(edges[2], (29, Edge::Ended { at: 10 * F }), "{edges:?}");
    }

    #[test]
    fn speech_starts_where_it_began_once_it_has_lasted_and_ends_after_the_patience() {
        let mut g = SpeechGate::new(settings());
        let mut ps = vec![0.0; 5];
        ps.extend([0.9; 20]);
        ps.extend([0.0; 15]);
        let edges = run(&mut g, &ps);
        assert_eq!(
            edges,
            vec![
                (12, Edge::Started { at: 5 * F }),
                // Speech ended past frame 24; 10 frames of silence later it is over.
                (34, Edge::Ended { at: 25 * F }),
            ]
        );
        assert!(!g.speaking());
    }

    #[test]
    fn a_click_shorter_than_the_minimum_speech_starts_nothing() {
        let mut g = SpeechGate::new(settings());
        let mut ps = vec![0.0; 3];
        ps.extend([0.99; 4]); // 128 ms
        ps.extend([0.0; 30]);
        ps.extend([0.99; 3]);
        ps.extend([0.0; 30]);
        assert_eq!(run(&mut g, &ps), vec![]);
    }

    #[test]
    fn speech_goes_on_above_the_lower_threshold_and_through_short_gaps() {
        let mut g = SpeechGate::new(settings());
        let mut ps = vec![0.9; 10];
        ps.extend([0.4; 10]); // below 0.5, above 0.35: still speech
        ps.extend([0.1; 5]); // a gap shorter than the patience
        ps.extend([0.8; 5]);
        ps.extend([0.0; 12]);
        let edges = run(&mut g, &ps);
        assert_eq!(edges.len(), 2, "{edges:?}");
        assert_eq!(edges[0].1, Edge::Started { at: 0 });
        assert_eq!(edges[1].1, Edge::Ended { at: 30 * F });
    }

    #[test]
    fn probabilities_between_the_thresholds_never_start_speech() {
        let mut g = SpeechGate::new(settings());
        assert_eq!(run(&mut g, &[0.45; 200]), vec![]);
    }

    #[test]
    fn speech_that_runs_on_is_ended_at_the_maximum_length() {
        let mut g = SpeechGate::new(GateSettings {
            max_speech_ms: 1024, // 32 frames
            ..settings()
        });
        let edges = run(&mut g, &[0.9; 100]);
        assert_eq!(edges[0], (7, Edge::Started { at: 0 }));
        assert_eq!(edges[1].1, Edge::Ended { at: 32 * F });
        // …and speech that still goes on starts again.
        assert!(matches!(edges[2].1, Edge::Started { .. }), "{edges:?}");
    }

    #[test]
    fn while_hark_speaks_a_shorter_word_is_enough_to_interrupt() {
        let mut ps = vec![0.0; 3];
        ps.extend([0.9; 5]); // 160 ms: "Stop!"
        ps.extend([0.0; 20]);
        let mut g = SpeechGate::new(GateSettings {
            barge_in_min_speech_ms: 128, // 4 frames
            ..settings()
        });
        assert_eq!(run(&mut g, &ps), vec![], "not a turn of its own");
        g.set_barge_in(true);
        let edges = run(&mut g, &ps);
        assert_eq!(edges[0], (6, Edge::Started { at: 3 * F }), "a barge-in: {edges:?}");
    }

    #[test]
    fn the_detector_frames_chunks_of_any_length_and_counts_every_sample() {
        let mut d = Detector::new(Box::new(Loud(0.1)), settings());
        let mut audio = vec![0.0f32; 5000];
        audio.extend(vec![0.5f32; 8000]);
        audio.extend(vec![0.0f32; 8000]);
        let mut edges = Vec::new();
        for chunk in audio.chunks(333) {
            edges.extend(d.push(chunk).unwrap());
        }
        assert_eq!(d.position(), audio.len() as u64);
        // The onset is found at the start of the first frame that reaches it.
        assert_eq!(edges[0], Edge::Started { at: 9 * F });
        let Edge::Ended { at } = edges[1] else {
            panic!("{edges:?}")
        };
        assert!((13_000..=13_000 + F).contains(&at), "{at}");
    }
}
