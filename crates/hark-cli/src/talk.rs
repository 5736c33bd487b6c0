//! `hark talk`: voice turns from WAV files (`--wav`, one turn each) or the microphone
//! (Enter is the push-to-talk key: Enter to start, Enter to stop; Enter while Hark speaks
//! interrupts it and listens). `--wav FILE --live` plays a file as live speech through the
//! microphone's path, for measuring a live turn.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Args;
use hark_core::assembly::Profile;
use hark_core::audio::input::{Microphone, Recordings};
use hark_core::audio::playback::{AudioOut, Speaker, WavOut};
use hark_core::audio::turn::SmartTurn;
use hark_core::audio::vad::{self, GateSettings, Silero};
use hark_core::audio::{list_devices, wav};
use hark_core::models::{Manifest, ModelStore};
use hark_core::secrets::Keychain;
use hark_core::session::ptt::{check_utterance, Key, PttMode};
use hark_core::session::voice::hands_free::{self, HandsFreeOptions};
use hark_core::session::voice::{self, ActorOptions, Voice, VoiceEvent, VoiceLine};
use hark_core::stt::SttKind;
use hark_core::tts::TtsKind;
use tokio::io::AsyncBufReadExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::session_args::SessionArgs;
use crate::terminal::printable;

#[derive(Args)]
pub struct TalkArgs {
    #[command(flatten)]
    pub session: SessionArgs,
    /// A recorded utterance (any PCM WAV); repeat for several turns. Without it: the microphone.
    #[arg(long)]
    wav: Vec<PathBuf>,
    /// Play each --wav file as live speech, through the microphone's path: the key held from
    /// its first sample, its audio delivered at real-time pace in 20 ms chunks, the key
    /// released --release-ms after its last sample. Interim words, the overlapped pipeline
    /// and the latency figures are then those of a live turn. Without it a file is answered
    /// at once, as a turn already released.
    #[arg(long, requires = "wav")]
    live: bool,
    /// With --live: milliseconds from a file's last sample to the key's release.
    #[arg(long, default_value_t = 300, requires = "live")]
    release_ms: u64,
    /// Write each reply as DIR/turn-N.wav instead of playing it.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Speech-to-text: moonshine (offline, words while you speak; English, whisper for the
    /// other languages), whisper (offline), deepgram (live), deepgram-prerecorded, openai.
    /// Default: moonshine, or whisper when --whisper-model names a whisper model file.
    #[arg(long)]
    stt: Option<SttKind>,
    /// Text-to-speech: hibari (the default: the quick Heart voice, Kokoro's Heart distilled,
    /// offline, about twenty-five times faster than real time; English, Kokoro for the other
    /// languages; fetched on first use; the OS voice where it is not available), natural
    /// (Kokoro, offline), piper (the quick natural voice, Piper's Joe: offline, English,
    /// seven to ten times Kokoro's speed), system (the OS voice), deepgram, openai.
    #[arg(long, default_value = "hibari")]
    tts: TtsKind,
    /// The whisper model file (default: the manifest's speech model in the models directory).
    #[arg(long, env = "HARK_WHISPER_MODEL")]
    whisper_model: Option<PathBuf>,
    /// Voice name (a natural voice such as af_heart, a Deepgram model, an OpenAI voice, or
    /// the OS voice).
    #[arg(long)]
    voice: Option<String>,
    /// Microphone (id or name from --list-devices).
    #[arg(long)]
    input_device: Option<String>,
    /// Speaker (id or name from --list-devices).
    #[arg(long)]
    output_device: Option<String>,
    /// List audio devices and exit.
    #[arg(long)]
    list_devices: bool,
    /// Hands-free conversation on the microphone: no key. Hark hears when you start and
    /// stop speaking (Silero VAD, offline; fetched on first use) and answers; speaking
    /// while it speaks interrupts it (echo cancellation keeps it from hearing itself).
    /// q + Enter (or the end of the input) quits.
    #[arg(long, conflicts_with_all = ["wav", "out"])]
    hands_free: bool,
    /// With --hands-free: milliseconds of silence that end your turn when Smart Turn has
    /// not heard a finished sentence (it is asked after a pause of 64 ms).
    #[arg(long, default_value_t = 2_000, requires = "hands_free")]
    patience_ms: u32,
    /// With --hands-free: no echo cancellation, so Hark does not listen while it speaks
    /// (half-duplex; a voice cannot interrupt it).
    #[arg(long, requires = "hands_free")]
    no_echo_cancellation: bool,
}

impl TalkArgs {
    /// The session flags' profile with this command's speech choices.
    fn profile(&self) -> Profile {
        Profile {
            // A whisper model named is a choice of whisper.
            stt: self.stt.unwrap_or(if self.whisper_model.is_some() {
                SttKind::Whisper
            } else {
                Profile::default().stt
            }),
            tts: self.tts,
            whisper_model: self.whisper_model.clone(),
            voice: self.voice.clone(),
            deepgram_base_url: std::env::var("HARK_DEEPGRAM_BASE_URL").ok(),
            ..self.session.profile()
        }
    }
}

/// The offline speech model and the natural voice's files, downloaded (and converted) on
/// first use.
async fn ensure_speech_model(profile: &Profile) -> Result<()> {
    let manifest = Manifest::load()?;
    if let Some(spec) = profile.whisper_spec(&manifest) {
        crate::models::ensure(spec, "speech-to-text runs offline").await?;
    }
    if profile.moonshine_in_effect(&manifest) {
        for spec in profile.moonshine_specs(&manifest)? {
            crate::models::ensure(spec, "speech-to-text runs offline").await?;
        }
    }
    let effect = profile.voice_in_effect(&manifest, hark_core::tts::espeak::find().as_deref());
    if let Some(why) = &effect.fallback {
        eprintln!("hark: {why}");
    }
    if effect.kind == TtsKind::Natural {
        for spec in profile.natural_specs(&manifest)? {
            crate::models::ensure(spec, "the natural voice runs offline").await?;
        }
    }
    if effect.kind == TtsKind::Piper {
        for spec in profile.piper_specs(&manifest)? {
            crate::models::ensure(spec, "the quick natural voice runs offline").await?;
        }
    }
    if effect.kind == TtsKind::Hibari {
        for spec in profile.hibari_specs(&manifest)? {
            crate::models::ensure(spec, "the quick Heart voice runs offline").await?;
        }
    }
    Ok(())
}

/// Prints voice events: JSON lines, or a readable transcript (`mic`: listening to the
/// microphone, which Enter stops; `hands_free`: which the voice activity detector stops).
fn print_event(json: bool, mic: bool, hands_free: bool, e: &VoiceEvent) {
    if json {
        // The history panel's view is for the desktop app; the CLI has /history.
        if matches!(e, VoiceEvent::ContextChanged { .. }) {
            return;
        }
        if let Ok(s) = serde_json::to_string(e) {
            println!("{s}");
        }
        return;
    }
    let mut err = std::io::stderr();
    match e {
        VoiceEvent::ListeningStarted { .. } if hands_free => {}
        VoiceEvent::ListeningStarted { device } if mic => eprintln!("(listening on {device}… press Enter to stop)"),
        VoiceEvent::SpeechStarted => eprintln!("(you are speaking…)"),
        VoiceEvent::ListeningStarted { device } => eprintln!("(playing {} as live speech…)", printable(device)),
        VoiceEvent::TranscriptInterim { text } => {
            let _ = write!(err, "\r… {}", printable(text));
        }
        VoiceEvent::TranscriptFinal { text } => println!("you: {}", printable(text)),
        VoiceEvent::NoTurn { reason } => eprintln!("(no turn: {reason:?})"),
        VoiceEvent::ReplyDelta { .. } | VoiceEvent::Level { .. } => {}
        VoiceEvent::TurnFinished { reply, metrics, notice } => {
            println!("hark: {}", printable(reply));
            if let Some(n) = notice {
                println!("hark: [{n}]");
            }
            eprintln!(
                "(release→transcript {} ms, first token {} ms, first audio out {} ms)",
                metrics.transcript_ms.unwrap_or(0),
                metrics.first_token_ms.unwrap_or(0),
                metrics.first_audio_out_ms.unwrap_or(0)
            );
        }
        VoiceEvent::ReplyInterrupted { heard, .. } => eprintln!("(interrupted; heard: “{}”)", printable(heard)),
        VoiceEvent::ReplyPaused => eprintln!("(a voice over the reply: paused)"),
        VoiceEvent::ReplyResumed { .. } => eprintln!("(not a barge-in: playing on)"),
        VoiceEvent::ToolStarted { name, .. } => eprintln!("({name}…)"),
        VoiceEvent::ToolFinished { name, state, .. } => eprintln!("({name}: {state})"),
        VoiceEvent::ConsentAsked { question, .. } => {
            eprintln!("hark: {} (press Enter and say yes, no or always)", printable(question))
        }
        VoiceEvent::ConsentHeard { heard, answer, .. } => match answer {
            Some(a) => eprintln!("(you said “{}”: {})", printable(heard), a.as_str()),
            None => eprintln!("(you said “{}”: say yes, no or always)", printable(heard)),
        },
        VoiceEvent::Failed {
            kind,
            message,
            next_step,
            detail,
            ..
        } => {
            eprintln!("hark: {kind}: {} ({next_step})", printable(message));
            if let Some(d) = detail {
                eprintln!("hark: details: {}", printable(d));
            }
        }
        VoiceEvent::ThinkingStarted
        | VoiceEvent::SpeechEnded
        | VoiceEvent::SpeakingStarted
        | VoiceEvent::PracticeHeard { .. }
        | VoiceEvent::Idle
        | VoiceEvent::ContextChanged { .. } => {}
    }
}

pub async fn run(args: TalkArgs, db: PathBuf) -> Result<ExitCode> {
    if args.list_devices {
        for (label, input) in [("inputs", true), ("outputs", false)] {
            println!("{label}:");
            for d in list_devices(input)? {
                println!("  {}{} ({})", if d.is_default { "* " } else { "  " }, d.name, d.id);
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    let profile = args.profile();
    profile.check()?;
    ensure_speech_model(&profile).await?;
    let kc = Keychain::default();
    let stt = profile.transcriber(&kc)?;
    let file_out = args.out.as_ref().map(|_| Arc::new(WavOut::default()));
    let out: Arc<dyn AudioOut> = match &file_out {
        Some(w) => w.clone(),
        None => Arc::new(Speaker::open(args.output_device.as_deref())?),
    };
    // The voice after the speaker: where nothing can play, no voice starts loading (its
    // load, cut short by the exit, would add a line after the error's).
    let tts = profile.synthesizer(&kc)?;
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let voice = Voice { stt, tts, out };
    let mic = args.wav.is_empty();
    // On the microphone, consent questions are put by voice and answered by the next press.
    let questions = mic.then(VoiceLine::new);
    let opened = args.session.open(&db, &profile, questions.clone()).await?;
    let (_local, _memory, _tool_servers) = (opened.local, opened.memory, opened.tool_servers);
    let mut chat = opened.session;
    let json = args.session.json;
    let hands_free = args.hands_free;
    if json {
        println!("{}", serde_json::json!({"type": "session", "id": chat.id()}));
    }
    let (tx, mut rx) = mpsc::unbounded_channel();
    let printer = tokio::spawn(async move {
        let mut failed = false;
        while let Some(e) = rx.recv().await {
            failed |= matches!(e, VoiceEvent::Failed { .. });
            print_event(json, mic, hands_free, &e);
        }
        failed
    });

    // Turn n's reply (1-based), written to --out.
    let save_reply = |n: usize| -> Result<()> {
        if let (Some(dir), Some(w)) = (&args.out, &file_out) {
            let (samples, rate) = w.take();
            if !samples.is_empty() {
                wav::write_mono(&dir.join(format!("turn-{n}.wav")), &samples, rate)?;
            }
        }
        Ok(())
    };
    if hands_free {
        let vad = load_vad(&profile).await?;
        let gate = GateSettings {
            unfinished_patience_ms: args.patience_ms,
            ..GateSettings::default()
        };
        let options = HandsFreeOptions {
            gate,
            echo_cancellation: !args.no_echo_cancellation,
            ..HandsFreeOptions::default()
        };
        listen_hands_free(chat, voice, args.input_device.clone(), questions, vad, options, tx).await?;
    } else if mic {
        microphone(chat, voice, args.input_device.clone(), questions, tx).await?;
    } else {
        if args.live {
            let release = Duration::from_millis(args.release_ms);
            chat = live_turns(chat, voice, &args.wav, release, &tx, save_reply).await?;
        } else {
            for (n, path) in args.wav.iter().enumerate() {
                wav_turn(&mut chat, &voice, path, &tx).await?;
                save_reply(n + 1)?;
            }
        }
        drop(tx);
        if let Some(path) = &args.session.export {
            std::fs::write(path, hark_core::store::export::to_json(&chat.stored()?))?;
        }
    }
    let failed = printer.await.unwrap_or(true);
    Ok(if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

/// One turn from a WAV file, as if it had been spoken while the key was held.
async fn wav_turn(
    chat: &mut hark_core::session::ChatSession,
    voice: &Voice,
    path: &Path,
    events: &mpsc::UnboundedSender<VoiceEvent>,
) -> Result<()> {
    let samples = wav::read_16k_mono(path)?;
    if let Err(reason) = check_utterance(&samples) {
        let _ = events.send(VoiceEvent::NoTurn { reason });
        return Ok(());
    }
    // A recording is answered like a released push-to-talk: transcribed whole.
    voice::answer(
        chat,
        voice,
        &samples,
        None,
        Instant::now(),
        voice::Pipeline::default(),
        &CancellationToken::new(),
        None,
        events,
    )
    .await
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(())
}

/// Turns from WAV files played as live speech (`--live`), one each, through the voice
/// session the microphone uses: the key held from a file's first sample, its audio
/// delivered at real-time pace, the key released `release` after its last sample
/// (`voice::play_live`). Events pass on to the printer as they come; a turn ends at the
/// session's `Idle`, then `after_turn` gets its number (1-based).
async fn live_turns(
    chat: hark_core::session::ChatSession,
    voice: Voice,
    files: &[PathBuf],
    release: Duration,
    events: &mpsc::UnboundedSender<VoiceEvent>,
    mut after_turn: impl FnMut(usize) -> Result<()>,
) -> Result<hark_core::session::ChatSession> {
    let recordings = Recordings::new();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let session = voice::spawn(
        chat,
        voice,
        ActorOptions {
            mode: PttMode::Hold,
            input_device: None,
            input: Arc::new(recordings.clone()),
            cues: false,
            pipeline: Default::default(),
            questions: None,
        },
        tx,
    );
    for (n, path) in files.iter().enumerate() {
        let samples = wav::read_16k_mono(path)?;
        let name = path.display().to_string();
        let playing = voice::play_live(session.handle(), &recordings, &name, samples, release);
        tokio::pin!(playing);
        // `Idle` ends the turn, or (before the release) an input that failed; either way the
        // key has come up once both are seen.
        let (mut released, mut idle) = (false, false);
        while !(released && idle) {
            tokio::select! {
                played = &mut playing, if !released => {
                    played.context("the voice session stopped")?;
                    released = true;
                }
                e = rx.recv() => {
                    let Some(e) = e else {
                        anyhow::bail!("the voice session ended abnormally");
                    };
                    idle |= matches!(e, VoiceEvent::Idle);
                    let _ = events.send(e);
                }
            }
        }
        after_turn(n + 1)?;
    }
    session.shutdown().await.context("the voice session ended abnormally")
}

/// Silero VAD and Smart Turn (which its entry requires), fetched on first use.
async fn load_vad(profile: &Profile) -> Result<(Silero, SmartTurn)> {
    let manifest = Manifest::load()?;
    for spec in manifest.with_requirements(vad::MODEL_ID)? {
        crate::models::ensure(spec, "hands-free listening runs offline").await?;
    }
    let store = ModelStore::default_dir();
    let files = profile.vad_files(&manifest, &store)?;
    let turn = profile.turn_files(&manifest, &store)?;
    Ok((Silero::load(&files)?, SmartTurn::load(&turn)?))
}

/// Hands-free on the microphone: the voice activity detector is the key; q + Enter quits.
async fn listen_hands_free(
    chat: hark_core::session::ChatSession,
    voice: Voice,
    input: Option<String>,
    questions: Option<Arc<VoiceLine>>,
    (vad, turn): (Silero, SmartTurn),
    options: HandsFreeOptions,
    events: mpsc::UnboundedSender<VoiceEvent>,
) -> Result<()> {
    let session = hands_free::spawn(
        chat,
        voice,
        ActorOptions {
            mode: PttMode::Hold,
            input_device: input,
            input: Arc::new(Microphone),
            cues: false,
            pipeline: Default::default(),
            questions,
        },
        Box::new(vad),
        Some(Box::new(turn)),
        options,
        events,
    )
    .map_err(|n| n.error)?;
    eprintln!(
        "(listening hands-free on {}: just speak; {}; q + Enter quits)",
        printable(&session.device()),
        if session.full_duplex() {
            "speak over Hark to interrupt it"
        } else {
            "half-duplex: Hark does not listen while it speaks"
        }
    );
    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    // q + Enter, or the end of the input, quits.
    while let Some(line) = lines.next_line().await? {
        if line.trim() == "q" {
            break;
        }
    }
    session.shutdown().await.context("the voice session ended abnormally")?;
    Ok(())
}

/// The microphone, with Enter as the push-to-talk key (toggle mode).
async fn microphone(
    chat: hark_core::session::ChatSession,
    voice: Voice,
    input: Option<String>,
    questions: Option<Arc<VoiceLine>>,
    events: mpsc::UnboundedSender<VoiceEvent>,
) -> Result<()> {
    eprintln!("press Enter to talk, Enter again to stop; Enter while Hark speaks interrupts; q + Enter quits");
    let session = voice::spawn(
        chat,
        voice,
        ActorOptions {
            mode: PttMode::Toggle,
            input_device: input,
            input: Arc::new(Microphone),
            cues: false,
            pipeline: Default::default(),
            questions,
        },
        events,
    );
    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    while let Some(line) = lines.next_line().await? {
        if line.trim() == "q" {
            break;
        }
        let _ = session.handle().key(Key::Press);
        let _ = session.handle().key(Key::Release);
    }
    session.shutdown().await.context("the voice session ended abnormally")?;
    Ok(())
}
