//! Push-to-talk decisions, as pure functions: key events in, actions out.
//!
//! Every input (key press, key release, auto-repeat) goes through [`decide`] on the session
//! actor, so presses, releases and pipeline completions can never race.

use serde::{Deserialize, Serialize};

/// How the key works.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum PttMode {
    /// Speak while the key is held.
    #[default]
    Hold,
    /// Press once to start, once more to stop.
    Toggle,
}

/// Where the assistant is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    Idle,
    Listening,
    /// Transcribing or waiting for the model.
    Thinking,
    /// Playing the reply.
    Speaking,
}

/// A key event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    Press,
    Release,
    /// One press that toggles, whatever the mode: `hark-app --toggle`, the tray's "Push to
    /// talk" (a script or a menu cannot hold a key).
    Toggle,
    /// Hands-free: the voice activity detector heard speech begin while Hark thought or
    /// spoke, or while its voice may still be in the microphone, and holds the key down for
    /// it (a [`Key::Release`] ends it). Unlike a hand on the key, such a voice may be Hark's
    /// own: it pauses the reply, and the words decide ([`Action::PauseAndListen`]).
    Voice,
    /// Hands-free: the voice the detector holds the key for ended, as a [`Key::Release`].
    /// `past_echo`: it went on past where Hark's own voice could still be in the
    /// microphone (the reply was paused for it, or had ended, and its echo had died away),
    /// so it cannot all be Hark's; otherwise it may be, and only a word that stops a
    /// speaker makes it a barge-in (`session::voice::overheard`).
    VoiceEnded {
        past_echo: bool,
    },
}

/// What to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Nothing,
    StartListening,
    /// End the utterance and answer it.
    StopListening,
    /// Cut the reply in flight (stop playback, cancel the model and the voice), then listen.
    BargeIn,
    /// Pause the reply's playback, if one is under way (the model and the voice go on), and
    /// listen: the words heard decide whether it was a barge-in or a turn (someone else's
    /// words: cut the reply, as [`Action::BargeIn`], and answer them) or not (no words,
    /// Hark's own, or a backchannel: play on). See `session::voice::overheard`.
    PauseAndListen,
}

/// The key's state, to recognise auto-repeat and stray releases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct KeyState {
    pub down: bool,
}

/// Decides what a key event means now.
pub fn decide(mode: PttMode, phase: Phase, key: &mut KeyState, event: Key) -> Action {
    match event {
        // A toggle never holds the key: the key's own presses and releases are unaffected.
        Key::Toggle => match phase {
            Phase::Idle => Action::StartListening,
            Phase::Listening => Action::StopListening,
            Phase::Thinking | Phase::Speaking => Action::BargeIn,
        },
        Key::Press | Key::Voice if key.down => Action::Nothing, // auto-repeat while held
        Key::Voice => {
            key.down = true;
            match phase {
                Phase::Listening => Action::Nothing,
                Phase::Idle | Phase::Thinking | Phase::Speaking => Action::PauseAndListen,
            }
        }
        Key::Press => {
            key.down = true;
            match (mode, phase) {
                (_, Phase::Thinking | Phase::Speaking) => Action::BargeIn,
                (PttMode::Toggle, Phase::Listening) => Action::StopListening,
                (_, Phase::Idle) => Action::StartListening,
                (PttMode::Hold, Phase::Listening) => Action::Nothing,
            }
        }
        Key::Release | Key::VoiceEnded { .. } if !key.down => Action::Nothing, // a release we never saw pressed
        Key::Release | Key::VoiceEnded { .. } => {
            key.down = false;
            match (mode, phase) {
                (PttMode::Hold, Phase::Listening) => Action::StopListening,
                _ => Action::Nothing,
            }
        }
    }
}

/// Why an utterance does not make a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum NoTurn {
    /// Released before any audio arrived, or a tap shorter than a syllable.
    TooShort,
    /// Nothing above the noise floor.
    Silent,
    /// The transcriber heard no words.
    NoWords,
    /// Heard over Hark's reply, hands-free: no words, Hark's own words (its voice from the
    /// speakers, which echo cancellation let through), or only a backchannel ("mm-hmm").
    /// The reply went on (issue 49).
    Overheard,
}

/// Shortest utterance worth transcribing (16 kHz samples): a quarter second.
pub const MIN_SAMPLES: usize = 4_000;
/// Below this RMS level an utterance is silence (about -46 dBFS); defined with the pause
/// detection it shares.
pub use crate::audio::silence::SILENCE_RMS;

/// Whether captured audio is worth a turn.
pub fn check_utterance(samples: &[f32]) -> Result<(), NoTurn> {
    if samples.len() < MIN_SAMPLES {
        return Err(NoTurn::TooShort);
    }
    if crate::audio::resample::rms(samples) < SILENCE_RMS {
        return Err(NoTurn::Silent);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(mode: PttMode, phase: Phase, events: &[Key]) -> Vec<Action> {
        let mut k = KeyState::default();
        events.iter().map(|e| decide(mode, phase, &mut k, *e)).collect()
    }

    #[test]
    fn hold_mode_listens_while_held() {
        let mut k = KeyState::default();
        assert_eq!(
            decide(PttMode::Hold, Phase::Idle, &mut k, Key::Press),
            Action::StartListening
        );
        assert_eq!(
            decide(PttMode::Hold, Phase::Listening, &mut k, Key::Release),
            Action::StopListening
        );
    }

    #[test]
    fn key_auto_repeat_is_ignored() {
        assert_eq!(
            run(PttMode::Hold, Phase::Idle, &[Key::Press, Key::Press, Key::Press]),
            vec![Action::StartListening, Action::Nothing, Action::Nothing]
        );
        let mut k = KeyState::default();
        decide(PttMode::Toggle, Phase::Idle, &mut k, Key::Press);
        assert_eq!(
            decide(PttMode::Toggle, Phase::Listening, &mut k, Key::Press),
            Action::Nothing,
            "held, repeating"
        );
    }

    #[test]
    fn toggle_mode_starts_and_stops_on_presses() {
        let mut k = KeyState::default();
        assert_eq!(
            decide(PttMode::Toggle, Phase::Idle, &mut k, Key::Press),
            Action::StartListening
        );
        assert_eq!(
            decide(PttMode::Toggle, Phase::Listening, &mut k, Key::Release),
            Action::Nothing
        );
        assert_eq!(
            decide(PttMode::Toggle, Phase::Listening, &mut k, Key::Press),
            Action::StopListening
        );
    }

    #[test]
    fn a_press_while_thinking_or_speaking_is_barge_in() {
        for phase in [Phase::Thinking, Phase::Speaking] {
            for mode in [PttMode::Hold, PttMode::Toggle] {
                assert_eq!(run(mode, phase, &[Key::Press]), vec![Action::BargeIn]);
            }
        }
    }

    /// Issue 49: a voice that may be Hark's own only pauses the reply (if any) and listens;
    /// its words decide.
    #[test]
    fn a_voice_that_may_be_hark_s_own_pauses_the_reply_and_listens() {
        for phase in [Phase::Idle, Phase::Thinking, Phase::Speaking] {
            assert_eq!(
                run(PttMode::Hold, phase, &[Key::Voice, Key::Voice]),
                vec![Action::PauseAndListen, Action::Nothing]
            );
        }
        let mut k = KeyState::default();
        decide(PttMode::Hold, Phase::Speaking, &mut k, Key::Voice);
        assert_eq!(
            decide(PttMode::Hold, Phase::Listening, &mut k, Key::Release),
            Action::StopListening
        );
        // The detector's end of the voice is a release, wherever the voice went on to.
        for past_echo in [false, true] {
            let mut k = KeyState::default();
            decide(PttMode::Hold, Phase::Speaking, &mut k, Key::Voice);
            assert_eq!(
                decide(PttMode::Hold, Phase::Listening, &mut k, Key::VoiceEnded { past_echo }),
                Action::StopListening
            );
            assert_eq!(
                decide(PttMode::Hold, Phase::Listening, &mut k, Key::VoiceEnded { past_echo }),
                Action::Nothing,
                "a second end is a stray release"
            );
        }
    }

    #[test]
    fn a_toggle_starts_stops_and_barges_in_in_either_mode() {
        for mode in [PttMode::Hold, PttMode::Toggle] {
            assert_eq!(run(mode, Phase::Idle, &[Key::Toggle]), vec![Action::StartListening]);
            assert_eq!(run(mode, Phase::Listening, &[Key::Toggle]), vec![Action::StopListening]);
            assert_eq!(run(mode, Phase::Speaking, &[Key::Toggle]), vec![Action::BargeIn]);
        }
        // Listening started by a toggle in hold mode: a stray key release does not end it.
        let mut k = KeyState::default();
        decide(PttMode::Hold, Phase::Idle, &mut k, Key::Toggle);
        assert_eq!(
            decide(PttMode::Hold, Phase::Listening, &mut k, Key::Release),
            Action::Nothing
        );
    }

    #[test]
    fn a_stray_release_does_nothing() {
        assert_eq!(
            run(PttMode::Hold, Phase::Listening, &[Key::Release]),
            vec![Action::Nothing]
        );
    }

    #[test]
    fn release_before_capture_started_and_silence_make_no_turn() {
        assert_eq!(
            check_utterance(&[]),
            Err(NoTurn::TooShort),
            "released before any audio arrived"
        );
        assert_eq!(check_utterance(&vec![0.3; 1000]), Err(NoTurn::TooShort));
        assert_eq!(check_utterance(&vec![0.0001; 16_000]), Err(NoTurn::Silent));
        let speech: Vec<f32> = (0..16_000).map(|i| (i as f32 * 0.05).sin() * 0.2).collect();
        assert_eq!(check_utterance(&speech), Ok(()));
    }
}
