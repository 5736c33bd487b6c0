//! The optional overlay: a small always-on-top window that shows Hark listening (by the key
//! or hands-free), thinking or speaking while the main window is hidden or behind others (Settings → Overlay).

use tauri::{AppHandle, Manager, WebviewUrl, WebviewWindowBuilder};

use crate::events::Status;

const LABEL: &str = "overlay";
const WIDTH: f64 = 240.0;
const HEIGHT: f64 = 56.0;

/// Creates the overlay window (hidden) when the setting is on, closes it when it is off.
pub fn set(app: &AppHandle, on: bool) {
    let existing = app.get_webview_window(LABEL);
    match (on, existing) {
        (true, None) => {
            let built = WebviewWindowBuilder::new(app, LABEL, WebviewUrl::App("overlay.html".into()))
                .title("Hark")
                .inner_size(WIDTH, HEIGHT)
                .resizable(false)
                .decorations(false)
                .always_on_top(true)
                .skip_taskbar(true)
                // Never takes the keyboard from the app the user is typing in: focused(false)
                // holds for the window's creation only, and each later show() would focus it
                // on Windows; a window that cannot be focused is never activated (tao:
                // WS_EX_NOACTIVATE).
                .focused(false)
                .focusable(false)
                .visible(false)
                .build();
            match built {
                Ok(w) => {
                    if let Ok(Some(m)) = app.primary_monitor() {
                        let scale = m.scale_factor();
                        let x = (m.size().width as f64 / scale - WIDTH) / 2.0;
                        let _ = w.set_position(tauri::LogicalPosition::new(x.max(0.0), 24.0));
                    }
                }
                Err(e) => tracing::warn!("cannot open the overlay: {e}"),
            }
        }
        (false, Some(w)) => {
            let _ = w.close();
        }
        _ => {}
    }
}

/// Shows the overlay while a turn is under way, and all the time conversation mode listens
/// (or is muted: the overlay says so); hides it otherwise.
pub fn follow(app: &AppHandle, status: &Status) {
    if let Some(w) = app.get_webview_window(LABEL) {
        let active = matches!(
            status,
            Status::Listening | Status::Thinking | Status::Speaking | Status::HandsFree { .. }
        );
        let _ = if active { w.show() } else { w.hide() };
    }
}
