//! The short sounds that say "listening" and "stopped": a higher and a lower tone, soft and
//! brief, so they are heard without startling. Played through the reply's output
//! ([`super::playback::AudioOut::cue`]) and kept out of the user's utterance (the capture
//! drops its first [`SKIP_MS`]).

/// Sample rate of the cues.
pub const RATE: u32 = 24_000;

/// The start cue's pitch and the stop cue's (Hz): a fifth apart, the higher one first.
pub const START_HZ: f32 = 880.0;
pub const STOP_HZ: f32 = 587.0;

/// How long each cue sounds.
pub const LENGTH_MS: u32 = 90;

/// What the capture leaves out at its start: the cue plus the output's latency, so a cue
/// that reaches the microphone never becomes part of the turn.
pub const SKIP_MS: u32 = 220;
const _: () = assert!(SKIP_MS > LENGTH_MS, "the skip covers the whole cue");

fn tone(hz: f32) -> Vec<f32> {
    let n = (RATE * LENGTH_MS / 1000) as usize;
    let fade = (RATE / 100) as usize; // 10 ms in and out: no click
    (0..n)
        .map(|i| {
            let env = (i.min(n - 1 - i) as f32 / fade as f32).min(1.0);
            0.25 * env * (std::f32::consts::TAU * hz * i as f32 / RATE as f32).sin()
        })
        .collect()
}

/// "Listening": a short [`START_HZ`] tone.
pub fn start() -> Vec<f32> {
    tone(START_HZ)
}

/// "Stopped": a short [`STOP_HZ`] tone.
pub fn stop() -> Vec<f32> {
    tone(STOP_HZ)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cues_are_short_soft_and_start_and_end_in_silence() {
        for c in [start(), stop()] {
            assert_eq!(c.len(), (RATE * LENGTH_MS / 1000) as usize);
            assert!(c.iter().all(|s| s.abs() <= 0.25));
            assert!(c[0].abs() < 0.01 && c[c.len() - 1].abs() < 0.02, "faded in and out");
        }
    }
}
