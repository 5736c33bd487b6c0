//! # Hark desktop app
//!
//! A thin Tauri adapter over `hark-core`: commands take `State`, call one core method and
//! map the error to `{kind, message}`; the voice session's events stream to the webview over
//! one `tauri::ipc::Channel`; the global push-to-talk shortcut is handled here, in Rust.
//!
//! # Layout
//! - `lib.rs`: app state, setup (plugins, shortcut, first session), the event forwarder.
//! - `commands.rs`: the commands the webview may call (each permissioned in `build.rs`).
//! - `runtime.rs`: building the model, speech pipeline and voice actor from the settings.
//! - `settings.rs`: the settings file (no keys, ever).
//! - `error.rs`: the command error.

mod commands;
mod error;
mod runtime;
mod settings;

use std::sync::{Arc, Mutex};

use hark_core::conversation::PanelView;
use hark_core::secrets::Keychain;
use hark_core::session::ptt::Key;
use hark_core::session::voice::{VoiceCommand, VoiceEvent};
use hark_core::store::Store;
use tauri::ipc::Channel;
use tauri::Manager;
use tokio::sync::mpsc;

use crate::error::CommandError;
use crate::runtime::Runtime;
use crate::settings::AppSettings;

/// Everything the commands share.
pub struct AppState {
    store: Arc<Store>,
    keychain: Keychain,
    /// std Mutex: only read or replaced, never held across an await.
    settings: Mutex<AppSettings>,
    /// The running session; a tokio Mutex because switching sessions awaits the old actor.
    runtime: tokio::sync::Mutex<Option<Runtime>>,
    /// The running actor's command sender, for the shortcut handler and `ptt` (which must not
    /// wait behind a session switch).
    commands: Mutex<Option<mpsc::UnboundedSender<VoiceCommand>>>,
    /// Every actor sends its events here; the forwarder passes them to the webview.
    events: mpsc::UnboundedSender<VoiceEvent>,
    /// Where the webview listens (set by `subscribe`).
    channel: Arc<Mutex<Option<Channel<VoiceEvent>>>>,
    /// The newest history-panel view, for `app_state`.
    panel: Arc<Mutex<Option<Box<PanelView>>>>,
    /// The model download in progress, if any (for a window that opens mid-download).
    progress: Arc<Mutex<Option<VoiceEvent>>>,
    /// Setup problems to show as banners (missing model, no speaker, shortcut taken).
    problems: Mutex<Vec<CommandError>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // The guarded values are plain data replaced whole; a poisoned lock still holds a
    // consistent value.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl AppState {
    /// Sends a command to the running session, if there is one.
    fn send(&self, cmd: VoiceCommand) -> Result<(), CommandError> {
        match lock(&self.commands).as_ref() {
            Some(tx) if tx.send(cmd).is_ok() => Ok(()),
            _ => Err(CommandError::new("session", "no session is running")),
        }
    }

    /// Push-to-talk from the button or the global shortcut.
    fn key(&self, pressed: bool) -> Result<(), CommandError> {
        self.send(VoiceCommand::Key(if pressed { Key::Press } else { Key::Release }))
    }

    /// Stops the running session (if any) and starts `session` (`None`: a new one).
    async fn switch(&self, session: Option<String>) -> Result<String, CommandError> {
        // Fetch what the settings need first, without holding the runtime: the window
        // stays responsive (and shows the progress) during a first-run download.
        let wanted = lock(&self.settings).clone();
        runtime::fetch_models(&wanted, &self.keychain, &self.events).await?;
        let mut rt = self.runtime.lock().await;
        if let Some(old) = rt.take() {
            let _ = old.commands.send(VoiceCommand::Shutdown);
            let _ = old.task.await;
        }
        *lock(&self.commands) = None;
        let settings = lock(&self.settings).clone();
        let (new, problems) = runtime::start(
            &self.store,
            &settings,
            &self.keychain,
            session.as_deref(),
            self.events.clone(),
        )
        .await?;
        let id = new.session_id.clone();
        *lock(&self.commands) = Some(new.commands.clone());
        *rt = Some(new);
        *lock(&self.problems) = problems;
        let mut s = lock(&self.settings);
        s.last_session = Some(id.clone());
        let _ = settings::save(&s);
        Ok(id)
    }
}

/// Registers the push-to-talk shortcut; returns a problem to show when the system refuses it.
fn register_shortcut(app: &tauri::AppHandle, shortcut: &str) -> Option<CommandError> {
    use tauri_plugin_global_shortcut::GlobalShortcutExt;
    let gs = app.global_shortcut();
    let _ = gs.unregister_all();
    gs.register(shortcut).err().map(|e| {
        CommandError::new(
            "shortcut",
            format!("the shortcut {shortcut} is not available ({e}); use the button"),
        )
    })
}

pub fn run() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("HARK_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    let result = tauri::Builder::default()
        .plugin(tauri_plugin_dialog::init())
        .plugin(
            tauri_plugin_global_shortcut::Builder::new()
                .with_handler(|app, _shortcut, event| {
                    use tauri_plugin_global_shortcut::ShortcutState;
                    let pressed = event.state() == ShortcutState::Pressed;
                    let _ = app.state::<AppState>().key(pressed);
                })
                .build(),
        )
        .setup(|app| {
            let (settings, mut problems) = match settings::load() {
                Ok(s) => (s, Vec::new()),
                Err(e) => (AppSettings::default(), vec![CommandError::new("settings", e)]),
            };
            let db = std::env::var_os("HARK_DB")
                .map(std::path::PathBuf::from)
                .unwrap_or_else(hark_core::store::default_db_path);
            let store = Arc::new(Store::open(&db)?);
            problems.extend(register_shortcut(app.handle(), &settings.shortcut));
            let (events, mut rx) = mpsc::unbounded_channel::<VoiceEvent>();
            let channel: Arc<Mutex<Option<Channel<VoiceEvent>>>> = Arc::default();
            let panel: Arc<Mutex<Option<Box<PanelView>>>> = Arc::default();
            let progress: Arc<Mutex<Option<VoiceEvent>>> = Arc::default();
            let last = settings
                .last_session
                .clone()
                .filter(|id| store.load_session(id).is_ok());
            app.manage(AppState {
                store,
                keychain: Keychain::default(),
                settings: Mutex::new(settings),
                runtime: tokio::sync::Mutex::new(None),
                commands: Mutex::new(None),
                events,
                channel: channel.clone(),
                panel: panel.clone(),
                progress: progress.clone(),
                problems: Mutex::new(Vec::new()),
            });
            // The forwarder: actor events → the webview's channel.
            tauri::async_runtime::spawn(async move {
                while let Some(e) = rx.recv().await {
                    match &e {
                        VoiceEvent::ContextChanged { panel: p } => *lock(&panel) = Some(p.clone()),
                        VoiceEvent::ModelProgress { .. } => *lock(&progress) = Some(e.clone()),
                        VoiceEvent::SessionReady { .. } | VoiceEvent::Failed { .. } => *lock(&progress) = None,
                        _ => {}
                    }
                    if let Some(ch) = lock(&channel).as_ref() {
                        let _ = ch.send(e);
                    }
                }
            });
            let handle = app.handle().clone();
            let start = async move {
                let state = handle.state::<AppState>();
                match state.switch(last).await {
                    Ok(id) => {
                        let _ = state.events.send(VoiceEvent::SessionReady { session_id: id });
                    }
                    Err(e) => {
                        // The window may already be showing (first-run download): tell it.
                        let _ = state.events.send(VoiceEvent::Failed {
                            kind: e.kind.clone(),
                            message: e.message.clone(),
                            next_step: "check the network connection, then save Settings (or restart Hark) to \
                                        continue the download where it stopped; or add an API key in Settings"
                                .into(),
                        });
                        problems.push(e);
                    }
                }
                lock(&state.problems).extend(problems);
            };
            let settings = lock(&app.state::<AppState>().settings).clone();
            if runtime::missing_models(&settings, &app.state::<AppState>().keychain).is_empty() {
                tauri::async_runtime::block_on(start);
            } else {
                // First run offline: the window opens at once and shows the download's
                // progress; the session starts when the models are in place.
                tauri::async_runtime::spawn(start);
            }
            Ok(())
        })
        .invoke_handler(tauri::generate_handler![
            commands::subscribe,
            commands::app_state,
            commands::refresh,
            commands::ptt,
            commands::reset_context,
            commands::set_max_turns,
            commands::set_system_prompt,
            commands::set_summary,
            commands::save_settings,
            commands::set_key,
            commands::delete_key,
            commands::test_connection,
            commands::list_devices,
            commands::list_sessions,
            commands::open_session,
            commands::new_session,
            commands::delete_session,
            commands::export_session,
            commands::import_session,
            commands::list_facts,
            commands::add_fact,
            commands::update_fact,
            commands::delete_fact,
            commands::search_memory,
        ])
        .run(tauri::generate_context!());
    if let Err(e) = result {
        eprintln!("hark: the app failed: {e}");
        std::process::exit(1);
    }
}
