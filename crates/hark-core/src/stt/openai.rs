//! OpenAI transcription: `POST {base}/audio/transcriptions`, multipart with a WAV file.

use async_trait::async_trait;
use serde_json::Value;

use super::Transcriber;
use crate::audio::wav::encode_16k_mono;
use crate::provider::http::{self, Sender};
use crate::provider::{endpoint, ErrorKind, ProviderConfig, ProviderError};

const PROVIDER: &str = "openai";

/// OpenAI (or compatible) transcription endpoint.
pub struct OpenAiStt {
    config: ProviderConfig,
    client: reqwest::Client,
    /// ISO-639-1 code sent as the `language` field; `None`: the service detects it.
    language: Option<String>,
}

impl OpenAiStt {
    /// `config.model` is the transcription model (`gpt-4o-mini-transcribe`, `whisper-1`).
    pub fn new(config: ProviderConfig) -> Result<Self, ProviderError> {
        Ok(Self {
            client: http::client(PROVIDER, config.connect_timeout, &config.base_url)?,
            config,
            language: None,
        })
    }

    /// The spoken language (ISO-639-1, e.g. `de`), which OpenAI says improves accuracy and
    /// latency; without it the service detects the language.
    pub fn with_language(mut self, code: Option<&str>) -> Self {
        self.language = code.map(str::to_string);
        self
    }
}

#[async_trait]
impl Transcriber for OpenAiStt {
    fn name(&self) -> &'static str {
        PROVIDER
    }

    async fn transcribe(&self, audio: &[f32]) -> Result<String, ProviderError> {
        let key = self.config.api_key.as_deref();
        if key.is_none() && self.config.is_public_endpoint() {
            return Err(http::missing_key(PROVIDER));
        }
        let url = endpoint(&self.config.base_url, "audio/transcriptions");
        let wav = encode_16k_mono(audio);
        let sender = Sender {
            provider: PROVIDER,
            retry: self.config.retry,
        };
        let resp = sender
            .send(|| {
                let part = reqwest::multipart::Part::bytes(wav.clone())
                    .file_name("utterance.wav")
                    .mime_str("audio/wav")
                    .unwrap_or_else(|_| reqwest::multipart::Part::bytes(wav.clone()));
                let mut form = reqwest::multipart::Form::new()
                    .text("model", self.config.model.clone())
                    .text("response_format", "json");
                if let Some(code) = &self.language {
                    form = form.text("language", code.clone());
                }
                let form = form.part("file", part);
                let req = self.client.post(&url).multipart(form).timeout(self.config.idle_timeout);
                match key {
                    Some(k) => req.bearer_auth(k),
                    None => req,
                }
            })
            .await?;
        let body: Value = resp.json().await.map_err(|e| {
            ProviderError::new(
                PROVIDER,
                ErrorKind::InvalidResponse,
                format!("transcription is not JSON: {e}"),
            )
        })?;
        body["text"]
            .as_str()
            .map(|t| t.trim().to_string())
            .ok_or_else(|| ProviderError::new(PROVIDER, ErrorKind::InvalidResponse, "transcription without \"text\""))
    }
}
