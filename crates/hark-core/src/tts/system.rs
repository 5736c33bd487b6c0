//! The operating system's own voice, rendered to audio.
//!
//! Linux: `espeak-ng --stdout` (WAV on stdout; speech-dispatcher's default voice engine).
//! macOS: `say -o FILE --data-format=LEI16@22050`. Windows: System.Speech through PowerShell.
//! Rendering instead of speaking directly lets Hark queue, flush and track it like any voice.

#[cfg(target_os = "windows")]
use std::process::Stdio;

use async_trait::async_trait;
#[cfg(target_os = "windows")]
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;

use super::{AudioChunk, Synthesizer};
use crate::audio::wav::decode_wav_bytes;
use crate::language::Language;
use crate::provider::{ErrorKind, ProviderError};

const PROVIDER: &str = "system";

/// The OS voice.
#[derive(Debug, Clone, Default)]
pub struct SystemVoice {
    /// Voice name for the engine (espeak-ng `-v`, `say -v`), or the default.
    pub voice: Option<String>,
    /// Words per minute (espeak-ng `-s`, `say -r`), or the default.
    pub rate_wpm: Option<u32>,
    /// The conversation language: with no voice named, the engine's voice for it
    /// (espeak-ng's, the macOS voice of its locale, the Windows voice of its culture).
    pub language: Option<&'static Language>,
}

/// The macOS voices and the system's own, read once per run (three programs: not for
/// every sentence).
#[cfg(target_os = "macos")]
struct MacVoices {
    /// `say -v '?'`'s listing.
    listing: String,
    system: crate::language::SayDefaults,
}

#[cfg(target_os = "macos")]
async fn mac_voices() -> &'static MacVoices {
    static VOICES: tokio::sync::OnceCell<MacVoices> = tokio::sync::OnceCell::const_new();
    VOICES
        .get_or_init(|| async {
            let run = |program: &'static str, args: &'static [&'static str]| async move {
                crate::process::command(program)
                    .args(args)
                    .output()
                    .await
                    .ok()
                    .filter(|o| o.status.success())
                    .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
                    .filter(|s| !s.is_empty())
            };
            MacVoices {
                listing: run("say", &["-v", "?"]).await.unwrap_or_default(),
                system: crate::language::SayDefaults {
                    voice: run(
                        "defaults",
                        &["read", "com.apple.speech.voice.prefs", "SelectedVoiceName"],
                    )
                    .await,
                    locale: run("defaults", &["read", "-g", "AppleLocale"]).await,
                },
            }
        })
        .await
}

fn err(kind: ErrorKind, m: impl Into<String>) -> ProviderError {
    ProviderError::new(PROVIDER, kind, m)
}

impl SystemVoice {
    async fn render(&self, text: &str) -> Result<Vec<u8>, ProviderError> {
        #[cfg(target_os = "macos")]
        {
            let dir = std::env::temp_dir().join(format!(
                "hark-say-{}-{}",
                std::process::id(),
                crate::conversation::new_id()
            ));
            let file = dir.with_extension("wav");
            let mut cmd = crate::process::command("say");
            cmd.arg("-o").arg(&file).arg("--data-format=LEI16@22050");
            let voice = match (&self.voice, self.language) {
                (Some(v), _) => Some(v.clone()),
                // `say` takes voice names only: the system voice when it speaks the
                // language, else an installed voice of the locale (language::say_voice).
                (None, Some(lang)) => {
                    let mac = mac_voices().await;
                    crate::language::say_voice(&mac.listing, lang, &mac.system)
                }
                (None, None) => None,
            };
            if let Some(v) = voice {
                cmd.arg("-v").arg(v);
            }
            if let Some(r) = self.rate_wpm {
                cmd.arg("-r").arg(r.to_string());
            }
            cmd.arg("--").arg(text);
            let status = cmd
                .status()
                .await
                .map_err(|e| err(ErrorKind::LocalEngine, format!("cannot run say: {e}")))?;
            let bytes = std::fs::read(&file);
            let _ = std::fs::remove_file(&file);
            if !status.success() {
                return Err(err(ErrorKind::LocalEngine, format!("say exited with {status}")));
            }
            return bytes.map_err(|e| err(ErrorKind::LocalEngine, e.to_string()));
        }
        #[cfg(target_os = "windows")]
        {
            let file = std::env::temp_dir().join(format!("hark-sapi-{}.wav", crate::conversation::new_id()));
            // A named voice wins; else the installed voice that best fits the language's
            // culture (SelectVoiceByHints keeps the default when none does).
            let culture = match (&self.voice, self.language) {
                (None, Some(lang)) => Some(lang.locale),
                _ => None,
            };
            let call = sapi_call(text, &file, self.voice.as_deref(), culture);
            let mut child = crate::process::command("powershell")
                .args(&call.args)
                .envs(call.env.iter().map(|(k, v)| (*k, v)))
                .stdin(Stdio::piped())
                .spawn()
                .map_err(|e| err(ErrorKind::LocalEngine, format!("cannot run PowerShell: {e}")))?;
            if let Some(mut stdin) = child.stdin.take() {
                // Dropped at the end of this block: the end of input the script reads to.
                let _ = stdin.write_all(&call.stdin).await;
            }
            let status = child
                .wait()
                .await
                .map_err(|e| err(ErrorKind::LocalEngine, e.to_string()))?;
            let bytes = std::fs::read(&file);
            let _ = std::fs::remove_file(&file);
            if !status.success() {
                return Err(err(
                    ErrorKind::LocalEngine,
                    format!("System.Speech exited with {status}"),
                ));
            }
            return bytes.map_err(|e| err(ErrorKind::LocalEngine, e.to_string()));
        }
        #[cfg(not(any(target_os = "macos", target_os = "windows")))]
        {
            let mut args = vec!["--stdout".to_string()];
            if let Some(v) = self.voice.as_deref().or(self.language.map(|l| l.espeak)) {
                args.extend(["-v".to_string(), v.to_string()]);
            }
            if let Some(r) = self.rate_wpm {
                args.extend(["-s".to_string(), r.to_string()]);
            }
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            super::espeak::run(PROVIDER, &args, text.as_bytes()).await
        }
    }
}

#[async_trait]
impl Synthesizer for SystemVoice {
    fn name(&self) -> &'static str {
        PROVIDER
    }

    async fn synthesize(&self, text: &str, out: &mpsc::UnboundedSender<AudioChunk>) -> Result<(), ProviderError> {
        let bytes = self.render(text).await?;
        let (samples, rate) = fix_streamed_wav(&bytes)
            .and_then(|b| decode_wav_bytes(&b).map_err(|e| e.to_string()))
            .map_err(|e| {
                err(
                    ErrorKind::InvalidResponse,
                    format!("the voice produced unreadable audio: {e}"),
                )
            })?;
        super::send_in_pieces(&samples, rate, out);
        Ok(())
    }
}

/// The Windows voice's PowerShell script. It is the same for every call: no text, path or
/// voice name is spliced into it, so nothing needs quoting (a temp folder under a user
/// named O'Brien broke the script that did). It reads the values it needs from the
/// environment, and the text from stdin as raw bytes decoded as UTF-8:
/// `[Console]::In.ReadToEnd()` decoded them in the console's OEM code page, which garbled
/// accents, curly quotes and every non-Latin script.
#[cfg_attr(not(target_os = "windows"), allow(dead_code))]
const SAPI_SCRIPT: &str = "$ErrorActionPreference = 'Stop'; \
    Add-Type -AssemblyName System.Speech; \
    $s = New-Object System.Speech.Synthesis.SpeechSynthesizer; \
    if ($env:HARK_SAPI_VOICE) { $s.SelectVoice($env:HARK_SAPI_VOICE) } \
    elseif ($env:HARK_SAPI_CULTURE) { $s.SelectVoiceByHints([System.Speech.Synthesis.VoiceGender]::NotSet, \
    [System.Speech.Synthesis.VoiceAge]::NotSet, 0, [System.Globalization.CultureInfo]::GetCultureInfo($env:HARK_SAPI_CULTURE)) }; \
    $stdin = [Console]::OpenStandardInput(); $buffer = New-Object System.IO.MemoryStream; $stdin.CopyTo($buffer); \
    $text = [System.Text.Encoding]::UTF8.GetString($buffer.ToArray()); \
    $s.SetOutputToWaveFile($env:HARK_SAPI_OUT); $s.Speak($text); $s.Dispose()";

/// One run of the Windows voice: PowerShell's arguments, the environment the script reads
/// (every variable set, empty when unused, so none leaks in from Hark's own environment),
/// and the bytes for its stdin.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(not(target_os = "windows"), allow(dead_code))] // built and tested everywhere, run on Windows
struct SapiCall {
    args: Vec<&'static str>,
    env: Vec<(&'static str, std::ffi::OsString)>,
    stdin: Vec<u8>,
}

/// How to have System.Speech render `text` to the WAV file `out`, with the voice named, or
/// else the best installed voice for a culture (`de-DE`), or else the default one.
#[cfg_attr(not(target_os = "windows"), allow(dead_code))]
fn sapi_call(text: &str, out: &std::path::Path, voice: Option<&str>, culture: Option<&str>) -> SapiCall {
    SapiCall {
        args: vec!["-NoProfile", "-NonInteractive", "-Command", SAPI_SCRIPT],
        env: vec![
            ("HARK_SAPI_OUT", out.as_os_str().to_os_string()),
            ("HARK_SAPI_VOICE", voice.unwrap_or_default().into()),
            ("HARK_SAPI_CULTURE", culture.unwrap_or_default().into()),
        ],
        stdin: text.as_bytes().to_vec(),
    }
}

/// espeak-ng writes WAV to a pipe with unknown lengths (0xFFFFFFFF); fill in the real ones.
fn fix_streamed_wav(bytes: &[u8]) -> Result<Vec<u8>, String> {
    if bytes.len() < 44 || &bytes[0..4] != b"RIFF" || &bytes[8..12] != b"WAVE" {
        return Err("not a RIFF/WAVE stream".into());
    }
    let mut b = bytes.to_vec();
    let riff = (b.len() - 8) as u32;
    b[4..8].copy_from_slice(&riff.to_le_bytes());
    // Find the data chunk and set its length to what follows it.
    let mut pos = 12;
    while pos + 8 <= b.len() {
        let id = &b[pos..pos + 4];
        let len = u32::from_le_bytes([b[pos + 4], b[pos + 5], b[pos + 6], b[pos + 7]]) as usize;
        if id == b"data" {
            let data_len = (b.len() - pos - 8) as u32 & !1;
            b[pos + 4..pos + 8].copy_from_slice(&data_len.to_le_bytes());
            return Ok(b);
        }
        pos += 8 + len + (len & 1);
    }
    Err("no data chunk".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_streamed_wav_header_gets_real_lengths() {
        let mut w = crate::audio::wav::encode_16k_mono(&[0.1; 100]);
        w[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
        w[40..44].copy_from_slice(&u32::MAX.to_le_bytes());
        let fixed = fix_streamed_wav(&w).unwrap();
        let (s, rate) = decode_wav_bytes(&fixed).unwrap();
        assert_eq!((s.len(), rate), (100, 16_000));
        assert!(fix_streamed_wav(b"nope").is_err());
    }

    /// Issue 22: the Windows voice garbled everything but ASCII (stdin decoded in the OEM
    /// code page) and broke on a temp path with an apostrophe (a user named O'Brien).
    #[test]
    fn the_windows_voice_reads_its_text_as_utf8_and_takes_a_path_with_an_apostrophe_as_it_is() {
        let text = "Voilà : « naïve » café, “quoted”, Straße, Ελληνικά, 日本語 — it's done.";
        let out = std::path::Path::new(r"C:\Users\O'Brien\AppData\Local\Temp\hark-sapi-1.wav");
        let call = sapi_call(text, out, Some("Microsoft Zira Desktop"), None);
        // The text travels as UTF-8 bytes on stdin, and the script decodes them as UTF-8
        // from the raw stream, never through the console's code page.
        assert_eq!(call.stdin, text.as_bytes());
        assert_eq!(std::str::from_utf8(&call.stdin).unwrap(), text);
        let script = *call.args.last().unwrap();
        assert!(script.contains("[Console]::OpenStandardInput()"), "{script}");
        assert!(script.contains("[System.Text.Encoding]::UTF8.GetString("), "{script}");
        assert!(!script.contains("[Console]::In"), "the OEM-decoding reader: {script}");
        // Nothing of the call is spliced into the script: it is the same text every time,
        // so the apostrophe cannot end a quoted string in it.
        assert_eq!(script, SAPI_SCRIPT);
        assert!(!script.contains("O'Brien") && !script.contains("Zira") && !script.contains("Voilà"));
        assert_eq!(script.matches('\'').count() % 2, 0, "its own quotes are balanced");
        // The path and the voice arrive as they are, through the environment.
        let os = |s: &str| Some(std::ffi::OsString::from(s));
        let env = |name: &str| call.env.iter().find(|(k, _)| *k == name).map(|(_, v)| v.clone());
        assert_eq!(env("HARK_SAPI_OUT"), Some(out.as_os_str().to_os_string()));
        assert_eq!(env("HARK_SAPI_VOICE"), os("Microsoft Zira Desktop"));
        assert_eq!(env("HARK_SAPI_CULTURE"), os(""), "set, empty: nothing inherited");
        assert!(script.contains("$s.SetOutputToWaveFile($env:HARK_SAPI_OUT)"));
        assert!(script.contains("$s.SelectVoice($env:HARK_SAPI_VOICE)"));
        assert_eq!(&call.args[..3], ["-NoProfile", "-NonInteractive", "-Command"]);

        // With no voice named, the language's culture picks one.
        let call = sapi_call("Guten Tag", out, None, Some("de-DE"));
        let env = |name: &str| call.env.iter().find(|(k, _)| *k == name).map(|(_, v)| v.clone());
        assert_eq!(env("HARK_SAPI_VOICE"), os(""));
        assert_eq!(env("HARK_SAPI_CULTURE"), os("de-DE"));
        assert!(SAPI_SCRIPT.contains("GetCultureInfo($env:HARK_SAPI_CULTURE)"));
    }

    /// On a Mac (CI's macOS job runs it): the real `say` listing yields a real English voice,
    /// not a novelty one, when the system voice does not settle it.
    #[cfg(target_os = "macos")]
    #[tokio::test]
    async fn macos_lists_a_real_english_voice() {
        let mac = mac_voices().await;
        assert!(!mac.listing.is_empty(), "say -v '?' listed no voices");
        let english = crate::language::parse("en").unwrap().unwrap();
        let picked = crate::language::say_voice(&mac.listing, english, &Default::default()).expect("an English voice");
        assert!(!crate::language::is_novelty_voice(&picked), "{picked}");
    }

    /// On Windows (run there by hand; it needs System.Speech and a voice): accented text,
    /// with the temp folder under a name with an apostrophe, renders to audio.
    #[cfg(target_os = "windows")]
    #[tokio::test]
    #[ignore = "Windows only, with a System.Speech voice: cargo test -p hark-core --lib -- --ignored tts::system"]
    async fn windows_speaks_accented_text_from_a_temp_folder_with_an_apostrophe() {
        let dir = tempfile::Builder::new().prefix("O'Brien ").tempdir().unwrap();
        // temp_dir() reads them (GetTempPathW); this test is the process's only user of them.
        std::env::set_var("TMP", dir.path());
        std::env::set_var("TEMP", dir.path());
        let (tx, mut rx) = mpsc::unbounded_channel();
        SystemVoice {
            language: crate::language::parse("fr").unwrap(),
            ..Default::default()
        }
        .synthesize("Voilà : « naïve », déjà vu, Noël — c'est ça.", &tx)
        .await
        .unwrap();
        drop(tx);
        let mut total = 0;
        while let Some(c) = rx.recv().await {
            total += c.samples.len();
        }
        assert!(total > 10_000, "{total} samples");
    }

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn espeak_renders_a_sentence_as_audio() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        SystemVoice::default()
            .synthesize("Hello, my name is Hark.", &tx)
            .await
            .unwrap();
        drop(tx);
        let mut total = 0;
        while let Some(c) = rx.recv().await {
            assert_eq!(c.rate, 22_050);
            total += c.samples.len();
        }
        // About a second and a half of speech.
        assert!((15_000..80_000).contains(&total), "{total} samples");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn espeak_has_a_voice_for_every_conversation_language() {
        let out = std::process::Command::new("espeak-ng")
            .arg("--voices")
            .output()
            .unwrap();
        let listing = String::from_utf8_lossy(&out.stdout);
        let voices: Vec<&str> = listing.lines().filter_map(|l| l.split_whitespace().nth(1)).collect();
        for l in crate::language::LANGUAGES {
            assert!(
                voices.contains(&l.espeak),
                "espeak-ng has no voice {} for {}",
                l.espeak,
                l.name
            );
        }
    }

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn with_a_language_and_no_voice_espeak_speaks_in_that_language() {
        // The same word spoken with the German voice and the default one differs.
        let render = |language| async move {
            SystemVoice {
                language,
                ..Default::default()
            }
            .render("Zwei")
            .await
            .unwrap()
        };
        let german = render(crate::language::parse("de").unwrap()).await;
        let default = render(None).await;
        assert!(german.len() > 44 && default.len() > 44);
        assert_ne!(german, default, "the German voice was not used");
    }
}
