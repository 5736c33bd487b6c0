//! `hark sessions`, `export`, `import`, `delete` and `keys`.

use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::Subcommand;
use hark_core::secrets::{self, KeySlot, KeySource, Keychain};
use hark_core::store::{export as exp, import, Store};

use crate::ExportFormat;

#[derive(Subcommand)]
pub enum KeysAction {
    /// Store a provider's key, read from stdin (not echoed on a terminal). The key goes
    /// only to the provider's official endpoint, or, with --base-url, only to that URL.
    Set {
        provider: String,
        /// The endpoint the key is for (OpenRouter, Groq, a proxy); default: the official one.
        #[arg(long)]
        base_url: Option<String>,
    },
    /// Show for each provider whether a key is present and where it comes from.
    Status {
        /// Also show the key for this endpoint.
        #[arg(long)]
        base_url: Option<String>,
    },
    /// Remove a provider's key from the keychain.
    Delete {
        provider: String,
        /// The endpoint whose key to remove; default: the official one.
        #[arg(long)]
        base_url: Option<String>,
    },
}

fn open(db: &Path) -> Result<Store> {
    Ok(Store::open(db)?)
}

pub fn sessions(db: &Path, json: bool) -> Result<ExitCode> {
    let list = open(db)?.list_sessions()?;
    let mut out = std::io::stdout().lock();
    if json {
        writeln!(out, "{}", serde_json::to_string(&list)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    if list.is_empty() {
        writeln!(out, "no sessions yet in {}", db.display())?;
    }
    for s in list {
        writeln!(
            out,
            "{}  {}  {:>4} msgs  {}",
            s.id,
            s.updated_at.format("%Y-%m-%d %H:%M"),
            s.messages,
            s.title.as_deref().unwrap_or("(empty)")
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

pub fn export(db: &Path, id: &str, format: ExportFormat, out: Option<&Path>) -> Result<ExitCode> {
    let store = open(db)?;
    let id = store.resolve_session(id)?;
    let session = store.load_session(&id)?;
    let text = match format {
        ExportFormat::Json => exp::to_json(&session),
        ExportFormat::Md => exp::to_markdown(&session),
        ExportFormat::Deepgram => exp::to_deepgram(&session),
    };
    match out {
        Some(path) => std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))?,
        None => {
            let mut o = std::io::stdout().lock();
            o.write_all(text.as_bytes())?;
            o.write_all(b"\n")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub fn import(db: &Path, file: &Path) -> Result<ExitCode> {
    let text = import::read_file(file).with_context(|| format!("cannot read {}", file.display()))?;
    let imported = import::parse_file(&text).with_context(|| format!("cannot import {}", file.display()))?;
    open(db)?.insert_sessions(&imported.sessions)?;
    let mut out = std::io::stdout().lock();
    match imported.sessions.as_slice() {
        [session] => writeln!(
            out,
            "imported {} messages ({:?} format) as session {}",
            session.messages.len(),
            imported.format,
            session.meta.id
        )?,
        sessions => {
            writeln!(
                out,
                "imported {} conversations, {} messages ({:?} format), as sessions:",
                sessions.len(),
                imported.messages(),
                imported.format
            )?;
            for s in sessions {
                writeln!(out, "{}", s.meta.id)?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The shortest session-id prefix `hark delete` accepts: a typo of one or two characters
/// must not delete a conversation by chance.
const MIN_DELETE_PREFIX: usize = 4;

pub fn delete(db: &Path, id: &str) -> Result<ExitCode> {
    let store = open(db)?;
    let full = store.resolve_session(id)?;
    if id != full && id.chars().count() < MIN_DELETE_PREFIX {
        bail!(
            "{id:?} is too short to delete by: give at least {MIN_DELETE_PREFIX} characters of the session id (`hark sessions` lists them)"
        );
    }
    let id = full;
    store.delete_session(&id)?;
    println!("deleted session {id}");
    Ok(ExitCode::SUCCESS)
}

pub fn keys(action: KeysAction) -> Result<ExitCode> {
    let kc = Keychain::default();
    match action {
        KeysAction::Set { provider, base_url } => {
            let slot = slot(&provider, base_url.as_deref())?;
            let key = read_secret(&format!("Paste the {slot} API key: "))?;
            kc.set(&slot, &key)?;
            println!("stored the {slot} key in the OS keychain");
        }
        KeysAction::Status { base_url } => {
            for p in secrets::PROVIDERS {
                let mut slots = vec![KeySlot::official(p)];
                if let Some(url) = base_url.as_deref() {
                    slots.push(slot(p, Some(url))?);
                    slots.dedup();
                }
                for slot in slots {
                    let line = match kc.get(&slot) {
                        Ok(Some((_, KeySource::Environment))) => {
                            format!("from the environment ({})", secrets::env_var(p).unwrap_or_default())
                        }
                        Ok(Some((_, KeySource::Keychain))) => "stored in the keychain".to_string(),
                        Ok(None) => "absent".to_string(),
                        Err(e) => format!("unknown: {e}"),
                    };
                    println!("{slot}: {line}");
                }
            }
        }
        KeysAction::Delete { provider, base_url } => {
            let slot = slot(&provider, base_url.as_deref())?;
            if kc.delete(&slot)? {
                println!("deleted the {slot} key from the keychain");
            } else {
                println!("no {slot} key was stored");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The key slot for a provider and an optional endpoint, refusing an endpoint a key could
/// not safely go to.
fn slot(provider: &str, base_url: Option<&str>) -> Result<KeySlot> {
    if let Some(url) = base_url {
        hark_core::provider::check_endpoint("keys", url)?;
    }
    Ok(KeySlot::for_base_url(provider, base_url))
}

/// Reads the key from stdin: on a terminal without echo (rpassword: every OS), otherwise
/// one line from the pipe.
fn read_secret(prompt: &str) -> Result<String> {
    let line = if std::io::stdin().is_terminal() {
        rpassword::prompt_password(prompt).context("cannot read the key from the terminal")?
    } else {
        let mut line = String::new();
        std::io::stdin()
            .lock()
            .read_line(&mut line)
            .context("cannot read the key from stdin")?;
        line
    };
    if line.trim().is_empty() {
        bail!("no key given on stdin");
    }
    Ok(line.trim().to_string())
}
