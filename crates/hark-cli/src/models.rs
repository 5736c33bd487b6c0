//! `hark models`: the offline models (manifest, download, where they are), and the progress
//! bar every first-use download shows on stderr.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::Mutex;

use anyhow::Result;
use clap::Subcommand;
use std::path::PathBuf;

use hark_core::models::{Manifest, ModelSpec, ModelStore, Phase, Progress};

#[derive(Subcommand)]
pub enum ModelsAction {
    /// The models Hark can use offline, and whether each is downloaded.
    List,
    /// Download (or finish downloading) a model, checked against its pinned sha256.
    Fetch {
        /// Model id from `hark models list` (default: the default chat, speech and voice
        /// models), with what each requires.
        ids: Vec<String>,
    },
    /// Print where a model's file is (downloading it first if needed).
    Path { id: String },
    /// Delete a downloaded model (and any unfinished download of it) to free the disk;
    /// Hark fetches it again when it is next needed.
    Delete {
        /// Model ids from `hark models list`.
        #[arg(required = true)]
        ids: Vec<String>,
    },
}

/// A progress reporter for stderr: a redrawn bar on a terminal, a line per 10 % otherwise.
pub fn progress_printer() -> impl Fn(Progress) + Send + Sync {
    let tty = std::io::stderr().is_terminal();
    let last = Mutex::new((String::new(), u64::MAX));
    move |p: Progress| {
        let pct = p.percent();
        let verb = match p.phase {
            Phase::Downloading => "downloading",
            Phase::Verifying => "verifying",
            Phase::Assembling => "assembling",
        };
        let mut last = last.lock().unwrap_or_else(|e| e.into_inner());
        let key = format!("{}{verb}", p.model);
        let step = if tty { pct } else { pct / 10 * 10 };
        if last.0 == key && last.1 == step {
            return;
        }
        *last = (key, step);
        let mut err = std::io::stderr().lock();
        if tty {
            let filled = (pct / 4) as usize;
            let _ = write!(
                err,
                "\r{verb} {} [{}{}] {pct:>3}% {:.0}/{:.0} MB",
                p.model,
                "#".repeat(filled),
                ".".repeat(25 - filled),
                p.done as f64 / 1e6,
                p.total as f64 / 1e6
            );
            if pct == 100 {
                let _ = writeln!(err);
            }
        } else {
            let _ = writeln!(err, "hark: {verb} {} {step}%", p.model);
        }
    }
}

/// Makes sure a model is in place, saying why on stderr before a first-use download.
pub async fn ensure(spec: &ModelSpec, why: &str) -> Result<PathBuf> {
    let store = ModelStore::default_dir();
    if !store.is_ready(spec) {
        eprintln!(
            "hark: {why}; fetching the model {} ({:.0} MB, once)",
            spec.id,
            spec.download_size() as f64 / 1e6
        );
    }
    Ok(store.ensure(spec, &progress_printer()).await?)
}

pub async fn run(action: ModelsAction) -> Result<ExitCode> {
    let manifest = Manifest::load()?;
    let store = ModelStore::default_dir();
    match action {
        ModelsAction::List => {
            println!("models directory: {}", store.dir().display());
            let mut used = 0;
            for m in &manifest.models {
                let on_disk = store.size_on_disk(m);
                used += on_disk;
                let state = if store.is_ready(m) {
                    format!("ready, {:.0} MB", on_disk as f64 / 1e6)
                } else if on_disk > 0 {
                    format!("partly fetched, {:.0} MB", on_disk as f64 / 1e6)
                } else {
                    format!("{:.0} MB to download", m.download_size() as f64 / 1e6)
                };
                println!(
                    "{}{:<20} {:<7} {:<24} {}",
                    if m.default { "* " } else { "  " },
                    m.id,
                    format!("{:?}", m.kind).to_lowercase(),
                    state,
                    m.label
                );
            }
            println!("disk used by models: {:.0} MB", used as f64 / 1e6);
        }
        ModelsAction::Fetch { ids } => {
            let ids: Vec<String> = if ids.is_empty() {
                manifest
                    .models
                    .iter()
                    .filter(|m| m.default)
                    .map(|m| m.id.clone())
                    .collect()
            } else {
                ids
            };
            let progress = progress_printer();
            // What a model requires comes first (the natural voice needs its voices and
            // ONNX Runtime); each once.
            let mut specs: Vec<&ModelSpec> = Vec::new();
            for id in &ids {
                for spec in manifest.with_requirements(id)? {
                    if !specs.iter().any(|s| s.id == spec.id) {
                        specs.push(spec);
                    }
                }
            }
            for spec in specs {
                let path = store.ensure(spec, &progress).await?;
                println!("{}", path.display());
            }
        }
        ModelsAction::Path { id } => {
            let spec = manifest.find(&id)?;
            let path = store.ensure(spec, &progress_printer()).await?;
            println!("{}", path.display());
        }
        ModelsAction::Delete { ids } => {
            // Every id is checked before anything is deleted.
            let specs = ids.iter().map(|id| manifest.find(id)).collect::<Result<Vec<_>, _>>()?;
            for spec in specs {
                let freed = store.delete(spec)?;
                println!("{}: deleted, {:.0} MB freed", spec.id, freed as f64 / 1e6);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
