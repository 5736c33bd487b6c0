//! The user's own tools: MCP servers ([`config`]) reached through the official SDK
//! ([`client`]), offered to the model beside the built-in tools.
//!
//! [`McpTools`] is a [`ToolSource`]: each request lists every enabled server's tools as the
//! server last announced them (it may change its list while Hark runs), named
//! `server__tool` so that two servers never collide, with descriptions and schemas as the
//! server gives them. A tool set to *never* is not offered; *ask* puts the question to the
//! user before each call ([`consent`](super::consent)). Calls go through rule 10 like any
//! tool: a fault (a server that cannot start, crashes, hangs or answers garbage) is an
//! error result the model reads, and the server is started again at the next call.

pub mod client;
pub mod config;

use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};

use async_trait::async_trait;
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use self::client::{Change, Limits, OnChange, Server, ServerStatus};
use self::config::{ServerConfig, ToolServers, Transport};
use super::consent::{Answer, Asker, Consent, ConsentRequest};
use super::{Tool, ToolContext, ToolSource};
use crate::conversation::ToolSpec;
use crate::secrets::Keychain;

/// Separates a server's name from its tool's in the names the model sees.
pub const SEPARATOR: &str = "__";

/// The longest tool name both providers accept.
const MAX_NAME: usize = 64;

/// The name the model sees for a server's tool: `server__tool`, with characters the
/// providers refuse replaced and a long name shortened, both then made unique by a hash of
/// the tool's own name.
pub fn model_name(server: &str, tool: &str) -> String {
    let clean: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let name = format!("{server}{SEPARATOR}{clean}");
    if clean == tool && name.len() <= MAX_NAME {
        return name;
    }
    let hash = Sha256::digest(tool.as_bytes());
    let tag: String = hash[..4].iter().map(|b| format!("{b:02x}")).collect();
    let keep = MAX_NAME - tag.len() - 1;
    let head: String = name.chars().take(keep).collect();
    format!("{head}_{tag}")
}

/// What a tool defaults to when the user has not chosen. A tool the server marks
/// read-only (`readOnlyHint`) runs without asking if the server is a program on this
/// computer: it already runs with the user's rights, and the arguments stay here. A
/// remote server's read-only tools still ask: their arguments leave the computer. No
/// other hint is trusted.
pub fn default_consent(server: &ServerConfig, tool: &rmcp::model::Tool) -> Consent {
    match server.transport {
        Transport::Stdio { .. } if read_only(tool) => Consent::Always,
        _ => Consent::Ask,
    }
}

/// Whether the server marks the tool read-only (`readOnlyHint`).
fn read_only(tool: &rmcp::model::Tool) -> bool {
    tool.annotations.as_ref().and_then(|a| a.read_only_hint) == Some(true)
}

/// A server's tool as the window and `hark mcp list` show it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ToolInfo {
    /// Its own name on the server.
    pub name: String,
    /// The name the model sees.
    pub model_name: String,
    pub description: String,
    pub consent: Consent,
    /// Whether `consent` is the user's choice (not the default).
    pub chosen: bool,
    pub read_only: bool,
}

/// A server, its state and its tools.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ServerView {
    pub config: ServerConfig,
    pub status: ServerStatus,
    pub tools: Vec<ToolInfo>,
}

/// The running tool servers: a [`ToolSource`] for the session.
pub struct McpTools {
    /// Itself, for the tools it hands out (they ask it for consent at each call).
    me: std::sync::Weak<McpTools>,
    file: RwLock<ToolServers>,
    /// Where consent answers of *always* are saved (`None`: not saved, in tests).
    path: Option<PathBuf>,
    servers: RwLock<Vec<Arc<Server>>>,
    asker: Arc<dyn Asker>,
    keychain: Keychain,
    on_change: OnChange,
    /// Each consent question's id.
    asked: Mutex<u64>,
}

impl McpTools {
    /// The servers of `file` (none started yet: [`Self::start`] starts them all, a call
    /// starts its own). `path` is where the user's *always* answers are saved.
    pub fn new(
        file: ToolServers,
        path: Option<PathBuf>,
        keychain: Keychain,
        asker: Arc<dyn Asker>,
        on_change: OnChange,
    ) -> Arc<Self> {
        let this = Arc::new_cyclic(|me| Self {
            me: me.clone(),
            file: RwLock::new(ToolServers::default()),
            path,
            servers: RwLock::default(),
            asker,
            keychain,
            on_change,
            asked: Mutex::new(0),
        });
        this.reconfigure_sync(file);
        this
    }

    /// The servers file as it stands (the user's choices included).
    pub fn file(&self) -> ToolServers {
        self.file.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn servers(&self) -> Vec<Arc<Server>> {
        self.servers.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn server(&self, name: &str) -> Option<Arc<Server>> {
        self.servers().into_iter().find(|s| s.name() == name)
    }

    /// Applies a new servers file: a server whose configuration and limits are unchanged
    /// keeps running; the others stop (in the background) and start again when needed.
    pub fn reconfigure(self: &Arc<Self>, file: ToolServers) {
        let gone = self.reconfigure_sync(file);
        if !gone.is_empty() {
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                rt.spawn(async move {
                    for s in gone {
                        s.stop().await;
                    }
                });
            }
        }
        (self.on_change)(Change::Updated);
    }

    fn reconfigure_sync(&self, file: ToolServers) -> Vec<Arc<Server>> {
        let limits = Limits::of(&file);
        let old = self.servers();
        let mut next = Vec::new();
        for config in file.servers.iter().filter(|s| s.enabled) {
            let kept = old.iter().find(|s| {
                let (a, b) = (s.config(), config);
                a.name == b.name && a.transport == b.transport && same_limits(s.limits(), limits)
            });
            next.push(match kept {
                // The same connection; consent choices that changed are read from `file`
                // at each call.
                Some(s) => s.clone(),
                None => Arc::new(Server::new(
                    config.clone(),
                    limits,
                    self.keychain.clone(),
                    self.on_change.clone(),
                )),
            });
        }
        let gone = old
            .into_iter()
            .filter(|s| !next.iter().any(|n| Arc::ptr_eq(n, s)))
            .collect();
        *self.file.write().unwrap_or_else(|e| e.into_inner()) = file;
        *self.servers.write().unwrap_or_else(|e| e.into_inner()) = next;
        gone
    }

    /// Starts every enabled server at once (each lists its tools); returns the failures.
    pub async fn start(&self) -> Vec<(String, client::ServerError)> {
        let servers = self.servers();
        let results = futures_util::future::join_all(servers.iter().map(|s| s.ensure_started())).await;
        servers
            .iter()
            .zip(results)
            .filter_map(|(s, r)| r.err().map(|e| (s.name().to_string(), e)))
            .collect()
    }

    /// Starts one server (if it is not running) and returns how it stands.
    pub async fn test(&self, name: &str) -> Option<Result<ServerView, client::ServerError>> {
        let server = self.server(name)?;
        Some(match server.ensure_started().await {
            Ok(_) => Ok(view(
                &server,
                self.file()
                    .get(name)
                    .cloned()
                    .unwrap_or_else(|| server.config().clone()),
            )),
            Err(e) => Err(e),
        })
    }

    /// Calls a server's tool the user names themselves (`hark mcp call`): no consent
    /// question, as the user asked for this very call. `None`: no such server; `Err`: the
    /// server's words or the fault, as the model would get them.
    pub async fn call_now(&self, server: &str, tool: &str, arguments: Value) -> Option<Result<String, String>> {
        let server = self.server(server)?;
        let Value::Object(arguments) = arguments else {
            return Some(Err("the arguments must be a JSON object".to_string()));
        };
        Some(server.call(tool, arguments).await)
    }

    /// A server's tool's parameters as the model is offered them (`hark mcp schema`).
    /// `None`: no such server; `Err`: it did not start, or has no such tool.
    pub async fn parameters(&self, server: &str, tool: &str) -> Option<Result<Value, String>> {
        let s = self.server(server)?;
        Some(match s.ensure_started().await {
            Err(e) => Err(e.to_string()),
            Ok(_) => s
                .tools()
                .iter()
                .find(|t| t.name == tool)
                .map(offered_parameters)
                .ok_or_else(|| format!("the tool server {server} has no tool named {tool:?}")),
        })
    }

    /// A started server's connection, for a direct SDK call (the benchmark's baseline).
    pub async fn peer(&self, name: &str) -> Option<rmcp::Peer<rmcp::RoleClient>> {
        self.server(name)?.ensure_started().await.ok()
    }

    /// Every configured server (disabled ones too), its state and tools.
    pub fn views(&self) -> Vec<ServerView> {
        let file = self.file();
        let running = self.servers();
        file.servers
            .iter()
            .map(|c| match running.iter().find(|s| s.name() == c.name) {
                Some(s) => view(s, c.clone()),
                None => ServerView {
                    config: c.clone(),
                    status: ServerStatus {
                        name: c.name.clone(),
                        state: client::ServerState::Idle,
                        message: None,
                        detail: None,
                    },
                    tools: Vec::new(),
                },
            })
            .collect()
    }

    /// The consent a server's tool has now: the user's choice, or the default.
    fn consent(&self, server: &Server, tool: &rmcp::model::Tool) -> Consent {
        let file = self.file.read().unwrap_or_else(|e| e.into_inner());
        match file.get(server.name()) {
            Some(c) => c
                .consent
                .get(tool.name.as_ref())
                .copied()
                .unwrap_or_else(|| default_consent(c, tool)),
            None => Consent::Never,
        }
    }

    /// Sets a tool's consent and saves the file.
    pub fn set_consent(&self, server: &str, tool: &str, consent: Consent) -> Result<(), config::ConfigError> {
        let file = {
            let mut file = self.file.write().unwrap_or_else(|e| e.into_inner());
            let Some(s) = file.get_mut(server) else {
                return Err(config::ConfigError::Refused(format!(
                    "no tool server is named {server:?}"
                )));
            };
            s.consent.insert(tool.to_string(), consent);
            file.clone()
        };
        if let Some(path) = &self.path {
            file.save_to(path)?;
        }
        (self.on_change)(Change::Updated);
        Ok(())
    }

    /// Stops every server.
    pub async fn shutdown(&self) {
        futures_util::future::join_all(self.servers().iter().map(|s| s.stop())).await;
    }

    fn next_question(&self) -> String {
        let mut n = self.asked.lock().unwrap_or_else(|e| e.into_inner());
        *n += 1;
        format!("consent-{n}")
    }
}

/// A running server as shown, with its configuration as the file has it now.
fn view(server: &Server, config: ServerConfig) -> ServerView {
    let tools = server
        .tools()
        .iter()
        .map(|t| {
            let chosen = config.consent.get(t.name.as_ref()).copied();
            ToolInfo {
                name: t.name.to_string(),
                model_name: model_name(&config.name, &t.name),
                description: t.description.as_deref().unwrap_or_default().to_string(),
                consent: chosen.unwrap_or_else(|| default_consent(&config, t)),
                chosen: chosen.is_some(),
                read_only: read_only(t),
            }
        })
        .collect();
    ServerView {
        config,
        status: server.status(),
        tools,
    }
}

fn same_limits(a: Limits, b: Limits) -> bool {
    a.call_timeout == b.call_timeout && a.start_timeout == b.start_timeout && a.max_result_chars == b.max_result_chars
}

impl ToolSource for McpTools {
    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let mut out: Vec<Arc<dyn Tool>> = Vec::new();
        let Some(hub) = self.me.upgrade() else { return out };
        for server in self.servers() {
            for tool in server.tools() {
                if self.consent(&server, &tool) == Consent::Never {
                    continue;
                }
                out.push(Arc::new(McpTool {
                    hub: hub.clone(),
                    server: server.clone(),
                    model_name: model_name(server.name(), &tool.name),
                    tool,
                }));
            }
        }
        out
    }
}

/// A tool's input schema as the model is offered it: as the server gives it, less the
/// draft's `$schema` marker, meta-data that some OpenAI-compatible servers' validators
/// refuse in a tool's parameters ("tools[0].function.parameters contains unsupported field
/// $schema"). The MCP conformance kit's json-schema-2020-12-preservation check of it is
/// an expected failure for this reason (`scripts/mcp-conformance.sh`).
fn offered_parameters(tool: &rmcp::model::Tool) -> Value {
    let mut parameters = tool.schema_as_json_value();
    if let Some(o) = parameters.as_object_mut() {
        o.remove("$schema");
    }
    parameters
}

/// One server's tool, as the model is offered it.
struct McpTool {
    hub: Arc<McpTools>,
    server: Arc<Server>,
    model_name: String,
    tool: rmcp::model::Tool,
}

#[async_trait]
impl Tool for McpTool {
    fn spec(&self) -> ToolSpec {
        let parameters = offered_parameters(&self.tool);
        let description = self
            .tool
            .description
            .as_deref()
            .filter(|d| !d.trim().is_empty())
            .map(str::to_string)
            .or_else(|| self.tool.title.clone())
            .unwrap_or_else(|| format!("{} of the tool server {}", self.tool.name, self.server.name()));
        ToolSpec {
            name: self.model_name.clone(),
            description,
            parameters,
        }
    }

    async fn call(&self, arguments: &Value, _: &ToolContext) -> Result<String, String> {
        let (server, tool) = (self.server.name(), self.tool.name.as_ref());
        match self.hub.consent(&self.server, &self.tool) {
            Consent::Never => return Err(format!("the user does not allow {server}: {tool}")),
            Consent::Always => {}
            Consent::Ask => {
                let request = ConsentRequest {
                    id: self.hub.next_question(),
                    server: server.to_string(),
                    tool: tool.to_string(),
                    arguments: arguments.to_string(),
                };
                let wait = std::time::Duration::from_secs(u64::from(self.hub.file().ask_timeout_secs.max(1)));
                let answer = tokio::time::timeout(wait, self.hub.asker.ask(&request))
                    .await
                    .unwrap_or(Answer::No);
                match answer {
                    Answer::No => {
                        return Err(format!(
                            "the user did not allow this call of {server}: {tool}, so it did not run; \
                             say so, and do not call it again unless the user asks"
                        ))
                    }
                    Answer::Always => {
                        if let Err(e) = self.hub.set_consent(server, tool, Consent::Always) {
                            tracing::warn!("cannot save the consent for {server}: {tool}: {e}");
                        }
                    }
                    Answer::Yes => {}
                }
            }
        }
        let args = arguments.as_object().cloned().unwrap_or_default();
        self.server.call(tool, args).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_names_never_collide_and_the_providers_accept_them() {
        assert_eq!(model_name("time", "get_current_time"), "time__get_current_time");
        assert_eq!(model_name("everything", "get-env"), "everything__get-env");
        let dotted = model_name("fs", "read.file");
        assert!(
            dotted.starts_with("fs__read_file_") && dotted.len() == "fs__read_file_".len() + 8,
            "{dotted}"
        );
        assert_ne!(dotted, model_name("fs", "read file"));
        let long = model_name("a-long-server-name", &"x".repeat(80));
        assert_eq!(long.len(), MAX_NAME);
        for n in [dotted, long] {
            assert!(
                n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
                "{n}"
            );
        }
    }

    #[test]
    fn only_a_local_servers_read_only_tools_default_to_always() {
        let tool: rmcp::model::Tool = serde_json::from_value(serde_json::json!({
            "name": "echo", "inputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": true}
        }))
        .unwrap();
        let plain: rmcp::model::Tool =
            serde_json::from_value(serde_json::json!({"name": "write", "inputSchema": {"type": "object"}})).unwrap();
        let local = ServerConfig {
            name: "e".into(),
            transport: Transport::Stdio {
                command: "x".into(),
                args: vec![],
                env: vec![],
            },
            enabled: true,
            consent: Default::default(),
        };
        let remote = ServerConfig {
            transport: Transport::Http {
                url: "https://example.com/mcp".into(),
            },
            ..local.clone()
        };
        assert_eq!(default_consent(&local, &tool), Consent::Always);
        assert_eq!(default_consent(&local, &plain), Consent::Ask);
        assert_eq!(default_consent(&remote, &tool), Consent::Ask);
    }
}
