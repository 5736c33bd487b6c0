//! The user's tool servers in the app (issue 25): one `McpTools` for the app's life,
//! offered to every session beside the built-in tools; consent asked in the window and by
//! voice at once (the first answer wins); a server's faults as banners with its own words
//! under Details.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use hark_core::error::ErrorKind;
use hark_core::secrets::Keychain;
use hark_core::session::voice::{SpokenAsker, VoiceLine};
use hark_core::tools::consent::{Answer, Asker, ConsentRequest};
use hark_core::tools::mcp::client::Change;
use hark_core::tools::mcp::config::ToolServers;
use hark_core::tools::mcp::McpTools;
use tauri::{AppHandle, Manager};
use tokio::sync::oneshot;

use crate::error::CommandError;
use crate::events::AppEvent;
use crate::state::{lock, AppState};

/// What the app keeps: the servers, the questions waiting in the window, and the line
/// each voice session attaches to for the questions it speaks.
pub struct Tools {
    pub servers: Arc<McpTools>,
    pub asker: Arc<WindowAsker>,
    pub questions: Arc<VoiceLine>,
}

/// Asks in the window: the question shows in a dialog until it is answered, or until the
/// time limit (the tool's call then hears no).
pub struct WindowAsker {
    app: AppHandle,
    pending: Mutex<HashMap<String, oneshot::Sender<Answer>>>,
}

impl WindowAsker {
    /// The user's answer to question `id`; `false` when it is no longer asked.
    pub fn answer(&self, id: &str, answer: Answer) -> bool {
        match lock(&self.pending).remove(id) {
            Some(tx) => tx.send(answer).is_ok(),
            None => false,
        }
    }
}

/// Withdraws a question from the window however its wait ends (answered, timed out, or
/// the turn cancelled).
struct Withdraw<'a> {
    asker: &'a WindowAsker,
    id: String,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        lock(&self.asker.pending).remove(&self.id);
        if let Some(state) = self.asker.app.try_state::<AppState>() {
            state.emit(AppEvent::ConsentSettled { id: self.id.clone() });
        }
    }
}

#[async_trait]
impl Asker for WindowAsker {
    async fn ask(&self, request: &ConsentRequest) -> Answer {
        let (tx, rx) = oneshot::channel();
        lock(&self.pending).insert(request.id.clone(), tx);
        let _withdraw = Withdraw {
            asker: self,
            id: request.id.clone(),
        };
        if let Some(state) = self.app.try_state::<AppState>() {
            state.emit(AppEvent::ConsentAsked {
                request: request.clone(),
            });
        }
        rx.await.unwrap_or(Answer::No)
    }
}

/// Loads the servers file and starts every server in the background; an unreadable file
/// is a banner (the app runs on, without the user's tools).
pub fn setup(app: &AppHandle) {
    let state = app.state::<AppState>();
    let file = match ToolServers::load() {
        Ok(f) => f,
        Err(e) => {
            state.problem(CommandError::new(ErrorKind::Settings, e.to_string()));
            ToolServers::default()
        }
    };
    let asker = Arc::new(WindowAsker {
        app: app.clone(),
        pending: Mutex::default(),
    });
    let handle = app.clone();
    let on_change = Arc::new(move |change: Change| {
        let Some(state) = handle.try_state::<AppState>() else {
            return;
        };
        match change {
            Change::Updated | Change::Listed { .. } => state.emit(AppEvent::ToolServersChanged),
            Change::Fault(e) => {
                let mut p = CommandError::new(ErrorKind::ToolServer, e.message);
                p.detail = e.detail;
                state.problem(p);
            }
        }
    });
    let questions = VoiceLine::new();
    let servers = McpTools::new(
        file,
        Some(ToolServers::path()),
        Keychain::default(),
        Arc::new(SpokenAsker::new(Some(asker.clone()), questions.clone())),
        on_change,
    );
    app.manage(Tools {
        servers: servers.clone(),
        asker,
        questions,
    });
    // Started now, so their tools are listed by the first turn (a fault is a banner).
    tauri::async_runtime::spawn(async move {
        servers.start().await;
    });
}
