//! `hark sessions`, `export`, `import`, `delete` and `keys`.

use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::Subcommand;
use hark_core::secrets::{self, KeySource, Keychain};
use hark_core::store::{export as exp, import, Store};

use crate::ExportFormat;

#[derive(Subcommand)]
pub enum KeysAction {
    /// Store a provider's key, read from stdin (not echoed on a terminal).
    Set { provider: String },
    /// Show for each provider whether a key is present and where it comes from.
    Status,
    /// Remove a provider's key from the keychain.
    Delete { provider: String },
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
    let text = std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    let (format, session) = import::parse(&text).with_context(|| format!("cannot import {}", file.display()))?;
    open(db)?.insert_session(&session)?;
    println!(
        "imported {} messages ({:?} format) as session {}",
        session.messages.len(),
        format,
        session.meta.id
    );
    Ok(ExitCode::SUCCESS)
}

pub fn delete(db: &Path, id: &str) -> Result<ExitCode> {
    let store = open(db)?;
    let id = store.resolve_session(id)?;
    store.delete_session(&id)?;
    println!("deleted session {id}");
    Ok(ExitCode::SUCCESS)
}

pub fn keys(action: KeysAction) -> Result<ExitCode> {
    let kc = Keychain::default();
    match action {
        KeysAction::Set { provider } => {
            let key = read_secret(&format!("Paste the {provider} API key: "))?;
            kc.set(&provider, &key)?;
            println!("stored the {provider} key in the OS keychain");
        }
        KeysAction::Status => {
            for p in secrets::PROVIDERS {
                let line = match kc.get(p) {
                    Ok(Some((_, KeySource::Environment))) => {
                        format!("from the environment ({})", secrets::env_var(p).unwrap_or_default())
                    }
                    Ok(Some((_, KeySource::Keychain))) => "stored in the keychain".to_string(),
                    Ok(None) => "absent".to_string(),
                    Err(e) => format!("unknown: {e}"),
                };
                println!("{p}: {line}");
            }
        }
        KeysAction::Delete { provider } => {
            if kc.delete(&provider)? {
                println!("deleted the {provider} key from the keychain");
            } else {
                println!("no {provider} key was stored");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Reads one line from stdin; on a terminal, with echo off so the key is not shown.
fn read_secret(prompt: &str) -> Result<String> {
    let stdin = std::io::stdin();
    let tty = stdin.is_terminal();
    let stty = |arg: &str| {
        let _ = std::process::Command::new("stty")
            .arg(arg)
            .stdin(std::process::Stdio::inherit())
            .status();
    };
    if tty {
        eprint!("{prompt}");
        stty("-echo");
    }
    let mut line = String::new();
    let read = stdin.lock().read_line(&mut line);
    if tty {
        stty("echo");
        eprintln!();
    }
    read.context("cannot read the key from stdin")?;
    if line.trim().is_empty() {
        bail!("no key given on stdin");
    }
    Ok(line.trim().to_string())
}
