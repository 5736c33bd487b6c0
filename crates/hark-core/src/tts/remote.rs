//! Streamed cloud voices: raw 16-bit PCM over HTTP, played as it arrives.
//!
//! - Deepgram Aura-2: `POST {base}/v1/speak?model=..&encoding=linear16&sample_rate=24000&container=none`,
//!   `Authorization: Token KEY`, body `{"text": ...}`.
//! - OpenAI: `POST {base}/audio/speech`, body `{"model", "input", "voice", "response_format": "pcm"}`
//!   (24 kHz, 16-bit, mono).

use async_trait::async_trait;
use serde_json::json;
use tokio::sync::mpsc;

use super::{AudioChunk, Synthesizer};
use crate::audio::wav::pcm16le_to_f32;
use crate::provider::http::{self, Sender};
use crate::provider::{endpoint, ErrorKind, ProviderConfig, ProviderError};
use crate::stt::deepgram::DeepgramConfig;

/// The sample rate both cloud voices are asked for.
pub const RATE: u32 = 24_000;

/// Streams a raw PCM16LE body into chunks, keeping an odd byte for the next read.
async fn stream_pcm(
    provider: &'static str,
    mut resp: reqwest::Response,
    idle: std::time::Duration,
    out: &mpsc::UnboundedSender<AudioChunk>,
) -> Result<(), ProviderError> {
    let mut carry: Option<u8> = None;
    loop {
        let chunk = match tokio::time::timeout(idle, resp.chunk()).await {
            Ok(Ok(Some(c))) => c,
            Ok(Ok(None)) => return Ok(()),
            Ok(Err(e)) => {
                return Err(ProviderError::new(
                    provider,
                    ErrorKind::Connectivity,
                    format!("audio stream cut: {e}"),
                ))
            }
            Err(_) => {
                return Err(ProviderError::new(
                    provider,
                    ErrorKind::Connectivity,
                    "the audio stream stalled",
                ))
            }
        };
        let mut bytes = Vec::with_capacity(chunk.len() + 1);
        bytes.extend(carry.take());
        bytes.extend_from_slice(&chunk);
        if bytes.len() % 2 == 1 {
            carry = bytes.pop();
        }
        if !bytes.is_empty() {
            let _ = out.send(AudioChunk {
                samples: pcm16le_to_f32(&bytes),
                rate: RATE,
            });
        }
    }
}

/// Deepgram Aura-2.
pub struct DeepgramTts {
    config: DeepgramConfig,
    /// Voice model, e.g. `aura-2-thalia-en`.
    voice: String,
    client: reqwest::Client,
}

impl DeepgramTts {
    pub fn new(config: DeepgramConfig, voice: impl Into<String>) -> Result<Self, ProviderError> {
        let client = http::client("deepgram", config.timeout, &config.base_url)?;
        Ok(Self {
            config,
            voice: voice.into(),
            client,
        })
    }
}

#[async_trait]
impl Synthesizer for DeepgramTts {
    fn name(&self) -> &'static str {
        "deepgram"
    }

    async fn synthesize(&self, text: &str, out: &mpsc::UnboundedSender<AudioChunk>) -> Result<(), ProviderError> {
        let key = self
            .config
            .api_key
            .as_deref()
            .ok_or_else(|| http::missing_key("deepgram"))?;
        let url = format!(
            "{}?model={}&encoding=linear16&sample_rate={RATE}&container=none",
            endpoint(&self.config.base_url, "v1/speak"),
            self.voice
        );
        let body = json!({ "text": text });
        let sender = Sender {
            provider: "deepgram",
            retry: self.config.retry,
        };
        let resp = sender
            .send(|| {
                self.client
                    .post(&url)
                    .header("authorization", format!("Token {key}"))
                    .json(&body)
            })
            .await?;
        stream_pcm("deepgram", resp, self.config.timeout, out).await
    }
}

/// OpenAI speech (or a compatible server).
pub struct OpenAiTts {
    config: ProviderConfig,
    voice: String,
    client: reqwest::Client,
}

impl OpenAiTts {
    /// `config.model` is the speech model (`gpt-4o-mini-tts`, `tts-1`).
    pub fn new(config: ProviderConfig, voice: impl Into<String>) -> Result<Self, ProviderError> {
        Ok(Self {
            client: http::client("openai", config.connect_timeout, &config.base_url)?,
            config,
            voice: voice.into(),
        })
    }
}

#[async_trait]
impl Synthesizer for OpenAiTts {
    fn name(&self) -> &'static str {
        "openai"
    }

    async fn synthesize(&self, text: &str, out: &mpsc::UnboundedSender<AudioChunk>) -> Result<(), ProviderError> {
        let key = self.config.api_key.as_deref();
        if key.is_none() && self.config.is_public_endpoint() {
            return Err(http::missing_key("openai"));
        }
        let url = endpoint(&self.config.base_url, "audio/speech");
        let body = json!({
            "model": self.config.model,
            "input": text,
            "voice": self.voice,
            "response_format": "pcm",
        });
        let sender = Sender {
            provider: "openai",
            retry: self.config.retry,
        };
        let resp = sender
            .send(|| {
                let req = self.client.post(&url).json(&body);
                match key {
                    Some(k) => req.bearer_auth(k),
                    None => req,
                }
            })
            .await?;
        stream_pcm("openai", resp, self.config.idle_timeout, out).await
    }
}
