//! Deepgram's own recorded streams, replayed to Hark's real Deepgram clients (issue 46):
//! the live `Results` messages and the Aura-2 audio that deepgram-python-sdk's daily tests
//! recorded from the real API (`tests/recorded/deepgram-python-sdk/listen/` and `speak/`;
//! `tests/recorded/README.md` names each file's source, licence and sha256, and every file is
//! checked against that sha256 before it is sent, so what Hark gets is the vendor's bytes).
//!
//! What the recordings hold, and so what is replayed:
//! - `listen/`: each file is the last `Results` message of one live session (the SDK's test
//!   kept only the last). Interim results were not asked for, so each is `is_final` and
//!   `speech_final`, with `from_finalize: false`; no session's `Metadata` was kept. A loopback
//!   WebSocket server takes Hark's live connection, reads its linear16 frames and, once the
//!   audio has reached the end of the recorded result (`start + duration`), sends the message
//!   as recorded. No recording holds a `from_finalize` result, so Hark's `Finalize` is
//!   answered with nothing, as Deepgram documents it may be when no audio is left unprocessed
//!   ("You may receive a response with the `from_finalize` attribute set to `true` ...
//!   typically when there is a noticeable amount of audio buffered"), and the server closes
//!   on `CloseStream`. Expected: the recorded final text shown while the key is held, and the
//!   transcript on release exactly the recorded `is_final` text.
//! - The same messages with only `from_finalize` turned to `true` (derived, not recorded: the
//!   answer Deepgram gives to `Finalize` when it had audio left) check the `from_finalize`
//!   path on the recorded message's real shape.
//! - `speak/`: Aura-2 (`aura-2-thalia-en`, linear16, 24 kHz) saying "Hello, world.", as the
//!   REST API's default `wav` container (a 44-byte header, then the samples). Hark asks for
//!   `container=none`, which is the same samples without the header, so the loopback server
//!   answers that request with the recording's data chunk, byte for byte, under the recorded
//!   response's headers. Expected: every sample, at the rate the recording's header gives.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use hark_core::stt::deepgram::{DeepgramConfig, DeepgramStt};
use hark_core::stt::Transcriber;
use hark_core::tts::remote::DeepgramTts;
use hark_core::tts::{AudioChunk, Synthesizer};
use hark_e2e::{read_request, Recorded};
use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::Message;

const KEY: &str = "dg-recorded-test-3cca";

/// The folder under `tests/recorded/`.
const VENDOR: &str = "deepgram-python-sdk";

/// One recorded live session: its file under `listen/` and its `is_final` transcript, as
/// read from the file by hand (not by Hark's client).
struct Live {
    file: &'static str,
    transcript: &'static str,
}

const LISTEN: &[Live] = &[
    Live {
        file: "a6d1b12d5ce73a51a7b69ab156f0c98c72cdc1cfcf4a25f7b634c328cce4d760-42fc5ed98cabc1fa1a2f276301c27c46dd15f6f5187cd93d944cc94fa81c8469-response.json",
        transcript: "For the United States of America.",
    },
    Live {
        file: "a6d1b12d5ce73a51a7b69ab156f0c98c72cdc1cfcf4a25f7b634c328cce4d760-d7334c26cf6468c191e05ff5e8151da9b67985c66ab177e9446fd14bbafd70df-response.json",
        transcript: "Testing. 123. Testing. 123.",
    },
    Live {
        file: "ed5bfd217988aa8cad492f63f79dc59f5f02fb9b85befe6f6ce404b8f19aaa0d-42fc5ed98cabc1fa1a2f276301c27c46dd15f6f5187cd93d944cc94fa81c8469-response.json",
        transcript: "Ensure domestic tranquility.",
    },
    // The end of a session: a final result with nothing said in it.
    Live {
        file: "ed5bfd217988aa8cad492f63f79dc59f5f02fb9b85befe6f6ce404b8f19aaa0d-d7334c26cf6468c191e05ff5e8151da9b67985c66ab177e9446fd14bbafd70df-response.json",
        transcript: "",
    },
];

/// The recorded Aura-2 responses under `speak/`: `{stem}.wav`, `{stem}-options.json` (the
/// request's options) and `{stem}-response.json` (the response's headers as the SDK read them).
const SPEAK: &[&str] = &[
    "18144fa7f4709bc9972c24d0addc8faa360dca933e7e0027b062e57b7c41f426-f8c3bf62a9aa3e6fc1619c250e48abe7519373d3edf41be62eb5dc45199af2ef",
    "1fe0ad339338a9d6cffbab2c7ace41ba5387b5fe7906854795702dce91034fd3-f8c3bf62a9aa3e6fc1619c250e48abe7519373d3edf41be62eb5dc45199af2ef",
];

/// The text the Aura-2 recordings speak (the SDK test's `.cmd` file; the response's
/// `characters` counts it).
const SPOKEN: &str = "Hello, world.";

/// A recorded file's bytes (`file` under `deepgram-python-sdk/`), the vendor's unchanged:
/// their sha256 is the one the README lists.
fn recorded_bytes(file: &str) -> Vec<u8> {
    hark_e2e::recorded_bytes(&format!("{VENDOR}/{file}"))
}

fn recorded_json(file: &str) -> Value {
    serde_json::from_slice(&recorded_bytes(file)).unwrap_or_else(|e| panic!("{file}: {e}"))
}

/// `n` samples of a 16 kHz tone: what Hark's microphone would hand the live client.
fn tone(n: usize) -> Vec<f32> {
    (0..n).map(|i| (i as f32 * 0.07).sin() * 0.3).collect()
}

// ---------------------------------------------------------------------------------------
// Live: a loopback `wss://api.deepgram.com/v1/listen` (plain ws on 127.0.0.1).

/// What one live session received and sent.
#[derive(Debug, Default)]
struct Session {
    /// The request path and query.
    path: String,
    audio_bytes: usize,
    /// Text (control) messages from Hark, in order.
    control: Vec<String>,
    /// Messages sent to Hark, in order.
    sent: Vec<String>,
}

/// Serves one live session on a loopback port; returns its base URL (`http://…`, as
/// `DeepgramConfig::base_url` takes it) and the session's log when it ends. `on_audio`:
/// a message sent once that many bytes of audio have arrived. `on_finalize`: a message sent
/// in answer to `{"type":"Finalize"}` (none: nothing is sent).
async fn live_server(
    on_audio: Option<(usize, String)>,
    on_finalize: Option<String>,
) -> (String, tokio::task::JoinHandle<Session>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let handle = tokio::spawn(async move {
        let (sock, _) = listener.accept().await.unwrap();
        serve_live(sock, on_audio, on_finalize).await
    });
    (base, handle)
}

#[allow(clippy::result_large_err)] // the handshake callback's signature is tungstenite's
async fn serve_live(sock: TcpStream, mut on_audio: Option<(usize, String)>, on_finalize: Option<String>) -> Session {
    let path = Arc::new(Mutex::new(String::new()));
    let p = path.clone();
    let check = move |req: &Request, resp: Response| -> Result<Response, ErrorResponse> {
        *p.lock().unwrap() = req.uri().to_string();
        let auth = req
            .headers()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        if auth != format!("Token {KEY}") {
            let body = r#"{"err_code":"INVALID_AUTH","err_msg":"Invalid credentials."}"#;
            let mut r = ErrorResponse::new(Some(body.to_string()));
            *r.status_mut() = tokio_tungstenite::tungstenite::http::StatusCode::UNAUTHORIZED;
            return Err(r);
        }
        Ok(resp)
    };
    let mut ws = tokio_tungstenite::accept_hdr_async(sock, check)
        .await
        .expect("the WebSocket handshake");
    let mut s = Session {
        path: path.lock().unwrap().clone(),
        ..Default::default()
    };
    while let Some(Ok(msg)) = ws.next().await {
        match msg {
            Message::Binary(b) => {
                s.audio_bytes += b.len();
                if on_audio.as_ref().is_some_and(|(after, _)| s.audio_bytes >= *after) {
                    let (_, text) = on_audio.take().unwrap();
                    let _ = ws.send(Message::Text(text.clone().into())).await;
                    s.sent.push(text);
                }
            }
            Message::Text(t) => {
                s.control.push(t.to_string());
                let v: Value = serde_json::from_str(&t).unwrap_or(Value::Null);
                match v["type"].as_str() {
                    Some("Finalize") => {
                        if let Some(text) = &on_finalize {
                            let _ = ws.send(Message::Text(text.clone().into())).await;
                            s.sent.push(text.clone());
                        }
                    }
                    Some("CloseStream") => {
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
    s
}

/// What Hark's live client made of one replayed session.
struct Replayed {
    /// `finish()`'s transcript, or its error.
    text: Result<String, String>,
    /// The interim texts Hark showed while the key was held, in order.
    shown: Vec<String>,
    session: Session,
}

/// Holds the key for `samples` of audio (sent as Hark's capture would), then releases it.
async fn replay_live(samples: usize, on_audio: Option<(usize, String)>, on_finalize: Option<String>) -> Replayed {
    let (base, server) = live_server(on_audio, on_finalize).await;
    let mut config = DeepgramConfig::new(Some(KEY.to_string()));
    config.base_url = base;
    let stt = DeepgramStt::new(config, true).unwrap();
    let (tx, mut interim) = mpsc::unbounded_channel();
    let mut live = stt.live(tx).await.unwrap().expect("live mode");
    for chunk in tone(samples).chunks(1600) {
        live.send(chunk).await.unwrap();
    }
    let text = tokio::time::timeout(Duration::from_secs(10), live.finish())
        .await
        .expect("finish() returns within 10 s of release")
        .map_err(|e| e.to_string());
    let session = tokio::time::timeout(Duration::from_secs(10), server)
        .await
        .expect("the session ends after release")
        .unwrap();
    let mut shown = Vec::new();
    while let Ok(t) = interim.try_recv() {
        shown.push(t);
    }
    Replayed { text, shown, session }
}

/// The samples of 16 kHz audio up to the end of a recorded result (`start + duration`).
fn samples_until_end(message: &Value) -> usize {
    let end = message["start"].as_f64().unwrap() + message["duration"].as_f64().unwrap();
    (end * 16_000.0).ceil() as usize
}

/// What every replayed session must show: the request Hark opened, the audio it sent, the
/// control messages on release, the text it showed and the transcript it returned.
fn check_session(wrong: &mut Vec<String>, r: &Live, samples: usize, got: &Replayed) {
    let file = r.file;
    let path = &got.session.path;
    if !path.starts_with("/v1/listen?") {
        wrong.push(format!("{file}: the live request went to {path}"));
    }
    for needed in [
        "model=nova-3",
        "encoding=linear16",
        "sample_rate=16000",
        "channels=1",
        "interim_results=true",
    ] {
        if !path.contains(needed) {
            wrong.push(format!("{file}: the live request lacks {needed}: {path}"));
        }
    }
    if got.session.audio_bytes != samples * 2 {
        wrong.push(format!(
            "{file}: {} bytes of audio arrived, {} sent (16 kHz linear16)",
            got.session.audio_bytes,
            samples * 2
        ));
    }
    let control: Vec<&str> = got.session.control.iter().map(String::as_str).collect();
    if control != [r#"{"type":"Finalize"}"#, r#"{"type":"CloseStream"}"#] {
        wrong.push(format!("{file}: control messages on release: {control:?}"));
    }
    if got.session.sent.len() != 1 {
        wrong.push(format!(
            "{file}: the server sent {} messages, not the recorded one",
            got.session.sent.len()
        ));
    }
    if got.text.as_deref() != Ok(r.transcript) {
        wrong.push(format!(
            "{file}: the transcript on release is {:?}, recorded {:?}",
            got.text, r.transcript
        ));
    }
    // The final piece is shown as it arrives; nothing else was said.
    let ok = if r.transcript.is_empty() {
        got.shown.iter().all(|t| t.is_empty())
    } else {
        !got.shown.is_empty() && got.shown.iter().all(|t| t == r.transcript)
    };
    if !ok {
        wrong.push(format!(
            "{file}: shown while held: {:?}, recorded {:?}",
            got.shown, r.transcript
        ));
    }
}

/// The recorded `Results`, each sent as recorded once the audio reaches its end; `Finalize`
/// answered with nothing (no recording has a `from_finalize` result); the transcript on
/// release is the recorded final text, exactly.
#[tokio::test]
async fn deepgram_live_replays_the_recorded_results_and_keeps_them_on_release() {
    let runs = LISTEN.iter().map(|r| async move {
        let bytes = recorded_bytes(&format!("listen/{}", r.file));
        let message: Value = serde_json::from_slice(&bytes).unwrap();
        // What the recording holds, as the module's comment says.
        assert_eq!(message["type"], "Results", "{}", r.file);
        assert_eq!(
            (
                &message["is_final"],
                &message["speech_final"],
                &message["from_finalize"]
            ),
            (&Value::Bool(true), &Value::Bool(true), &Value::Bool(false)),
            "{}",
            r.file
        );
        let samples = samples_until_end(&message);
        let text = String::from_utf8(bytes).unwrap();
        let got = replay_live(samples, Some((samples * 2, text)), None).await;
        (r, samples, got)
    });
    let mut wrong = Vec::new();
    for (r, samples, got) in futures_util::future::join_all(runs).await {
        check_session(&mut wrong, r, samples, &got);
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Derived from the recordings (not recorded): the same `Results`, with only `from_finalize`
/// set, as the answer to `Finalize` (the release came before Deepgram finalized the audio
/// itself). Hark returns the recorded text.
#[tokio::test]
async fn deepgram_live_takes_the_recorded_result_marked_from_finalize_on_release() {
    let runs = LISTEN.iter().map(|r| async move {
        let text = String::from_utf8(recorded_bytes(&format!("listen/{}", r.file))).unwrap();
        let flag = r#""from_finalize": false"#;
        assert_eq!(text.matches(flag).count(), 1, "{}", r.file);
        let answer = text.replacen(flag, r#""from_finalize": true"#, 1);
        let samples = samples_until_end(&serde_json::from_str(&text).unwrap());
        let got = replay_live(samples, None, Some(answer)).await;
        (r, samples, got)
    });
    let mut wrong = Vec::new();
    for (r, samples, got) in futures_util::future::join_all(runs).await {
        check_session(&mut wrong, r, samples, &got);
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

// ---------------------------------------------------------------------------------------
// Aura-2: a loopback `POST /v1/speak`.

/// Answers one `POST /v1/speak` with a recorded response: the recorded headers (the SDK reads
/// each as `X`, `dg-X` or `x-dg-X`; sent here as Deepgram names them, `dg-X`) and the
/// recorded audio, chunked in odd sizes so samples are cut across reads. A request for
/// `container=none` gets the recording's samples without the WAV header, and no content
/// type (the recorded `audio/wav` names the container; no recording holds the raw one's).
async fn speak_server(wav: Vec<u8>, headers: Value) -> (String, tokio::task::JoinHandle<Recorded>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let handle = tokio::spawn(async move {
        let (mut sock, _) = listener.accept().await.unwrap();
        let req = read_request(&mut sock).await.expect("the speak request");
        let raw = req.path.contains("container=none");
        let body = if raw { &wav[44..] } else { &wav[..] };
        let mut head = String::from("HTTP/1.1 200 OK\r\n");
        if !raw {
            head.push_str(&format!(
                "content-type: {}\r\n",
                headers["content_type"].as_str().unwrap()
            ));
        }
        for (name, field) in [
            ("dg-request-id", "request_id"),
            ("dg-model-uuid", "model_uuid"),
            ("dg-model-name", "model_name"),
            ("dg-char-count", "characters"),
            ("date", "date"),
        ] {
            let v = match &headers[field] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            head.push_str(&format!("{name}: {v}\r\n"));
        }
        assert_eq!(headers["transfer_encoding"], "chunked");
        head.push_str("transfer-encoding: chunked\r\nconnection: close\r\n\r\n");
        sock.write_all(head.as_bytes()).await.unwrap();
        for piece in body.chunks(4093) {
            let mut out = format!("{:x}\r\n", piece.len()).into_bytes();
            out.extend_from_slice(piece);
            out.extend_from_slice(b"\r\n");
            sock.write_all(&out).await.unwrap();
            sock.flush().await.unwrap();
        }
        sock.write_all(b"0\r\n\r\n").await.unwrap();
        let _ = sock.shutdown().await;
        req
    });
    (base, handle)
}

/// The recording's WAV header, read by hand: (sample rate, where the samples start).
fn wav_format(wav: &[u8]) -> (u32, usize) {
    let u16_at = |i: usize| u16::from_le_bytes([wav[i], wav[i + 1]]);
    assert_eq!(&wav[0..4], b"RIFF");
    assert_eq!(&wav[8..12], b"WAVE");
    assert_eq!(&wav[12..16], b"fmt ");
    assert_eq!(
        u32::from_le_bytes(wav[16..20].try_into().unwrap()),
        16,
        "a plain PCM fmt chunk"
    );
    assert_eq!(u16_at(20), 1, "PCM");
    assert_eq!(u16_at(22), 1, "mono");
    assert_eq!(u16_at(34), 16, "16-bit");
    assert_eq!(&wav[36..40], b"data");
    (u32::from_le_bytes(wav[24..28].try_into().unwrap()), 44)
}

/// Each recorded Aura-2 response, streamed to Hark's Deepgram voice: Hark asks for what the
/// recording was made with (its voice, linear16, its rate) and yields every recorded sample,
/// unchanged, at the rate the recording's header gives.
#[tokio::test]
async fn deepgram_aura_plays_the_recorded_audio_at_its_rate() {
    for stem in SPEAK {
        let wav = recorded_bytes(&format!("speak/{stem}.wav"));
        let options = recorded_json(&format!("speak/{stem}-options.json"));
        let headers = recorded_json(&format!("speak/{stem}-response.json"));
        let (rate, data) = wav_format(&wav);
        assert_eq!(
            Value::from(rate),
            options["sample_rate"],
            "{stem}: the header's rate is the one asked for"
        );
        assert_eq!(options["encoding"], "linear16", "{stem}");
        assert_eq!(
            headers["characters"],
            SPOKEN.chars().count(),
            "{stem}: the recording speaks {SPOKEN:?}"
        );
        let pcm = &wav[data..];
        // The samples as recorded, read by hand.
        let want: Vec<f32> = pcm
            .chunks_exact(2)
            .map(|b| i16::from_le_bytes([b[0], b[1]]) as f32 / 32768.0)
            .collect();
        assert_eq!(pcm.len() % 2, 0, "{stem}: whole samples");

        let voice = options["model"].as_str().unwrap();
        let (base, server) = speak_server(wav.clone(), headers.clone()).await;
        let mut config = DeepgramConfig::new(Some(KEY.to_string()));
        config.base_url = base;
        let tts = DeepgramTts::new(config, voice).unwrap();
        let (tx, mut rx) = mpsc::unbounded_channel::<AudioChunk>();
        tts.synthesize(SPOKEN, &tx).await.unwrap();
        drop(tx);
        let mut chunks = Vec::new();
        while let Some(c) = rx.recv().await {
            chunks.push(c);
        }
        let req = tokio::time::timeout(Duration::from_secs(10), server)
            .await
            .expect("the request was answered")
            .unwrap();

        // The request: the recording's voice, encoding and rate, without a container.
        assert_eq!(req.method, "POST");
        assert!(req.path.starts_with("/v1/speak?"), "{}", req.path);
        for needed in [
            format!("model={voice}"),
            format!("encoding={}", options["encoding"].as_str().unwrap()),
            format!("sample_rate={rate}"),
            "container=none".to_string(),
        ] {
            assert!(
                req.path.contains(&needed),
                "{stem}: the request lacks {needed}: {}",
                req.path
            );
        }
        assert_eq!(req.header("authorization"), Some(format!("Token {KEY}").as_str()));
        let body: Value = serde_json::from_slice(&req.raw).unwrap();
        assert_eq!(body, serde_json::json!({ "text": SPOKEN }));

        // The audio: streamed in pieces, every one at the recording's rate, every sample.
        assert!(chunks.len() > 1, "{stem}: streamed as it arrived, not in one piece");
        assert!(
            chunks.iter().all(|c| c.rate == rate),
            "{stem}: rates {:?}, recorded {rate}",
            chunks.iter().map(|c| c.rate).collect::<Vec<_>>()
        );
        let got: Vec<f32> = chunks.iter().flat_map(|c| c.samples.iter().copied()).collect();
        assert_eq!(got.len(), pcm.len() / 2, "{stem}: every recorded sample");
        assert!(got == want, "{stem}: the samples differ from the recording's");
        let secs = got.len() as f64 / rate as f64;
        assert!((0.5..2.0).contains(&secs), "{stem}: {secs} s for {SPOKEN:?}");
    }
}
