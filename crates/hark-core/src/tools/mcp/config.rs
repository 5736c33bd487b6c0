//! The tool servers the user added: `tools.json` in the config folder the app and the CLI
//! share. It holds no secret: a bearer token and the environment variables marked secret
//! live in the OS keychain (`secrets::ServerSecret`), and the file only says that they do.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::tools::consent::Consent;

/// The file's name in the config folder.
pub const FILE: &str = "tools.json";

/// Every tool server, and the limits their calls run under.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(default)]
pub struct ToolServers {
    pub servers: Vec<ServerConfig>,
    /// A call with no answer after this long is cancelled and reported to the model.
    pub call_timeout_secs: u32,
    /// A server that has not started (and listed its tools) after this long has failed.
    pub start_timeout_secs: u32,
    /// How long an *ask* waits for the user; then it is a no.
    pub ask_timeout_secs: u32,
    /// A result longer than this (in characters) is cut before it reaches the model.
    pub max_result_chars: u32,
}

impl Default for ToolServers {
    fn default() -> Self {
        Self {
            servers: Vec::new(),
            call_timeout_secs: 60,
            start_timeout_secs: 30,
            ask_timeout_secs: 30,
            max_result_chars: 20_000,
        }
    }
}

/// One server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ServerConfig {
    /// The user's name for it: lower-case letters, digits and `-`, at most 24 (it prefixes
    /// its tools' names as the model sees them: `calendar__create_event`).
    pub name: String,
    #[serde(flatten)]
    pub transport: Transport,
    #[serde(default = "yes")]
    pub enabled: bool,
    /// The user's choice per tool (by the tool's own name); a tool not here gets its
    /// default (see `mcp::default_consent`).
    #[serde(default)]
    pub consent: BTreeMap<String, Consent>,
}

fn yes() -> bool {
    true
}

/// How Hark reaches a server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(tag = "transport", rename_all = "lowercase")]
pub enum Transport {
    /// A program Hark starts, speaking MCP on its standard input and output.
    Stdio {
        command: String,
        #[serde(default)]
        args: Vec<String>,
        #[serde(default)]
        env: Vec<EnvVar>,
    },
    /// A streamable-HTTP endpoint. Its bearer token, if it has one, is in the keychain,
    /// bound to this URL.
    Http { url: String },
}

/// An environment variable for a stdio server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct EnvVar {
    pub name: String,
    /// Empty for a secret one: its value is in the keychain.
    #[serde(default)]
    pub value: String,
    #[serde(default)]
    pub secret: bool,
}

/// Why the servers file could not be read or written.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {message}")]
    Unreadable { path: PathBuf, message: String },
    #[error("{path} is not a valid tool-server list: {message}")]
    Invalid { path: PathBuf, message: String },
    #[error("cannot save the tool servers to {path}: {message}")]
    Write { path: PathBuf, message: String },
    #[error("{0}")]
    Refused(String),
}

impl ToolServers {
    /// `tools.json` in the shared config folder.
    pub fn path() -> PathBuf {
        crate::dirs::config_dir().join(FILE)
    }

    /// Reads the servers file; a missing one is an empty list.
    pub fn load_from(path: &Path) -> Result<Self, ConfigError> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(e) => {
                return Err(ConfigError::Unreadable {
                    path: path.into(),
                    message: e.to_string(),
                })
            }
        };
        let invalid = |message: String| ConfigError::Invalid {
            path: path.into(),
            message,
        };
        let file: Self = serde_json::from_str(&text).map_err(|e| invalid(e.to_string()))?;
        let mut seen = std::collections::HashSet::new();
        for s in &file.servers {
            check_server(s).map_err(invalid)?;
            if !seen.insert(s.name.as_str()) {
                return Err(invalid(format!("two servers are named {:?}", s.name)));
            }
        }
        Ok(file)
    }

    pub fn load() -> Result<Self, ConfigError> {
        Self::load_from(&Self::path())
    }

    /// Writes the file atomically (a temporary file, then a rename), so a crash never
    /// leaves half a list.
    pub fn save_to(&self, path: &Path) -> Result<(), ConfigError> {
        let write = |p: &Path, e: std::io::Error| ConfigError::Write {
            path: p.into(),
            message: e.to_string(),
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| write(dir, e))?;
        }
        let tmp = path.with_extension("json.tmp");
        let text = serde_json::to_string_pretty(self).unwrap_or_default();
        std::fs::write(&tmp, text).map_err(|e| write(&tmp, e))?;
        std::fs::rename(&tmp, path).map_err(|e| write(path, e))
    }

    pub fn save(&self) -> Result<(), ConfigError> {
        self.save_to(&Self::path())
    }

    pub fn get(&self, name: &str) -> Option<&ServerConfig> {
        self.servers.iter().find(|s| s.name == name)
    }

    pub fn get_mut(&mut self, name: &str) -> Option<&mut ServerConfig> {
        self.servers.iter_mut().find(|s| s.name == name)
    }

    /// Adds a server, or replaces the one of the same name (keeping its consent choices).
    pub fn upsert(&mut self, mut server: ServerConfig) -> Result<(), ConfigError> {
        check_server(&server).map_err(ConfigError::Refused)?;
        if let Some(old) = self.get_mut(&server.name) {
            if server.consent.is_empty() {
                server.consent = std::mem::take(&mut old.consent);
            }
            *old = server;
        } else {
            self.servers.push(server);
        }
        Ok(())
    }

    /// Removes a server; `None` when there was none of that name.
    pub fn remove(&mut self, name: &str) -> Option<ServerConfig> {
        let i = self.servers.iter().position(|s| s.name == name)?;
        Some(self.servers.remove(i))
    }
}

/// Checks a server's name and transport, in words for the person who typed them.
pub fn check_server(s: &ServerConfig) -> Result<(), String> {
    check_name(&s.name)?;
    match &s.transport {
        Transport::Stdio { command, env, .. } => {
            if command.trim().is_empty() {
                return Err(format!("the server {:?} has no command to start", s.name));
            }
            for v in env {
                let ok =
                    !v.name.is_empty() && !v.name.contains('=') && !v.name.contains('\0') && !v.value.contains('\0');
                if !ok {
                    return Err(format!(
                        "the server {:?} has an environment variable {:?} that no program can be given",
                        s.name, v.name
                    ));
                }
            }
        }
        Transport::Http { url } => check_url(url).map_err(|e| format!("the server {:?}: {e}", s.name))?,
    }
    Ok(())
}

/// A server name: 1–24 of `a-z`, `0-9`, `-`, starting with a letter. No `_`, so the
/// model-facing `server__tool` splits one way only.
pub fn check_name(name: &str) -> Result<(), String> {
    let ok = (1..=24).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{name:?} cannot name a tool server: use 1 to 24 lower-case letters, digits and '-', starting with a letter"
        ))
    }
}

/// An MCP endpoint: `https://`, or plain `http://` to this computer only (the same rule as
/// the providers': a token never crosses the network in the clear).
pub fn check_url(url: &str) -> Result<(), String> {
    let parsed = reqwest::Url::parse(url.trim()).map_err(|e| format!("{url:?} is not a URL ({e})"))?;
    let host = parsed.host_str().unwrap_or("");
    match parsed.scheme() {
        "https" if !host.is_empty() => Ok(()),
        "http" if crate::provider::is_loopback_host(host) => Ok(()),
        "http" => Err(format!(
            "{url:?} is plain http to another computer; use https (plain http is only for this computer)"
        )),
        _ => Err(format!("{url:?} is not an http(s) URL")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stdio(name: &str) -> ServerConfig {
        ServerConfig {
            name: name.into(),
            transport: Transport::Stdio {
                command: "mcp-server-time".into(),
                args: vec!["--local-timezone".into(), "UTC".into()],
                env: vec![],
            },
            enabled: true,
            consent: BTreeMap::new(),
        }
    }

    #[test]
    fn the_file_round_trips_and_keeps_choices_on_replace() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE);
        assert_eq!(ToolServers::load_from(&path).unwrap(), ToolServers::default());
        let mut f = ToolServers::default();
        let mut time = stdio("time");
        time.consent.insert("convert_time".into(), Consent::Never);
        f.upsert(time).unwrap();
        f.upsert(ServerConfig {
            name: "everything".into(),
            transport: Transport::Http {
                url: "http://127.0.0.1:3001/mcp".into(),
            },
            enabled: true,
            consent: BTreeMap::new(),
        })
        .unwrap();
        f.save_to(&path).unwrap();
        let back = ToolServers::load_from(&path).unwrap();
        assert_eq!(back, f);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(r#""transport": "stdio""#), "{text}");

        // Adding it again (a new command) keeps what the user chose for its tools.
        f.upsert(stdio("time")).unwrap();
        assert_eq!(f.get("time").unwrap().consent["convert_time"], Consent::Never);
        assert!(f.remove("time").is_some());
        assert!(f.remove("time").is_none());
    }

    #[test]
    fn bad_names_urls_and_files_are_refused_with_the_reason() {
        for bad in ["", "Time", "my_server", "9lives", "a-very-long-server-name-indeed"] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        check_name("home-assistant2").unwrap();
        assert!(check_url("http://example.com/mcp").unwrap_err().contains("plain http"));
        assert!(check_url("ftp://x/y").unwrap_err().contains("not an http(s) URL"));
        check_url("https://example.com/mcp").unwrap();
        check_url("http://localhost:3001/mcp").unwrap();

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE);
        std::fs::write(&path, "{\"servers\": [{\"name\": \"x\"}]}").unwrap();
        let e = ToolServers::load_from(&path).unwrap_err().to_string();
        assert!(e.contains("not a valid tool-server list"), "{e}");
        let dup = serde_json::json!({"servers": [
            {"name": "t", "transport": "stdio", "command": "a"},
            {"name": "t", "transport": "stdio", "command": "b"}]});
        std::fs::write(&path, dup.to_string()).unwrap();
        let e = ToolServers::load_from(&path).unwrap_err().to_string();
        assert!(e.contains("two servers are named \"t\""), "{e}");
    }
}
