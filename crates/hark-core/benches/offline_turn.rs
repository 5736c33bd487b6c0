//! The offline spoken turn, end to end, in one run (issues 12 and 20): recorded questions
//! are played into the voice actor as live speech by `voice::play_live`, the path of
//! `hark talk --wav FILE --live` (the key held from the first sample, 20 ms chunks at
//! real-time pace, the key released a set time after the last word), then the local chat
//! model in `hark-llm` answers and a voice speaks. The same models, model server and clips
//! serve every pipeline:
//!
//! - `overlapped` (today's): whisper tiny.en transcribes at each pause while the key is
//!   held, the prompt's prefix is evaluated at the press, speech starts at the reply's
//!   first clause;
//! - `moonshine` (issue 20): the same schedule with Moonshine tiny's live transcription
//!   (words on screen while the key is held, each phrase committed at a pause, only the
//!   open one decoded at the release);
//! - `sequential` (on request): whisper after the release, then the whole prompt, then the
//!   first whole sentence (Hark before issue 12).
//!
//! Each runs with the OS voice (espeak-ng) and the natural voice (Kokoro); the new one also
//! with the quick natural voice (Piper's Joe), measured against today's natural voice.
//!
//! The clips: three questions spoken by espeak-ng, and real human speech that registry
//! packages ship: twelve prompts of Debian's `asterisk-core-sounds-en-wav` (Allison
//! Smith's professional recordings, 8 kHz; the reference text is their script,
//! `core-sounds-en.txt` in `asterisk-core-sounds-en`; CC-BY-SA-3.0), and `beckett.wav`
//! from the PyPI wheel `useful-moonshine-onnx` that the manifest pins for Moonshine's
//! tokenizer (fetched through the model store, checked against its sha256). Each clip's
//! trailing silence is cut, so the release comes a set time after its last word.
//!
//! It prints, for each pipeline and voice, release → final transcript, → first token and
//! → first reply sample out (p50 and p95) and the word error; the ratios moonshine /
//! overlapped for each voice against issue 20's goals; for the live engine, the delay of
//! the first words on screen from the speech onset and the longest wait for new words
//! while speaking (speech as Silero VAD hears it, and as the sound level has it), and how
//! often a word already on screen changed while speaking (flicker); each
//! engine's word error in the turns, and on every clip transcribed whole, with every
//! Asterisk prompt of five words or more for human speech (the larger sample that decides
//! the default English engine by issue 20's rule); each voice's real-time factor;
//! and the first turn after a start against the second (issue 21: whisper just loaded,
//! with and without its warm-up decode).
//!
//! Run: `scripts/bench-offline-turn.sh [RUNS]` (release builds; fetches the models and the
//! recordings). `HARK_BENCH_RUNS` (default 2): each run plays every clip through every
//! pipeline, in conversations of up to four turns, the pipelines taking turns per
//! conversation (0: only the word-error comparison, a few minutes); `HARK_BENCH_RELEASE_MS` (default 300) how long after the last word the
//! key comes up; `HARK_BENCH_VERBOSE` prints each turn's figures, transcript and reply on
//! stderr; `HARK_BENCH_LLM` picks the chat model (a manifest id; default: the default
//! one); `HARK_BENCH_PIPELINES` (default
//! `overlapped,overlapped/natural,moonshine,moonshine/natural,moonshine/hibari,moonshine/piper`) picks the
//! pipelines, each with a voice after `/` (`system` when none is named; a name followed by
//! `+recall` has long-term recall on, over a memory of earlier sessions searched by meaning,
//! as the app has by default); `HARK_BENCH_CLIPS` (default `espeak,asterisk,beckett`) the
//! clip sets; `HARK_BENCH_SPEECH` the directory holding the
//! human recordings (the script's: the Debian packages unpacked under `asterisk/`,
//! `beckett.wav` fetched there).

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use hark_core::audio::input::Recordings;
use hark_core::audio::playback::ClockOut;
use hark_core::audio::resample::STT_RATE;
use hark_core::audio::silence::{is_voiced, voiced_end, FRAME};
use hark_core::audio::vad::{self, GateSettings, Silero, SpeechProbability, VAD_FRAME};
use hark_core::audio::wav::read_16k_mono;
use hark_core::conversation::HistorySettings;
use hark_core::local::{LocalLlm, DEFAULT_CONTEXT};
use hark_core::models::{Manifest, ModelKind, ModelStore};
use hark_core::session::ptt::PttMode;
use hark_core::session::voice::{self, ActorOptions, Pipeline, TurnMetrics, Voice, VoiceEvent};
use hark_core::session::ChatSession;
use hark_core::store::embed::{self, Embedder};
use hark_core::store::index::index_all;
use hark_core::store::Store;
use hark_core::stt::moonshine::{self, MoonshineStt};
use hark_core::stt::wer::{self, WordErrors};
use hark_core::stt::whisper::WhisperStt;
use hark_core::stt::Transcriber;
use hark_core::testing::ScriptedModel;
use hark_core::tts::hibari::HibariVoice;
use hark_core::tts::natural::NaturalVoice;
use hark_core::tts::piper::PiperVoice;
use hark_core::tts::system::SystemVoice;
use hark_core::tts::{AudioChunk, Synthesizer};
use tokio::sync::mpsc;

/// The questions, spoken by espeak-ng at its default voice and speed.
const ESPEAK: &[&str] = &[
    "What is the capital of France?",
    "Tell me a fun fact about octopuses.",
    "How many legs does a spider have?",
];

/// Asterisk's prompts used: whole sentences of five words or more, with no digits or
/// keypad symbols, 2 to 5.4 s long.
const ASTERISK_PROMPTS: &[&str] = &[
    "cannot-complete-as-dialed",
    "check-number-dial-again",
    "conf-leaderhasleft",
    "conf-onlyperson",
    "conf-waitforleader",
    "demo-echodone",
    "dir-nomatch",
    "feature-not-avail-line",
    "pls-hold-while-try",
    "privacy-unident",
    "queue-youarenext",
    "vm-savefolder",
];

/// Where `asterisk-core-sounds-en-wav` puts its recordings, under the root it is unpacked
/// (or installed) in.
const ASTERISK_VOICE: &str = "usr/share/asterisk/sounds/en_US_f_Allison";

/// Where `asterisk-core-sounds-en` puts the script of the recordings.
const ASTERISK_SCRIPT: &str = "usr/share/doc/asterisk-core-sounds-en/core-sounds-en.txt.gz";

/// `beckett.wav` in the `useful-moonshine-onnx` wheel (9.96 s, 16 kHz), and what it says.
const BECKETT_MEMBER: &str = "moonshine_onnx/assets/beckett.wav";
const BECKETT_SHA256: &str = "e5a26b3d29e5b0bc8dbd72c11d16a3808a4ec0ac45b21f12a27d2a2fe5c5ae61";
const BECKETT_TEXT: &str = "Ever tried. Ever failed. No matter. Try again. Fail again. Fail better.";

/// Turns per conversation: a few, as people talk to an assistant; a longer one would
/// only measure the model's growing prompt.
const TURNS_PER_CONVERSATION: usize = 4;

/// Silence inside speech that is a pause between phrases, not a gap in a word: the live
/// recogniser commits a phrase at it (`stt::segment`'s commit pause), and no new words are
/// due while nobody speaks, so the wait for new words counts speech only.
const PHRASE_PAUSE_MS: f64 = 200.0;

/// The key comes up this long after the last word by default (people release after they
/// finish); `HARK_BENCH_RELEASE_MS` changes it.
const RELEASE_AFTER_MS: u64 = 300;

/// What the live words should do (issue 20): the first within this long of the speech
/// onset, then new ones at least this often while the user speaks.
const LIVE_WORDS_GOAL_MS: f64 = 500.0;

fn release_after() -> Duration {
    Duration::from_millis(
        std::env::var("HARK_BENCH_RELEASE_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(RELEASE_AFTER_MS),
    )
}

fn verbose() -> bool {
    std::env::var_os("HARK_BENCH_VERBOSE").is_some()
}

/// A speech-to-text engine under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Engine {
    Whisper,
    Moonshine,
}

/// A pipeline with a voice, as `HARK_BENCH_PIPELINES` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Config {
    /// `sequential`, `overlapped` or `moonshine`.
    name: &'static str,
    engine: Engine,
    pipeline: Pipeline,
    /// `system`, `natural` (Kokoro), `hibari` (the quick Heart voice) or `piper` (the quick
    /// natural voice).
    voice: &'static str,
    /// Long-term recall on (rule 12), over a memory of earlier sessions ([`MEMORY`]):
    /// `+recall` after the pipeline's name.
    recall: bool,
}

impl Config {
    fn label(&self) -> String {
        let recall = if self.recall { "+recall" } else { "" };
        format!("{}{recall}/{}", self.name, self.voice)
    }
}

fn configs() -> Vec<Config> {
    std::env::var("HARK_BENCH_PIPELINES")
        .unwrap_or_else(|_| {
            "overlapped,overlapped/natural,moonshine,moonshine/natural,moonshine/hibari,moonshine/piper".into()
        })
        .split(',')
        .map(|p| {
            let p = p.trim();
            let (name, voice) = p.split_once('/').unwrap_or((p, "system"));
            let (name, recall) = match name.strip_suffix("+recall") {
                Some(n) => (n, true),
                None => (name, false),
            };
            let (name, engine, pipeline) = match name {
                "sequential" => ("sequential", Engine::Whisper, Pipeline::Sequential),
                "overlapped" => ("overlapped", Engine::Whisper, Pipeline::Overlapped),
                "moonshine" => ("moonshine", Engine::Moonshine, Pipeline::Overlapped),
                other => {
                    panic!("HARK_BENCH_PIPELINES: unknown pipeline {other:?} (sequential, overlapped, moonshine)")
                }
            };
            let voice = match voice {
                "system" => "system",
                "natural" => "natural",
                "piper" => "piper",
                "hibari" => "hibari",
                other => panic!("HARK_BENCH_PIPELINES: unknown voice {other:?} (system, natural, hibari, piper)"),
            };
            Config {
                name,
                engine,
                pipeline,
                voice,
                recall,
            }
        })
        .collect()
}

/// What the user told Hark in earlier sessions, for the pipelines with recall: statements
/// of the kind a user makes (recall takes what the user stated). None answers a clip's
/// question, though some are near (a trip to Paris, a conference call), so what a question
/// recalls is the near miss that the recall benchmark's wrong-recall figure counts, and it
/// changes from question to question.
const MEMORY: &[&str] = &[
    "I fly to Lisbon on Friday morning.",
    "My brother Mark moved to Toronto last month.",
    "The radiator in the bedroom is broken.",
    "My daughter's birthday is on the twelfth of March.",
    "I'm allergic to peanuts.",
    "We're planning a trip to Paris in the spring.",
    "My phone contract ends in January.",
    "I have a dentist appointment on Tuesday at nine.",
    "I started learning Spanish this year.",
    "The car needs new tyres before winter.",
    "I work as a nurse at the city hospital.",
    "Our cat Pebble is afraid of the hoover.",
    "I'm training for a half marathon in May.",
    "My landlord is raising the rent in February.",
    "I keep forgetting to call my grandmother on Sundays.",
    "The conference call with the Berlin office is every Monday.",
];

/// Facts the user asked Hark to remember, for the same pipelines.
const FACTS: &[&str] = &["my name is Sam", "I like green tea", "I live in Leeds"];

/// A store holding [`MEMORY`] (an earlier session, its statements embedded) and [`FACTS`],
/// searched by meaning with `embed`, as the app's is.
async fn remembering(embed: Arc<Embedder>) -> Arc<Store> {
    let store = Arc::new(Store::open_in_memory().expect("sqlite"));
    let model = ScriptedModel::new();
    let mut earlier =
        ChatSession::create(store.clone(), Box::new(model), "Be brief.", HistorySettings::default()).expect("session");
    for said in MEMORY {
        earlier
            .send(said, &tokio_util::sync::CancellationToken::new(), |_| {})
            .await
            .expect("a scripted turn");
    }
    for fact in FACTS {
        store.add_fact(fact, None).expect("a fact");
    }
    let (s, e) = (store.clone(), embed.clone());
    tokio::task::spawn_blocking(move || {
        index_all(&s, e.as_ref(), &std::sync::atomic::AtomicBool::new(false), |_| {}).expect("indexing")
    })
    .await
    .expect("indexing");
    store.set_meaning(Some(embed));
    store
}

/// Where a clip's speech comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    Espeak,
    Human,
}

/// A recorded question, ready to be played.
struct Clip {
    /// Shown as the input's name, and in verbose lines.
    name: String,
    source: Source,
    /// What is said: the reference for the word error.
    said: String,
    /// 16 kHz mono, cut after the last word.
    samples: Vec<f32>,
    /// Where the speech starts, in ms from the first sample.
    onset_ms: f64,
    /// The stretches of speech, in ms from the first sample, as the voice activity model
    /// hears them ([`vad_spans`]; filled once it is loaded), joined across silences
    /// shorter than a phrase pause.
    speech: Vec<(f64, f64)>,
}

impl Clip {
    fn new(name: String, source: Source, said: &str, mut samples: Vec<f32>) -> Self {
        let end = voiced_end(&samples);
        assert!(end > 0, "{name}: no speech in the recording");
        samples.truncate(end);
        Self {
            name,
            source,
            said: said.to_string(),
            // The level's onset: no later than the model's, so the stricter for the first words.
            onset_ms: level_spans(&samples)[0].0,
            samples,
            speech: Vec::new(),
        }
    }

    fn ms(&self) -> f64 {
        self.samples.len() as f64 * 1000.0 / f64::from(STT_RATE)
    }
}

/// The stretches of speech in `samples`, in ms, by sound level: runs of voiced frames, a
/// silence shorter than [`PHRASE_PAUSE_MS`] inside one.
fn level_spans(samples: &[f32]) -> Vec<(f64, f64)> {
    let frame_ms = FRAME as f64 * 1000.0 / f64::from(STT_RATE);
    join_spans(samples.chunks_exact(FRAME).map(is_voiced), frame_ms)
}

/// The stretches of speech in `samples`, in ms, as Silero VAD hears them: hands-free's
/// model with its gate's threshold and hysteresis ([`GateSettings::is_speech`]), a
/// silence shorter than [`PHRASE_PAUSE_MS`] inside one.
/// The sound level alone took the room noise and breaths of beckett.wav for speech: the
/// 0.7 s between "No matter." and "Try again.", and the second after "Fail better.", where
/// Silero's probability stays under 0.1. Counted as speech with no new words, the last
/// alone was the benchmark's longest wait (1.1-1.4 s), once every word was on screen.
fn vad_spans(vad: &mut Silero, samples: &[f32]) -> Vec<(f64, f64)> {
    vad.reset();
    let gate = GateSettings::default();
    let mut speaking = false;
    let frames = samples.chunks_exact(VAD_FRAME).map(|frame| {
        let p = vad.probability(frame).expect("Silero VAD rates a frame");
        speaking = gate.is_speech(p, speaking);
        speaking
    });
    join_spans(frames, VAD_FRAME as f64 * 1000.0 / f64::from(STT_RATE))
}

/// Runs of speech frames (`frame_ms` each) in ms, joined across silences shorter than
/// [`PHRASE_PAUSE_MS`].
fn join_spans(speech: impl Iterator<Item = bool>, frame_ms: f64) -> Vec<(f64, f64)> {
    let mut spans: Vec<(f64, f64)> = Vec::new();
    for (i, _) in speech.enumerate().filter(|(_, s)| *s) {
        let (from, to) = (i as f64 * frame_ms, (i + 1) as f64 * frame_ms);
        match spans.last_mut() {
            Some(last) if from - last.1 < PHRASE_PAUSE_MS => last.1 = to,
            _ => spans.push((from, to)),
        }
    }
    spans
}

/// Milliseconds of speech between two moments (ms from the clip's first sample).
fn speech_between(speech: &[(f64, f64)], from: f64, to: f64) -> f64 {
    speech.iter().map(|&(a, b)| (b.min(to) - a.max(from)).max(0.0)).sum()
}

/// The espeak-ng questions.
fn espeak_clips(dir: &Path) -> Vec<Clip> {
    ESPEAK
        .iter()
        .enumerate()
        .map(|(n, text)| {
            let path = dir.join(format!("espeak-{n}.wav"));
            let ok = std::process::Command::new("espeak-ng")
                .arg("-w")
                .arg(&path)
                .arg(text)
                .status()
                .expect("espeak-ng (scripts/install-deps.sh installs it)");
            assert!(ok.success());
            let samples = read_16k_mono(&path).expect("espeak's WAV");
            Clip::new(format!("espeak {n}"), Source::Espeak, text, samples)
        })
        .collect()
}

/// Which of Asterisk's prompts to play.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Prompts {
    /// [`ASTERISK_PROMPTS`], the turns' questions.
    Turns,
    /// Every recorded prompt of five words or more with no digit or keypad symbol in its
    /// script: the word-error comparison's larger sample.
    Every,
}

/// Whether a prompt's script is whole words to say: five or more, no digit, keypad
/// symbol or bracketed note.
fn words_to_say(text: &str) -> bool {
    text.split_whitespace().count() >= 5 && !text.contains(|c: char| c.is_ascii_digit() || "#*[]<>()".contains(c))
}

/// Asterisk's prompts, from the packages unpacked under `speech/asterisk` (the script's
/// doing), else installed on this system.
fn asterisk_clips(speech: &Path, prompts: Prompts) -> Vec<Clip> {
    let root = [speech.join("asterisk"), PathBuf::from("/")]
        .into_iter()
        .find(|r| r.join(ASTERISK_SCRIPT).exists() && r.join(ASTERISK_VOICE).is_dir())
        .unwrap_or_else(|| {
            panic!(
                "Debian's asterisk-core-sounds-en and asterisk-core-sounds-en-wav are not unpacked in {} \
                 (scripts/bench-offline-turn.sh does it) nor installed; or leave asterisk out of HARK_BENCH_CLIPS",
                speech.join("asterisk").display()
            )
        });
    let mut script = String::new();
    let file = std::fs::File::open(root.join(ASTERISK_SCRIPT)).expect("the prompts' script");
    flate2::read::GzDecoder::new(file)
        .read_to_string(&mut script)
        .expect("the prompts' script, gzip-compressed UTF-8");
    // `name: What is said.`, one prompt a line.
    let lines: HashMap<&str, &str> = script
        .lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(name, text)| (name.trim(), text.trim()))
        .collect();
    let recording = |name: &str| root.join(ASTERISK_VOICE).join(format!("{name}.wav"));
    let names: Vec<&str> = match prompts {
        Prompts::Turns => ASTERISK_PROMPTS.to_vec(),
        Prompts::Every => {
            let mut every: Vec<&str> = lines
                .iter()
                .filter(|(name, text)| words_to_say(text) && recording(name).is_file())
                .map(|(name, _)| *name)
                .collect();
            every.sort_unstable();
            every
        }
    };
    names
        .into_iter()
        .map(|name| {
            let said = lines
                .get(name)
                .unwrap_or_else(|| panic!("{name} is not in core-sounds-en.txt"));
            let path = recording(name);
            let samples = read_16k_mono(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            Clip::new(format!("asterisk {name}"), Source::Human, said, samples)
        })
        .collect()
}

/// `beckett.wav`, fetched (resumable, checked) from the wheel the manifest pins for
/// Moonshine's tokenizer, into `speech`.
async fn beckett_clip(manifest: &Manifest, speech: &Path) -> Clip {
    let mut spec = manifest
        .find(moonshine::TOKENIZER_ID)
        .expect("Moonshine's tokenizer in the manifest")
        .clone();
    spec.id = "beckett".into();
    spec.label = "beckett.wav, a human recording in Moonshine's tokenizer wheel".into();
    spec.file = "beckett.wav".into();
    spec.sha256 = BECKETT_SHA256.into();
    spec.requires.clear();
    for part in &mut spec.parts {
        part.member = BECKETT_MEMBER.into();
    }
    let path = ModelStore::new(speech)
        .ensure(&spec, &|_| {})
        .await
        .expect("beckett.wav from the useful-moonshine-onnx wheel");
    let samples = read_16k_mono(&path).expect("beckett.wav");
    Clip::new("beckett.wav".into(), Source::Human, BECKETT_TEXT, samples)
}

/// The word error of transcripts (`(source, said, heard)`) on the espeak-ng questions, on
/// human speech and in all, as the benchmark prints it (`width`: each rate's), and the rate
/// in all.
fn word_error_figures<'a>(heard: impl Iterator<Item = (Source, &'a str, &'a str)>, width: usize) -> (String, f64) {
    let (mut espeak, mut human) = (WordErrors::default(), WordErrors::default());
    for (source, said, heard) in heard {
        let errors = WordErrors::of(said, heard);
        match source {
            Source::Espeak => espeak += errors,
            Source::Human => human += errors,
        }
    }
    let mut all = espeak;
    all += human;
    let figures = format!(
        "espeak-ng {:>width$.1} %, human speech {:>width$.1} %, all {:>width$.1} % ({} errors in {} words said)",
        espeak.rate() * 100.0,
        human.rate() * 100.0,
        all.rate() * 100.0,
        all.errors,
        all.said
    );
    (figures, all.rate())
}

/// Each engine's word error on `clips`, each transcribed whole (Moonshine through the
/// same phrases as its live transcription): the comparison issue 20's rule decides the
/// default English engine by. The turns' twelve Asterisk prompts are 110 words of human
/// speech, where two words decided it (15 errors against 13, and a tie another day);
/// every prompt of five words or more is 1,500 and more.
async fn word_error_whole(engines: [(&str, &dyn Transcriber); 2], clips: &[&Clip]) -> String {
    use std::fmt::Write;
    let count = |s: Source| clips.iter().filter(|c| c.source == s).count();
    let mut report = format!(
        "word error, each clip transcribed whole ({} espeak-ng questions, {} human recordings: every Asterisk prompt of five words or more, and beckett.wav)\n",
        count(Source::Espeak),
        count(Source::Human)
    );
    let mut rates = Vec::new();
    let mut heard: Vec<Vec<String>> = Vec::new();
    for (name, engine) in engines {
        let mut texts = Vec::new();
        for clip in clips {
            texts.push(
                engine
                    .transcribe(&clip.samples)
                    .await
                    .unwrap_or_else(|e| panic!("{name}, {}: {e}", clip.name)),
            );
        }
        let (figures, rate) = word_error_figures(
            clips
                .iter()
                .zip(&texts)
                .map(|(c, t)| (c.source, c.said.as_str(), t.as_str())),
            5,
        );
        let _ = writeln!(report, "  {name:<16} {figures}");
        rates.push(rate);
        heard.push(texts);
    }
    if verbose() {
        for (i, clip) in clips.iter().enumerate() {
            let [a, b] = [&heard[0][i], &heard[1][i]];
            if a != b {
                eprintln!(
                    "{}: said {:?}; {}: {a:?}; {}: {b:?}",
                    clip.name, clip.said, engines[0].0, engines[1].0
                );
            }
        }
    }
    let no_worse = rates[1] <= rates[0];
    let _ = writeln!(
        report,
        "{}'s word error is {} {}'s: {}",
        engines[1].0,
        if no_worse { "no worse than" } else { "worse than" },
        engines[0].0,
        if no_worse {
            "by issue 20's rule it is the default English engine"
        } else {
            "by issue 20's rule whisper is the default English engine"
        }
    );
    report
}

/// One turn's figures from the release, in ms, what was heard, and the live words.
struct Measured {
    source: Source,
    said: String,
    heard: String,
    transcript: f64,
    first_token: f64,
    first_audio: f64,
    /// Speech onset → the first words on screen; `None`: none before the release.
    first_words: Option<f64>,
    /// The longest stretch of speech with no new words on screen, from the first words
    /// to the release ([`longest_wait`]); `None`: no words before the release.
    longest_wait: Option<f64>,
    /// The same as measured at b025a6d ([`longest_wait_before`]).
    longest_wait_before: Option<f64>,
    /// Changes of the words on screen before the release and, of them, those that changed
    /// a word before the last one shown ([`revises`]): words the user had read.
    words_changed: usize,
    revised: usize,
}

/// Whether the words shown going from `old` to `new` change one before the last of `old`
/// (the last may still be growing as it is heard: "Yo" → "Your"): a word already read
/// flickers.
fn revises(old: &[String], new: &[String]) -> bool {
    let same = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    same + 1 < old.len()
}

/// Whether the words shown going from `old` to `new` bring new words: more after them, or
/// another last word (one still being heard, made out: "Yo" → "Your"). A change before
/// an unchanged last word ("or trying to reach" → "you are trying to reach") re-reads
/// words already shown and brings none; counted as new words, the flicker of a word read
/// two ways filled the waits for the next one (before 2026-12-06).
fn brings_words(old: &[String], new: &[String]) -> bool {
    let same = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    let (old, new) = (&old[same..], &new[same..]);
    match (old.last(), new.last()) {
        (_, None) => false,
        (None, Some(_)) => true,
        (Some(a), Some(b)) => a != b,
    }
}

/// The longest stretch of speech (`speech`: spans in ms, joined across silences shorter
/// than a phrase pause) with no new words on screen: the speech between two moments at
/// which new words were shown (`updates`: [`brings_words`]; a change of punctuation or
/// case, or a word before the last one read another way, brings none), or between the
/// last of them and the release (`released`). The speech of a phrase
/// after its last update is not waited through when no new words came in the pause after
/// it (the decode at the pause, which hears the whole phrase, found none; at the end,
/// the transcript had none: `release_brought_words` false): the words on screen held all
/// of it, the last of them shown before it was finished.
fn longest_wait(updates: &[f64], released: f64, release_brought_words: bool, speech: &[(f64, f64)]) -> f64 {
    longest(updates, released, |a, b, at_release| {
        // The phrase the update at `a` came in, when it ended before `b` and no new words
        // came in the pause after it (no update before the next phrase began).
        let held_all = speech
            .iter()
            .enumerate()
            .find(|(_, &(start, end))| start <= a && a < end && end < b)
            .filter(|&(k, _)| match speech.get(k + 1) {
                Some(&(next, _)) => b >= next,
                None => at_release && !release_brought_words,
            })
            .map_or(0.0, |(_, &(_, end))| end - a);
        speech_between(speech, a, b) - held_all
    })
}

/// The wait as measured at b025a6d: the speech between two changes of the text
/// shown (punctuation included), or the last and the release, all of it counted. A word
/// shown before it was finished then counted the rest of it, and the rest of its phrase's
/// speech, as a wait (in beckett.wav, "Try again." shown 330 ms before "again" ended, then
/// a pause, then 370 ms of the next phrase before its first word: a 700 ms wait), and a
/// change of punctuation alone ended one.
fn longest_wait_before(updates: &[f64], released: f64, speech: &[(f64, f64)]) -> f64 {
    longest(updates, released, |a, b, _| speech_between(speech, a, b))
}

/// The longest `wait(a, b, at_release)` between two updates in a row, or the last update
/// and the release (`at_release`).
fn longest(updates: &[f64], released: f64, wait: impl Fn(f64, f64, bool) -> f64) -> f64 {
    // The window that ends at the release.
    let last = updates.len().saturating_sub(1);
    let mut points = updates.to_vec();
    points.push(released);
    points
        .windows(2)
        .enumerate()
        .map(|(i, w)| wait(w[0], w[1], i == last))
        .fold(0.0, f64::max)
}

/// The turns whose longest wait decides its p95 and any above it (the p95 of n turns is
/// about the (n/20 + 1)th worst), longest first: what a reader looks at to see why.
fn longest_waits(turns: &[(String, &Measured)]) -> String {
    let mut waits: Vec<(f64, &str, &str)> = turns
        .iter()
        .filter_map(|(label, t)| t.longest_wait.map(|w| (w, label.as_str(), t.said.as_str())))
        .collect();
    waits.sort_by(|a, b| b.0.total_cmp(&a.0));
    let deciding = waits.len() - rank(waits.len(), 0.95);
    let listed: Vec<String> = waits
        .iter()
        .take(deciding)
        .map(|(w, label, said)| {
            let said: String = said.chars().take(40).collect();
            format!("{w:.0} ms {label} \"{said}…\"")
        })
        .collect();
    format!("the p95 and the turns above it: {}", listed.join("; "))
}

fn percentile(v: &[f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s[rank(s.len(), p)]
}

/// The index of the `p` percentile among `n` values sorted from the least.
fn rank(n: usize, p: f64) -> usize {
    (n.saturating_sub(1) as f64 * p).round() as usize
}

/// A figure's percentile over turns.
fn pct(turns: &[Measured], figure: fn(&Measured) -> f64, p: f64) -> f64 {
    percentile(&turns.iter().map(figure).collect::<Vec<_>>(), p)
}

/// The largest value; NaN for none.
fn worst(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::NAN, f64::max)
}

/// Whether the live words met their goal over `turns` turns: words before the release in
/// every turn, and the figure's p95 within the goal.
fn live_goal(v: &[f64], turns: usize) -> &'static str {
    if v.len() == turns && percentile(v, 0.95) <= LIVE_WORDS_GOAL_MS {
        "met"
    } else {
        "NOT met"
    }
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{cpu}, {cores} cores")
}

/// One conversation: each clip played live into the voice session in turn, as `hark talk
/// --wav FILE --live` plays a file, and its figures.
async fn conversation(
    config: Config,
    server: &LocalLlm,
    voice: &Voice,
    clips: &[&Clip],
    memory: Option<&Arc<Embedder>>,
) -> Vec<Measured> {
    let store = match (config.recall, memory) {
        (false, _) => Arc::new(Store::open_in_memory().expect("sqlite")),
        (true, Some(embed)) => remembering(embed.clone()).await,
        (true, None) => unreachable!("the embedding model is loaded when a pipeline recalls"),
    };
    let mut chat = ChatSession::create(
        store,
        server.config().build().expect("the local model's client"),
        hark_core::assembly::DEFAULT_SYSTEM_PROMPT,
        HistorySettings::default(),
    )
    .expect("session");
    chat.set_recall(config.recall);
    chat.set_reply_budget(48);
    chat.set_model_window(server.context_window());
    chat.set_prefill(true);
    let recordings = Recordings::new();
    let (tx, mut events) = mpsc::unbounded_channel();
    let session = voice::spawn(
        chat,
        voice.clone(),
        ActorOptions {
            mode: PttMode::Hold,
            input_device: None,
            input: Arc::new(recordings.clone()),
            cues: false,
            pipeline: config.pipeline,
            questions: None,
        },
        tx,
    );
    let release = release_after();
    let label = config.label();
    let mut out = Vec::new();
    for clip in clips {
        let playing = voice::play_live(session.handle(), &recordings, &clip.name, clip.samples.clone(), release);
        tokio::pin!(playing);
        let mut start = None;
        let mut idle = false;
        let mut interims = Vec::new();
        let mut heard = String::new();
        let mut finished = None;
        // A hang catcher: a turn takes seconds.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(180);
        while start.is_none() || !idle {
            tokio::select! {
                played = &mut playing, if start.is_none() => {
                    start = Some(played.expect("the voice session"));
                }
                e = tokio::time::timeout_at(deadline, events.recv()) => match e {
                    Ok(Some(VoiceEvent::TranscriptInterim { text })) => {
                        interims.push((tokio::time::Instant::now(), text));
                    }
                    Ok(Some(VoiceEvent::TranscriptFinal { text })) => heard = text,
                    Ok(Some(VoiceEvent::TurnFinished { metrics, reply, .. })) => finished = Some((metrics, reply)),
                    Ok(Some(VoiceEvent::Idle)) => idle = true,
                    Ok(Some(VoiceEvent::Failed { message, .. })) => panic!("{label}, {}: the turn failed: {message}", clip.name),
                    Ok(Some(VoiceEvent::NoTurn { reason })) => panic!("{label}, {}: no turn: {reason:?}", clip.name),
                    Ok(Some(_)) => {}
                    Ok(None) => panic!("{label}: the voice session ended"),
                    Err(_) => panic!("{label}, {}: no turn finished within three minutes", clip.name),
                }
            }
        }
        let Some(start) = start else {
            unreachable!("the loop ends after the release")
        };
        let (metrics, reply): (TurnMetrics, String) =
            finished.unwrap_or_else(|| panic!("{label}, {}: idle without a finished turn", clip.name));

        // The words on screen while the key was held: each change that brings new words is
        // an update (and each change of the text, as measured at b025a6d).
        let at = |t: tokio::time::Instant| t.saturating_duration_since(start).as_secs_f64() * 1000.0;
        let released = clip.ms() + release.as_secs_f64() * 1000.0;
        let (mut updates, mut changes) = (Vec::new(), Vec::new());
        let (mut words_changed, mut revised) = (0, 0);
        let mut shown = String::new();
        // With HARK_BENCH_VERBOSE: each change's moment and text, and the speech.
        let mut course = Vec::new();
        for (t, text) in interims {
            if at(t) < released && text != shown {
                changes.push(at(t));
                let (was, now) = (wer::words(&shown), wer::words(&text));
                if brings_words(&was, &now) {
                    updates.push(at(t));
                }
                if now != was {
                    words_changed += 1;
                    revised += usize::from(revises(&was, &now));
                }
                if verbose() {
                    course.push(format!("{:.0} {text:?}", at(t)));
                }
                shown = text;
            }
        }
        let first_words = updates.first().map(|u| u - clip.onset_ms);
        let release_brought_words = brings_words(&wer::words(&shown), &wer::words(&heard));
        let longest_wait =
            (!updates.is_empty()).then(|| longest_wait(&updates, released, release_brought_words, &clip.speech));
        let longest_wait_before = (!changes.is_empty()).then(|| longest_wait_before(&changes, released, &clip.speech));

        let transcript = metrics.transcript_ms.unwrap_or(0) as f64;
        let m = Measured {
            source: clip.source,
            said: clip.said.clone(),
            heard,
            transcript,
            // The request starts when the transcript is there.
            first_token: transcript + metrics.first_token_ms.unwrap_or(0) as f64,
            first_audio: metrics.first_audio_out_ms.unwrap_or(0) as f64,
            first_words,
            longest_wait,
            longest_wait_before,
            words_changed,
            revised,
        };
        if verbose() {
            eprintln!(
                "{label}, {}: transcript {:.0} ms, first token {:.0} ms, first audio {:.0} ms; first words {:?} ms, longest wait {:?} ms (at b025a6d {:?} ms; {} updates): {:?} → {reply:?}",
                clip.name,
                m.transcript,
                m.first_token,
                m.first_audio,
                m.first_words.map(f64::round),
                m.longest_wait.map(f64::round),
                m.longest_wait_before.map(f64::round),
                updates.len(),
                m.heard,
            );
            let spans: Vec<String> = clip.speech.iter().map(|(a, b)| format!("{a:.0}-{b:.0}")).collect();
            eprintln!(
                "  speech {}; released {released:.0}; words on screen: {}",
                spans.join(", "),
                course.join(", ")
            );
        }
        out.push(m);
    }
    session.shutdown().await.expect("actor");
    out
}

fn main() {
    let runs: usize = std::env::var("HARK_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2);
    let configs = configs();
    let sets: Vec<String> = std::env::var("HARK_BENCH_CLIPS")
        .unwrap_or_else(|_| "espeak,asterisk,beckett".into())
        .split(',')
        .map(|s| s.trim().to_string())
        .collect();
    for s in &sets {
        assert!(
            ["espeak", "asterisk", "beckett"].contains(&s.as_str()),
            "HARK_BENCH_CLIPS: unknown clip set {s:?} (espeak, asterisk, beckett)"
        );
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let manifest = Manifest::load().expect("the models manifest");
        let models = ModelStore::default_dir();
        let llm = match std::env::var("HARK_BENCH_LLM") {
            Ok(id) => manifest.find(&id).expect("HARK_BENCH_LLM: a chat model of the manifest"),
            Err(_) => manifest.default_for(ModelKind::Llm).expect("a default chat model"),
        };
        let stt = manifest.default_for(ModelKind::Stt).expect("a default speech model");
        let profile = hark_core::assembly::Profile::default();
        let mut specs = vec![llm, stt];
        specs.extend(profile.natural_specs(&manifest).expect("the natural voice in the manifest"));
        let wants_piper = configs.iter().any(|c| c.voice == "piper");
        if wants_piper {
            specs.extend(profile.piper_specs(&manifest).expect("the quick natural voice in the manifest"));
        }
        let wants_hibari = configs.iter().any(|c| c.voice == "hibari");
        if wants_hibari {
            specs.extend(profile.hibari_specs(&manifest).expect("the quick Heart voice in the manifest"));
        }
        // Moonshine in any case: the word-error comparison uses it.
        specs.extend(profile.moonshine_specs(&manifest).expect("Moonshine in the manifest"));
        // Where the clips' speech is (the live words' waits count speech only).
        specs.extend(manifest.with_requirements(vad::MODEL_ID).expect("Silero VAD in the manifest"));
        for spec in specs {
            models
                .ensure(spec, &|_| {})
                .await
                .expect("the model (scripts/fetch-models.sh)");
        }

        // The pipelines with recall search their memory by meaning, as the app does.
        let memory = if configs.iter().any(|c| c.recall) {
            for spec in manifest.with_requirements(embed::MODEL.id).expect("the embedding model in the manifest") {
                models.ensure(spec, &|_| {}).await.expect("the embedding model");
            }
            let files = embed::files(&manifest, &models).expect("the embedding model's files");
            Some(Arc::new(Embedder::load(embed::MODEL, &files).expect("the embedding model")))
        } else {
            None
        };

        let dir = tempfile::tempdir().expect("temp dir");
        let speech = std::env::var_os("HARK_BENCH_SPEECH")
            .map(PathBuf::from)
            .unwrap_or_else(|| models.dir().join("bench-speech"));
        let wanted = |set: &str| sets.iter().any(|s| s == set);
        // The espeak questions are made in any case: the first-turn comparison uses them.
        let mut espeak = espeak_clips(dir.path());
        let mut asterisk = if wanted("asterisk") {
            asterisk_clips(&speech, Prompts::Turns)
        } else {
            Vec::new()
        };
        let mut beckett = if wanted("beckett") {
            vec![beckett_clip(&manifest, &speech).await]
        } else {
            Vec::new()
        };
        let mut vad = Silero::load(&profile.vad_files(&manifest, &models).expect("Silero VAD's files")).expect("Silero VAD");
        for clip in espeak.iter_mut().chain(&mut asterisk).chain(&mut beckett) {
            clip.speech = vad_spans(&mut vad, &clip.samples);
        }
        let mut clips: Vec<&Clip> = Vec::new();
        if wanted("espeak") {
            clips.extend(&espeak);
        }
        clips.extend(&asterisk);
        clips.extend(&beckett);
        assert!(!clips.is_empty(), "HARK_BENCH_CLIPS: no clips");

        let whisper = WhisperStt::load(&models.path(stt)).expect("whisper");
        whisper.set_unload_after(None);
        let moonshine_stt = MoonshineStt::new(profile.moonshine_files(&manifest, &models).expect("Moonshine's files"))
            .expect("Moonshine");
        // Both engines warm, then each one's word error on every clip, transcribed whole.
        let _ = whisper.transcribe(&clips[0].samples).await;
        let _ = moonshine_stt.transcribe(&clips[0].samples).await;
        let every = if wanted("asterisk") {
            asterisk_clips(&speech, Prompts::Every)
        } else {
            Vec::new()
        };
        let whole: Vec<&Clip> = clips
            .iter()
            .copied()
            .filter(|c| c.source == Source::Espeak)
            .chain(&every)
            .chain(&beckett)
            .collect();
        let word_error = word_error_whole(
            [(stt.id.as_str(), &whisper), (moonshine::MODEL_ID, &moonshine_stt)],
            &whole,
        )
        .await;
        if runs == 0 {
            print!("{word_error}");
            return;
        }

        let server = LocalLlm::start(&models.path(llm), &llm.id, DEFAULT_CONTEXT, None)
            .await
            .expect("hark-llm (set HARK_LLM_BIN to the release build)");
        let system: Arc<dyn Synthesizer> = Arc::new(SystemVoice::default());
        let natural_voice =
            NaturalVoice::new(profile.natural_files(&manifest, &models).expect("its files"), None).expect("af_heart");
        let natural: Arc<dyn Synthesizer> = Arc::new(natural_voice);
        let piper: Option<Arc<dyn Synthesizer>> = wants_piper.then(|| {
            let files = profile.piper_files(&manifest, &models).expect("its files");
            Arc::new(PiperVoice::new(files).expect("Piper")) as Arc<dyn Synthesizer>
        });
        let hibari: Option<Arc<dyn Synthesizer>> = wants_hibari.then(|| {
            let files = profile.hibari_files(&manifest, &models).expect("its files");
            Arc::new(HibariVoice::new(files).expect("Hibari")) as Arc<dyn Synthesizer>
        });
        let voice_for = |c: &Config| {
            let engine: Arc<dyn Transcriber> = match c.engine {
                Engine::Moonshine => Arc::new(moonshine_stt.clone()),
                Engine::Whisper => Arc::new(whisper.clone()),
            };
            Voice {
                stt: engine,
                tts: match (c.voice, &piper, &hibari) {
                    ("natural", _, _) => natural.clone(),
                    ("piper", Some(p), _) => p.clone(),
                    ("hibari", _, Some(h)) => h.clone(),
                    ("piper" | "hibari", _, _) => unreachable!("loaded when a pipeline uses it"),
                    _ => system.clone(),
                },
                out: Arc::new(ClockOut::new()),
            }
        };
        // Every pipeline starts warm: the speech models (above) and the voices loaded, the
        // model server serving.
        for c in &configs {
            let _ = conversation(*c, &server, &voice_for(c), &clips[..1], memory.as_ref()).await;
        }

        // Each voice's real-time factor on the replies' kind of sentence, warm.
        let sentences = [
            "The capital of France is Paris.",
            "Octopuses have three hearts and blue blood.",
            "A spider has eight legs.",
        ];
        let mut rtf = Vec::new();
        let voices = [
            ("system", Some(&system)),
            ("natural", Some(&natural)),
            ("piper", piper.as_ref()),
            ("hibari", hibari.as_ref()),
        ];
        for (name, tts) in voices.into_iter().filter_map(|(n, t)| t.map(|t| (n, t))) {
            let (mut compute, mut audio) = (0.0, 0.0);
            for s in sentences {
                let (tx, mut rx) = mpsc::unbounded_channel::<AudioChunk>();
                let started = std::time::Instant::now();
                tts.synthesize(s, &tx).await.expect("synthesis");
                compute += started.elapsed().as_secs_f64();
                drop(tx);
                while let Some(c) = rx.recv().await {
                    audio += c.samples.len() as f64 / f64::from(c.rate);
                }
            }
            rtf.push((name, compute / audio, audio));
        }

        let count = |s: Source| clips.iter().filter(|c| c.source == s).count();
        println!(
            "Offline spoken turn, {} ({} runs × {} clips per pipeline: {} espeak-ng, {} human)",
            machine(),
            runs,
            clips.len(),
            count(Source::Espeak),
            count(Source::Human)
        );
        println!(
            "whisper {} or {} (live) → {} in hark-llm → the OS voice (espeak-ng), the natural voice (Kokoro), the quick Heart voice (Hibari) or the quick natural voice (Piper's Joe), {} thread(s); \
             each clip played live, the key released {} ms after its last word\n",
            stt.id,
            moonshine::MODEL_ID,
            llm.id,
            hark_core::tts::natural::thread_budget(),
            release_after().as_millis()
        );
        let mut results: Vec<(Config, Vec<Measured>)> = configs.iter().map(|c| (*c, Vec::new())).collect();
        let groups: Vec<&[&Clip]> = clips.chunks(TURNS_PER_CONVERSATION).collect();
        for run in 0..runs {
            eprintln!("run {} of {runs}…", run + 1);
            for (g, group) in groups.iter().enumerate() {
                // The pipelines take turns, in alternating order, so the machine's drift
                // over the run falls on all of them alike.
                let mut order: Vec<usize> = (0..results.len()).collect();
                if (run + g) % 2 == 1 {
                    order.reverse();
                }
                for i in order {
                    let c = results[i].0;
                    let m = conversation(c, &server, &voice_for(&c), group, memory.as_ref()).await;
                    results[i].1.extend(m);
                }
            }
        }

        let transcript: fn(&Measured) -> f64 = |t| t.transcript;
        let first_token: fn(&Measured) -> f64 = |t| t.first_token;
        let first_audio: fn(&Measured) -> f64 = |t| t.first_audio;
        println!(
            "{:<19} {:>22} {:>22} {:>22} {:>7}",
            "pipeline/voice", "release → transcript", "release → 1st token", "release → 1st audio", "WER"
        );
        for (c, m) in &results {
            let col = |f: fn(&Measured) -> f64| format!("p50 {:>5.0} p95 {:>5.0}", pct(m, f, 0.5), pct(m, f, 0.95));
            let wer: WordErrors = m.iter().map(|t| WordErrors::of(&t.said, &t.heard)).sum();
            println!(
                "{:<19} {:>22} {:>22} {:>22} {:>6.1}%",
                c.label(),
                col(transcript),
                col(first_token),
                col(first_audio),
                wer.rate() * 100.0
            );
        }
        let find = |name: &str, voice: &str| {
            results
                .iter()
                .find(|(c, _)| c.name == name && c.voice == voice && !c.recall)
                .map(|(_, m)| m.as_slice())
        };

        // Issue 20's goals: the new pipeline against today's, per voice, in this run.
        println!();
        // The quick natural voice is measured against today's natural voice (Kokoro).
        for (voice, today_voice, voice_name, goal_p50, goal_p95, goal_ratio) in [
            ("system", "system", "OS voice", 400.0, 600.0, 0.75),
            ("natural", "natural", "natural voice", 700.0, 900.0, 0.55),
            ("piper", "natural", "quick natural voice against today's natural voice", 700.0, 900.0, 0.55),
            ("hibari", "natural", "quick Heart voice against today's natural voice", 700.0, 900.0, 0.55),
        ] {
            let (Some(today), Some(new)) = (find("overlapped", today_voice), find("moonshine", voice)) else {
                continue;
            };
            let ratio = |f: fn(&Measured) -> f64, q: f64| pct(new, f, q) / pct(today, f, q);
            println!(
                "moonshine / overlapped (today), {voice_name}: transcript p50 {:.2}× p95 {:.2}×, first token p50 {:.2}× p95 {:.2}×, first audio p50 {:.2}× p95 {:.2}×",
                ratio(transcript, 0.5),
                ratio(transcript, 0.95),
                ratio(first_token, 0.5),
                ratio(first_token, 0.95),
                ratio(first_audio, 0.5),
                ratio(first_audio, 0.95)
            );
            let (a50, a95) = (pct(new, first_audio, 0.5), pct(new, first_audio, 0.95));
            let absolute = a50 <= goal_p50 && a95 <= goal_p95;
            let relative = ratio(first_audio, 0.5) <= goal_ratio;
            let said = |ok: bool| if ok { "met" } else { "NOT met" };
            println!(
                "  goal, first audio: p50 ≤ {goal_p50:.0} ms and p95 ≤ {goal_p95:.0} ms: {} ({a50:.0} / {a95:.0} ms); ≤ {goal_ratio:.2}× today's p50: {} ({:.2}×); the ratio decides: {}",
                said(absolute),
                said(relative),
                ratio(first_audio, 0.5),
                said(relative)
            );
        }
        // Long-term recall's cost: each pipeline with recall against the same without, in
        // this run.
        for (c, with) in results.iter().filter(|(c, _)| c.recall) {
            let Some(without) = find(c.name, c.voice) else { continue };
            let ratio = |f: fn(&Measured) -> f64, q: f64| pct(with, f, q) / pct(without, f, q);
            println!(
                "{} against {}/{} (no recall): first token p50 {:.2}× p95 {:.2}×, first audio p50 {:.2}× p95 {:.2}×",
                c.label(),
                c.name,
                c.voice,
                ratio(first_token, 0.5),
                ratio(first_token, 0.95),
                ratio(first_audio, 0.5),
                ratio(first_audio, 0.95)
            );
        }
        if let (Some(old), Some(new)) = (find("sequential", "system"), find("overlapped", "system")) {
            let same = old.iter().zip(new).filter(|(a, b)| a.heard == b.heard).count();
            println!(
                "overlapped / sequential (OS voice), release → first audio: p50 {:.2}×, p95 {:.2}×; identical transcripts: {same} of {}",
                pct(new, first_audio, 0.5) / pct(old, first_audio, 0.5),
                pct(new, first_audio, 0.95) / pct(old, first_audio, 0.95),
                old.len().min(new.len())
            );
        }

        // The live words, from the turns of the live engine.
        let live_turns: Vec<(String, &Measured)> = results
            .iter()
            .filter(|(c, _)| c.engine == Engine::Moonshine)
            .flat_map(|(c, m)| m.iter().map(move |t| (c.label(), t)))
            .collect();
        let live: Vec<&Measured> = live_turns.iter().map(|(_, t)| *t).collect();
        if !live.is_empty() {
            let first: Vec<f64> = live.iter().filter_map(|t| t.first_words).collect();
            let waits: Vec<f64> = live.iter().filter_map(|t| t.longest_wait).collect();
            println!(
                "\nlive words ({}, {} turns): first words after the speech onset p50 {:.0} p95 {:.0} worst {:.0} ms (goal p95 ≤ {LIVE_WORDS_GOAL_MS:.0} ms: {})",
                moonshine::MODEL_ID,
                live.len(),
                percentile(&first, 0.5),
                percentile(&first, 0.95),
                worst(&first),
                live_goal(&first, live.len())
            );
            println!(
                "  longest wait for new words while speaking (speech as Silero VAD hears it; a word shown before the last one read another way is no new word; pauses of {PHRASE_PAUSE_MS:.0} ms or more, and the end of a phrase whose words were all on screen, not counted), per turn: p50 {:.0} p95 {:.0} worst {:.0} ms (goal p95 ≤ {LIVE_WORDS_GOAL_MS:.0} ms: {})",
                percentile(&waits, 0.5),
                percentile(&waits, 0.95),
                worst(&waits),
                live_goal(&waits, live.len())
            );
            println!("  {}", longest_waits(&live_turns));
            let before: Vec<f64> = live.iter().filter_map(|t| t.longest_wait_before).collect();
            println!(
                "  as measured at b025a6d (any change of the text ends a wait, a phrase's speech after its last word shown counts): p50 {:.0} p95 {:.0} worst {:.0} ms",
                percentile(&before, 0.5),
                percentile(&before, 0.95),
                worst(&before)
            );
            let changed: usize = live.iter().map(|t| t.words_changed).sum();
            let revised: usize = live.iter().map(|t| t.revised).sum();
            println!(
                "  words already on screen changed while speaking (a word before the last one shown): {revised} of {changed} changes of the words, in {} of {} turns",
                live.iter().filter(|t| t.revised > 0).count(),
                live.len()
            );
            if first.len() < live.len() {
                println!("  no words before the release in {} turns", live.len() - first.len());
            }
        }

        // Each engine's word error in the turns (each pipeline's transcripts), then on
        // every clip transcribed whole, which decides the default.
        println!();
        for (engine, name) in [(Engine::Whisper, stt.id.as_str()), (Engine::Moonshine, moonshine::MODEL_ID)] {
            let turns: Vec<&Measured> = results
                .iter()
                .filter(|(c, _)| c.engine == engine)
                .flat_map(|(_, m)| m)
                .collect();
            if turns.is_empty() {
                continue;
            }
            let (figures, _) = word_error_figures(
                turns.iter().map(|t| (t.source, t.said.as_str(), t.heard.as_str())),
                0,
            );
            println!("word error in the turns, {name}: {figures}");
        }
        print!("{word_error}");
        println!();
        for (name, factor, secs) in rtf {
            println!("real-time factor, {name} voice: {factor:.2} ({secs:.1} s of speech, warm)");
        }

        // The first turn after a start: a speech model just loaded (a new engine each
        // time), warmed up or not, then two turns.
        println!("\nThe first turn after a start against the second ({runs} starts each; overlapped, OS voice)");
        println!(
            "{:<24} {:>26} {:>26} {:>8}",
            "start", "1st turn → transcript/audio", "2nd turn → transcript/audio", "1st/2nd"
        );
        let overlapped = Config {
            name: "overlapped",
            engine: Engine::Whisper,
            pipeline: Pipeline::Overlapped,
            voice: "system",
            recall: false,
        };
        let two: Vec<&Clip> = espeak[1..3].iter().collect();
        for (name, warm) in [("loaded only (before)", false), ("loaded + warm-up (now)", true)] {
            let (mut first, mut second) = (Vec::new(), Vec::new());
            for _ in 0..runs {
                let fresh = WhisperStt::load(&models.path(stt)).expect("whisper");
                fresh.set_unload_after(None);
                if warm {
                    fresh.warm_up();
                    let deadline = std::time::Instant::now() + Duration::from_secs(60);
                    while !fresh.is_warm() {
                        assert!(std::time::Instant::now() < deadline, "whisper did not warm up in 60 s");
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                } else {
                    fresh.load_weights().expect("whisper loads");
                }
                let voice = Voice {
                    stt: Arc::new(fresh),
                    tts: system.clone(),
                    out: Arc::new(ClockOut::new()),
                };
                let m = conversation(overlapped, &server, &voice, &two, None).await;
                first.push((m[0].transcript, m[0].first_audio));
                second.push((m[1].transcript, m[1].first_audio));
            }
            let med = |v: &[(f64, f64)], f: fn(&(f64, f64)) -> f64| percentile(&v.iter().map(f).collect::<Vec<_>>(), 0.5);
            let t: fn(&(f64, f64)) -> f64 = |x| x.0;
            let a: fn(&(f64, f64)) -> f64 = |x| x.1;
            println!(
                "{:<24} {:>26} {:>26} {:>7.2}×",
                name,
                format!("p50 {:.0} / {:.0} ms", med(&first, t), med(&first, a)),
                format!("p50 {:.0} / {:.0} ms", med(&second, t), med(&second, a)),
                med(&first, a) / med(&second, a)
            );
        }
    });
}
