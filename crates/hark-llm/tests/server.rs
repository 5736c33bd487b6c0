//! The real `hark-llm` binary with a real small model (SmolLM2 135M from the manifest,
//! fetched into HARK_MODELS_DIR on first use): the OpenAI wire format it serves, errors,
//! the KV cache across turns, and that a client hanging up stops the generation. Content
//! is not asserted beyond the trivial: this model is tiny.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use hark_core::models::{Manifest, ModelStore};
use serde_json::{json, Value};

struct Server {
    child: Child,
    port: u16,
}

/// The launch token every test server is started with.
const TOKEN: &str = "test-launch-token-6f1c9a2b";

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The SmolLM2 model that scripts/test.sh fetches into HARK_MODELS_DIR (these tests are
/// `#[ignore]`d for a plain `cargo test`); a test never downloads it itself.
fn model() -> std::path::PathBuf {
    assert!(
        std::env::var_os("HARK_MODELS_DIR").is_some(),
        "HARK_MODELS_DIR is not set: run the tests through scripts/test.sh"
    );
    let manifest = Manifest::builtin();
    let spec = manifest.find("smollm2-135m").unwrap();
    let store = ModelStore::default_dir();
    assert!(
        store.is_ready(spec),
        "SmolLM2 is missing from HARK_MODELS_DIR: scripts/test.sh fetches it (scripts/fetch-models.sh smollm2-135m)"
    );
    store.path(spec)
}

fn start(model: &std::path::Path, ctx: u32) -> Server {
    start_with(model, ctx, &[])
}

fn start_with(model: &std::path::Path, ctx: u32, extra: &[&str]) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_hark-llm"))
        .arg("--model")
        .arg(model)
        .args([
            "--alias",
            "smol",
            "--port",
            "0",
            "--threads",
            "2",
            "--ctx",
            &ctx.to_string(),
        ])
        .args(["--exit-with-stdin", "--token-stdin"])
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    writeln!(child.stdin.as_mut().unwrap(), "{TOKEN}").unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.starts_with("hark-llm listening on http://127.0.0.1:"), "{line}");
    let port = line
        .trim()
        .rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches("/v1")
        .parse()
        .unwrap();
    Server { child, port }
}

/// A raw HTTP/1.1 request with the launch token; returns (status, body as text).
fn request(port: u16, method: &str, path: &str, body: &Value) -> (u16, String) {
    let headers =
        format!("host: 127.0.0.1:{port}\r\nauthorization: Bearer {TOKEN}\r\ncontent-type: application/json\r\n");
    raw(port, method, path, &headers, &body.to_string())
}

/// A raw HTTP/1.1 request with exactly these headers (each ending in CRLF).
///
/// The server may answer before the body is written (a 413 for a body over its limit) and
/// close the connection: the rest of the write then fails (`BrokenPipe`, or
/// `ConnectionReset`), and the answer already sent is what the caller checks. So a failed
/// write is followed by the read, and a reset that ends the read keeps what came before it
/// (a CI run failed at the write here while the 413 was already on its way).
fn raw(port: u16, method: &str, path: &str, headers: &str, body: &str) -> (u16, String) {
    use std::io::ErrorKind::{BrokenPipe, ConnectionReset};
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let request = format!(
        "{method} {path} HTTP/1.1\r\n{headers}content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    if let Err(e) = s.write_all(request.as_bytes()) {
        assert!(
            matches!(e.kind(), BrokenPipe | ConnectionReset),
            "writing the request: {e}"
        );
    }
    let mut out = Vec::new();
    if let Err(e) = s.read_to_end(&mut out) {
        assert!(
            e.kind() == ConnectionReset && !out.is_empty(),
            "reading the answer ({} bytes before it): {e}",
            out.len()
        );
    }
    let text = String::from_utf8_lossy(&out).to_string();
    let status = text[9..12].parse().unwrap();
    let (_, body) = text.split_once("\r\n\r\n").unwrap();
    (status, dechunk(body))
}

/// Removes chunked transfer framing (good enough for tests: sizes on their own lines). A
/// body with a content-length comes back as it is.
fn dechunk(body: &str) -> String {
    let first = body.split("\r\n").next().unwrap_or_default();
    if !body.contains("\r\n") || usize::from_str_radix(first.trim(), 16).is_err() {
        return body.to_string();
    }
    let mut out = String::new();
    let mut rest = body;
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            return body.to_string();
        };
        if n == 0 {
            break;
        }
        out.push_str(&after[..n]);
        rest = &after[n + 2..];
    }
    out
}

fn chat(messages: Value, extra: Value) -> Value {
    let mut b = json!({"model": "smol", "messages": messages, "temperature": 0});
    for (k, v) in extra.as_object().unwrap() {
        b[k] = v.clone();
    }
    b
}

#[test]
#[ignore = "needs the SmolLM2 model that scripts/test.sh fetches into HARK_MODELS_DIR"]
fn serves_the_openai_chat_completions_format_streamed_and_not() {
    let model = model();
    let server = start(&model, 2048);
    let (status, body) = request(server.port, "GET", "/v1/models", &Value::Null);
    assert_eq!(status, 200);
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["data"][0]["id"], "smol");

    let msgs = json!([{"role": "system", "content": "You are a helpful assistant."},
                      {"role": "user", "content": "What is the capital of France?"}]);
    let (status, body) = request(
        server.port,
        "POST",
        "/v1/chat/completions",
        &chat(msgs.clone(), json!({"max_tokens": 24})),
    );
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["object"], "chat.completion");
    let text = v["choices"][0]["message"]["content"].as_str().unwrap();
    assert!(!text.trim().is_empty());
    assert!(v["usage"]["prompt_tokens"].as_u64().unwrap() > 10);

    // Streamed: role chunk, content chunks, finish, usage, [DONE] — and the same text at
    // temperature 0, with the prompt now served from the KV cache.
    let (status, body) = request(
        server.port,
        "POST",
        "/v1/chat/completions",
        &chat(
            msgs,
            json!({"max_tokens": 24, "stream": true, "stream_options": {"include_usage": true}}),
        ),
    );
    assert_eq!(status, 200);
    let events: Vec<&str> = body
        .split("\n\n")
        .filter(|e| !e.is_empty())
        .map(|e| e.strip_prefix("data: ").unwrap())
        .collect();
    assert_eq!(*events.last().unwrap(), "[DONE]");
    let chunks: Vec<Value> = events[..events.len() - 1]
        .iter()
        .map(|e| serde_json::from_str(e).unwrap())
        .collect();
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    let streamed: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(streamed, text);
    let finish = chunks
        .iter()
        .find_map(|c| c["choices"][0]["finish_reason"].as_str())
        .unwrap();
    assert!(finish == "stop" || finish == "length");
    assert!(chunks.last().unwrap()["usage"]["completion_tokens"].as_u64().unwrap() > 0);
}

/// Issue 12: a prefill (the same prompt, one token asked) leaves the whole prompt cached
/// with its logits, so the request that follows evaluates nothing — and answers exactly as
/// a request that evaluated everything itself.
#[test]
#[ignore = "needs the SmolLM2 model that scripts/test.sh fetches into HARK_MODELS_DIR"]
fn a_prompt_prefilled_ahead_is_answered_from_the_cache_with_the_same_reply() {
    let model = model();
    let server = start(&model, 2048);
    let ask = |msgs: &Value, max_tokens: u32| -> (String, Value) {
        let (status, body) = request(
            server.port,
            "POST",
            "/v1/chat/completions",
            &chat(msgs.clone(), json!({"max_tokens": max_tokens})),
        );
        assert_eq!(status, 200, "{body}");
        let v: Value = serde_json::from_str(&body).unwrap();
        (
            v["choices"][0]["message"]["content"].as_str().unwrap().to_string(),
            v["usage"].clone(),
        )
    };
    let question = json!([{"role": "system", "content": "You are a helpful assistant."},
                          {"role": "user", "content": "Name three colours of the rainbow."}]);
    let other = json!([{"role": "system", "content": "You answer in French."},
                       {"role": "user", "content": "Bonjour, comment vas-tu ?"}]);

    // The reference: evaluated from scratch (the other prompt shares no more than the
    // template's first tokens).
    let (_, fresh) = ask(&other, 4);
    assert_eq!(fresh["prompt_tokens_details"]["cached_tokens"], 0, "{fresh}");
    let (reference, usage) = ask(&question, 16);
    let prompt_tokens = usage["prompt_tokens"].as_u64().unwrap();
    assert!(
        usage["prompt_tokens_details"]["cached_tokens"].as_u64().unwrap() < prompt_tokens / 2,
        "{usage}"
    );

    // Prefill, then the same request: every prompt token comes from the cache.
    ask(&other, 4);
    let (_, prefill) = ask(&question, 1);
    assert_eq!(prefill["completion_tokens"], 1);
    let (answer, usage) = ask(&question, 16);
    assert_eq!(usage["prompt_tokens"].as_u64().unwrap(), prompt_tokens);
    assert_eq!(
        usage["prompt_tokens_details"]["cached_tokens"].as_u64().unwrap(),
        prompt_tokens,
        "{usage}"
    );
    assert_eq!(answer, reference, "the reply from the prefilled cache differs");

    // The next turn extends the same conversation: its prefix (question and answer) is
    // cached, only the new part is evaluated.
    let mut next = question.as_array().unwrap().clone();
    next.push(json!({"role": "assistant", "content": answer}));
    next.push(json!({"role": "user", "content": "And one more?"}));
    let (_, usage) = ask(&Value::Array(next), 4);
    let cached = usage["prompt_tokens_details"]["cached_tokens"].as_u64().unwrap();
    assert!(
        cached >= prompt_tokens && cached < usage["prompt_tokens"].as_u64().unwrap(),
        "{usage}"
    );
}

/// Issue 20: the words so far, sent while the user still speaks (`"open": true`), are
/// evaluated up to the end of their text and nothing is generated; each longer version
/// evaluates only its new words, and the finished message only its last words and the
/// markup that closes it — and is answered exactly as a request that evaluated everything.
#[test]
#[ignore = "needs the SmolLM2 model that scripts/test.sh fetches into HARK_MODELS_DIR"]
fn words_still_being_spoken_are_evaluated_ahead_and_the_finished_message_only_adds_its_end() {
    let model = model();
    let server = start(&model, 2048);
    let ask = |msgs: &Value, extra: Value| -> Value {
        let (status, body) = request(server.port, "POST", "/v1/chat/completions", &chat(msgs.clone(), extra));
        assert_eq!(status, 200, "{body}");
        serde_json::from_str(&body).unwrap()
    };
    let cached = |v: &Value| v["usage"]["prompt_tokens_details"]["cached_tokens"].as_u64().unwrap();
    let prompt = |v: &Value| v["usage"]["prompt_tokens"].as_u64().unwrap();
    let system = json!({"role": "system", "content": "You are a helpful assistant. Answer in one short sentence."});
    let said = |text: &str| json!([system.clone(), {"role": "user", "content": text}]);
    let other = json!([{"role": "system", "content": "You answer in French."},
                       {"role": "user", "content": "Bonjour, comment vas-tu ?"}]);
    let question = "What are the three primary colours of light?";

    // The reference: the finished question evaluated from scratch.
    ask(&other, json!({"max_tokens": 4}));
    let reference = ask(&said(question), json!({"max_tokens": 16}));
    assert!(cached(&reference) < prompt(&reference) / 2, "{reference}");

    // The words as they come, each left open.
    ask(&other, json!({"max_tokens": 4}));
    let mut before = 0;
    for words in [
        "What are",
        "What are the three primary",
        "What are the three primary colours of light?",
    ] {
        let v = ask(&said(words), json!({"max_tokens": 16, "open": true}));
        assert_eq!(v["choices"][0]["message"]["content"], "", "nothing is generated: {v}");
        assert_eq!(v["choices"][0]["finish_reason"], "length");
        assert_eq!(v["usage"]["completion_tokens"], 0);
        // Only the new words are evaluated (the last word before them may be again: a
        // longer text can tokenize it differently).
        assert!(
            before == 0 || cached(&v) + 1 >= before,
            "{words:?}: {v} (before: {before} tokens)"
        );
        assert!(prompt(&v) > before, "{words:?}: {v}");
        before = prompt(&v);
    }
    // The whole question, left open, is its finished prompt without the closing markup.
    assert!(before < prompt(&reference), "{before} against {reference}");

    // The finished question evaluates only the markup that closes it and opens the reply,
    // and its reply is the one evaluated from scratch.
    let finished = ask(&said(question), json!({"max_tokens": 16}));
    assert_eq!(prompt(&finished), prompt(&reference));
    assert!(cached(&finished) + 1 >= before, "{finished} (open: {before} tokens)");
    assert_eq!(
        finished["choices"][0]["message"]["content"], reference["choices"][0]["message"]["content"],
        "the reply after the open prompts differs"
    );

    // Bad values are refused by name.
    for (extra, says) in [
        (json!({"open": "yes"}), "open: \\\"yes\\\" is not a boolean"),
        (
            json!({"open": true, "ahead": true}),
            "open: a message still being spoken has no reply to generate ahead",
        ),
    ] {
        let (status, body) = request(
            server.port,
            "POST",
            "/v1/chat/completions",
            &chat(said(question), extra),
        );
        assert_eq!(status, 400, "{body}");
        assert!(body.contains(says), "{body}");
    }
}

/// A streamed request on its own thread; `started` is told once the first text arrives.
/// Returns the text, the finish reason and the usage.
fn stream_in_background(
    port: u16,
    body: Value,
    started: std::sync::mpsc::Sender<()>,
) -> std::thread::JoinHandle<(String, String, Value)> {
    std::thread::spawn(move || {
        let body = body.to_string();
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        write!(
            s,
            "POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\nauthorization: Bearer {TOKEN}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        let mut told = false;
        loop {
            let n = s.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            out.extend_from_slice(&buf[..n]);
            if !told && String::from_utf8_lossy(&out).contains("\"content\"") {
                let _ = started.send(());
                told = true;
            }
        }
        let text = String::from_utf8_lossy(&out).to_string();
        let (_, body) = text.split_once("\r\n\r\n").unwrap();
        let chunks: Vec<Value> = dechunk(body)
            .split("\n\n")
            .filter_map(|e| e.strip_prefix("data: "))
            .filter(|e| *e != "[DONE]")
            .map(|e| serde_json::from_str(e).unwrap())
            .collect();
        let content = chunks
            .iter()
            .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
            .collect();
        let finish = chunks
            .iter()
            .find_map(|c| c["choices"][0]["finish_reason"].as_str())
            .unwrap_or_default()
            .to_string();
        (content, finish, chunks.last().unwrap()["usage"].clone())
    })
}

/// Issue 12: a reply generated ahead (`"ahead": true`, a transcript made while the key is
/// still held) is the reply of the request that confirms it — taken over while it is
/// still being generated, or given whole once it is done — and exactly what that request
/// would have got on its own; any other request stops it at once, and a finished one is
/// given once only.
#[test]
#[ignore = "needs the SmolLM2 model that scripts/test.sh fetches into HARK_MODELS_DIR"]
fn a_reply_generated_ahead_goes_to_the_request_that_confirms_it_and_another_request_stops_it() {
    let model = model();
    let server = start(&model, 2048);
    let ask = |msgs: &Value, extra: Value| -> (String, Value) {
        let (status, body) = request(server.port, "POST", "/v1/chat/completions", &chat(msgs.clone(), extra));
        assert_eq!(status, 200, "{body}");
        let v: Value = serde_json::from_str(&body).unwrap();
        (
            v["choices"][0]["message"]["content"].as_str().unwrap().to_string(),
            v["usage"].clone(),
        )
    };
    let cached = |u: &Value| u["prompt_tokens_details"]["cached_tokens"].as_u64().unwrap();
    let long = json!([{"role": "user", "content": "Write a long story about a dragon who learns to read."}]);
    let other = json!([{"role": "system", "content": "You answer in French."},
                       {"role": "user", "content": "Bonjour, comment vas-tu ?"}]);
    let limit = json!({"max_tokens": 400});
    let ahead = json!({"max_tokens": 400, "ahead": true, "stream": true, "stream_options": {"include_usage": true}});

    // The reference: the request on its own, evaluated from scratch.
    ask(&other, json!({"max_tokens": 4}));
    let (reference, usage) = ask(&long, limit.clone());
    let prompt_tokens = usage["prompt_tokens"].as_u64().unwrap();
    let reference_tokens = usage["completion_tokens"].as_u64().unwrap();
    assert!(reference_tokens > 100, "a long reply to take over: {usage}");

    // Taken over while it runs: the ahead client's reply ends where the request came, the
    // request gets everything, the same as the reference.
    ask(&other, json!({"max_tokens": 4}));
    let (tx, started) = std::sync::mpsc::channel();
    let early = stream_in_background(server.port, chat(long.clone(), ahead.clone()), tx);
    // Its first token comes within ~1 s (SmolLM2 135M); 60 s only catches a hang.
    started
        .recv_timeout(Duration::from_secs(60))
        .expect("the reply ahead started");
    let (answer, usage) = ask(&long, limit.clone());
    assert_eq!(answer, reference, "the reply taken over differs from the request's own");
    assert_eq!(usage["completion_tokens"].as_u64().unwrap(), reference_tokens);
    assert_eq!(
        cached(&usage),
        prompt_tokens,
        "evaluated before the request came: {usage}"
    );
    let (early_text, early_finish, early_usage) = early.join().unwrap();
    assert_eq!(early_finish, "length");
    assert!(
        early_usage["completion_tokens"].as_u64().unwrap() < reference_tokens && reference.starts_with(&early_text),
        "the ahead client's reply ends at the take-over: {early_usage} {early_text:?}"
    );

    // Done before the request comes: given whole, once.
    ask(&other, json!({"max_tokens": 4}));
    let (tx, _started) = std::sync::mpsc::channel();
    let (done_text, _, _) = stream_in_background(server.port, chat(long.clone(), ahead.clone()), tx)
        .join()
        .unwrap();
    assert_eq!(done_text, reference);
    // Given, not generated: every prompt token counts as cached (a reply generated again
    // from the cache evaluates the prompt's last token anew, as the second ask shows).
    // Which one happened is read from the usage, not from a stopwatch (issue 21).
    let (answer, usage) = ask(&long, limit.clone());
    assert_eq!(answer, reference);
    assert_eq!(cached(&usage), prompt_tokens, "given whole: {usage}");
    let (answer, usage) = ask(&long, limit.clone());
    assert_eq!(answer, reference);
    assert!(
        cached(&usage) < prompt_tokens,
        "generated again, not given twice: {usage}"
    );

    // Another request stops it at its next token, and what it made is not given later.
    let (tx, started) = std::sync::mpsc::channel();
    ask(&other, json!({"max_tokens": 4}));
    let stopped = stream_in_background(server.port, chat(long.clone(), ahead), tx);
    started
        .recv_timeout(Duration::from_secs(60))
        .expect("the reply ahead started");
    let (_, usage) = ask(&other, json!({"max_tokens": 4}));
    assert_eq!(usage["completion_tokens"], 4);
    let (_, finish, stopped_usage) = stopped.join().unwrap();
    assert_eq!(finish, "length");
    assert!(
        stopped_usage["completion_tokens"].as_u64().unwrap() < reference_tokens,
        "{stopped_usage}"
    );
    let (_, usage) = ask(&long, limit);
    assert!(cached(&usage) < prompt_tokens / 2, "evaluated again: {usage}");

    // A bad value is refused by name.
    let (status, body) = request(
        server.port,
        "POST",
        "/v1/chat/completions",
        &chat(long, json!({"ahead": "yes"})),
    );
    assert_eq!(status, 400);
    assert!(body.contains("ahead: \\\"yes\\\" is not a boolean"), "{body}");
}

/// The server answers a plain request (after requests it refused).
fn still_answers(server: &Server) {
    let (status, _) = request(
        server.port,
        "POST",
        "/v1/chat/completions",
        &chat(json!([{"role": "user", "content": "Hi"}]), json!({"max_tokens": 4})),
    );
    assert_eq!(status, 200);
}

/// llama.cpp's own invalid requests (`tools/server/tests/unit/test_chat_completion.py`,
/// `test_invalid_chat_completion_req`): each is refused with 400 and an error body naming
/// the problem, and the server answers the next request.
#[test]
#[ignore = "needs the SmolLM2 model that scripts/test.sh fetches into HARK_MODELS_DIR"]
fn llama_cpp_s_invalid_chat_requests_are_refused_with_400() {
    let model = model();
    let server = start(&model, 512);
    let cases = [
        json!(null),
        json!("string"),
        json!([123]),
        json!([{}]),
        json!([{"role": 123}]),
        json!([{"role": "system", "content": 123}]),
        json!([{"role": "system", "content": "test"}, {}]),
        json!([{"role": "user", "content": "test"}, {"role": "assistant", "content": "test"}, {"role": "assistant", "content": "test"}]),
    ];
    let mut wrong = Vec::new();
    for messages in cases {
        let (status, body) = request(
            server.port,
            "POST",
            "/v1/chat/completions",
            &json!({"messages": messages}),
        );
        let error = serde_json::from_str::<Value>(&body)
            .ok()
            .map(|v| v["error"]["message"].clone());
        match (status, error) {
            (400, Some(Value::String(m))) if !m.is_empty() => println!("{messages} -> 400: {m}"),
            (status, _) => wrong.push(format!("{messages} -> {status}: {body}")),
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    still_answers(&server);
}

/// Issue 46: the official OpenAI clients (PyPI `openai`, sync and async; npm `openai`) and
/// the Vercel AI SDK (npm `ai` with `@ai-sdk/openai-compatible`, which checks every
/// streamed chunk against its schema) get from hark-llm what they get from OpenAI's API:
/// the model list, plain and streamed replies, each SDK's stream accumulator, `finish_reason:
/// "length"`, a tool call and its result in the history, an image part refused with 400, a
/// wrong token with 401, an unknown path with 404, and a client that hangs up frees the
/// model. The clients are installed by scripts/llm-clients.sh (pinned); each prints a line
/// per check.
#[test]
#[ignore = "needs the SmolLM2 model and the clients scripts/test.sh installs"]
fn the_official_openai_clients_and_the_vercel_ai_sdk_get_what_openai_s_api_gives() {
    let model = model();
    let server = start(&model, 2048);
    let base = format!("http://127.0.0.1:{}/v1", server.port);
    let var = |name: &str| {
        std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set: run the tests through scripts/test.sh"))
    };
    let here = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/llm-clients");
    // The Node script runs beside the installed packages (ES modules resolve from the
    // script's folder).
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(here.join("node_clients.mjs"), dir.path().join("node_clients.mjs")).unwrap();
    std::os::unix::fs::symlink(
        std::path::Path::new(&var("HARK_TEST_LLM_CLIENTS")).join("node_modules"),
        dir.path().join("node_modules"),
    )
    .unwrap();
    let runs = [
        (var("HARK_TEST_LLM_PYTHON"), here.join("openai_python.py")),
        (var("HARK_TEST_LLM_NODE"), dir.path().join("node_clients.mjs")),
    ];
    let mut report = String::new();
    let mut passed = 0;
    let mut ok = true;
    for (program, script) in runs {
        let o = Command::new(program)
            .arg(&script)
            .args([&base, TOKEN, "smol"])
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&o.stdout);
        passed += out.lines().filter(|l| l.starts_with("ok ")).count();
        ok &= o.status.success();
        report.push_str(&out);
        report.push_str(&String::from_utf8_lossy(&o.stderr));
    }
    println!("{report}{passed} checks passed");
    assert!(ok, "{report}");
    assert_eq!(passed, 18, "{report}");
}

#[test]
#[ignore = "needs the SmolLM2 model that scripts/test.sh fetches into HARK_MODELS_DIR"]
fn bad_requests_and_oversized_prompts_are_refused_in_the_openai_error_format() {
    let model = model();
    let server = start(&model, 512);
    let (status, body) = request(
        server.port,
        "POST",
        "/v1/chat/completions",
        &json!({"messages": [{"role": "narrator", "content": "x"}]}),
    );
    assert_eq!(status, 400);
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["error"]["type"], "invalid_request_error");
    assert_eq!(v["error"]["message"], "messages[0].role: unknown role \"narrator\"");

    let long = "word ".repeat(2000);
    let (status, body) = request(
        server.port,
        "POST",
        "/v1/chat/completions",
        &chat(json!([{"role": "user", "content": long}]), json!({"stream": true})),
    );
    assert_eq!(status, 400, "refused before streaming starts");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["error"]["code"], "context_length_exceeded");
    assert!(v["error"]["message"]
        .as_str()
        .unwrap()
        .contains("maximum context length is 512 tokens"));

    // The server is still fine afterwards.
    still_answers(&server);
}

#[test]
#[ignore = "needs the SmolLM2 model that scripts/test.sh fetches into HARK_MODELS_DIR"]
fn a_client_that_hangs_up_stops_the_generation() {
    let model = model();
    let server = start(&model, 2048);
    // A long generation, read for a moment, then the connection closes (a barge-in).
    let body = chat(
        json!([{"role": "user", "content": "Count from one to one thousand in words."}]),
        json!({"max_tokens": 1500, "stream": true}),
    )
    .to_string();
    {
        let mut s = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
        write!(
            s,
            "POST /v1/chat/completions HTTP/1.1\r\nhost: localhost\r\nauthorization: Bearer {TOKEN}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut buf = [0u8; 2048];
        let _ = s.read(&mut buf).unwrap();
    }
    // The server notices at its next token and stops (it does not generate 1,500 tokens
    // for nobody); then it serves the next request. It stops within a token (~20 ms);
    // 60 s only catches a server that generates on.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (_, body) = request(server.port, "GET", "/health", &Value::Null);
        let v: Value = serde_json::from_str(&body).unwrap();
        if v["abandoned_generations"] == 1 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the abandoned generation was not stopped: {v}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let (status, body) = request(
        server.port,
        "POST",
        "/v1/chat/completions",
        &chat(json!([{"role": "user", "content": "Hi"}]), json!({"max_tokens": 4})),
    );
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert!(v["usage"]["completion_tokens"].as_u64().unwrap() <= 4);
}

#[test]
#[ignore = "needs the SmolLM2 model that scripts/test.sh fetches into HARK_MODELS_DIR"]
fn the_server_exits_when_its_parent_closes_the_stdin_pipe() {
    let model = model();
    let mut server = start(&model, 512);
    assert!(server.child.try_wait().unwrap().is_none(), "running");
    // What happens when the parent goes away, however it goes: the pipe closes.
    drop(server.child.stdin.take());
    // It exits within ~0.1 s of the pipe closing; 30 s only catches one that stays.
    let deadline = Instant::now() + Duration::from_secs(30);
    while server.child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "hark-llm kept running without its parent");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(server.child.wait().unwrap().success());
}

/// Issue 9: any local program (or a web page through DNS rebinding) could use the model,
/// and refusals were not all in the OpenAI error shape.
#[test]
#[ignore = "needs the SmolLM2 model that scripts/test.sh fetches into HARK_MODELS_DIR"]
fn only_the_launching_parent_may_use_the_server_and_every_refusal_is_openai_json() {
    let model = model();
    let server = start(&model, 512);
    let p = server.port;
    let body = chat(json!([{"role": "user", "content": "Hi"}]), json!({"max_tokens": 2})).to_string();
    let host = format!("host: 127.0.0.1:{p}\r\n");
    let json_ct = "content-type: application/json\r\n";
    let auth = format!("authorization: Bearer {TOKEN}\r\n");
    let cases: Vec<(String, &str, &str, u16, &str)> = vec![
        (
            format!("{host}{json_ct}"),
            "POST",
            "/v1/chat/completions",
            401,
            "authentication_error",
        ),
        (
            format!("{host}{json_ct}authorization: Bearer wrong-token-0000000\r\n"),
            "POST",
            "/v1/chat/completions",
            401,
            "authentication_error",
        ),
        (
            format!("host: evil.example:{p}\r\n{json_ct}{auth}"),
            "POST",
            "/v1/chat/completions",
            403,
            "permission_error",
        ),
        (
            format!("{host}content-type: text/plain\r\n{auth}"),
            "POST",
            "/v1/chat/completions",
            415,
            "invalid_request_error",
        ),
        (format!("{host}{auth}"), "GET", "/v1/nothing", 404, "not_found_error"),
        (
            format!("{host}{auth}"),
            "GET",
            "/v1/chat/completions",
            405,
            "invalid_request_error",
        ),
    ];
    for (headers, method, path, want, kind) in cases {
        let (status, text) = raw(p, method, path, &headers, if method == "POST" { &body } else { "" });
        assert_eq!(status, want, "{method} {path} with {headers:?}: {text}");
        let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
        assert_eq!(v["error"]["type"], kind, "{text}");
        assert!(v["error"]["message"].as_str().is_some_and(|m| !m.is_empty()));
    }
    let (status, text) = raw(
        p,
        "POST",
        "/v1/chat/completions",
        &format!("{host}{json_ct}{auth}"),
        &"x".repeat(5 * 1024 * 1024),
    );
    assert_eq!(status, 413, "{}", &text[..text.len().min(200)]);
    let v: Value = serde_json::from_str(&text).unwrap();
    assert!(v["error"]["message"].as_str().unwrap().contains("larger than"));
    // With the token, a loopback Host and JSON, it answers.
    let (status, _) = raw(
        p,
        "POST",
        "/v1/chat/completions",
        &format!("{host}{json_ct}{auth}"),
        &body,
    );
    assert_eq!(status, 200);
    let (status, text) = request(p, "GET", "/health", &Value::Null);
    assert_eq!(status, 200);
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap()["status"], "ok");
}

/// Resident memory of a process, in MB (Linux).
fn rss_mb(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .unwrap()
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .unwrap();
    kb / 1024.0
}

#[test]
#[ignore = "needs the SmolLM2 model that scripts/test.sh fetches into HARK_MODELS_DIR"]
fn an_idle_model_is_unloaded_its_memory_returned_and_the_next_request_reloads_it() {
    let model = model();
    let server = start_with(&model, 1024, &["--unload-after", "1"]);
    let health = |port| -> Value { serde_json::from_str(&request(port, "GET", "/health", &Value::Null).1).unwrap() };
    assert_eq!(health(server.port)["loaded"], true);
    let msgs = json!([{"role": "user", "content": "Name a colour."}]);
    let ask = || {
        let (status, body) = request(
            server.port,
            "POST",
            "/v1/chat/completions",
            &chat(msgs.clone(), json!({"max_tokens": 8})),
        );
        assert_eq!(status, 200, "{body}");
        let v: Value = serde_json::from_str(&body).unwrap();
        v["choices"][0]["message"]["content"].as_str().unwrap().to_string()
    };
    let first = ask();
    let loaded_rss = rss_mb(server.child.id());
    // Unloaded ~1 s after its 1 s idle limit; 20 s only catches an unloader that never runs.
    let deadline = Instant::now() + Duration::from_secs(20);
    while health(server.port)["loaded"] == true {
        assert!(Instant::now() < deadline, "still loaded 20 s after a 1 s idle limit");
        std::thread::sleep(Duration::from_millis(100));
    }
    let unloaded_rss = rss_mb(server.child.id());
    assert!(
        unloaded_rss < loaded_rss - 50.0,
        "unloading returns the model's memory: {loaded_rss:.0} MB loaded, {unloaded_rss:.0} MB unloaded"
    );
    // The next request loads it again and gets the same answer (temperature 0).
    assert_eq!(ask(), first);
    assert_eq!(health(server.port)["loaded"], true);
}
