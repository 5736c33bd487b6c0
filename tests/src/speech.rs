//! A loopback speech server: Deepgram and OpenAI speech-to-text and text-to-speech, on the
//! providers' documented wire formats (HTTP and, for Deepgram live, WebSocket).
//!
//! Speech-to-text answers with the transcript the test sets (the server cannot listen), but
//! checks the audio it gets is what the API expects: a WAV file, or linear16 16 kHz frames.
//! Text-to-speech streams a tone whose length follows the text (`ms_per_char`), so tests can
//! measure what was played and cut.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::Message;

use crate::{read_request, send_status, serve, ChunkWriter, Recorded};

/// Which provider the server imitates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpeechFlavor {
    Deepgram,
    OpenAi,
}

/// What a live (WebSocket) session received.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LiveLog {
    /// The request path and query.
    pub path: String,
    pub audio_bytes: usize,
    pub binary_frames: usize,
    /// Text (control) messages, in order.
    pub control: Vec<String>,
}

struct Shared {
    flavor: SpeechFlavor,
    key: String,
    transcript: Mutex<String>,
    requests: Mutex<Vec<Recorded>>,
    live: Mutex<Vec<LiveLog>>,
    ms_per_char: Mutex<u32>,
    /// Delay before the first byte of a response (latency benchmarks).
    first_byte_delay: Mutex<Duration>,
}

/// The loopback speech server.
pub struct FakeSpeech {
    port: u16,
    shared: Arc<Shared>,
}

/// The tone the fake voices speak at 24 kHz.
pub const TTS_RATE: u32 = 24_000;

impl FakeSpeech {
    pub fn deepgram(key: &str) -> Self {
        Self::start(SpeechFlavor::Deepgram, key)
    }

    pub fn openai(key: &str) -> Self {
        Self::start(SpeechFlavor::OpenAi, key)
    }

    fn start(flavor: SpeechFlavor, key: &str) -> Self {
        let shared = Arc::new(Shared {
            flavor,
            key: key.to_string(),
            transcript: Mutex::new(String::new()),
            requests: Mutex::new(Vec::new()),
            live: Mutex::new(Vec::new()),
            ms_per_char: Mutex::new(60),
            first_byte_delay: Mutex::new(Duration::ZERO),
        });
        let s = shared.clone();
        let port = serve(move |sock| tokio::spawn(handle(sock, s.clone())));
        Self { port, shared }
    }

    /// Deepgram: `http://127.0.0.1:PORT`; OpenAI: `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        match self.shared.flavor {
            SpeechFlavor::Deepgram => format!("http://127.0.0.1:{}", self.port),
            SpeechFlavor::OpenAi => format!("http://127.0.0.1:{}/v1", self.port),
        }
    }

    /// What speech-to-text will answer.
    pub fn set_transcript(&self, t: &str) {
        *self.shared.transcript.lock().expect("t") = t.to_string();
    }

    /// Length of synthesised speech per character of text.
    pub fn set_ms_per_char(&self, ms: u32) {
        *self.shared.ms_per_char.lock().expect("ms") = ms;
    }

    pub fn set_first_byte_delay(&self, d: Duration) {
        *self.shared.first_byte_delay.lock().expect("d") = d;
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.requests.lock().expect("r").clone()
    }

    pub fn live_sessions(&self) -> Vec<LiveLog> {
        self.shared.live.lock().expect("l").clone()
    }

    /// Samples the fake voice produces for a text.
    pub fn tts_samples(&self, text: &str) -> usize {
        tts_samples(text, *self.shared.ms_per_char.lock().expect("ms"))
    }
}

fn tts_samples(text: &str, ms_per_char: u32) -> usize {
    text.chars().count() * ms_per_char as usize * TTS_RATE as usize / 1000
}

async fn handle(sock: TcpStream, s: Arc<Shared>) {
    let mut head = [0u8; 2048];
    let n = sock.peek(&mut head).await.unwrap_or(0);
    let text = String::from_utf8_lossy(&head[..n]).to_ascii_lowercase();
    if text.contains("upgrade: websocket") {
        live(sock, s).await;
    } else {
        http(sock, s).await;
    }
}

fn deepgram_error(code: &str, msg: &str) -> Value {
    json!({"err_code": code, "err_msg": msg, "request_id": "00000000-fake"})
}

fn openai_error(msg: &str, code: &str) -> Value {
    json!({"error": {"message": msg, "type": "invalid_request_error", "param": null, "code": code}})
}

async fn http(mut sock: TcpStream, s: Arc<Shared>) {
    let Some(req) = read_request(&mut sock).await else {
        return;
    };
    s.requests.lock().expect("r").push(req.clone());
    let path = req.path.split('?').next().unwrap_or_default().to_string();
    let delay = *s.first_byte_delay.lock().expect("d");
    match s.flavor {
        SpeechFlavor::Deepgram => {
            if req.header("authorization") != Some(&format!("Token {}", s.key)) {
                let body = deepgram_error("INVALID_AUTH", "Invalid credentials.");
                return send_status(&mut sock, 401, &body, None).await;
            }
            match (req.method.as_str(), path.as_str()) {
                ("POST", "/v1/listen") => {
                    if let Some(e) = deepgram_language_error(&req.path) {
                        return send_status(&mut sock, 400, &e, None).await;
                    }
                    if !req.raw.starts_with(b"RIFF") || req.header("content-type") != Some("audio/wav") {
                        let body = deepgram_error(
                            "Bad Request",
                            "Bad Request: failed to process audio: corrupt or unsupported data",
                        );
                        return send_status(&mut sock, 400, &body, None).await;
                    }
                    tokio::time::sleep(delay).await;
                    let t = s.transcript.lock().expect("t").clone();
                    let secs = (req.raw.len().saturating_sub(44)) as f64 / 32_000.0;
                    let body = json!({
                        "metadata": {"request_id": "00000000-fake", "duration": secs, "channels": 1, "models": ["fake-nova-3"]},
                        "results": {"channels": [{"alternatives": [{"transcript": t, "confidence": 0.98, "words": []}]}]}
                    });
                    send_json(&mut sock, &body).await;
                }
                ("POST", "/v1/speak") => {
                    let Some(text) = req.body["text"].as_str() else {
                        let body = deepgram_error("Bad Request", "text is required");
                        return send_status(&mut sock, 400, &body, None).await;
                    };
                    let ok = req.path.contains("encoding=linear16") && req.path.contains("container=none");
                    if !ok {
                        let body = deepgram_error("Bad Request", "this fake only speaks linear16 without a container");
                        return send_status(&mut sock, 400, &body, None).await;
                    }
                    let ms = *s.ms_per_char.lock().expect("ms");
                    stream_tone(&mut sock, tts_samples(text, ms), "audio/l16", delay).await;
                }
                _ => send_status(&mut sock, 404, &deepgram_error("Not Found", "no such route"), None).await,
            }
        }
        SpeechFlavor::OpenAi => {
            if req.header("authorization") != Some(&format!("Bearer {}", s.key)) {
                let body = openai_error("Incorrect API key provided.", "invalid_api_key");
                return send_status(&mut sock, 401, &body, None).await;
            }
            match (req.method.as_str(), path.as_str()) {
                ("POST", "/v1/audio/transcriptions") => {
                    let ct = req.header("content-type").unwrap_or_default().to_string();
                    let raw = String::from_utf8_lossy(&req.raw).to_string();
                    let has_model = raw.contains("name=\"model\"");
                    let has_file = raw.contains("name=\"file\"; filename=\"utterance.wav\"") && raw.contains("RIFF");
                    if !ct.starts_with("multipart/form-data; boundary=") || !has_model || !has_file {
                        let body = openai_error("Could not parse multipart form", "invalid_request");
                        return send_status(&mut sock, 400, &body, None).await;
                    }
                    // ISO-639-1 only, as the API documents and checks.
                    let lang = raw
                        .split_once("name=\"language\"\r\n\r\n")
                        .and_then(|(_, rest)| rest.split("\r\n").next());
                    if let Some(l) = lang.filter(|l| l.len() != 2 || !l.bytes().all(|b| b.is_ascii_lowercase())) {
                        let msg = format!(
                            "Invalid language '{l}'. Language parameter must be specified in ISO-639-1 format."
                        );
                        let body = openai_error(&msg, "invalid_language_format");
                        return send_status(&mut sock, 400, &body, None).await;
                    }
                    tokio::time::sleep(delay).await;
                    let t = s.transcript.lock().expect("t").clone();
                    send_json(&mut sock, &json!({"text": t})).await;
                }
                ("POST", "/v1/audio/speech") => {
                    let b = &req.body;
                    if b["response_format"] != "pcm" || !b["model"].is_string() || !b["voice"].is_string() {
                        let body = openai_error("this fake speaks pcm with a model and a voice", "invalid_request");
                        return send_status(&mut sock, 400, &body, None).await;
                    }
                    let text = b["input"].as_str().unwrap_or_default();
                    let ms = *s.ms_per_char.lock().expect("ms");
                    stream_tone(&mut sock, tts_samples(text, ms), "application/octet-stream", delay).await;
                }
                _ => send_status(&mut sock, 404, &openai_error("no such route", "not_found"), None).await,
            }
        }
    }
}

/// Deepgram's answer to a `language` Nova-3 does not have (its documented codes, or
/// `multi` for the multilingual model); absent means English.
fn deepgram_language_error(path_or_query: &str) -> Option<Value> {
    const NOVA3: &[&str] = &[
        "multi", "en", "en-US", "en-GB", "bg", "ca", "cs", "da", "de", "el", "es", "et", "fi", "fr", "hi", "hu", "id",
        "it", "ja", "ko", "lt", "lv", "ms", "nl", "no", "pl", "pt", "ro", "ru", "sk", "sv", "th", "tr", "uk", "vi",
        "zh",
    ];
    let query = path_or_query.split_once('?').map_or(path_or_query, |(_, q)| q);
    let lang = query.split('&').find_map(|kv| kv.strip_prefix("language="))?;
    (!NOVA3.contains(&lang)).then(|| deepgram_error("Bad Request", "No such model/language/tier combination found."))
}

async fn send_json(sock: &mut TcpStream, body: &Value) {
    let body = body.to_string();
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    let _ = sock.write_all(head.as_bytes()).await;
    let _ = sock.write_all(body.as_bytes()).await;
    let _ = sock.shutdown().await;
}

/// Streams a 440 Hz tone as raw PCM16LE, in 20 ms chunks cut at odd byte offsets so the
/// client must reassemble samples across reads.
async fn stream_tone(sock: &mut TcpStream, samples: usize, content_type: &str, delay: Duration) {
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n"
    );
    if sock.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    tokio::time::sleep(delay).await;
    let bytes: Vec<u8> = (0..samples)
        .flat_map(|i| {
            let v = (2.0 * std::f32::consts::PI * 440.0 * i as f32 / TTS_RATE as f32).sin() * 0.4;
            ((v * i16::MAX as f32) as i16).to_le_bytes()
        })
        .collect();
    let mut w = ChunkWriter {
        sock,
        delay: Duration::ZERO,
    };
    for piece in bytes.chunks(961) {
        w.chunk(piece).await;
    }
    w.end().await;
}

#[allow(clippy::result_large_err)] // the handshake callback's signature is tungstenite's
async fn live(sock: TcpStream, s: Arc<Shared>) {
    let key = s.key.clone();
    let path = Arc::new(Mutex::new(String::new()));
    let p2 = path.clone();
    let check = move |req: &Request, resp: Response| -> Result<Response, ErrorResponse> {
        *p2.lock().expect("p") = req.uri().to_string();
        let q = req.uri().query().unwrap_or_default().to_string();
        let auth = req
            .headers()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        let fail = |status: u16, body: Value| {
            let mut r = ErrorResponse::new(Some(body.to_string()));
            *r.status_mut() = tokio_tungstenite::tungstenite::http::StatusCode::from_u16(status).expect("status");
            r
        };
        if auth != format!("Token {key}") {
            return Err(fail(401, deepgram_error("INVALID_AUTH", "Invalid credentials.")));
        }
        if let Some(e) = deepgram_language_error(&q) {
            return Err(fail(400, e));
        }
        for needed in [
            "encoding=linear16",
            "sample_rate=16000",
            "channels=1",
            "interim_results=true",
        ] {
            if !q.contains(needed) {
                return Err(fail(
                    400,
                    deepgram_error("Bad Request", &format!("this fake needs {needed}")),
                ));
            }
        }
        Ok(resp)
    };
    let Ok(mut ws) = tokio_tungstenite::accept_hdr_async(sock, check).await else {
        return;
    };
    let mut log = LiveLog {
        path: path.lock().expect("p").clone(),
        ..Default::default()
    };
    let transcript = s.transcript.lock().expect("t").clone();
    let words: Vec<&str> = transcript.split_whitespace().collect();
    let half = words.len() / 2;
    let result = |text: &str, is_final: bool, from_finalize: bool| {
        json!({
            "type": "Results", "channel_index": [0, 1], "duration": 0.5, "start": 0.0,
            "is_final": is_final, "speech_final": is_final, "from_finalize": from_finalize,
            "channel": {"alternatives": [{"transcript": text, "confidence": 0.97, "words": []}]},
            "metadata": {"request_id": "00000000-fake"}
        })
        .to_string()
    };
    let mut sent_first_final = false;
    while let Some(Ok(msg)) = ws.next().await {
        match msg {
            Message::Binary(b) => {
                if b.len() % 2 != 0 {
                    let _ = ws
                        .send(Message::Text(
                            deepgram_error("Bad Request", "odd linear16 frame").to_string().into(),
                        ))
                        .await;
                }
                log.audio_bytes += b.len();
                log.binary_frames += 1;
                // Interim words as half-second steps of audio arrive; the first half of the
                // words becomes final after one second.
                let secs = log.audio_bytes as f64 / 32_000.0;
                if secs >= 1.0 && !sent_first_final && half > 0 {
                    sent_first_final = true;
                    let _ = ws
                        .send(Message::Text(result(&words[..half].join(" "), true, false).into()))
                        .await;
                } else {
                    let shown = ((secs * 2.0) as usize).min(words.len());
                    let from = if sent_first_final { half } else { 0 };
                    if shown > from {
                        let _ = ws
                            .send(Message::Text(
                                result(&words[from..shown].join(" "), false, false).into(),
                            ))
                            .await;
                    }
                }
            }
            Message::Text(t) => {
                log.control.push(t.to_string());
                let v: Value = serde_json::from_str(&t).unwrap_or(Value::Null);
                match v["type"].as_str() {
                    Some("Finalize") => {
                        let from = if sent_first_final { half } else { 0 };
                        let _ = ws
                            .send(Message::Text(result(&words[from..].join(" "), true, true).into()))
                            .await;
                    }
                    Some("CloseStream") => {
                        let meta = json!({"type": "Metadata", "request_id": "00000000-fake", "duration": log.audio_bytes as f64 / 32_000.0, "channels": 1});
                        let _ = ws.send(Message::Text(meta.to_string().into())).await;
                        let _ = ws.close(None).await;
                        break;
                    }
                    _ => {}
                }
            }
            Message::Close(_) => break,
            _ => {}
        }
    }
    s.live.lock().expect("l").push(log);
}
