//! Settings → Tools: the user's tool servers (MCP), their tools and consent, and the
//! answer to a consent question. Secrets (a bearer token, secret environment values) go
//! from here to the OS keychain and never come back to the page.

use hark_core::error::ErrorKind;
use hark_core::secrets::ServerSecret;
use hark_core::tools::consent::{Answer, Consent};
use hark_core::tools::mcp::config::{check_server, ServerConfig, ToolServers, Transport};
use hark_core::tools::mcp::ServerView;
use serde::Deserialize;
use tauri::State;

use crate::error::{CmdResult, CommandError};
use crate::state::AppState;
use crate::tool_servers::Tools;

/// A secret environment variable's value, as typed in the form.
#[derive(Debug, Clone, Deserialize, specta::Type)]
pub struct SecretValue {
    pub name: String,
    pub value: String,
}

fn refused(message: impl Into<String>) -> CommandError {
    CommandError::new(ErrorKind::Settings, message)
}

/// Saves the file and applies it to the running servers.
fn apply(tools: &Tools, file: ToolServers) -> CmdResult<Vec<ServerView>> {
    file.save().map_err(|e| refused(e.to_string()))?;
    tools.servers.reconfigure(file);
    Ok(tools.servers.views())
}

/// Every server, its state and its tools with their consent.
#[tauri::command(async)]
#[specta::specta]
pub fn tool_servers(tools: State<'_, Tools>) -> CmdResult<Vec<ServerView>> {
    Ok(tools.servers.views())
}

/// Adds a server (or replaces the one of that name); its token and secret values go to
/// the keychain first. The server starts at once, so its tools show; a failure to start is
/// a banner with its words, and the server stays listed to be fixed or removed.
#[tauri::command(async)]
#[specta::specta]
pub async fn add_tool_server(
    state: State<'_, AppState>,
    tools: State<'_, Tools>,
    server: ServerConfig,
    token: Option<String>,
    secrets: Vec<SecretValue>,
) -> CmdResult<Vec<ServerView>> {
    check_server(&server).map_err(refused)?;
    let kc = &state.keychain;
    match &server.transport {
        Transport::Http { url } => {
            if let Some(t) = token.as_deref().filter(|t| !t.trim().is_empty()) {
                kc.set_server_secret(
                    &ServerSecret::Token {
                        server: server.name.clone(),
                        url: url.clone(),
                    },
                    t,
                )?;
            }
        }
        Transport::Stdio { env, .. } => {
            for v in env.iter().filter(|v| v.secret) {
                let given = secrets.iter().find(|s| s.name == v.name);
                let secret = ServerSecret::Env {
                    server: server.name.clone(),
                    var: v.name.clone(),
                };
                match given {
                    Some(s) if !s.value.is_empty() => kc.set_server_secret(&secret, &s.value)?,
                    _ if kc.server_secret(&secret)?.is_some() => {}
                    _ => return Err(refused(format!("give a value for the secret variable {}", v.name))),
                }
            }
        }
    }
    let mut file = tools.servers.file();
    let mut server = server;
    // What is secret is never written to the file.
    if let Transport::Stdio { env, .. } = &mut server.transport {
        for v in env.iter_mut().filter(|v| v.secret) {
            v.value.clear();
        }
    }
    let name = server.name.clone();
    file.upsert(server).map_err(|e| refused(e.to_string()))?;
    apply(&tools, file)?;
    let _ = tools.servers.test(&name).await;
    Ok(tools.servers.views())
}

/// Removes a server and its secrets.
#[tauri::command(async)]
#[specta::specta]
pub fn remove_tool_server(
    state: State<'_, AppState>,
    tools: State<'_, Tools>,
    name: String,
) -> CmdResult<Vec<ServerView>> {
    let mut file = tools.servers.file();
    let Some(gone) = file.remove(&name) else {
        return Err(refused(format!("no tool server is named {name:?}")));
    };
    let secrets: Vec<ServerSecret> = match &gone.transport {
        Transport::Http { url } => vec![ServerSecret::Token {
            server: name.clone(),
            url: url.clone(),
        }],
        Transport::Stdio { env, .. } => env
            .iter()
            .filter(|v| v.secret)
            .map(|v| ServerSecret::Env {
                server: name.clone(),
                var: v.name.clone(),
            })
            .collect(),
    };
    for s in secrets {
        if let Err(e) = state.keychain.delete_server_secret(&s) {
            tracing::warn!("cannot delete a secret of {name} from the keychain: {e}");
        }
    }
    apply(&tools, file)
}

/// Starts a server (if it is not running) and lists its tools; a failure comes back with
/// the server's own words as the detail.
#[tauri::command(async)]
#[specta::specta]
pub async fn test_tool_server(tools: State<'_, Tools>, name: String) -> CmdResult<Vec<ServerView>> {
    match tools.servers.test(&name).await {
        None => Err(refused(format!("no running tool server is named {name:?}"))),
        Some(Err(e)) => {
            let mut p = CommandError::new(ErrorKind::ToolServer, e.message);
            p.detail = e.detail;
            Err(p)
        }
        Some(Ok(_)) => Ok(tools.servers.views()),
    }
}

/// Sets a tool's consent: ask, always, or never (not offered to the model).
#[tauri::command(async)]
#[specta::specta]
pub fn set_tool_consent(
    tools: State<'_, Tools>,
    server: String,
    tool: String,
    consent: Consent,
) -> CmdResult<Vec<ServerView>> {
    tools
        .servers
        .set_consent(&server, &tool, consent)
        .map_err(|e| refused(e.to_string()))?;
    Ok(tools.servers.views())
}

/// The user's answer to a consent question (`false`: it was no longer asked).
#[tauri::command(async)]
#[specta::specta]
pub fn answer_consent(tools: State<'_, Tools>, id: String, answer: Answer) -> CmdResult<bool> {
    Ok(tools.asker.answer(&id, answer))
}
