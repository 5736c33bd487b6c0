//! The log: a file a user can find (Settings → Open logs folder), rotated daily and kept
//! for a week, plus stderr. The level comes from Settings (`HARK_LOG` overrides it) and
//! changes without a restart. Keys never reach it: nothing logs one (tested).

use std::path::{Path, PathBuf};

use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{reload, EnvFilter, Registry};

use crate::settings::LogLevel;

/// Log files kept (one a day).
const KEEP: usize = 7;

/// The platform's place for logs: `HARK_LOG_DIR`, else `~/Library/Logs/Hark` on macOS and
/// `<local data dir>/hark/logs` elsewhere (`~/.local/share/hark/logs`, `%LOCALAPPDATA%`).
pub fn log_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("HARK_LOG_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    let dirs = directories::ProjectDirs::from("app", "hark", "hark");
    if cfg!(target_os = "macos") {
        if let Some(home) = directories::BaseDirs::new() {
            return home.home_dir().join("Library/Logs/Hark");
        }
    }
    dirs.map(|d| d.data_local_dir().join("logs"))
        .unwrap_or_else(|| PathBuf::from("logs"))
}

/// The running log: where it is, and a handle to change its level.
pub struct Logs {
    dir: PathBuf,
    filter: reload::Handle<EnvFilter, Registry>,
}

fn filter(level: LogLevel) -> EnvFilter {
    EnvFilter::try_from_env("HARK_LOG").unwrap_or_else(|_| {
        // Our crates at the chosen level; the libraries only when they warn.
        EnvFilter::new(format!(
            "warn,hark_app={l},hark_core={l},hark_cli={l}",
            l = level.directive()
        ))
    })
}

/// Starts logging to stderr and to `<log dir>/hark.log.YYYY-MM-DD`. A log directory that
/// cannot be created leaves stderr only (and says so there).
pub fn init(level: LogLevel) -> Logs {
    let dir = log_dir();
    let (filter, handle) = reload::Layer::new(filter(level));
    let file = std::fs::create_dir_all(&dir).map_err(|e| e.to_string()).and_then(|()| {
        tracing_appender::rolling::Builder::new()
            .rotation(tracing_appender::rolling::Rotation::DAILY)
            .filename_prefix("hark.log")
            .max_log_files(KEEP)
            .build(&dir)
            .map_err(|e| e.to_string())
    });
    let file_layer = match file {
        Ok(appender) => Some(tracing_subscriber::fmt::layer().with_ansi(false).with_writer(appender)),
        Err(e) => {
            eprintln!("hark: cannot write logs to {}: {e}", dir.display());
            None
        }
    };
    let _ = tracing_subscriber::registry()
        .with(filter)
        .with(tracing_subscriber::fmt::layer().with_writer(std::io::stderr))
        .with(file_layer)
        .try_init();
    Logs { dir, filter: handle }
}

impl Logs {
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Changes the level from now on.
    pub fn set_level(&self, level: LogLevel) {
        if let Err(e) = self.filter.reload(filter(level)) {
            tracing::warn!("cannot change the log level: {e}");
        }
    }
}
