//! The natural offline voice (Kokoro-82M through ONNX Runtime) with its real files from the
//! models manifest, heard back by whisper: what it says must be the words it was given.

use std::path::PathBuf;
use std::time::Instant;

use hark_core::assembly::Profile;
use hark_core::audio::resample::{rms, ToMono16k};
use hark_core::audio::turn::{SmartTurn, TurnModel, FINISHED};
use hark_core::models::{Manifest, ModelStore};
use hark_core::stt::wer::{edit_distance, words};
use hark_core::stt::whisper::WhisperStt;
use hark_core::stt::Transcriber;
use hark_core::tts::hibari::{HibariFiles, HibariVoice};
use hark_core::tts::natural::{KokoroFiles, NaturalVoice, SAMPLE_RATE};
use hark_core::tts::piper::{PiperFiles, PiperVoice};
use hark_core::tts::quick::{PhonemeModel, QuickVoice};
use hark_core::tts::{AudioChunk, Synthesizer};
use hark_e2e::whisper_model;
use tokio::sync::mpsc;

/// The natural voice's files, which `scripts/test.sh` fetches into `HARK_MODELS_DIR`.
fn files() -> KokoroFiles {
    let dir = std::env::var_os("HARK_MODELS_DIR").expect("HARK_MODELS_DIR is not set: run scripts/test.sh");
    let files = Profile::default()
        .natural_files(&Manifest::builtin(), &ModelStore::new(PathBuf::from(dir)))
        .unwrap();
    for f in [&files.model, &files.voices, &files.runtime] {
        assert!(
            f.exists(),
            "{} is missing: scripts/test.sh fetches kokoro-82m",
            f.display()
        );
    }
    files
}

/// The quick natural voice's files, which `scripts/test.sh` fetches into `HARK_MODELS_DIR`.
fn piper_files() -> PiperFiles {
    let dir = std::env::var_os("HARK_MODELS_DIR").expect("HARK_MODELS_DIR is not set: run scripts/test.sh");
    let files = Profile::default()
        .piper_files(&Manifest::builtin(), &ModelStore::new(PathBuf::from(dir)))
        .unwrap();
    for f in [&files.model, &files.runtime] {
        assert!(
            f.exists(),
            "{} is missing: scripts/test.sh fetches piper-joe",
            f.display()
        );
    }
    files
}

/// The quick Heart voice's files, which `scripts/test.sh` fetches into `HARK_MODELS_DIR`.
fn hibari_files() -> HibariFiles {
    let dir = std::env::var_os("HARK_MODELS_DIR").expect("HARK_MODELS_DIR is not set: run scripts/test.sh");
    let files = Profile::default()
        .hibari_files(&Manifest::builtin(), &ModelStore::new(PathBuf::from(dir)))
        .unwrap();
    for f in [&files.model, &files.runtime] {
        assert!(
            f.exists(),
            "{} is missing: scripts/test.sh fetches hibari-heart",
            f.display()
        );
    }
    files
}

/// Speaks `text`; returns the audio at 24 kHz and the seconds it took.
async fn speak(voice: &dyn Synthesizer, text: &str) -> (Vec<f32>, f64) {
    speak_at(voice, text, SAMPLE_RATE).await
}

/// Speaks `text` with a voice of `rate`; returns the audio and the seconds it took.
async fn speak_at(voice: &dyn Synthesizer, text: &str, rate: u32) -> (Vec<f32>, f64) {
    let (tx, mut rx) = mpsc::unbounded_channel::<AudioChunk>();
    let started = Instant::now();
    voice.synthesize(text, &tx).await.unwrap();
    let took = started.elapsed().as_secs_f64();
    drop(tx);
    let mut audio = Vec::new();
    while let Some(c) = rx.recv().await {
        assert_eq!(c.rate, rate);
        assert!(c.samples.len() <= rate as usize / 10, "handed over in 100 ms pieces");
        audio.extend(c.samples);
    }
    (audio, took)
}

fn to_16k(audio: &[f32]) -> Vec<f32> {
    to_16k_from(audio, SAMPLE_RATE)
}

fn to_16k_from(audio: &[f32], rate: u32) -> Vec<f32> {
    let mut r = ToMono16k::new(rate, 1).unwrap();
    let mut out = Vec::new();
    r.push(audio, &mut out);
    r.finish(&mut out);
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs scripts/test.sh (models, virtual audio, display, keyring)"]
async fn the_natural_voice_says_a_sentence_that_whisper_reads_back_word_for_word() {
    let voice = NaturalVoice::new(files(), Some("af_heart")).unwrap();
    let whisper = WhisperStt::load(&whisper_model()).unwrap();
    // Loading is not counted in the real-time factor below.
    let _ = speak(&voice, "Hello.").await;
    for text in [
        "The quick brown fox jumps over the lazy dog.",
        "Hello, my name is Hark. How can I help you today?",
    ] {
        let (audio, took) = speak(&voice, text).await;
        let secs = audio.len() as f64 / f64::from(SAMPLE_RATE);
        assert!((1.0..12.0).contains(&secs), "{secs:.2} s of speech for {text:?}");
        assert!(rms(&audio) > 0.02, "the speech is audible");
        let heard = whisper.transcribe(&to_16k(&audio)).await.unwrap();
        assert_eq!(words(&heard), words(text), "whisper heard {heard:?}");
        println!(
            "natural voice: {secs:.2} s of speech in {took:.2} s (real-time factor {:.2})",
            took / secs
        );
    }
}

/// The quick natural voice (Piper's Joe) says what it is given: whisper reads its sentences
/// back (punctuation inside a piece: a comma, two sentences). Piper samples its prosody
/// (the noise scales), so each rendering differs a little and whisper tiny.en mishears a
/// word now and then (2 runs in 15 had one word wrong: "quick" heard as "quit"); the bar
/// is at most 2 words wrong in the 24 said. Wrong phoneme ids (without the pad between
/// them, say) make most words wrong.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs scripts/test.sh (models, virtual audio, display, keyring)"]
async fn the_quick_natural_voice_says_sentences_that_whisper_reads_back() {
    let voice = PiperVoice::new(piper_files()).unwrap();
    let texts = [
        "The quick brown fox jumps over the lazy dog.",
        "Hello, my name is Sam. Where shall we go today?",
        "A spider has eight legs.",
    ];
    let (wrong, said) = words_wrong_heard_back(&voice, &texts).await;
    assert_eq!(said, 24);
    assert!(wrong <= 2, "{wrong} of {said} words wrong (the lines above)");
}

/// The quick Heart voice (Hibari) says what it is given: whisper reads its sentences back,
/// words whose espeak-ng phonemes need misaki's symbols among them (the diphthongs of
/// "hello", "my", "how", the flap of "water", the glottal stop of "button", "four"'s r).
/// Its noise is drawn anew each time, so whisper tiny.en may mishear a word now and then;
/// the bar is at most 2 words wrong in the 35 said. espeak-ng's symbols as Kokoro takes them
/// (kokoro-js's mapping, without misaki's) made 44 of 109 words wrong in 15 sentences, and
/// a wrong signal chain (the spectra read frame-major, say) makes noise.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs scripts/test.sh (models, virtual audio, display, keyring)"]
async fn the_quick_heart_voice_says_sentences_that_whisper_reads_back() {
    let voice = HibariVoice::new(hibari_files()).unwrap();
    let texts = [
        "The quick brown fox jumps over the lazy dog.",
        "Hello, my name is Sam. How shall we go today?",
        "Remember to water the plants and sew the button back on.",
        "The door has four locks.",
    ];
    let (wrong, said) = words_wrong_heard_back(&voice, &texts).await;
    assert_eq!(said, 35);
    assert!(wrong <= 2, "{wrong} of {said} words wrong (the lines above)");
}

/// A quick voice, loaded at its first piece and not before, says each of `texts`: a second
/// to twelve of audible, finite speech, which whisper tiny.en reads back; and nothing to say
/// is no sound and no error. Returns the words heard wrong and the words said.
async fn words_wrong_heard_back<M: PhonemeModel>(voice: &QuickVoice<M>, texts: &[&str]) -> (usize, usize) {
    assert!(!voice.is_loaded(), "nothing loads until asked");
    let whisper = WhisperStt::load(&whisper_model()).unwrap();
    let _ = speak_at(voice, "Hello.", M::SAMPLE_RATE).await;
    assert!(voice.is_loaded());
    let (mut wrong, mut said) = (0, 0);
    for text in texts {
        let (audio, took) = speak_at(voice, text, M::SAMPLE_RATE).await;
        let secs = audio.len() as f64 / f64::from(M::SAMPLE_RATE);
        assert!((1.0..12.0).contains(&secs), "{secs:.2} s of speech for {text:?}");
        assert!(rms(&audio) > 0.02, "the speech is audible");
        assert!(audio.iter().all(|s| s.is_finite()), "no NaN or infinity");
        let heard = whisper.transcribe(&to_16k_from(&audio, M::SAMPLE_RATE)).await.unwrap();
        let errors = edit_distance(&words(text), &words(&heard));
        println!(
            "{}: {secs:.2} s of speech in {took:.3} s (real-time factor {:.3}); {errors} word(s) wrong: {heard:?}",
            M::WHAT,
            took / secs
        );
        wrong += errors;
        said += words(text).len();
    }
    // Nothing to say is no sound and no error.
    let (audio, _) = speak_at(voice, " ... ", M::SAMPLE_RATE).await;
    assert!(audio.is_empty());
    (wrong, said)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs scripts/test.sh (models, virtual audio, display, keyring)"]
async fn the_spanish_natural_voice_speaks_spanish() {
    let voice = NaturalVoice::new(files(), Some("ef_dora")).unwrap();
    let (audio, _) = speak(&voice, "Hola. Buenos días, ¿cómo estás?").await;
    let dir = std::env::var_os("HARK_MODELS_DIR").unwrap();
    let whisper = WhisperStt::load(&PathBuf::from(dir).join("ggml-base.bin")).unwrap();
    whisper.set_language(Some("es"));
    let heard = whisper.transcribe(&to_16k(&audio)).await.unwrap().to_lowercase();
    assert!(
        heard.contains("buenos días") || heard.contains("buenos dias"),
        "whisper heard {heard:?}"
    );
}

#[tokio::test]
async fn missing_files_are_an_error_that_names_the_file_and_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let voice = NaturalVoice::new(
        KokoroFiles {
            model: dir.path().join("kokoro.onnx"),
            voices: dir.path().join("voices.bin"),
            runtime: dir.path().join("libonnxruntime.so"),
        },
        None,
    )
    .unwrap();
    let (tx, _rx) = mpsc::unbounded_channel();
    let e = voice.synthesize("Hello.", &tx).await.unwrap_err().to_string();
    assert!(e.contains("libonnxruntime.so") || e.contains("voices.bin"), "{e}");
    let e = NaturalVoice::new(voice_files_stub(), Some("nobody"))
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("no natural voice \"nobody\"") && e.contains("af_heart"),
        "{e}"
    );
}

fn voice_files_stub() -> KokoroFiles {
    KokoroFiles {
        model: "m".into(),
        voices: "v".into(),
        runtime: "r".into(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs scripts/test.sh (models, virtual audio, display, keyring)"]
async fn the_natural_voice_is_freed_after_its_idle_time_and_loads_again_on_use() {
    let voice = NaturalVoice::new(files(), None).unwrap();
    assert!(!voice.is_loaded(), "nothing loads until asked");
    voice.set_unload_after(Some(std::time::Duration::from_millis(800)));
    let (audio, _) = speak(&voice, "Hello.").await;
    assert!(!audio.is_empty() && voice.is_loaded());
    // Freed once its 800 ms pass: waited for, with a deadline (20 s, 25× the idle time)
    // that only catches an unloader that never runs, not a slow one (issue 21).
    let deadline = Instant::now() + std::time::Duration::from_secs(20);
    while voice.is_loaded() {
        assert!(Instant::now() < deadline, "still loaded 20 s after an 800 ms idle time");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let (again, _) = speak(&voice, "Hello.").await;
    assert_eq!(again.len(), audio.len(), "the same speech after loading again");
    voice.set_unload_after(None);
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    assert!(voice.is_loaded(), "kept while the voice lives");
}

/// Smart Turn (hands-free's end of turn, issue 23) on the natural voice, the one speaker
/// here with a person's intonation. (On espeak's flat one the model guesses: it rated "My
/// name is Sam." 0.18 and "What is the capital of" 0.97.) Finished sentences are heard
/// finished, and sentences broken off after "and", "that", "if" and "um" are not, each
/// with the 64 ms pause after it at which hands-free asks. Kokoro reads "Can you tell me
/// the" with a final fall, and the model hears that as finished, so it is not among them;
/// nor is "Thank you very much.", which the model rated exactly 0.50 on one machine (its
/// threshold) and above it on another: it is unsure of it, and that is not what this shows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the natural voice and Smart Turn (scripts/test.sh)"]
async fn smart_turn_hears_finished_sentences_and_sentences_broken_off_in_a_natural_voice() {
    let manifest = Manifest::load().unwrap();
    let turn = Profile::default()
        .turn_files(&manifest, &ModelStore::default_dir())
        .unwrap();
    let mut model = SmartTurn::load(&turn).expect("Smart Turn (scripts/test.sh fetches it)");
    let voice = NaturalVoice::new(files(), Some("af_heart")).unwrap();
    let mut rate = async |text: &str| {
        let (audio, _) = speak(&voice, text).await;
        let mut to16k = ToMono16k::new(SAMPLE_RATE, 1).unwrap();
        let mut audio16 = Vec::new();
        to16k.push(&audio, &mut audio16);
        to16k.finish(&mut audio16);
        // To the last sound, then the pause.
        let last = audio16.iter().rposition(|s| s.abs() > 0.02).unwrap();
        audio16.truncate(last + 1);
        audio16.extend(std::iter::repeat_n(0.0, 1_024));
        model.completion(&audio16).unwrap()
    };
    for finished in [
        "What is the capital of France?",
        "Tell me a story.",
        "My name is Sam.",
        "Tell me, what is my name?",
    ] {
        let p = rate(finished).await;
        assert!(p > FINISHED, "{finished:?} rated {p:.2}");
    }
    for broken in [
        "I would like to order a pizza and",
        "I think that",
        "So I was wondering if",
        "I'd like to book a table for, um,",
    ] {
        let p = rate(broken).await;
        assert!(p <= FINISHED, "{broken:?} rated {p:.2}");
    }
}
