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
                // `say` takes voice names only: the first installed voice of the locale.
                (None, Some(lang)) => crate::process::command("say")
                    .args(["-v", "?"])
                    .output()
                    .await
                    .ok()
                    .and_then(|o| crate::language::say_voice(&String::from_utf8_lossy(&o.stdout), lang)),
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
            // culture (SelectVoiceByHints keeps the default when none does). Voice names
            // and cultures are quoted for PowerShell by doubling single quotes.
            let pick = match (&self.voice, self.language) {
                (Some(v), _) => format!("$s.SelectVoice('{}'); ", v.replace('\'', "''")),
                (None, Some(lang)) => format!(
                    "$s.SelectVoiceByHints([System.Speech.Synthesis.VoiceGender]::NotSet, \
                     [System.Speech.Synthesis.VoiceAge]::NotSet, 0, \
                     [System.Globalization.CultureInfo]::GetCultureInfo('{}')); ",
                    lang.locale
                ),
                (None, None) => String::new(),
            };
            let script = format!(
                "Add-Type -AssemblyName System.Speech; $s = New-Object System.Speech.Synthesis.SpeechSynthesizer; \
                 {pick}$s.SetOutputToWaveFile('{}'); $s.Speak([Console]::In.ReadToEnd()); $s.Dispose()",
                file.display()
            );
            let mut child = crate::process::command("powershell")
                .args(["-NoProfile", "-Command", &script])
                .stdin(Stdio::piped())
                .spawn()
                .map_err(|e| err(ErrorKind::LocalEngine, format!("cannot run PowerShell: {e}")))?;
            if let Some(mut stdin) = child.stdin.take() {
                let _ = stdin.write_all(text.as_bytes()).await;
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
            super::espeak_ng(PROVIDER, &args, text.as_bytes()).await
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
