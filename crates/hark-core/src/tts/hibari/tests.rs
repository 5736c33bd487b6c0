use rand::SeedableRng;

use super::*;

/// espeak-ng's tied IPA becomes the symbols misaki's lexicon writes for the same words (the
/// strings on the right are what Hibari's own phonemiser gives).
#[test]
fn espeaks_tied_ipa_becomes_misakis_symbols() {
    for (espeak, misaki) in [
        ("həlˈo^ʊ", "həlˈO"),                       // hello
        ("ma^ɪ nˈe^ɪm", "mI nˈAm"),                 // my name
        ("hˈa^ʊ", "hˈW"),                           // how
        ("bˈɔ^ɪ", "bˈY"),                           // boy
        ("d^ʒˈʌd^ʒ", "ʤˈʌʤ"),                       // judge
        ("t^ʃˈɜːt^ʃ", "ʧˈɜɹʧ"),                     // church
        ("wˈɔːɾɚɹ", "wˈɔTəɹ"),                      // water (before a vowel)
        ("fˈoː^ɹ", "fˈɔɹ"),                         // four
        ("bˈʌʔn\u{329}", "bˈʌtᵊn"),                 // button
        ("lˈɪɾə^l", "lˈɪTᵊl"),                      // little
        ("tˈɜːnz", "tˈɜɹnz"),                       // turns
        ("pəlˈiːs", "pəlˈis"),                      // police: ə then l is not ə^l
        ("fˌo^ʊɾo^ʊsˈɪnθəsˌɪs", "fˌOTOsˈɪnθəsˌɪs"), // photosynthesis
    ] {
        assert_eq!(misaki_from_espeak(espeak), misaki, "{espeak}");
    }
    // Every symbol that comes out is in Kokoro's vocabulary (which Hibari shares).
    let out = misaki_from_espeak("ma^ɪ nˈe^ɪm ɪz hˈɑːɹk. hˌa^ʊ kæn a^ɪ hˈɛlp juː tədˈe^ɪ?");
    assert_eq!(tokenize(&out).len(), out.chars().count(), "{out}");
}

/// The pulse train has the pitch's period: at 200 Hz a pulse every 120 samples, and nothing
/// where the frame is unvoiced.
#[test]
fn the_pulse_train_follows_the_pitch_and_is_silent_where_unvoiced() {
    let f0 = [200.0f32; 8];
    let p = pulses(&f0);
    assert_eq!(p.len(), 8 * HOP);
    // Peaks (the harmonics in phase) come every 24,000 / 200 = 120 samples.
    let peaks: Vec<usize> = (1..p.len() - 1)
        .filter(|&i| p[i] > 10.0 && p[i] >= p[i - 1] && p[i] >= p[i + 1])
        .collect();
    assert!(peaks.len() >= 18, "{peaks:?}");
    for w in peaks.windows(2) {
        assert!((w[1] - w[0]).abs_diff(120) <= 1, "{peaks:?}");
    }
    // Band-limited: 55 harmonics below 11 kHz, so the peak is about 55.
    let top = p.iter().copied().fold(f32::MIN, f32::max);
    assert!((50.0..=56.0).contains(&top), "{top}");

    let unvoiced = pulses(&[0.0f32; 4]);
    assert!(unvoiced.iter().all(|v| *v == 0.0));
}

fn spectra_test(frames: usize, open_below_hz: usize, f0: &[f32]) -> Vec<f32> {
    // A unit cosine is N/4 in the window's STFT and 1 in the source's scaled one, so an
    // open harmonic part of N/4 passes the pulse train through as it is.
    let open = (N_FFT as f32 / 4.0).ln();
    let shut = vec![-30.0f32; BINS * frames];
    let mut harmonic = shut.clone();
    for b in 0..=open_below_hz * N_FFT / SAMPLE_RATE as usize {
        for k in 0..frames {
            harmonic[b * frames + k] = open;
        }
    }
    let zeros = vec![0.0f32; BINS * frames];
    let s = Spectra {
        harmonic: &harmonic,
        theta: &zeros,
        noise: &shut,
        residual: &shut,
        phi: &zeros,
        f0,
    };
    synthesize(&s, &mut rand::rngs::StdRng::seed_from_u64(1))
}

/// The signal chain is the package's: with the harmonic part open in every bin and the
/// other parts shut, the inverse STFT gives back the pulse train itself, edges included
/// (a centred STFT, reflect-padded, overlap-added and normalised), `frames × HOP` long.
#[test]
fn an_open_harmonic_part_gives_back_the_pulse_train() {
    let frames = 40;
    let f0: Vec<f32> = (0..frames).map(|k| 150.0 + 2.0 * k as f32).collect();
    let audio = spectra_test(frames, SAMPLE_RATE as usize / 2, &f0);
    let want = pulses(&f0);
    assert_eq!(audio.len(), want.len());
    let worst = audio
        .iter()
        .zip(&want)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max);
    assert!(worst < 1e-2, "{worst}");
}

/// The spectra are laid out bin by bin, a frame after another within each (the model's
/// `[1, 601, frames]`): open only up to 300 Hz, a 200 Hz pulse train leaves its fundamental,
/// a unit cosine with a period of 120 samples.
#[test]
fn a_harmonic_part_open_below_300_hz_leaves_the_fundamental() {
    let frames = 40;
    let audio = spectra_test(frames, 300, &vec![200.0f32; frames]);
    let mid = &audio[HOP * 8..HOP * 32];
    let peak = mid.iter().copied().fold(0.0f32, |m, v| m.max(v.abs()));
    assert!((0.95..1.05).contains(&peak), "{peak}");
    let rising: Vec<usize> = (1..mid.len()).filter(|&i| mid[i - 1] < 0.0 && mid[i] >= 0.0).collect();
    assert!(rising.len() >= 50, "{}", rising.len());
    for w in rising.windows(2) {
        assert!((w[1] - w[0]).abs_diff(120) <= 1, "{rising:?}");
    }
}

/// Nothing to render: no frames, no samples (and no panic).
#[test]
fn no_frames_no_samples() {
    let s = Spectra {
        harmonic: &[],
        theta: &[],
        noise: &[],
        residual: &[],
        phi: &[],
        f0: &[],
    };
    assert!(synthesize(&s, &mut rand::rngs::StdRng::seed_from_u64(1)).is_empty());
}
