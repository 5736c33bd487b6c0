//! `hark memory`: what Hark remembers across conversations (rule 12) — facts to list, add,
//! edit and forget, and a full-text search over every session.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Subcommand;
use hark_core::store::memory::Fact;
use hark_core::store::Store;

#[derive(Subcommand)]
pub enum MemoryAction {
    /// List remembered facts, numbered (oldest first).
    List {
        /// One JSON array instead of lines.
        #[arg(long)]
        json: bool,
    },
    /// Remember a fact ("My partner is called Alex.").
    Add { text: Vec<String> },
    /// Rewrite a fact, by its number in `hark memory list` or its id (or a unique prefix).
    Edit { fact: String, text: Vec<String> },
    /// Forget a fact, by number or id.
    Forget { fact: String },
    /// Search every session's messages (full text, stemmed).
    Search {
        query: Vec<String>,
        /// One JSON array instead of lines.
        #[arg(long)]
        json: bool,
    },
}

/// A fact's id from its list number or its id/prefix.
fn fact_id(store: &Store, which: &str) -> Result<String> {
    if let Ok(n) = which.parse::<usize>() {
        let facts = store.facts()?;
        return match n.checked_sub(1).and_then(|i| facts.get(i)) {
            Some(f) => Ok(f.id.clone()),
            None => anyhow::bail!(
                "there is no fact number {n}: `hark memory list` shows {} fact(s)",
                facts.len()
            ),
        };
    }
    Ok(store.resolve_fact(which)?)
}

fn print_fact(out: &mut impl Write, n: usize, f: &Fact) -> std::io::Result<()> {
    writeln!(
        out,
        "{n:>3}  {}  {}  {}",
        &f.id[..f.id.len().min(8)],
        f.updated_at.format("%Y-%m-%d"),
        f.text
    )
}

pub fn run(db: &Path, action: MemoryAction) -> Result<ExitCode> {
    let store = Store::open(db)?;
    let mut out = std::io::stdout().lock();
    match action {
        MemoryAction::List { json } => {
            let facts = store.facts()?;
            if json {
                writeln!(out, "{}", serde_json::to_string(&facts)?)?;
            } else if facts.is_empty() {
                writeln!(
                    out,
                    "nothing remembered yet (`hark memory add TEXT`, or ask Hark to remember)"
                )?;
            } else {
                for (i, f) in facts.iter().enumerate() {
                    print_fact(&mut out, i + 1, f)?;
                }
            }
        }
        MemoryAction::Add { text } => {
            let f = store.add_fact(&text.join(" "), None)?;
            writeln!(out, "remembered: {}", f.text)?;
        }
        MemoryAction::Edit { fact, text } => {
            let id = fact_id(&store, &fact)?;
            let f = store
                .update_fact(&id, &text.join(" "))
                .with_context(|| format!("cannot edit fact {fact}"))?;
            writeln!(out, "now remembered: {}", f.text)?;
        }
        MemoryAction::Forget { fact } => {
            let id = fact_id(&store, &fact)?;
            let f = store.delete_fact(&id)?;
            writeln!(out, "forgot: {}", f.text)?;
        }
        MemoryAction::Search { query, json } => {
            let hits = store.search_messages(&query.join(" "), None, 20)?;
            if json {
                writeln!(out, "{}", serde_json::to_string(&hits)?)?;
            } else if hits.is_empty() {
                writeln!(out, "nothing matches")?;
            } else {
                for h in hits {
                    writeln!(
                        out,
                        "{}  {}  {:<9}  {}",
                        &h.session_id[..h.session_id.len().min(8)],
                        h.created_at.format("%Y-%m-%d %H:%M"),
                        h.kind,
                        h.text.replace('\n', " ")
                    )?;
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
