//! Speech and silence in 16 kHz audio: 20 ms frames measured against one silence level.
//!
//! One place for what "a pause" means, so the voice actor (which transcribes at a pause
//! while the key is held) and the live offline recogniser (`stt::segment`, which decodes
//! at a pause and commits a segment at a longer one) hear the same pauses.

use super::resample::{rms, STT_RATE};

/// Below this RMS level a frame (or a whole utterance) is silence (about -46 dBFS).
pub const SILENCE_RMS: f32 = 0.005;

/// Samples in one frame (20 ms at 16 kHz).
pub const FRAME: usize = STT_RATE as usize / 50;

/// Silence after speech that counts as a pause (the speaker may be done), in
/// milliseconds. A clip transcribed at a pause ends with it, so the engine hears the last
/// word end. Short, because a turn waits for it: a pause inside the utterance costs only a
/// transcription that the next word makes stale. (espeak-ng's stop closures inside words
/// are 20-40 ms of silence, so they are no pause.)
pub const PAUSE_MS: usize = 60;
/// [`PAUSE_MS`] in samples.
pub const PAUSE: usize = STT_RATE as usize * PAUSE_MS / 1000;

/// Whether a frame is louder than silence. A frame whose level is not a number (a NaN
/// sample) is not.
pub fn is_voiced(frame: &[f32]) -> bool {
    rms(frame) >= SILENCE_RMS
}

/// Where the speech in `samples` ends: just past the last whole 20 ms frame louder than
/// silence (frames counted from the start); 0 when there is none.
pub fn voiced_end(samples: &[f32]) -> usize {
    let mut end = samples.len() - samples.len() % FRAME;
    while end >= FRAME {
        if is_voiced(&samples[end - FRAME..end]) {
            return end;
        }
        end -= FRAME;
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn speech_ends_after_the_last_loud_frame() {
        assert_eq!(voiced_end(&[]), 0);
        assert_eq!(voiced_end(&[0.0; FRAME * 5]), 0);
        let mut a = vec![0.0f32; FRAME * 10 + 7];
        a[FRAME * 3 + 5] = 1.0; // one loud sample makes its frame voiced
        assert_eq!(voiced_end(&a), FRAME * 4);
        // A trailing part-frame is not measured.
        a[FRAME * 10 + 2] = 1.0;
        assert_eq!(voiced_end(&a), FRAME * 4);
        assert!(!is_voiced(&[f32::NAN; FRAME]));
    }
}
