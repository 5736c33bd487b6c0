//! Where Hark keeps its configuration: one folder for the app and the CLI, so a tool
//! server added with `hark mcp add` is there in the window too.

use std::path::PathBuf;

/// The config directory: `HARK_CONFIG_DIR`, or the platform's (e.g. `~/.config/hark`,
/// `~/Library/Application Support/app.hark.hark`, `%APPDATA%\hark\hark\config`).
pub fn config_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("HARK_CONFIG_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    directories::ProjectDirs::from("app", "hark", "hark")
        .map(|d| d.config_dir().to_path_buf())
        .unwrap_or_else(|| PathBuf::from("."))
}
