//! # Loopback provider servers for Hark's tests
//!
//! # Layout
//! - [`FakeLlm`]: an HTTP/1.1 server on `127.0.0.1:0` that speaks the Anthropic Messages or
//!   OpenAI Chat Completions wire format byte for byte (SSE framing, chunked transfer,
//!   usage events, error bodies and status codes), validates requests the way the real APIs
//!   do (key, version header, role alternation), records every request, and answers like a
//!   tiny model with a memory: "My name is Sam" ... "What's my name?" → "Your name is Sam."
//!   only if the earlier turn was actually sent. When the request offers tools it calls
//!   them as a model would ("remember that ..." → `remember_fact`, "what time is it" →
//!   `get_current_time`) and answers from the tool result that comes back.
//! - [`Behaviour`]: scripted failures for the next requests (status errors, cuts, stalls).
//! - `speech::FakeSpeech`: Deepgram (`/v1/listen` over HTTP and WebSocket, `/v1/speak`)
//!   and OpenAI (`/v1/audio/transcriptions`, `/v1/audio/speech`) speech endpoints.
//! - [`keychain`]: helpers for tests against the real Secret Service.
//! - [`recording`]: recording the virtual speaker, stopped even when a test fails.

pub mod mirror;
pub mod recording;
pub mod speech;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Which provider the server imitates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    Anthropic,
    OpenAi,
}

/// What the server does with one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Behaviour {
    /// Answer like the memory model (the default when nothing is queued).
    Answer,
    /// Stream this exact text.
    Text(String),
    /// Answer with an HTTP error status and the provider's error body.
    Status {
        status: u16,
        error_type: String,
        message: String,
        retry_after: Option<String>,
    },
    /// Stream `n` deltas of the answer, then drop the connection mid-body.
    CutAfter(usize),
    /// Stream `n` deltas, then go silent (the connection stays open) for this long.
    StallAfter(usize, Duration),
    /// Stream `n` deltas, then the provider's in-stream error event (overloaded).
    ErrorEventAfter(usize),
    /// A 200 whose event data is not JSON.
    Garbage,
    /// Stream a call of this tool with these arguments (a JSON text) instead of text.
    CallTool { name: String, arguments: String },
    /// Answer `307 Temporary Redirect` to this `Location` (a moved or hijacked endpoint).
    Redirect(String),
    /// Stream this recorded response body byte for byte (a vendor's recorded stream), an
    /// event at a time, each event split in two chunks.
    Replay(String),
}

/// One request as received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON (`Null` when it is not JSON).
    pub body: Value,
    /// The body as sent.
    pub raw: Vec<u8>,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The names of the tools the request offered, in either wire format.
    pub fn offered_tools(&self) -> Vec<String> {
        self.body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["name"].as_str().or(t["function"]["name"].as_str()))
            .map(str::to_string)
            .collect()
    }

    /// The body as text.
    pub fn raw_text(&self) -> String {
        String::from_utf8_lossy(&self.raw).to_string()
    }

    /// The conversation messages as (role, text) pairs, system excluded, for either flavor.
    pub fn messages(&self) -> Vec<(String, String)> {
        self.body["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|m| m["role"] != "system")
            .map(|m| {
                (
                    m["role"].as_str().unwrap_or_default().to_string(),
                    text_of(&m["content"]),
                )
            })
            .collect()
    }

    /// The system prompt, for either flavor.
    pub fn system(&self) -> Option<String> {
        if let Some(s) = self.body.get("system") {
            return Some(text_of(s));
        }
        self.body["messages"]
            .as_array()
            .and_then(|a| a.iter().find(|m| m["role"] == "system"))
            .map(|m| text_of(&m["content"]))
    }
}

fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str().or(b["content"].as_str()))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

struct Shared {
    flavor: Flavor,
    key: Option<String>,
    script: Mutex<VecDeque<Behaviour>>,
    requests: Mutex<Vec<Recorded>>,
    /// Delay between streamed chunks.
    chunk_delay: Mutex<Duration>,
    /// The prompt cache: prefixes written (Anthropic: at breakpoints; OpenAI: every prompt).
    cache: Mutex<Vec<Vec<String>>>,
}

/// A loopback LLM server. It runs on its own thread and runtime so that both async tests and
/// tests that spawn the `hark` binary can use it; it stops when the test process ends.
pub struct FakeLlm {
    port: u16,
    shared: Arc<Shared>,
}

impl FakeLlm {
    /// An Anthropic Messages server that accepts exactly `key` in `x-api-key`.
    pub fn anthropic(key: &str) -> Self {
        Self::start(Flavor::Anthropic, Some(key.to_string()))
    }

    /// An OpenAI-compatible server; `Some(key)` requires `Authorization: Bearer key`.
    pub fn openai(key: Option<&str>) -> Self {
        Self::start(Flavor::OpenAi, key.map(str::to_string))
    }

    fn start(flavor: Flavor, key: Option<String>) -> Self {
        let shared = Arc::new(Shared {
            flavor,
            key,
            script: Mutex::new(VecDeque::new()),
            requests: Mutex::new(Vec::new()),
            chunk_delay: Mutex::new(Duration::from_millis(1)),
            cache: Mutex::new(Vec::new()),
        });
        let s = shared.clone();
        let port = serve(move |sock| tokio::spawn(handle(sock, s.clone())));
        Self { port, shared }
    }

    /// The base URL to configure: `http://127.0.0.1:PORT` (Anthropic) or `.../v1` (OpenAI).
    pub fn base_url(&self) -> String {
        match self.shared.flavor {
            Flavor::Anthropic => format!("http://127.0.0.1:{}", self.port),
            Flavor::OpenAi => format!("http://127.0.0.1:{}/v1", self.port),
        }
    }

    /// Queues a behaviour for the next request not yet scripted.
    pub fn push(&self, b: Behaviour) {
        self.shared.script.lock().expect("script").push_back(b);
    }

    /// Sets the delay between streamed chunks.
    pub fn set_chunk_delay(&self, d: Duration) {
        *self.shared.chunk_delay.lock().expect("delay") = d;
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.requests.lock().expect("requests").clone()
    }

    /// The last request received.
    pub fn last(&self) -> Recorded {
        self.requests().pop().expect("at least one request")
    }

    /// The last request of a conversation turn (background summary folds left out: they may
    /// arrive after the turn's own request).
    pub fn last_turn(&self) -> Recorded {
        self.requests()
            .into_iter()
            .rev()
            .find(|r| !r.system().unwrap_or_default().contains("running summary"))
            .expect("at least one turn request")
    }
}

/// Runs a loopback TCP server on its own thread and runtime (so async tests and tests that
/// spawn binaries can both use it), calling `on_connection` for each accepted socket from
/// inside that runtime. Returns the port. It stops when the test process ends.
pub(crate) fn serve(on_connection: impl Fn(TcpStream) -> tokio::task::JoinHandle<()> + Send + 'static) -> u16 {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("test runtime");
        rt.block_on(async move {
            let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind loopback");
            tx.send(listener.local_addr().expect("addr").port())
                .expect("report port");
            loop {
                if let Ok((sock, _)) = listener.accept().await {
                    on_connection(sock);
                }
            }
        });
    });
    rx.recv().expect("server started")
}

/// The memory model: answers from the messages it was sent.
pub fn answer(messages: &[(String, String)], system: Option<&str>) -> String {
    let users: Vec<&str> = messages
        .iter()
        .filter(|(r, _)| r == "user")
        .map(|(_, t)| t.as_str())
        .collect();
    let Some(last) = users.last() else {
        return "Hello!".into();
    };
    // Asked to fold a summary: keep what the user said about themselves, drop the rest.
    if system.is_some_and(|s| s.contains("running summary")) {
        let kept: Vec<&str> = last
            .lines()
            .map(|l| {
                l.trim_start_matches("User: ")
                    .trim_start_matches("The user said: ")
                    .trim()
            })
            .filter(|l| l.to_lowercase().contains("my name is") && !l.starts_with("Hark:"))
            .collect();
        return if kept.is_empty() {
            "Nothing about the user yet.".into()
        } else {
            format!("The user said: {}", kept.join(" "))
        };
    }
    let lower = last.to_lowercase();
    let name_in = |t: &str| -> Option<String> {
        let l = t.to_lowercase();
        let i = l.find("my name is ")?;
        let rest = &t[i + "my name is ".len()..];
        let name: String = rest.chars().take_while(|c| c.is_alphanumeric()).collect();
        (!name.is_empty()).then_some(name)
    };
    if lower.contains("what's my name") || lower.contains("what is my name") {
        let earlier = users[..users.len() - 1]
            .iter()
            .rev()
            .find_map(|t| name_in(t))
            .or_else(|| system.and_then(name_in));
        return match earlier {
            Some(n) => format!("Your name is {n}."),
            None => "I don't know your name yet.".into(),
        };
    }
    if let Some(n) = name_in(last) {
        return format!("Nice to meet you, {n}!");
    }
    format!("You said: {last}")
}

/// The tool the memory model calls for an utterance, if it is offered.
fn choose_tool(utterance: &str, offered: &dyn Fn(&str) -> bool) -> Option<(String, String)> {
    let lower = utterance.to_lowercase();
    let after = |prefix: &str| -> Option<String> {
        let i = lower.find(prefix)?;
        let rest = utterance[i + prefix.len()..].trim().trim_end_matches(['.', '!']);
        (!rest.is_empty()).then(|| rest.to_string())
    };
    if lower.contains("what time is it") && offered("get_current_time") {
        return Some(("get_current_time".into(), "{}".into()));
    }
    if offered("forget_fact") {
        if let Some(fact) = after("forget that ") {
            return Some(("forget_fact".into(), json!({ "fact": fact }).to_string()));
        }
    }
    if offered("remember_fact") {
        if let Some(fact) = after("remember that ") {
            return Some(("remember_fact".into(), json!({ "fact": fact }).to_string()));
        }
    }
    None
}

/// The content of the newest tool result when the request ends with tool results (the
/// model is being asked to go on after its calls).
fn last_tool_result(flavor: Flavor, body: &Value) -> Option<String> {
    let last = body["messages"].as_array()?.last()?;
    match flavor {
        Flavor::OpenAi => (last["role"] == "tool").then(|| text_of(&last["content"])),
        Flavor::Anthropic => {
            let blocks = last["content"].as_array()?;
            let results: Vec<&Value> = blocks.iter().filter(|b| b["type"] == "tool_result").collect();
            // Tool results, possibly followed by a late note: nothing the user said.
            let user_text = blocks
                .iter()
                .any(|b| b["type"] == "text" && !b["text"].as_str().unwrap_or_default().starts_with("[note]"));
            if user_text {
                return None;
            }
            results.last().map(|r| text_of(&r["content"]))
        }
    }
}

/// A pseudo-random id suffix.
fn rand_id() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(1);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or_default();
    t ^ N.fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed)
}

/// Splits a JSON text into three pieces, as providers stream tool arguments.
fn split_json(arguments: &str) -> Vec<String> {
    let chars: Vec<char> = arguments.chars().collect();
    let n = chars.len().div_ceil(3).max(1);
    chars.chunks(n).map(|c| c.iter().collect()).collect()
}

/// Splits a reply into streaming deltas (word by word, spaces kept).
fn deltas(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for c in text.chars() {
        cur.push(c);
        if c == ' ' {
            out.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// One HTTP/1.1 request read off a loopback connection (head and `content-length` body), or
/// `None` if the connection ended first.
pub async fn read_request(sock: &mut TcpStream) -> Option<Recorded> {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 8192];
    let head_end = loop {
        let n = sock.read(&mut tmp).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&tmp[..n]);
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_string();
    let path = first.next()?.to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let len: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    while buf.len() < head_end + len {
        let n = sock.read(&mut tmp).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&tmp[..n]);
    }
    let raw = buf[head_end..head_end + len].to_vec();
    let body = serde_json::from_slice(&raw).unwrap_or(Value::Null);
    Some(Recorded {
        method,
        path,
        headers,
        body,
        raw,
    })
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        529 => "Site Overloaded",
        _ => "Error",
    }
}

fn error_body(flavor: Flavor, error_type: &str, message: &str) -> Value {
    match flavor {
        Flavor::Anthropic => {
            json!({"type": "error", "error": {"type": error_type, "message": message}})
        }
        Flavor::OpenAi => {
            json!({"error": {"message": message, "type": error_type, "param": null, "code": error_type}})
        }
    }
}

pub(crate) async fn send_status(sock: &mut TcpStream, status: u16, body: &Value, retry_after: Option<&str>) {
    let body = body.to_string();
    let extra = retry_after.map(|r| format!("retry-after: {r}\r\n")).unwrap_or_default();
    let head = format!(
        "HTTP/1.1 {status} {}\r\ncontent-type: application/json\r\n{extra}content-length: {}\r\nconnection: close\r\n\r\n",
        reason(status),
        body.len()
    );
    let _ = sock.write_all(head.as_bytes()).await;
    let _ = sock.write_all(body.as_bytes()).await;
    let _ = sock.shutdown().await;
}

/// The prompt's blocks in the order a provider caches them (Anthropic: tools, system,
/// messages; OpenAI: messages), each without its `cache_control`, with whether it carries
/// one (a breakpoint).
fn cache_blocks(body: &Value) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let mut push = |role: &str, block: &Value| {
        let mut b = block.clone();
        let bp = b.as_object_mut().and_then(|o| o.remove("cache_control")).is_some();
        out.push((format!("{role}:{b}"), bp));
    };
    for t in body["tools"].as_array().into_iter().flatten() {
        push("tool", t);
    }
    match &body["system"] {
        Value::Array(blocks) => blocks.iter().for_each(|b| push("system", b)),
        Value::String(s) => push("system", &json!({"type": "text", "text": s})),
        _ => {}
    }
    for m in body["messages"].as_array().into_iter().flatten() {
        let role = m["role"].as_str().unwrap_or_default();
        match &m["content"] {
            Value::Array(blocks) => blocks.iter().for_each(|b| push(role, b)),
            other => push(role, &json!({"type": "text", "text": other})),
        }
    }
    out
}

/// The body with every `cache_control` key removed.
fn without_cache_control(v: &Value) -> Value {
    match v {
        Value::Object(o) => Value::Object(
            o.iter()
                .filter(|(k, _)| k.as_str() != "cache_control")
                .map(|(k, v)| (k.clone(), without_cache_control(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(without_cache_control).collect()),
        other => other.clone(),
    }
}

/// The smallest prefix either provider caches, in tokens (Anthropic's minimum for most
/// models; OpenAI caches prompts from 1,024 tokens on, in steps of 128).
const CACHE_MIN_TOKENS: u64 = 1024;

/// Prompt caching as each API documents it: `(cached tokens read, tokens written)`.
/// Anthropic: the prompt up to each `cache_control` block is written; the longest prefix
/// written before (up to the last breakpoint) is read. OpenAI: automatic — every prompt
/// is written, the longest prefix seen before is read, in 128-token steps. Tokens are
/// estimated at four characters each, as for `input_tokens`.
fn prompt_cache(flavor: Flavor, body: &Value, cache: &mut Vec<Vec<String>>) -> (u64, u64) {
    let blocks = cache_blocks(body);
    let keys: Vec<String> = blocks.iter().map(|(k, _)| k.clone()).collect();
    let tokens = |n: usize| keys[..n].iter().map(String::len).sum::<usize>() as u64 / 4;
    // The longest prefix (in blocks) that an earlier request wrote.
    // Anthropic reads a prefix written whole at a breakpoint; OpenAI any prefix of an
    // earlier prompt.
    let hit = |cache: &Vec<Vec<String>>, upto: usize, whole: bool| {
        (1..=upto)
            .rev()
            .find(|&n| {
                cache
                    .iter()
                    .any(|c| (c.len() == n || (!whole && c.len() > n)) && c[..n] == keys[..n])
            })
            .unwrap_or(0)
    };
    match flavor {
        Flavor::Anthropic => {
            let Some(last_bp) = blocks.iter().rposition(|(_, bp)| *bp).map(|i| i + 1) else {
                return (0, 0);
            };
            // Anthropic stores the prefix at each breakpoint itself; only those count as written.
            let read = hit(cache, last_bp, true);
            let read_tokens = if tokens(read) >= CACHE_MIN_TOKENS {
                tokens(read)
            } else {
                0
            };
            let mut written = 0;
            for (i, (_, bp)) in blocks.iter().enumerate() {
                if *bp && tokens(i + 1) >= CACHE_MIN_TOKENS && !cache.iter().any(|c| c[..] == keys[..=i]) {
                    cache.push(keys[..=i].to_vec());
                    written = tokens(i + 1).saturating_sub(read_tokens);
                }
            }
            (read_tokens, written)
        }
        Flavor::OpenAi => {
            let all = keys.len();
            let read = hit(cache, all, false);
            cache.push(keys.clone());
            let read_tokens = tokens(read);
            if tokens(all) >= CACHE_MIN_TOKENS && read_tokens >= CACHE_MIN_TOKENS {
                (read_tokens / 128 * 128, 0)
            } else {
                (0, 0)
            }
        }
    }
}

/// Validates a request as the real API would; `Err((status, type, message))` when it would refuse it.
fn validate(flavor: Flavor, key: Option<&str>, r: &Recorded) -> Result<(), (u16, &'static str, String)> {
    let expected_path = match flavor {
        Flavor::Anthropic => "/v1/messages",
        Flavor::OpenAi => "/v1/chat/completions",
    };
    if r.method != "POST" || r.path != expected_path {
        return Err((404, "not_found_error", format!("no route for {} {}", r.method, r.path)));
    }
    match flavor {
        Flavor::Anthropic => {
            if r.header("x-api-key") != key {
                return Err((401, "authentication_error", "invalid x-api-key".into()));
            }
            if r.header("anthropic-version").is_none() {
                return Err((
                    400,
                    "invalid_request_error",
                    "anthropic-version: header is required".into(),
                ));
            }
            if !r.body["max_tokens"].is_u64() {
                return Err((400, "invalid_request_error", "max_tokens: Field required".into()));
            }
            let msgs = r.body["messages"].as_array().cloned().unwrap_or_default();
            if msgs.first().map(|m| m["role"] != "user").unwrap_or(true) {
                return Err((
                    400,
                    "invalid_request_error",
                    "messages: first message must use the \"user\" role".into(),
                ));
            }
            for w in msgs.windows(2) {
                if w[0]["role"] == w[1]["role"] {
                    return Err((
                        400,
                        "invalid_request_error",
                        format!("messages: roles must alternate between \"user\" and \"assistant\", but found multiple {} roles in a row", w[0]["role"]),
                    ));
                }
            }
            let breakpoints = cache_blocks(&r.body).iter().filter(|(_, bp)| *bp).count();
            if breakpoints > 4 {
                return Err((
                    400,
                    "invalid_request_error",
                    format!("A maximum of 4 blocks with cache_control may be provided. Found {breakpoints}."),
                ));
            }
            if msgs.iter().any(|m| m["role"] == "system") {
                return Err((
                    400,
                    "invalid_request_error",
                    "messages: Unexpected role \"system\"; use the top-level system parameter".into(),
                ));
            }
            // Every tool_use is answered by a tool_result in the very next message, and every
            // tool_result answers a tool_use of the message before it.
            let ids = |m: Option<&Value>, kind: &str, key: &str| -> Vec<String> {
                m.and_then(|m| m["content"].as_array())
                    .into_iter()
                    .flatten()
                    .filter(|b| b["type"] == kind)
                    .filter_map(|b| b[key].as_str().map(str::to_string))
                    .collect()
            };
            for (i, m) in msgs.iter().enumerate() {
                let uses = ids(Some(m), "tool_use", "id");
                let answered = ids(msgs.get(i + 1), "tool_result", "tool_use_id");
                let missing: Vec<&String> = uses.iter().filter(|u| !answered.contains(u)).collect();
                if !missing.is_empty() {
                    return Err((400, "invalid_request_error", format!("messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately after: {}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", missing.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", "))));
                }
                let previous = if i == 0 {
                    Vec::new()
                } else {
                    ids(msgs.get(i - 1), "tool_use", "id")
                };
                if let Some(stray) = ids(Some(m), "tool_result", "tool_use_id")
                    .into_iter()
                    .find(|r| !previous.contains(r))
                {
                    return Err((400, "invalid_request_error", format!("messages.{i}: unexpected `tool_use_id` found in `tool_result` blocks: {stray}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.")));
                }
            }
            if !msgs.iter().all(|m| ids(Some(m), "tool_use", "id").is_empty()) && !r.body["tools"].is_array() {
                return Err((
                    400,
                    "invalid_request_error",
                    "Requests which include `tool_use` or `tool_result` blocks must define tools.".into(),
                ));
            }
        }
        Flavor::OpenAi => {
            if let Some(k) = key {
                if r.header("authorization") != Some(&format!("Bearer {k}")) {
                    return Err((401, "invalid_api_key", "Incorrect API key provided.".into()));
                }
            }
            if r.body["stream_options"]["include_usage"] != true {
                return Err((
                    400,
                    "invalid_request_error",
                    "this server expects stream_options.include_usage".into(),
                ));
            }
            // An assistant message with tool_calls is followed by one tool message per call
            // (notes, as system messages, may sit between); a tool message answers a call.
            let msgs = r.body["messages"].as_array().cloned().unwrap_or_default();
            let mut open: Vec<String> = Vec::new();
            for m in &msgs {
                match m["role"].as_str() {
                    Some("tool") => {
                        let id = m["tool_call_id"].as_str().unwrap_or_default().to_string();
                        if !open.contains(&id) {
                            return Err((400, "invalid_request_error", "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.".into()));
                        }
                        open.retain(|o| *o != id);
                    }
                    Some("system") => {}
                    _ => {
                        if !open.is_empty() {
                            return Err((400, "invalid_request_error", format!("An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {}", open.join(", "))));
                        }
                        open = m["tool_calls"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter_map(|c| c["id"].as_str().map(str::to_string))
                            .collect();
                    }
                }
            }
            if !open.is_empty() {
                return Err((400, "invalid_request_error", format!("An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {}", open.join(", "))));
            }
        }
    }
    Ok(())
}

/// The head of a streamed (server-sent events) answer.
const SSE_HEAD: &str = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";

async fn handle(mut sock: TcpStream, s: Arc<Shared>) {
    let Some(req) = read_request(&mut sock).await else {
        return;
    };
    s.requests.lock().expect("requests").push(req.clone());
    if let Err((status, etype, message)) = validate(s.flavor, s.key.as_deref(), &req) {
        send_status(&mut sock, status, &error_body(s.flavor, etype, &message), None).await;
        return;
    }
    let behaviour = s
        .script
        .lock()
        .expect("script")
        .pop_front()
        .unwrap_or(Behaviour::Answer);
    let msgs = req.messages();
    let offered = |name: &str| {
        req.body["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["name"] == name || t["function"]["name"] == name))
    };
    let tool_result = last_tool_result(s.flavor, &req.body);
    let tool_call = match &behaviour {
        Behaviour::CallTool { name, arguments } => Some((name.clone(), arguments.clone())),
        Behaviour::Answer if tool_result.is_none() => msgs
            .last()
            .filter(|(r, _)| r == "user")
            .and_then(|(_, t)| choose_tool(t, &offered)),
        _ => None,
    };
    let text = match (&behaviour, &tool_result) {
        (_, _) if tool_call.is_some() => String::new(),
        (Behaviour::Text(t), _) => t.clone(),
        (_, Some(result)) => format!("Done: {result}"),
        _ => answer(&msgs, req.system().as_deref()),
    };
    if let Behaviour::Replay(body) = &behaviour {
        if sock.write_all(SSE_HEAD.as_bytes()).await.is_err() {
            return;
        }
        let delay = *s.chunk_delay.lock().expect("delay");
        let mut w = ChunkWriter { sock: &mut sock, delay };
        for event in body.split_inclusive("\n\n") {
            w.event(event).await;
        }
        w.end().await;
        return;
    }
    if let Behaviour::Redirect(location) = &behaviour {
        let head = format!(
            "HTTP/1.1 307 Temporary Redirect\r\nlocation: {location}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
        );
        let _ = sock.write_all(head.as_bytes()).await;
        let _ = sock.shutdown().await;
        return;
    }
    if let Behaviour::Status {
        status,
        error_type,
        message,
        retry_after,
    } = &behaviour
    {
        send_status(
            &mut sock,
            *status,
            &error_body(s.flavor, error_type, message),
            retry_after.as_deref(),
        )
        .await;
        return;
    }
    let model = req.body["model"].as_str().unwrap_or("model").to_string();
    // Four characters a token; cache_control markers are instructions, not prompt text.
    let input_tokens = (without_cache_control(&req.body).to_string().len() / 4) as u64;
    let (cache_read, cache_written) = prompt_cache(s.flavor, &req.body, &mut s.cache.lock().expect("cache"));
    let parts = deltas(&text);
    let output_tokens = parts.len() as u64;
    let delay = *s.chunk_delay.lock().expect("delay");
    if sock.write_all(SSE_HEAD.as_bytes()).await.is_err() {
        return;
    }
    let mut w = ChunkWriter { sock: &mut sock, delay };
    let (stop_after, stall) = match behaviour {
        Behaviour::CutAfter(n) => (Some(n), None),
        Behaviour::StallAfter(n, d) => (Some(n), Some(d)),
        Behaviour::ErrorEventAfter(n) => (Some(n), None),
        _ => (None, None),
    };
    if behaviour == Behaviour::Garbage {
        w.event("data: this is not json\n\n").await;
        w.end().await;
        return;
    }
    match s.flavor {
        Flavor::Anthropic => {
            w.event(&format!(
                "event: message_start\ndata: {}\n\n",
                json!({"type": "message_start", "message": {"id": "msg_01fake", "type": "message", "role": "assistant", "content": [], "model": model, "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": input_tokens.saturating_sub(cache_read + cache_written), "cache_creation_input_tokens": cache_written, "cache_read_input_tokens": cache_read, "output_tokens": 1}}})
            ))
            .await;
            w.event("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n").await;
            w.event("event: ping\ndata: {\"type\": \"ping\"}\n\n").await;
            for (i, d) in parts.iter().enumerate() {
                if stop_after == Some(i) {
                    break;
                }
                w.event(&format!(
                    "event: content_block_delta\ndata: {}\n\n",
                    json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": d}})
                ))
                .await;
            }
        }
        Flavor::OpenAi => {
            let chunk = |delta: Value, finish: Value, usage: Value| {
                format!(
                    "data: {}\n\n",
                    json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1_764_547_200, "model": model, "system_fingerprint": "fp_fake", "choices": if delta.is_null() { json!([]) } else { json!([{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]) }, "usage": usage})
                )
            };
            w.event(&chunk(
                json!({"role": "assistant", "content": "", "refusal": null}),
                Value::Null,
                Value::Null,
            ))
            .await;
            for (i, d) in parts.iter().enumerate() {
                if stop_after == Some(i) {
                    break;
                }
                w.event(&chunk(json!({"content": d}), Value::Null, Value::Null)).await;
            }
            if stop_after.is_none() {
                let mut finish = "stop";
                if let Some((name, arguments)) = &tool_call {
                    finish = "tool_calls";
                    let id = format!("call_{:016x}", rand_id());
                    w.event(&chunk(
                        json!({"tool_calls": [{"index": 0, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]}),
                        Value::Null,
                        Value::Null,
                    ))
                    .await;
                    for piece in split_json(arguments) {
                        w.event(&chunk(
                            json!({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}),
                            Value::Null,
                            Value::Null,
                        ))
                        .await;
                    }
                }
                w.event(&chunk(json!({}), json!(finish), Value::Null)).await;
                w.event(&chunk(
                    Value::Null,
                    Value::Null,
                    json!({"prompt_tokens": input_tokens, "completion_tokens": output_tokens, "total_tokens": input_tokens + output_tokens,
                           "prompt_tokens_details": {"cached_tokens": cache_read, "audio_tokens": 0},
                           "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}}),
                ))
                .await;
                w.event("data: [DONE]\n\n").await;
                w.end().await;
                return;
            }
        }
    }
    match behaviour {
        Behaviour::CutAfter(_) => {
            // Drop the socket without the terminating chunk: a body cut mid-stream.
            let _ = w.sock.flush().await;
        }
        Behaviour::StallAfter(_, _) => {
            tokio::time::sleep(stall.unwrap_or_default()).await;
        }
        Behaviour::ErrorEventAfter(_) => {
            match s.flavor {
                Flavor::Anthropic => {
                    w.event("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n").await
                }
                Flavor::OpenAi => {
                    w.event("data: {\"error\":{\"message\":\"The server had an error while processing your request.\",\"type\":\"server_error\",\"param\":null,\"code\":null}}\n\n").await
                }
            }
            w.end().await;
        }
        _ => {
            w.event("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n")
                .await;
            let mut stop_reason = "end_turn";
            if let Some((name, arguments)) = &tool_call {
                stop_reason = "tool_use";
                let id = format!("toolu_01{:016x}", rand_id());
                w.event(&format!(
                    "event: content_block_start\ndata: {}\n\n",
                    json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}})
                ))
                .await;
                for piece in split_json(arguments) {
                    w.event(&format!(
                        "event: content_block_delta\ndata: {}\n\n",
                        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": piece}})
                    ))
                    .await;
                }
                w.event("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n")
                    .await;
            }
            w.event(&format!(
                "event: message_delta\ndata: {}\n\n",
                json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null}, "usage": {"output_tokens": output_tokens}})
            ))
            .await;
            w.event("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
                .await;
            w.end().await;
        }
    }
}

/// Writes chunked transfer-encoding; each SSE event is split over two chunks so clients must
/// reassemble events across reads.
pub(crate) struct ChunkWriter<'a> {
    pub(crate) sock: &'a mut TcpStream,
    pub(crate) delay: Duration,
}

impl ChunkWriter<'_> {
    pub(crate) async fn chunk(&mut self, bytes: &[u8]) {
        let mut out = format!("{:x}\r\n", bytes.len()).into_bytes();
        out.extend_from_slice(bytes);
        out.extend_from_slice(b"\r\n");
        let _ = self.sock.write_all(&out).await;
        let _ = self.sock.flush().await;
    }

    async fn event(&mut self, text: &str) {
        let bytes = text.as_bytes();
        let mid = (1..=bytes.len() / 2)
            .rev()
            .find(|&i| text.is_char_boundary(i))
            .unwrap_or(bytes.len());
        self.chunk(&bytes[..mid]).await;
        if mid < bytes.len() {
            self.chunk(&bytes[mid..]).await;
        }
        if !self.delay.is_zero() {
            tokio::time::sleep(self.delay).await;
        }
    }

    pub(crate) async fn end(&mut self) {
        let _ = self.sock.write_all(b"0\r\n\r\n").await;
        let _ = self.sock.shutdown().await;
    }
}

/// Why a test is `#[ignore]`d for a plain `cargo test`: it needs what `scripts/test.sh`
/// provides (which runs it with `--include-ignored`, so there it always runs).
pub const NEEDS_TEST_SH: &str = "needs scripts/test.sh (models, virtual audio, display, keyring)";

/// A vendor's recorded response body, as its SDK's repository keeps it: `vendor` is the
/// folder under `tests/recorded/` (see its README for each file's source and licence).
pub fn recorded(vendor: &str, file: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("recorded")
        .join(vendor)
        .join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every file `tests/recorded/README.md` lists (its path under `tests/recorded/`), with the
/// sha256 listed for it: the vendor's file, as copied.
pub fn recorded_listed() -> Vec<(String, String)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("recorded");
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    readme
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(|line| {
            let cells: Vec<&str> = line.split('|').map(|c| c.trim().trim_matches('`')).collect();
            (cells[1].to_string(), cells[2].to_string())
        })
        .collect()
}

/// A recorded file's bytes (`path` under `tests/recorded/`), the vendor's unchanged: their
/// sha256 is the one `tests/recorded/README.md` lists, or this panics.
pub fn recorded_bytes(path: &str) -> Vec<u8> {
    use sha2::Digest;
    let listed = recorded_listed()
        .into_iter()
        .find(|(file, _)| file == path)
        .map(|(_, sha)| sha)
        .unwrap_or_else(|| panic!("{path} is not listed in tests/recorded/README.md"));
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("recorded")
        .join(path);
    let bytes = std::fs::read(&file).unwrap_or_else(|e| panic!("{path}: {e}"));
    let got = format!("{:x}", sha2::Sha256::digest(&bytes));
    assert_eq!(got, listed, "{path} differs from the vendor's file");
    bytes
}

/// The offline whisper model that `scripts/fetch-models.sh` puts in `HARK_MODELS_DIR`.
/// Its absence fails the test: a test that needs it is `#[ignore]`d unless run by
/// `scripts/test.sh`, which fetches it.
pub fn whisper_model() -> std::path::PathBuf {
    let dir =
        std::env::var_os("HARK_MODELS_DIR").expect("HARK_MODELS_DIR is not set: run the tests through scripts/test.sh");
    let path = std::path::PathBuf::from(dir).join("ggml-tiny.en.bin");
    assert!(
        path.exists(),
        "the whisper model is missing: scripts/test.sh fetches it into HARK_MODELS_DIR"
    );
    path
}

/// Waits for the first voice event that `pred` accepts. A `Failed` event fails the test,
/// and so does a wait of 30 s (a hang catcher: a spoken turn takes seconds). Every event
/// but the level's, the panel's and the reply's deltas is kept in `seen`, for the message.
pub async fn wait_for_event(
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<hark_core::session::voice::VoiceEvent>,
    seen: &mut Vec<hark_core::session::voice::VoiceEvent>,
    what: &str,
    pred: impl Fn(&hark_core::session::voice::VoiceEvent) -> bool,
) -> hark_core::session::voice::VoiceEvent {
    use hark_core::session::voice::VoiceEvent;
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let e = tokio::time::timeout_at(deadline, rx.recv())
            .await
            .unwrap_or_else(|_| panic!("timed out waiting for {what}; events so far: {seen:?}"))
            .unwrap_or_else(|| panic!("events ended before {what}"));
        if let VoiceEvent::Failed { .. } = &e {
            panic!("failed while waiting for {what}: {e:?}");
        }
        if !matches!(
            e,
            VoiceEvent::Level { .. } | VoiceEvent::ContextChanged { .. } | VoiceEvent::ReplyDelta { .. }
        ) {
            seen.push(e.clone());
        }
        if pred(&e) {
            return e;
        }
    }
}

/// Speaks text into a WAV file with espeak-ng (a real voice, for real speech-to-text).
pub fn espeak_wav(text: &str, path: &std::path::Path) {
    espeak_wav_in("en-us", text, path);
}

/// Speaks text into a WAV file with one of espeak-ng's voices (`de`, `fr-fr`, …).
pub fn espeak_wav_in(voice: &str, text: &str, path: &std::path::Path) {
    let ok = std::process::Command::new("espeak-ng")
        .args(["-v", voice, "-w"])
        .arg(path)
        .arg(text)
        .status()
        .map(|s| s.success());
    assert!(
        matches!(ok, Ok(true)),
        "espeak-ng is needed (scripts/install-deps.sh installs it)"
    );
}

/// Helpers for tests against the real OS keychain (Secret Service on Linux).
pub mod keychain {
    use std::process::Command;

    /// Fails the test without a D-Bus session (and so a Secret Service): a test that needs
    /// one is `#[ignore]`d unless run by `scripts/test.sh`, which provides one.
    pub fn require_secret_service() {
        assert!(
            std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_some(),
            "no D-Bus session: run the tests through scripts/test.sh"
        );
    }

    /// Looks an item up with libsecret's own client, `secret-tool`, to prove it is really
    /// in the Secret Service.
    pub fn secret_tool_lookup(service: &str, user: &str) -> Option<String> {
        let out = Command::new("secret-tool")
            .args(["lookup", "service", service, "username", user])
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(role: &str, t: &str) -> (String, String) {
        (role.to_string(), t.to_string())
    }

    #[test]
    fn the_memory_model_only_knows_what_it_was_sent() {
        assert_eq!(answer(&[m("user", "My name is Sam.")], None), "Nice to meet you, Sam!");
        let with = [
            m("user", "My name is Sam."),
            m("assistant", "Nice to meet you, Sam!"),
            m("user", "What's my name?"),
        ];
        assert_eq!(answer(&with, None), "Your name is Sam.");
        assert_eq!(
            answer(&[m("user", "What's my name?")], None),
            "I don't know your name yet."
        );
        assert_eq!(
            answer(&[m("user", "What's my name?")], Some("The user said: my name is Ada")),
            "Your name is Ada."
        );
        let fold = "Prior summary:\n(none)\n\nNew messages:\nUser: My name is Sam.\nHark: Nice to meet you, Sam!\nUser: I like tea.\n";
        assert_eq!(
            answer(&[m("user", fold)], Some("You keep a running summary")),
            "The user said: My name is Sam."
        );
    }
}
