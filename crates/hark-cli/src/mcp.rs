//! `hark mcp`: the user's tool servers (MCP), kept in the config folder the app shares,
//! their secrets in the OS keychain; and the terminal's way of asking consent.

use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use async_trait::async_trait;
use clap::Subcommand;
use hark_core::secrets::{Keychain, ServerSecret};
use hark_core::session::voice::{SpokenAsker, VoiceLine};
use hark_core::tools::consent::{Answer, Asker, Consent, ConsentRequest, Refuse};
use hark_core::tools::mcp::client::Change;
use hark_core::tools::mcp::config::{EnvVar, ServerConfig, ToolServers, Transport};
use hark_core::tools::mcp::{McpTools, ServerView};
use serde_json::json;

use crate::terminal::printable;

#[derive(Subcommand)]
pub enum McpAction {
    /// Add a tool server (or replace the one of that name): a program speaking MCP on
    /// stdio (`hark mcp add time -- uvx mcp-server-time`), or a streamable-HTTP endpoint
    /// (`hark mcp add home --url https://…/mcp --token-stdin`).
    Add {
        /// Its name: lower-case letters, digits and '-' (its tools are offered as NAME__tool).
        name: String,
        /// The endpoint of a streamable-HTTP server.
        #[arg(long, conflicts_with = "command")]
        url: Option<String>,
        /// Read the server's bearer token from stdin; it goes to the OS keychain, bound
        /// to this URL, and is sent to this URL only.
        #[arg(long, requires = "url")]
        token_stdin: bool,
        /// An environment variable for the program: NAME=VALUE (kept in the settings file).
        #[arg(long = "env", value_name = "NAME=VALUE")]
        env: Vec<String>,
        /// A secret environment variable for the program, taken from this command's own
        /// environment variable of that name; it goes to the OS keychain, not the file.
        #[arg(long = "secret-env", value_name = "NAME")]
        secret_env: Vec<String>,
        /// The program and its arguments (after `--`).
        #[arg(last = true, value_name = "COMMAND")]
        command: Vec<String>,
    },
    /// The servers, whether each starts, and their tools with their consent.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Remove a server and its secrets.
    Remove { name: String },
    /// Start a server and list its tools; exits 1 with the server's own words if it fails.
    Test {
        name: String,
        #[arg(long)]
        json: bool,
    },
    /// Call a server's tool yourself and print its result (no consent question: you asked
    /// for this call); exits 1 with the server's words if it fails.
    Call {
        server: String,
        tool: String,
        /// The arguments, a JSON object.
        #[arg(long, default_value = "{}")]
        args: String,
    },
    /// Print a tool's parameters (JSON Schema) as Hark offers them to the model.
    Schema { server: String, tool: String },
    /// Set a tool's consent: ask (before each call), always, or never (not offered).
    Allow {
        server: String,
        tool: String,
        consent: Consent,
    },
}

pub async fn run(action: McpAction) -> Result<ExitCode> {
    let path = ToolServers::path();
    let mut file = ToolServers::load_from(&path)?;
    let kc = Keychain::default();
    match action {
        McpAction::Add {
            name,
            url,
            token_stdin,
            env,
            secret_env,
            command,
        } => {
            let transport = match (url, command.split_first()) {
                (Some(url), _) => {
                    if !env.is_empty() || !secret_env.is_empty() {
                        bail!("--env and --secret-env are for a program Hark starts, not a URL");
                    }
                    Transport::Http {
                        url: url.trim().to_string(),
                    }
                }
                (None, Some((program, args))) => {
                    let mut vars = Vec::new();
                    for e in &env {
                        let Some((k, v)) = e.split_once('=') else {
                            bail!("--env {e:?} is not NAME=VALUE");
                        };
                        vars.push(EnvVar {
                            name: k.to_string(),
                            value: v.to_string(),
                            secret: false,
                        });
                    }
                    for k in &secret_env {
                        vars.push(EnvVar {
                            name: k.to_string(),
                            value: String::new(),
                            secret: true,
                        });
                    }
                    Transport::Stdio {
                        command: program.clone(),
                        args: args.to_vec(),
                        env: vars,
                    }
                }
                (None, None) => bail!("give the server's program after `--`, or its --url"),
            };
            let server = ServerConfig {
                name: name.clone(),
                transport,
                enabled: true,
                consent: Default::default(),
            };
            hark_core::tools::mcp::config::check_server(&server).map_err(anyhow::Error::msg)?;
            // Secrets first: a server is never saved pointing at a secret that is not there.
            match &server.transport {
                Transport::Http { url } if token_stdin => {
                    let mut token = String::new();
                    std::io::stdin()
                        .lock()
                        .read_line(&mut token)
                        .context("cannot read the token from stdin")?;
                    let secret = ServerSecret::Token {
                        server: name.clone(),
                        url: url.clone(),
                    };
                    kc.set_server_secret(&secret, &token)
                        .context("cannot store the token in the keychain")?;
                }
                Transport::Stdio { .. } => {
                    for var in &secret_env {
                        let value = std::env::var(var).ok().filter(|v| !v.is_empty()).with_context(|| {
                            format!("--secret-env {var}: set {var} in this command's environment to its value")
                        })?;
                        let secret = ServerSecret::Env {
                            server: name.clone(),
                            var: var.clone(),
                        };
                        kc.set_server_secret(&secret, &value)
                            .with_context(|| format!("cannot store {var} in the keychain"))?;
                    }
                }
                _ => {}
            }
            file.upsert(server)?;
            file.save_to(&path)?;
            eprintln!("hark: added the tool server {name} ({})", path.display());
            Ok(ExitCode::SUCCESS)
        }
        McpAction::Remove { name } => {
            let Some(gone) = file.remove(&name) else {
                bail!("no tool server is named {name:?}");
            };
            file.save_to(&path)?;
            forget_secrets(&kc, &gone);
            eprintln!("hark: removed the tool server {name}");
            Ok(ExitCode::SUCCESS)
        }
        McpAction::Allow { server, tool, consent } => {
            if file.get(&server).is_none() {
                bail!("no tool server is named {server:?} (hark mcp list shows them)");
            }
            // Checked against the server's own list when it starts; saved either way (a
            // server that is down today may be up tomorrow).
            let tools = McpTools::new(file.clone(), Some(path.clone()), kc, Arc::new(Refuse), Arc::new(|_| {}));
            match tools.test(&server).await {
                Some(Ok(view)) if !view.tools.iter().any(|t| t.name == tool) => {
                    let names: Vec<&str> = view.tools.iter().map(|t| t.name.as_str()).collect();
                    tools.shutdown().await;
                    bail!(
                        "the tool server {server} has no tool {tool:?} (it has: {})",
                        names.join(", ")
                    );
                }
                Some(Err(e)) => eprintln!("hark: warning: {e}"),
                _ => {}
            }
            tools.set_consent(&server, &tool, consent)?;
            tools.shutdown().await;
            eprintln!("hark: {server}: {tool} is now {}", consent.as_str());
            Ok(ExitCode::SUCCESS)
        }
        McpAction::List { json } => {
            let tools = McpTools::new(file, Some(path), kc, Arc::new(Refuse), Arc::new(|_| {}));
            tools.start().await;
            let views = tools.views();
            tools.shutdown().await;
            if json {
                println!("{}", serde_json::to_string(&views)?);
            } else if views.is_empty() {
                eprintln!("hark: no tool servers; add one with `hark mcp add NAME -- COMMAND ARGS…`");
            } else {
                for v in &views {
                    print_view(v);
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        McpAction::Call { server, tool, args } => {
            let arguments: serde_json::Value =
                serde_json::from_str(&args).with_context(|| format!("--args is not JSON: {args}"))?;
            let tools = named(file, path, kc, &server)?;
            let result = tools.call_now(&server, &tool, arguments).await;
            tools.shutdown().await;
            answered(&server, result.map(|r| r.map(|text| printable(&text).into_owned())))
        }
        McpAction::Schema { server, tool } => {
            let tools = named(file, path, kc, &server)?;
            let result = tools.parameters(&server, &tool).await;
            tools.shutdown().await;
            answered(&server, result)
        }
        McpAction::Test { name, json } => {
            let tools = named(file, path, kc, &name)?;
            let started = Instant::now();
            let result = tools.test(&name).await;
            let ms = started.elapsed().as_millis();
            tools.shutdown().await;
            match result {
                Some(Ok(view)) => {
                    if json {
                        println!("{}", json!({"ok": true, "start_ms": ms, "server": view}));
                    } else {
                        println!("{name}: started in {ms} ms, {} tools", view.tools.len());
                        print_view(&view);
                    }
                    Ok(ExitCode::SUCCESS)
                }
                Some(Err(e)) => {
                    if json {
                        println!("{}", json!({"ok": false, "message": e.message, "detail": e.detail}));
                    } else {
                        eprintln!("hark: {}", printable(&e.message));
                        if let Some(d) = &e.detail {
                            eprintln!("{}", printable(d));
                        }
                    }
                    Ok(ExitCode::FAILURE)
                }
                None => bail!("the tool server {name:?} is switched off"),
            }
        }
    }
}

/// The servers of `file`, none started, for a command about the one named `name`, which
/// must be among them. Consent questions are refused: no tool runs for the model here.
fn named(file: ToolServers, path: std::path::PathBuf, kc: Keychain, name: &str) -> Result<Arc<McpTools>> {
    if file.get(name).is_none() {
        bail!("no tool server is named {name:?}");
    }
    Ok(McpTools::new(file, Some(path), kc, Arc::new(Refuse), Arc::new(|_| {})))
}

/// Prints what a server answered (`hark mcp call`, `hark mcp schema`): the answer on
/// stdout, or its words on stderr and exit 1. `None`: the server is switched off.
fn answered(server: &str, result: Option<Result<impl std::fmt::Display, String>>) -> Result<ExitCode> {
    match result {
        Some(Ok(answer)) => {
            println!("{answer}");
            Ok(ExitCode::SUCCESS)
        }
        Some(Err(e)) => {
            eprintln!("hark: {}", printable(&e));
            Ok(ExitCode::FAILURE)
        }
        None => bail!("the tool server {server:?} is switched off"),
    }
}

fn print_view(v: &ServerView) {
    let how = match &v.config.transport {
        Transport::Stdio { command, args, .. } => format!("{command} {}", args.join(" ")),
        Transport::Http { url } => url.clone(),
    };
    println!("{} ({:?}): {}", v.config.name, v.status.state, printable(how.trim()));
    if let Some(m) = &v.status.message {
        println!("  {}", printable(m));
    }
    for t in &v.tools {
        let chosen = if t.chosen { "" } else { " (default)" };
        println!("  {:<32} {}{chosen}", t.name, t.consent.as_str());
    }
}

/// Deletes a removed server's secrets from the keychain (what is not there is fine).
fn forget_secrets(kc: &Keychain, server: &ServerConfig) {
    let secrets: Vec<ServerSecret> = match &server.transport {
        Transport::Http { url } => vec![ServerSecret::Token {
            server: server.name.clone(),
            url: url.clone(),
        }],
        Transport::Stdio { env, .. } => env
            .iter()
            .filter(|v| v.secret)
            .map(|v| ServerSecret::Env {
                server: server.name.clone(),
                var: v.name.clone(),
            })
            .collect(),
    };
    for s in secrets {
        if let Err(e) = kc.delete_server_secret(&s) {
            eprintln!(
                "hark: warning: cannot delete a secret of {} from the keychain: {e}",
                server.name
            );
        }
    }
}

/// Asks on the terminal (stderr, then a line of stdin): `hark chat` typed by a person.
pub struct TerminalAsker;

#[async_trait]
impl Asker for TerminalAsker {
    async fn ask(&self, request: &ConsentRequest) -> Answer {
        let question = format!(
            "\nhark: {} ({}) [y]es / [n]o / [a]lways: ",
            request.question(),
            printable(&request.arguments)
        );
        tokio::task::spawn_blocking(move || {
            eprint!("{question}");
            let _ = std::io::stderr().flush();
            let mut line = String::new();
            if std::io::stdin().lock().read_line(&mut line).is_err() {
                return Answer::No;
            }
            match line.trim() {
                "a" | "A" => Answer::Always,
                t => Answer::from_words(t).unwrap_or(Answer::No),
            }
        })
        .await
        .unwrap_or(Answer::No)
    }
}

/// The tool servers for a chat or talk session: started, each failure said once on
/// stderr. Asks consent by voice on `questions` (`hark talk` on the microphone, whose
/// terminal is the push-to-talk key), else on the terminal when stdin is one; otherwise
/// every *ask* is a no.
pub async fn open(json_events: bool, questions: Option<Arc<VoiceLine>>) -> Option<Arc<McpTools>> {
    let path = ToolServers::path();
    let file = match ToolServers::load_from(&path) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("hark: warning: no tool servers this time: {e}");
            return None;
        }
    };
    if file.servers.iter().all(|s| !s.enabled) {
        return None;
    }
    let asker: Arc<dyn Asker> = if let Some(line) = questions {
        Arc::new(SpokenAsker::new(None, line))
    } else if std::io::stdin().is_terminal() {
        Arc::new(TerminalAsker)
    } else {
        Arc::new(Refuse)
    };
    // A server that announces a new list of tools (`tools/list_changed`) is said once it is
    // listed again; in `--json`, as a `tool_server_tools` event.
    let on_change = Arc::new(move |change: Change| {
        if let Change::Listed { server, tools } = change {
            if json_events {
                println!(
                    "{}",
                    json!({"type": "tool_server_tools", "server": server, "tools": tools})
                );
            } else {
                eprintln!("hark: {server} now offers: {}", printable(&tools.join(", ")));
            }
        }
    });
    let tools = McpTools::new(file, Some(path), Keychain::default(), asker, on_change);
    for (name, e) in tools.start().await {
        if json_events {
            println!(
                "{}",
                json!({"type": "tool_server_failed", "server": name, "message": e.message, "detail": e.detail})
            );
        }
        eprintln!("hark: warning: {}", printable(&e.message));
        if let Some(d) = &e.detail {
            eprintln!("{}", printable(d));
        }
    }
    Some(tools)
}
