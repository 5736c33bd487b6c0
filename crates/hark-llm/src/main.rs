//! # hark-llm
//!
//! Hark's offline language model: loads one GGUF model with llama.cpp (llama-cpp-2) and
//! serves the OpenAI Chat Completions wire format on loopback, so Hark talks to it exactly
//! as it talks to any OpenAI-compatible server. A separate process on purpose: llama.cpp and
//! whisper.cpp each bundle their own ggml, which must not meet in one binary; and a crash or
//! an out-of-memory in the model cannot take the app down.
//!
//! # Layout
//! - `main.rs`: arguments, the HTTP routes (`/health`, `/v1/models`, `/v1/chat/completions`).
//! - `api.rs`: the wire format (request parsing, chunks, bodies, errors).
//! - `engine.rs`: the model and its worker thread, with the KV cache kept between turns.
//!
//! Prints `hark-llm listening on http://127.0.0.1:PORT/v1` on stdout once the model is loaded
//! (with `--port 0` the OS picks the port). Tools in a request are ignored: small local
//! models do not call them reliably. With `--exit-with-stdin` it stops when its parent
//! goes away (the parent holds a pipe to its stdin).
//!
//! Who may talk to it (issue 9): with `--token-stdin` the first line of stdin is a token
//! made for this launch, and every request must carry it as `Authorization: Bearer` (other
//! local programs and web pages cannot use the model); it never appears on the command
//! line, where any user of the machine could read it. Requests must name a loopback `Host`
//! (a web page that rebinds a DNS name to 127.0.0.1 is refused), and POSTs must be JSON.
//! Every refusal, 404, 405 and 413 included, is an OpenAI-shaped JSON error.

mod api;
mod engine;

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use clap::Parser;
use serde_json::json;

use api::{ApiError, Completion};
use engine::{Engine, Event, Options};

#[derive(Parser)]
#[command(
    name = "hark-llm",
    version,
    about = "Hark's offline language model server (OpenAI Chat Completions on loopback)"
)]
struct Args {
    /// The GGUF model file.
    #[arg(long)]
    model: PathBuf,
    /// The model name reported and accepted (default: the file name without extension).
    #[arg(long)]
    alias: Option<String>,
    /// Address to listen on. Loopback by default: the server has no authentication.
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// Port; 0 lets the OS choose (printed on stdout).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Context size in tokens.
    #[arg(long, default_value_t = 4096)]
    ctx: u32,
    /// CPU threads (default: the cores available, at most 4).
    #[arg(long)]
    threads: Option<i32>,
    /// Exit when stdin closes: a parent that keeps a pipe to stdin takes the server down
    /// with it, even when the parent crashes.
    #[arg(long)]
    exit_with_stdin: bool,
    /// Read a bearer token from the first line of stdin; requests without it are refused.
    #[arg(long)]
    token_stdin: bool,
    /// Free the model's memory after this many seconds without a request; the next
    /// request loads it again (and waits for it). 0 (the default) keeps it loaded.
    #[arg(long, default_value_t = 0)]
    unload_after: u64,
}

/// The largest request body accepted: a full 4,096-token context is about 16 KB of text.
const MAX_BODY: usize = 4 * 1024 * 1024;

struct AppState {
    engine: Engine,
    alias: String,
    /// The bearer token requests must carry, when one was given.
    token: Option<String>,
}

fn error_response(e: &ApiError) -> Response {
    let status = StatusCode::from_u16(e.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (status, Json(e.body())).into_response()
}

/// `ok` only while the model's worker thread runs: after it died every generation would
/// fail, and the parent should know (503).
async fn health(State(s): State<Arc<AppState>>) -> Response {
    let abandoned = s.engine.abandoned.load(std::sync::atomic::Ordering::Relaxed);
    if !s.engine.is_alive() {
        let body = json!({"status": "error", "model": s.alias, "error": {"message": "the model's worker thread has stopped", "type": "server_error", "param": null, "code": null}});
        return (StatusCode::SERVICE_UNAVAILABLE, Json(body)).into_response();
    }
    Json(json!({"status": "ok", "model": s.alias, "n_ctx": s.engine.n_ctx, "loaded": s.engine.is_loaded(), "abandoned_generations": abandoned}))
        .into_response()
}

/// Checks every request before its route: a loopback `Host`, the launch token, and JSON
/// for a POST.
async fn guard(State(s): State<Arc<AppState>>, req: axum::extract::Request, next: axum::middleware::Next) -> Response {
    if let Err(e) = check(&s, &req) {
        return error_response(&e);
    }
    next.run(req).await
}

fn check(s: &AppState, req: &axum::extract::Request) -> Result<(), ApiError> {
    let headers = req.headers();
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default();
    if !api::is_loopback_host(host) {
        return Err(ApiError::refused(
            403,
            format!("this server only answers requests addressed to 127.0.0.1, [::1] or localhost, not {host:?}"),
        ));
    }
    if let Some(token) = &s.token {
        let given = headers
            .get(header::AUTHORIZATION)
            .and_then(|h| h.to_str().ok())
            .and_then(|h| h.strip_prefix("Bearer "))
            .unwrap_or_default();
        if !api::same_secret(given.as_bytes(), token.as_bytes()) {
            return Err(ApiError::unauthorized());
        }
    }
    if req.method() == axum::http::Method::POST {
        let json = headers
            .get(header::CONTENT_TYPE)
            .and_then(|h| h.to_str().ok())
            .and_then(|h| h.split(';').next())
            .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"));
        if !json {
            return Err(ApiError::refused(
                415,
                "the request body must be JSON (Content-Type: application/json)",
            ));
        }
    }
    Ok(())
}

async fn not_found(uri: axum::http::Uri) -> Response {
    error_response(&ApiError::refused(404, format!("no route {}", uri.path())))
}

async fn method_not_allowed() -> Response {
    error_response(&ApiError::refused(405, "this method is not allowed on this route"))
}

async fn models(State(s): State<Arc<AppState>>) -> Json<serde_json::Value> {
    Json(json!({"object": "list", "data": [{"id": s.alias, "object": "model", "created": 0, "owned_by": "hark"}]}))
}

async fn chat(State(s): State<Arc<AppState>>, body: Body) -> Response {
    let body = match axum::body::to_bytes(body, MAX_BODY).await {
        Ok(b) => b,
        Err(_) => {
            return error_response(&ApiError::refused(
                413,
                format!("the request body is larger than {MAX_BODY} bytes"),
            ))
        }
    };
    let request = match api::parse_request(&body) {
        Ok(r) => r,
        Err(e) => return error_response(&e),
    };
    let created = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    let id = format!("chatcmpl-{created:x}{:08x}", rand_u32());
    let (stream, include_usage) = (request.stream, request.include_usage);
    let mut events = s.engine.generate(request);

    if !stream {
        let mut text = String::new();
        while let Some(ev) = events.recv().await {
            match ev {
                Event::Text(t) => text.push_str(&t),
                Event::Done { usage, finish_reason } => {
                    let c = Completion {
                        id: &id,
                        created,
                        model: &s.alias,
                    };
                    return Json(c.body(&text, finish_reason, usage)).into_response();
                }
                Event::Failed(e) => return error_response(&e),
            }
        }
        return error_response(&ApiError::server("the generation ended without a result"));
    }

    // Streaming: a failure before the first piece is still a plain HTTP error.
    let first = events.recv().await;
    if let Some(Event::Failed(e)) = &first {
        return error_response(e);
    }
    let alias = s.alias.clone();
    let body = sse_body(first, events, id, created, alias, include_usage);
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream; charset=utf-8")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from_stream(body))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// The SSE body: role chunk, content chunks, finish chunk, usage chunk, `[DONE]`.
fn sse_body(
    first: Option<Event>,
    mut events: tokio::sync::mpsc::UnboundedReceiver<Event>,
    id: String,
    created: u64,
    alias: String,
    include_usage: bool,
) -> impl futures_util::Stream<Item = Result<Bytes, std::io::Error>> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Result<Bytes, std::io::Error>>();
    tokio::spawn(async move {
        let c = Completion {
            id: &id,
            created,
            model: &alias,
        };
        let send = |s: String| tx.send(Ok(Bytes::from(s))).is_ok();
        if !send(c.chunk(json!({"role": "assistant", "content": "", "refusal": null}), None)) {
            return;
        }
        let mut next = first;
        while let Some(ev) = next.take() {
            match ev {
                Event::Text(t) => {
                    if !send(c.chunk(json!({"content": t}), None)) {
                        // The client hung up: dropping `events` stops the generation.
                        return;
                    }
                }
                Event::Done { usage, finish_reason } => {
                    send(c.chunk(json!({}), Some(finish_reason)));
                    if include_usage {
                        send(c.usage_chunk(usage));
                    }
                    send("data: [DONE]\n\n".into());
                    return;
                }
                Event::Failed(e) => {
                    // Mid-stream: the error event OpenAI-compatible servers send.
                    send(format!("data: {}\n\n", e.body()));
                    return;
                }
            }
            next = events.recv().await;
        }
    });
    tokio_stream::wrappers::UnboundedReceiverStream::new(rx)
}

fn rand_u32() -> u32 {
    let t = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    t ^ std::process::id().rotate_left(16)
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("HARK_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    match run(Args::parse()).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hark-llm: {}", format!("{e:#}").replace('\n', " "));
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> anyhow::Result<()> {
    if !args.model.is_file() {
        anyhow::bail!("no model file at {}", args.model.display());
    }
    let token = if args.token_stdin {
        let mut line = String::new();
        std::io::stdin().read_line(&mut line)?;
        let token = line.trim().to_string();
        if token.len() < 16 {
            anyhow::bail!("--token-stdin: the first line of stdin is not a token");
        }
        Some(token)
    } else {
        None
    };
    if args.exit_with_stdin {
        std::thread::spawn(|| {
            let mut sink = [0u8; 256];
            let mut stdin = std::io::stdin().lock();
            while matches!(std::io::Read::read(&mut stdin, &mut sink), Ok(n) if n > 0) {}
            std::process::exit(0);
        });
    }
    let threads = args.threads.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get().min(4) as i32)
            .unwrap_or(2)
    });
    let engine = Engine::start(Options {
        model: &args.model,
        n_ctx: args.ctx,
        threads,
        unload_after: (args.unload_after > 0).then(|| std::time::Duration::from_secs(args.unload_after)),
    })?;
    let alias = args.alias.unwrap_or_else(|| {
        args.model
            .file_stem()
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_else(|| "local".into())
    });
    let state = Arc::new(AppState { engine, alias, token });
    let app = Router::new()
        .route("/health", get(health).fallback(method_not_allowed))
        .route("/v1/models", get(models).fallback(method_not_allowed))
        .route("/v1/chat/completions", post(chat).fallback(method_not_allowed))
        .fallback(not_found)
        .layer(axum::middleware::from_fn_with_state(state.clone(), guard))
        .with_state(state);
    let listener = tokio::net::TcpListener::bind((args.host.as_str(), args.port)).await?;
    let addr = listener.local_addr()?;
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "hark-llm listening on http://{addr}/v1")?;
        out.flush()?;
    }
    axum::serve(listener, app).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 9: `/health` said "ok" after the model's worker thread had died.
    #[tokio::test]
    async fn health_is_an_error_once_the_worker_has_died() {
        let state = Arc::new(AppState {
            engine: Engine::stopped(),
            alias: "m".into(),
            token: None,
        });
        let r = health(State(state)).await;
        assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
        let body = axum::body::to_bytes(r.into_body(), 4096).await.unwrap();
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["status"], "error");
        assert_eq!(v["error"]["type"], "server_error");
    }
}
