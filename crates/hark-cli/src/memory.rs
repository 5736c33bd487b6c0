//! `hark memory`: what Hark remembers across conversations (rule 12) — facts to list, add,
//! edit and forget, and a search over every session by words and by meaning (issue 24),
//! with the embedding model that [`attach`] gives every command that opens a session.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Subcommand;
use hark_core::models::{Manifest, ModelStore};
use hark_core::store::embed::{self, Embedder};
use hark_core::store::index::{index_all, Indexer};
use hark_core::store::memory::{Fact, Fusion, Matched};
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
    /// Search every session's messages by words (stemmed) and by meaning; each result
    /// says why it matched ("words", "meaning" or "both") and its score.
    Search {
        query: Vec<String>,
        /// One JSON array instead of lines.
        #[arg(long)]
        json: bool,
    },
    /// Embed every message and fact not embedded yet (an older database, or one whose
    /// indexing was stopped), with progress; Ctrl-C stops it and the next run goes on
    /// from there.
    Reindex,
}

/// The embedding model, fetched on first use (with progress) and loaded: searches in
/// `store` find meaning from now on. `None` with the reason said once on stderr, when
/// it cannot be had (searches then find words only, and nothing fails).
pub async fn meaning(store: &Store) -> Option<Arc<Embedder>> {
    let loaded = async {
        let manifest = Manifest::load()?;
        for spec in manifest.with_requirements(embed::MODEL.id)? {
            crate::models::ensure(spec, "memory finds meaning offline").await?;
        }
        let files = embed::files(&manifest, &ModelStore::default_dir())?;
        let model = tokio::task::spawn_blocking(move || Embedder::load(embed::MODEL, &files)).await??;
        anyhow::Ok(Arc::new(model))
    }
    .await;
    match loaded {
        Ok(model) => {
            store.set_meaning(Some(model.clone()));
            Some(model)
        }
        Err(e) => {
            eprintln!("hark: memory finds words only, not meaning: {e:#}");
            None
        }
    }
}

/// [`meaning`], and every message and fact not embedded yet is embedded in the background
/// while the command runs.
pub async fn attach(store: &Arc<Store>) -> Option<Indexer> {
    let model = meaning(store).await?;
    Indexer::start(store.clone(), model)
        .map_err(|e| eprintln!("hark: the memory's indexing did not start: {e}"))
        .ok()
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

pub async fn run(db: &Path, action: MemoryAction) -> Result<ExitCode> {
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
            meaning(&store).await;
            let found = store.search(&query.join(" "), None, 20, Fusion::search())?;
            if json {
                writeln!(out, "{}", serde_json::to_string(&found)?)?;
            } else if found.is_empty() {
                writeln!(out, "nothing matches")?;
            } else {
                for f in found {
                    let h = &f.hit;
                    let why = match f.matched {
                        Matched::Words => "words",
                        Matched::Meaning => "meaning",
                        Matched::Both => "both",
                    };
                    writeln!(
                        out,
                        "{}  {}  {:<9}  {why:<7}  {:.3}  {}",
                        &h.session_id[..h.session_id.len().min(8)],
                        h.created_at.format("%Y-%m-%d %H:%M"),
                        h.kind,
                        f.score,
                        h.text.replace('\n', " ")
                    )?;
                }
            }
        }
        MemoryAction::Reindex => {
            let Some(model) = meaning(&store).await else {
                anyhow::bail!("the embedding model is needed to index the memory (see above)");
            };
            let stop = Arc::new(AtomicBool::new(false));
            {
                let stop = stop.clone();
                tokio::spawn(async move {
                    if tokio::signal::ctrl_c().await.is_ok() {
                        stop.store(true, Ordering::Relaxed);
                    }
                });
            }
            let store = Arc::new(store);
            let p = tokio::task::spawn_blocking(move || {
                index_all(&store, &*model, &stop, |p| {
                    eprint!("\rhark: indexed {} of {} messages and facts", p.done, p.total);
                })
            })
            .await??;
            eprintln!();
            if p.complete() {
                writeln!(out, "indexed: {} messages and facts", p.total)?;
            } else {
                writeln!(
                    out,
                    "stopped at {} of {}: `hark memory reindex` goes on from there",
                    p.done, p.total
                )?;
                return Ok(ExitCode::from(130));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
