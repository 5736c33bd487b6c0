//! One tool server: its connection through the official MCP SDK (`rmcp`), started on
//! first need and again after a crash, its tool list as the server last announced it,
//! and its calls with a time limit and a size cap. Every fault becomes words for the
//! model and the user, with the server's own words (its stderr, its error) kept apart as
//! the detail.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ContentBlock, Implementation,
    ProtocolVersion, ResourceContents, Tool as McpToolInfo,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceError, ServiceExt};
use serde::Serialize;

use super::config::{ServerConfig, ToolServers, Transport};
use crate::secrets::{Keychain, ServerSecret};

/// The stderr lines kept per server (the last ones): its own words when it fails.
const STDERR_LINES: usize = 20;

/// Where a server stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum ServerState {
    /// Not started yet (it starts at the first need), or switched off.
    Idle,
    Starting,
    Ready,
    Failed,
}

/// A server's state for the window, `hark mcp list` and the banners.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ServerStatus {
    pub name: String,
    pub state: ServerState,
    /// What went wrong, in words (`Failed` only).
    pub message: Option<String>,
    /// The server's own words: its error, the last lines it wrote to stderr.
    pub detail: Option<String>,
}

/// The limits a server's calls run under.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub call_timeout: Duration,
    pub start_timeout: Duration,
    pub max_result_chars: usize,
}

impl Limits {
    pub fn of(file: &ToolServers) -> Self {
        Self {
            call_timeout: Duration::from_secs(u64::from(file.call_timeout_secs.max(1))),
            start_timeout: Duration::from_secs(u64::from(file.start_timeout_secs.max(1))),
            max_result_chars: file.max_result_chars.max(100) as usize,
        }
    }
}

/// A failure to start or reach a server.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerError {
    pub message: String,
    pub detail: Option<String>,
}

impl std::fmt::Display for ServerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)?;
        if let Some(d) = &self.detail {
            write!(f, "\n{d}")?;
        }
        Ok(())
    }
}

/// What a server reports to the adapter.
#[derive(Debug, Clone)]
pub enum Change {
    /// Its state or its tools changed (the window refreshes its list).
    Updated,
    /// It announced a new list of tools (`notifications/tools/list_changed`), now listed
    /// again: the next request offers these.
    Listed { server: String, tools: Vec<String> },
    /// It failed to start, stopped, hung or answered garbage: a banner, with its words.
    Fault(ServerError),
}

/// Called with each [`Change`].
pub type OnChange = Arc<dyn Fn(Change) + Send + Sync>;

/// What rmcp calls back: the server's announcements.
struct Handler {
    server: String,
    tools: Arc<RwLock<Vec<McpToolInfo>>>,
    on_change: OnChange,
    list_timeout: Duration,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("hark", env!("CARGO_PKG_VERSION")).with_title("Hark"),
        )
        // The newest revision with the `initialize` handshake: under the next one a
        // server's `tools/list_changed` only reaches a subscription, not this handler.
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    async fn on_tool_list_changed(&self, context: NotificationContext<RoleClient>) {
        if let Ok(Ok(tools)) = tokio::time::timeout(self.list_timeout, context.peer.list_all_tools()).await {
            let names = tools.iter().map(|t| t.name.to_string()).collect();
            *self.tools.write().unwrap_or_else(|e| e.into_inner()) = tools;
            (self.on_change)(Change::Listed {
                server: self.server.clone(),
                tools: names,
            });
        }
    }
}

struct Connection {
    service: RunningService<RoleClient, Handler>,
}

/// One configured server and its (lazily started) connection.
pub struct Server {
    config: ServerConfig,
    limits: Limits,
    keychain: Keychain,
    conn: tokio::sync::Mutex<Option<Connection>>,
    tools: Arc<RwLock<Vec<McpToolInfo>>>,
    status: Mutex<ServerStatus>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    on_change: OnChange,
}

impl Server {
    pub fn new(config: ServerConfig, limits: Limits, keychain: Keychain, on_change: OnChange) -> Self {
        let status = ServerStatus {
            name: config.name.clone(),
            state: ServerState::Idle,
            message: None,
            detail: None,
        };
        Self {
            config,
            limits,
            keychain,
            conn: tokio::sync::Mutex::new(None),
            tools: Arc::default(),
            status: Mutex::new(status),
            stderr: Arc::default(),
            on_change,
        }
    }

    pub fn name(&self) -> &str {
        &self.config.name
    }

    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    pub fn status(&self) -> ServerStatus {
        self.status.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The tools as the server last listed them.
    pub fn tools(&self) -> Vec<McpToolInfo> {
        self.tools.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn set_status(&self, state: ServerState, error: Option<&ServerError>) {
        {
            let mut s = self.status.lock().unwrap_or_else(|e| e.into_inner());
            s.state = state;
            s.message = error.map(|e| e.message.clone());
            s.detail = error.and_then(|e| e.detail.clone());
        }
        (self.on_change)(Change::Updated);
        if let Some(e) = error {
            (self.on_change)(Change::Fault(e.clone()));
        }
    }

    /// Starts the server if it is not running (or has stopped), and lists its tools.
    pub async fn ensure_started(&self) -> Result<rmcp::Peer<RoleClient>, ServerError> {
        let mut conn = self.conn.lock().await;
        if let Some(c) = conn.as_ref() {
            if !c.service.is_transport_closed() {
                return Ok(c.service.peer().clone());
            }
        }
        if let Some(old) = conn.take() {
            // Stopped: its task has ended; what is left closes in the background.
            drop(old);
        }
        self.set_status(ServerState::Starting, None);
        match tokio::time::timeout(self.limits.start_timeout, self.connect()).await {
            Ok(Ok(c)) => {
                let peer = c.service.peer().clone();
                *conn = Some(c);
                self.set_status(ServerState::Ready, None);
                Ok(peer)
            }
            Ok(Err(e)) => {
                self.set_status(ServerState::Failed, Some(&e));
                Err(e)
            }
            Err(_) => {
                let e = ServerError {
                    message: format!(
                        "the tool server {} did not start within {} s",
                        self.config.name,
                        self.limits.start_timeout.as_secs()
                    ),
                    detail: self.stderr_tail(),
                };
                self.set_status(ServerState::Failed, Some(&e));
                Err(e)
            }
        }
    }

    async fn connect(&self) -> Result<Connection, ServerError> {
        let name = &self.config.name;
        let fail = |what: String| ServerError {
            message: format!("the tool server {name} could not start"),
            detail: Some(what),
        };
        let handler = Handler {
            server: name.clone(),
            tools: self.tools.clone(),
            on_change: self.on_change.clone(),
            list_timeout: self.limits.start_timeout,
        };
        let service = match &self.config.transport {
            Transport::Stdio { command, args, env } => {
                let mut cmd = stdio_command(command, args);
                for v in env {
                    let value = if v.secret {
                        let secret = ServerSecret::Env {
                            server: name.clone(),
                            var: v.name.clone(),
                        };
                        match self.keychain.server_secret(&secret) {
                            Ok(Some(k)) => k.expose().to_string(),
                            Ok(None) => {
                                return Err(fail(format!(
                                    "its secret environment variable {} is not in the keychain; add the server again with its value",
                                    v.name
                                )))
                            }
                            Err(e) => return Err(fail(format!("the keychain: {e}"))),
                        }
                    } else {
                        v.value.clone()
                    };
                    cmd.env(&v.name, value);
                }
                self.stderr.lock().unwrap_or_else(|e| e.into_inner()).clear();
                let (transport, stderr) = rmcp::transport::TokioChildProcess::builder(cmd)
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .map_err(|e| {
                        if e.kind() == std::io::ErrorKind::NotFound {
                            fail(format!(
                                "no program {command:?} was found (is it installed and on the PATH?)"
                            ))
                        } else {
                            fail(format!("{command}: {e}"))
                        }
                    })?;
                let reader = stderr.map(|stderr| tokio::spawn(keep_tail(stderr, self.stderr.clone())));
                match handler.serve(transport).await {
                    Ok(service) => service,
                    Err(e) => {
                        // A program that exited has closed its stderr: its last words are
                        // read to the end before they are shown (a second at most).
                        if let Some(reader) = reader {
                            let _ = tokio::time::timeout(Duration::from_secs(1), reader).await;
                        }
                        return Err(ServerError {
                            message: format!("the tool server {name} could not start"),
                            detail: Some(self.with_stderr(&e.to_string())),
                        });
                    }
                }
            }
            Transport::Http { url } => {
                // reqwest 0.13 (rmcp's) is built with rustls and no crypto provider: the
                // process gets ring, the one the rest of Hark's TLS already uses.
                let _ = rustls::crypto::ring::default_provider().install_default();
                let mut config = rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
                    url.as_str(),
                );
                let secret = ServerSecret::Token {
                    server: name.clone(),
                    url: url.clone(),
                };
                match self.keychain.server_secret(&secret) {
                    Ok(Some(token)) => config = config.auth_header(token.expose().to_string()),
                    Ok(None) => {}
                    // Most servers need no token: go on without; one that needs it says
                    // so (401), and the message names the token.
                    Err(e) => tracing::warn!("no token for the tool server {name}: {e}"),
                }
                let transport = rmcp::transport::StreamableHttpClientTransport::from_config(config);
                handler.serve(transport).await.map_err(|e| {
                    let said = crate::error::redact(&e.to_string());
                    if e.is_authorization_required() {
                        ServerError {
                            message: format!(
                                "the tool server {name} refused Hark's token (or needs one); add it again with --token-stdin"
                            ),
                            detail: Some(said),
                        }
                    } else {
                        ServerError {
                            message: format!("the tool server {name} at {url} could not be reached"),
                            detail: Some(said),
                        }
                    }
                })?
            }
        };
        let tools = service.peer().list_all_tools().await.map_err(|e| ServerError {
            message: format!("the tool server {name} started but did not list its tools"),
            detail: Some(self.with_stderr(&e.to_string())),
        })?;
        *self.tools.write().unwrap_or_else(|e| e.into_inner()) = tools;
        Ok(Connection { service })
    }

    /// Calls a tool. `Err` is the words the model gets (the call is recorded as an error).
    pub async fn call(
        &self,
        tool: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
    ) -> Result<String, String> {
        let name = &self.config.name;
        let peer = self.ensure_started().await.map_err(|e| e.to_string())?;
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        // Dropping the call at the time limit tells the server to cancel it
        // (`notifications/cancelled`).
        match tokio::time::timeout(self.limits.call_timeout, peer.call_tool(params)).await {
            Err(_) => {
                let message = format!(
                    "{name}: {tool} did not answer within {} s; the call was cancelled",
                    self.limits.call_timeout.as_secs()
                );
                (self.on_change)(Change::Fault(ServerError {
                    message: message.clone(),
                    detail: self.stderr_tail(),
                }));
                Err(message)
            }
            Ok(Ok(result)) => {
                let text = cap(result_text(&result), self.limits.max_result_chars);
                if result.is_error == Some(true) {
                    Err(format!("{name}: {tool} failed: {text}"))
                } else {
                    Ok(text)
                }
            }
            Ok(Err(ServiceError::McpError(e))) => {
                Err(format!("the tool server {name} refused the call: {}", e.message))
            }
            Ok(Err(e @ (ServiceError::TransportClosed | ServiceError::TransportSend(_)))) => {
                self.conn.lock().await.take();
                let error = ServerError {
                    message: format!(
                        "the tool server {name} stopped during the call ({e}); it is started again at the next call"
                    ),
                    detail: self.stderr_tail(),
                };
                self.set_status(ServerState::Failed, Some(&error));
                Err(error.to_string())
            }
            Ok(Err(e)) => {
                // An answer that is not MCP (garbage), or one this client cannot take.
                let message = format!("{name}: {tool} failed: the server's answer could not be used");
                (self.on_change)(Change::Fault(ServerError {
                    message: message.clone(),
                    detail: Some(self.with_stderr(&e.to_string())),
                }));
                Err(message)
            }
        }
    }

    /// Stops the server (its program ends), waiting a little for it to go.
    pub async fn stop(&self) {
        if let Some(mut c) = self.conn.lock().await.take() {
            let _ = c.service.close_with_timeout(Duration::from_secs(2)).await;
        }
    }

    fn stderr_tail(&self) -> Option<String> {
        let t = self.stderr.lock().unwrap_or_else(|e| e.into_inner());
        (!t.is_empty()).then(|| t.iter().cloned().collect::<Vec<_>>().join("\n"))
    }

    fn with_stderr(&self, error: &str) -> String {
        match self.stderr_tail() {
            Some(t) => format!("{error}\n{t}"),
            None => error.to_string(),
        }
    }
}

/// The command that starts a stdio server. On Windows a command without an extension
/// (`npx`, `uvx`) is usually a `.cmd` script, which only `cmd` can start.
fn stdio_command(command: &str, args: &[String]) -> tokio::process::Command {
    #[cfg(windows)]
    if std::path::Path::new(command).extension().is_none() {
        let mut cmd = crate::process::command("cmd");
        cmd.arg("/C").arg(command).args(args);
        return cmd;
    }
    let mut cmd = crate::process::command(command);
    cmd.args(args);
    cmd
}

/// Reads a server's stderr to its end (a full pipe would stop the server), keeping the
/// last lines.
async fn keep_tail(stderr: tokio::process::ChildStderr, tail: Arc<Mutex<VecDeque<String>>>) {
    use tokio::io::AsyncBufReadExt;
    let mut lines = tokio::io::BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let mut t = tail.lock().unwrap_or_else(|e| e.into_inner());
        if t.len() == STDERR_LINES {
            t.pop_front();
        }
        t.push_back(line.chars().take(500).collect());
    }
}

/// A result as the model reads it: its text blocks, then what stands for the others.
/// With no content at all, the structured result's JSON.
pub fn result_text(result: &CallToolResult) -> String {
    let parts: Vec<String> = result
        .content
        .iter()
        .map(|b| match b {
            ContentBlock::Text(t) => t.text.clone(),
            ContentBlock::Image(i) => format!("[an image, {}]", i.mime_type),
            ContentBlock::Audio(a) => format!("[a sound, {}]", a.mime_type),
            ContentBlock::Resource(r) => match &r.resource {
                ResourceContents::TextResourceContents { uri, text, .. } => format!("{uri}:\n{text}"),
                ResourceContents::BlobResourceContents { uri, .. } => format!("[binary content at {uri}]"),
                _ => "[a resource]".to_string(),
            },
            ContentBlock::ResourceLink(l) => format!("[{}: {}]", l.name, l.uri),
            _ => "[content Hark cannot show]".to_string(),
        })
        .collect();
    if parts.is_empty() {
        return result
            .structured_content
            .as_ref()
            .map(|v| v.to_string())
            .unwrap_or_default();
    }
    parts.join("\n")
}

/// Cuts a result to `max` characters, saying so (the model should know it saw a part).
pub fn cap(text: String, max: usize) -> String {
    let total = text.chars().count();
    if total <= max {
        return text;
    }
    let kept: String = text.chars().take(max).collect();
    format!("{kept}\n[the result was cut: {max} of its {total} characters are shown]")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_result_is_cut_and_says_so() {
        assert_eq!(cap("short".into(), 10), "short");
        let long = "é".repeat(30);
        let cut = cap(long, 10);
        assert!(cut.starts_with(&"é".repeat(10)));
        assert!(
            cut.ends_with("[the result was cut: 10 of its 30 characters are shown]"),
            "{cut}"
        );
    }

    #[test]
    fn results_read_as_text() {
        let r: CallToolResult = serde_json::from_value(serde_json::json!({
            "content": [{"type": "text", "text": "Echo: hi"}, {"type": "image", "data": "AA==", "mimeType": "image/png"}]
        }))
        .unwrap();
        assert_eq!(result_text(&r), "Echo: hi\n[an image, image/png]");
        let r: CallToolResult = serde_json::from_value(serde_json::json!({
            "content": [], "structuredContent": {"timezone": "UTC"}
        }))
        .unwrap();
        assert_eq!(result_text(&r), r#"{"timezone":"UTC"}"#);
    }
}
