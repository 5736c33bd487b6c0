//! # Hark desktop app
//!
//! A thin Tauri adapter over `hark-core` that lives in the tray: one instance, a window that
//! hides when closed, a global push-to-talk shortcut handled in Rust, a status that the
//! window, the tray and the overlay share, and a log a user can find.
//!
//! # Layout
//! - `lib.rs`: start-up (arguments, logging, plugins, the fatal start-up problems), the
//!   second-launch handling, the window's close-to-tray, the macOS Dock's reopen.
//! - `state.rs`: what everything shares, the status line, key events.
//! - `runtime.rs`: starting a session from the settings (downloads first, with progress).
//! - `commands/`: the commands the windows may call (each permissioned in `build.rs`,
//!   typed for the window by tauri-specta).
//! - `events.rs`: what the windows hear, and the status derived from it.
//! - `tool_servers.rs`: the user's MCP tool servers for every session, consent asked in
//!   the window, their faults as banners.
//! - `settings.rs`: the settings file (no keys, ever).
//! - `tray.rs`, `overlay.rs`, `shortcut.rs`, `update.rs`, `logging.rs`: the tray, the
//!   overlay window, the global shortcut, updates, the log file.
//! - `i18n.rs`: the UI language (the setting, else the system's) and the tray's words in
//!   it, from the window's catalogues.
//! - `error.rs`: the command error (the core's error kind, with its title and next step).

mod commands;
mod error;
mod events;
mod i18n;
mod logging;
mod overlay;
mod runtime;
mod settings;
mod shortcut;
mod state;
mod tool_servers;
mod tray;
mod update;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use hark_core::error::ErrorKind;
use hark_core::session::ptt::Key;
use hark_core::store::{Store, StoreError};
use tauri::Manager;

use crate::error::CommandError;
use crate::events::Status;
use crate::runtime::Forwarder;
use crate::settings::AppSettings;
use crate::state::{lock, AppState, Fatal};

pub use commands::{bindings, BINDINGS};

// The window's catalogues, for the words the app shows outside it (`i18n`). The macro
// belongs at the crate's root: `rust_i18n::t!` looks for what it generates there.
rust_i18n::i18n!("../ui/src/locales", fallback = "en");
// The packaging test checks the release configuration with the rule the app applies.
pub use update::{updates_in_config, UpdateConfigError, Updates};

/// The command line: `--hidden` starts in the tray, `--toggle` presses push-to-talk in the
/// running instance (starting one, hidden, if none runs). A second launch hands its
/// arguments to the running instance and exits 0.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Args {
    hidden: bool,
    toggle: bool,
}

impl Args {
    fn parse<S: AsRef<str>>(argv: impl IntoIterator<Item = S>) -> Self {
        let mut a = Args::default();
        for arg in argv.into_iter().skip(1) {
            match arg.as_ref() {
                "--hidden" => a.hidden = true,
                "--toggle" => a.toggle = true,
                _ => {}
            }
        }
        a
    }
}

/// The database's path: `HARK_DB`, or the platform's data directory.
fn db_path() -> PathBuf {
    std::env::var_os("HARK_DB")
        .map(PathBuf::from)
        .unwrap_or_else(hark_core::store::default_db_path)
}

/// Keeps an unusable database, renamed with its WAL files, so Hark can start fresh.
pub(crate) fn set_aside(db: &Path) -> std::io::Result<PathBuf> {
    let stamp = chrono::Utc::now().format("%Y%m%d-%H%M%S");
    let aside = PathBuf::from(format!("{}.broken-{stamp}", db.display()));
    std::fs::rename(db, &aside)?;
    for ext in ["-wal", "-shm"] {
        let side = PathBuf::from(format!("{}{ext}", db.display()));
        if side.exists() {
            let _ = std::fs::rename(&side, format!("{}{ext}", aside.display()));
        }
    }
    Ok(aside)
}

/// Starts (or restarts) a session in the background; a failure shows in the status line
/// and a banner. A panic in it is not lost either: it ends any download it ran (so no bar
/// stays behind) and becomes a banner.
pub(crate) fn start_session(app: &tauri::AppHandle, session: Option<String>) {
    let app = app.clone();
    let run = {
        let app = app.clone();
        tauri::async_runtime::spawn(async move { runtime::switch(&app, session).await })
    };
    tauri::async_runtime::spawn(async move {
        let state = app.state::<AppState>();
        match run.await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => state.problem(e),
            Err(e) => {
                tracing::error!("starting the session panicked: {e}");
                if lock(&state.download).take().is_some() {
                    state.emit(events::AppEvent::Download { progress: None });
                }
                state.problem(CommandError::new(
                    ErrorKind::Internal,
                    format!("starting the conversation failed unexpectedly ({e})"),
                ));
            }
        }
    });
}

/// A global shortcut went down (`pressed`) or up, however the system told Hark (the
/// plugin's key grab, or the desktop's portal).
fn on_shortcut(app: &tauri::AppHandle, action: shortcut::Action, pressed: bool) {
    let state = app.state::<AppState>();
    match action {
        shortcut::Action::HandsFree => {
            if pressed {
                runtime::spawn_hands_free(app, !state.settings().hands_free);
            }
        }
        shortcut::Action::Mute => {
            if pressed {
                if let Err(e) = state.toggle_muted() {
                    state.problem(e);
                }
                tray::show_switches(app);
            }
        }
        shortcut::Action::PushToTalk => {
            // Not ready yet: key() tells the window why (nothing is dropped silently).
            let _ = state.key(if pressed { Key::Press } else { Key::Release });
        }
    }
}

/// What a fatal start-up problem means for the window: what, where, what next.
fn fatal_status(fatal: &Fatal, message: String) -> Status {
    let (kind, path, next) = match fatal {
        Fatal::Database(p) => (
            ErrorKind::Storage,
            p,
            "open the folder to look at it, or start with a fresh database (the old file is kept, renamed)",
        ),
        Fatal::Settings(p) => (
            ErrorKind::Settings,
            p,
            "open the folder to look at it, or start with default settings (the old file is kept, renamed)",
        ),
    };
    Status::Fatal {
        problem: CommandError::new(kind, message).with_next_step(next),
        path: path.display().to_string(),
    }
}

pub fn run() {
    let args = Args::parse(std::env::args());
    let (settings, settings_error) = match settings::load() {
        Ok(s) => (s, None),
        Err(e) => (AppSettings::default(), Some(e)),
    };
    let logs = logging::init(settings.log_level);
    tracing::info!(version = env!("CARGO_PKG_VERSION"), ?args, "Hark starts");
    let commands = commands::builder();
    let mut builder = tauri::Builder::default()
        // First: a second launch must reach the running instance before anything else.
        .plugin(tauri_plugin_single_instance::init(|app, argv, _cwd| {
            let args = Args::parse(&argv);
            tracing::info!(?args, "a second launch");
            if args.toggle {
                app.state::<AppState>().toggle();
            } else {
                tray::show_main(app);
            }
        }))
        .plugin(tauri_plugin_dialog::init())
        .plugin(tauri_plugin_opener::init())
        .plugin(tauri_plugin_autostart::init(
            tauri_plugin_autostart::MacosLauncher::LaunchAgent,
            Some(vec!["--hidden"]),
        ))
        .plugin(
            tauri_plugin_window_state::Builder::default()
                // Whether the window shows is --hidden's and the setting's to say.
                .with_state_flags(
                    tauri_plugin_window_state::StateFlags::all() - tauri_plugin_window_state::StateFlags::VISIBLE,
                )
                .with_denylist(&["overlay"])
                .build(),
        )
        .plugin(
            tauri_plugin_global_shortcut::Builder::new()
                .with_handler(|app, shortcut, event| {
                    use tauri_plugin_global_shortcut::ShortcutState;
                    let pressed = event.state() == ShortcutState::Pressed;
                    let action = shortcut::which(&app.state::<AppState>().settings(), shortcut)
                        .unwrap_or(shortcut::Action::PushToTalk);
                    on_shortcut(app, action, pressed);
                })
                .build(),
        )
        .invoke_handler(commands.invoke_handler())
        .on_window_event(|window, event| {
            // Closing the main window hides it: Hark keeps running in the tray, and its
            // shortcut keeps working. Quit (tray, menu) ends it.
            if let tauri::WindowEvent::CloseRequested { api, .. } = event {
                if window.label() == "main" {
                    api.prevent_close();
                    match window.hide() {
                        Ok(()) => tracing::info!("window closed: hidden, Hark keeps running in the tray"),
                        Err(e) => tracing::warn!("window closed, but it cannot be hidden: {e}"),
                    }
                }
            }
        })
        .setup(move |app| {
            let db = db_path();
            let mut fatal = settings_error
                .as_ref()
                .map(|e| (Fatal::Settings(settings::path()), e.to_string()));
            let store = match Store::open(&db) {
                Ok(s) => Some(Arc::new(s)),
                Err(e) => {
                    let message = match &e {
                        StoreError::TooNew { .. } => format!("{e}: install the newer Hark, or start fresh"),
                        StoreError::Open { source, .. } => {
                            format!("the conversation database cannot be opened ({source})")
                        }
                        _ => format!("the conversation database cannot be opened ({e})"),
                    };
                    fatal.get_or_insert((Fatal::Database(db.clone()), message));
                    None
                }
            };
            let status = match &fatal {
                Some((f, message)) => fatal_status(f, message.clone()),
                None => Status::Preparing {
                    stage: crate::events::Stage::Starting,
                },
            };
            if let Some((_, m)) = &fatal {
                tracing::error!("cannot start: {m}");
            }
            let handle = app.handle().clone();
            let state = AppState::new(
                store,
                settings.clone(),
                status.clone(),
                logs,
                Box::new(move |s: &Status| {
                    tray::show_status(&handle, s);
                    overlay::follow(&handle, s);
                }),
            );
            *lock(&state.fatal) = fatal.as_ref().map(|(f, _)| f.clone());
            app.manage(state);
            app.manage(Forwarder(runtime::forwarder(app.handle())));
            tool_servers::setup(app.handle());
            let lang = crate::i18n::resolve(settings.ui_language.as_deref());
            tracing::info!("the UI language is {lang}");
            if let Err(e) = tray::build(app.handle(), &status, update::configured(), lang) {
                // A desktop without a tray (no StatusNotifier host) still has the window.
                tracing::warn!("no tray icon: {e}");
            }
            let state = app.state::<AppState>();
            for accelerator in [
                &settings.shortcut,
                &settings.hands_free_shortcut,
                &settings.mute_shortcut,
            ] {
                if let Err(e) = shortcut::replace(app.handle(), accelerator, None) {
                    state.problem(e);
                }
            }
            // In a Wayland session the desktop binds them, through its portal (issue 48).
            #[cfg(target_os = "linux")]
            if shortcut::portal::wanted() {
                shortcut::portal::start(app.handle(), on_shortcut);
            }
            overlay::set(app.handle(), settings.overlay);
            let hidden = args.hidden || args.toggle || settings.start_hidden;
            if let Some(w) = app.get_webview_window("main") {
                if !hidden || fatal.is_some() {
                    let _ = w.show();
                }
            }
            if args.toggle {
                state.toggle();
            }
            if fatal.is_none() {
                // A first run downloads nothing before the introduction's choice (private, or
                // keys); a run with everything in place starts at once, introduction or not.
                let needs_download = runtime::missing_models(&settings.profile, &state.keychain)
                    .map(|m| !m.is_empty())
                    .unwrap_or(false);
                if settings.onboarded || !needs_download {
                    start_session(app.handle(), settings.last_session.clone());
                } else {
                    state.set_status(Status::Waiting);
                }
            }
            Ok(())
        });
    // The configuration the app was built with decides whether it looks for updates.
    let context = tauri::generate_context!();
    if let Some(updater) = update::init(context.config()) {
        builder = builder.plugin(updater);
    }
    let app = match builder.build(context) {
        Ok(app) => app,
        Err(e) => {
            tracing::error!("the app failed: {e}");
            eprintln!("hark: the app failed: {e}");
            std::process::exit(1);
        }
    };
    app.run(|app, event| {
        // macOS: clicking Hark in the Dock, or opening it from Finder while it runs, asks the
        // running app to reopen (tauri#12570); nothing showed the window a close had hidden.
        // Whether windows are visible does not matter: the overlay may be the one showing.
        #[cfg(target_os = "macos")]
        {
            if let tauri::RunEvent::Reopen { .. } = event {
                tray::show_main(app);
            }
        }
        #[cfg(not(target_os = "macos"))]
        let _ = (app, event);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_hidden_and_toggle() {
        assert_eq!(Args::parse(["hark-app"]), Args::default());
        assert_eq!(
            Args::parse(["hark-app", "--toggle"]),
            Args {
                hidden: false,
                toggle: true
            }
        );
        assert!(Args::parse(["hark-app", "--hidden", "--unknown"]).hidden);
    }

    #[test]
    fn an_unusable_database_is_kept_renamed_with_its_wal() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("hark.db");
        for f in ["hark.db", "hark.db-wal", "hark.db-shm"] {
            std::fs::write(dir.path().join(f), "x").unwrap();
        }
        let aside = set_aside(&db).unwrap();
        assert!(!db.exists() && aside.exists());
        assert!(PathBuf::from(format!("{}-wal", aside.display())).exists());
        assert!(aside
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("hark.db.broken-"));
    }
}
