//! Moonshine, the offline speech-to-text with live words (issue 20), with its real files
//! from the models manifest, on espeak-ng speech: a clip transcribed whole, and a clip
//! played into its live transcription at the microphone's pace.

use std::path::PathBuf;
use std::time::Duration;

use hark_core::assembly::Profile;
use hark_core::audio::wav::read_16k_mono;
use hark_core::error::ErrorKind;
use hark_core::models::{Manifest, ModelStore};
use hark_core::stt::moonshine::{MoonshineFiles, MoonshineStt};
use hark_core::stt::wer::words;
use hark_core::stt::Transcriber;
use hark_e2e::espeak_wav;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// The tests here run one at a time: the live one plays its clip in real time, and a
/// decode beside it on the other core would only make it a test of the machine.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Moonshine's files, which `scripts/test.sh` fetches into `HARK_MODELS_DIR`.
fn files() -> MoonshineFiles {
    let dir = std::env::var_os("HARK_MODELS_DIR").expect("HARK_MODELS_DIR is not set: run scripts/test.sh");
    let files = Profile::default()
        .moonshine_files(&Manifest::builtin(), &ModelStore::new(PathBuf::from(dir)))
        .unwrap();
    for f in [&files.encoder, &files.decoder, &files.tokenizer, &files.runtime] {
        assert!(
            f.exists(),
            "{} is missing: scripts/test.sh fetches moonshine-tiny",
            f.display()
        );
    }
    files
}

/// `text` spoken by espeak-ng, at 16 kHz.
fn spoken(text: &str) -> Vec<f32> {
    let dir = tempfile::tempdir().unwrap();
    let wav = dir.path().join("spoken.wav");
    espeak_wav(text, &wav);
    read_16k_mono(&wav).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Moonshine model (scripts/test.sh fetches it)"]
async fn moonshine_transcribes_an_espeak_question_word_for_word() {
    let _one = ONE_AT_A_TIME.lock().await;
    let stt = MoonshineStt::new(files()).unwrap();
    let question = "What is the capital of France?";
    let audio = spoken(question);
    let heard = stt.transcribe(&audio).await.unwrap();
    assert_eq!(words(&heard), words(question), "Moonshine heard {heard:?}");
    assert!(stt.is_loaded());

    // Nothing to hear is no text; bad samples are no panic.
    assert_eq!(stt.transcribe(&[]).await.unwrap(), "");
    assert_eq!(stt.transcribe(&audio[..500]).await.unwrap(), "");
    let mut broken = audio.clone();
    broken[2_000..2_400].fill(f32::NAN);
    broken[3_000] = f32::INFINITY;
    stt.transcribe(&broken).await.unwrap();
    // A stopped transcription gives up; the engine is fine afterwards.
    let stop = CancellationToken::new();
    stop.cancel();
    let e = stt.transcribe_until(&audio, &stop).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Cancelled, "{e}");
    let again = stt.transcribe_until(&audio, &CancellationToken::new()).await.unwrap();
    assert_eq!(words(&again), words(question));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the Moonshine model (scripts/test.sh fetches it)"]
async fn moonshine_live_shows_words_while_the_clip_plays_and_the_final_has_them_all() {
    let _one = ONE_AT_A_TIME.lock().await;
    let stt = MoonshineStt::new(files()).unwrap();
    stt.prepare(); // as at a press: the model loads while the user starts speaking
    let first = "What is the capital of France?";
    let said = format!("{first} What time does the train to London leave?");
    let silence = vec![0.0f32; 16_000 * 3 / 10];
    let audio = [silence.clone(), spoken(&said), silence].concat();

    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut live = stt.live(tx).await.unwrap().expect("Moonshine transcribes live");
    // 20 ms chunks at the microphone's pace, as the voice actor sends them.
    let mut pace = tokio::time::interval(Duration::from_millis(20));
    let mut interims = Vec::new();
    for chunk in audio.chunks(320) {
        pace.tick().await;
        live.send(chunk).await.unwrap();
        while let Ok(text) = rx.try_recv() {
            interims.push(text);
        }
    }
    let before_release = interims.len();
    let transcript = live.finish().await.unwrap();
    // Every word is accounted for (none lost at a segment boundary): the transcript has
    // as many words as were said, and tiny.en-level mishearings of espeak's voice are the
    // only differences (here, "does the train" heard as "does not rain": 2 of 14 words).
    let errors = hark_core::stt::wer::WordErrors::of(&said, &transcript);
    assert_eq!(
        words(&transcript).len(),
        words(&said).len(),
        "Moonshine heard {transcript:?}; while speaking: {interims:?}"
    );
    assert!(
        errors.rate() <= 0.25,
        "Moonshine heard {transcript:?} for {said:?}; while speaking: {interims:?}"
    );
    assert!(before_release > 0, "no words were shown while the clip played");
    // The first sentence was on screen before the release, and once it was, it stayed:
    // committed words never change.
    let first_words = words(first);
    let shown = interims
        .iter()
        .position(|t| words(t).starts_with(&first_words))
        .unwrap_or_else(|| panic!("the first sentence never showed whole: {interims:?}"));
    for t in &interims[shown..] {
        assert!(words(t).starts_with(&first_words), "{t:?} after {interims:?}");
    }
}
