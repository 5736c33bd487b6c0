//! Hark in the tray: an icon and tooltip that follow the status (idle, listening hands-free,
//! listening, thinking, speaking, error), and a menu: Show Hark, Push to talk, Conversation
//! mode (hands-free) and its Mute, New conversation, Settings, Check for updates, Quit.
//! Closing the window only hides it; Quit ends the app and its offline model server. The
//! menu and tooltip are in the UI language (`i18n`), and follow a change of it.

use tauri::image::Image;
use tauri::menu::{CheckMenuItem, Menu, MenuItem, PredefinedMenuItem};
use tauri::tray::{MouseButton, MouseButtonState, TrayIconBuilder, TrayIconEvent};
use tauri::{AppHandle, Manager};

use crate::events::{AppEvent, Status, TrayIcon, View};
use crate::state::AppState;

const TRAY: &str = "hark";

/// Whether the state's icon is a template image, which the menu bar draws in its own
/// colour (dark on a light bar, light on a dark one): on macOS, the idle icon. The others
/// keep their colour, which is what says the state (red: listening).
fn template(icon: TrayIcon) -> bool {
    cfg!(target_os = "macos") && icon == TrayIcon::Idle
}

fn image(icon: TrayIcon) -> Option<Image<'static>> {
    let bytes: &'static [u8] = match icon {
        // The microphone cut out of a black disc: only its shape counts in a template.
        TrayIcon::Idle if template(icon) => include_bytes!("../../icons/tray/template.png"),
        TrayIcon::Idle => include_bytes!("../../icons/tray/idle.png"),
        TrayIcon::HandsFree => include_bytes!("../../icons/tray/hands-free.png"),
        TrayIcon::Listening => include_bytes!("../../icons/tray/listening.png"),
        TrayIcon::Thinking => include_bytes!("../../icons/tray/thinking.png"),
        TrayIcon::Speaking => include_bytes!("../../icons/tray/speaking.png"),
        TrayIcon::Error => include_bytes!("../../icons/tray/error.png"),
    };
    Image::from_bytes(bytes).ok()
}

/// Shows, unminimises and focuses the main window.
pub fn show_main(app: &AppHandle) {
    if let Some(w) = app.get_webview_window("main") {
        let _ = w.show();
        let _ = w.unminimize();
        let _ = w.set_focus();
    }
}

/// The menu's items, kept to follow conversation mode however it was changed, and the UI
/// language (managed state).
struct Items {
    hands_free: CheckMenuItem<tauri::Wry>,
    mute: CheckMenuItem<tauri::Wry>,
    /// The plain items with their catalogue keys.
    plain: Vec<(MenuItem<tauri::Wry>, &'static str)>,
}

/// Builds the tray icon and its menu, in the UI language `lang`.
pub fn build(app: &AppHandle, status: &Status, updates: bool, lang: &str) -> tauri::Result<()> {
    let text = |key: &str| crate::i18n::text(lang, key);
    let item = |id: &str, key: &'static str, enabled: bool| {
        MenuItem::with_id(app, id, text(key), enabled, None::<&str>).map(|item| (item, key))
    };
    let show = item("show", "tray.show", true)?;
    let ptt = item("ptt", "tray.ptt", true)?;
    let hands_free = CheckMenuItem::with_id(app, "hands_free", text("tray.handsFree"), true, false, None::<&str>)?;
    let mute = CheckMenuItem::with_id(app, "mute", text("tray.mute"), false, false, None::<&str>)?;
    let new = item("new", "tray.new", true)?;
    let settings = item("settings", "tray.settings", true)?;
    let update = item("update", "tray.update", updates)?;
    let sep = PredefinedMenuItem::separator(app)?;
    let quit = item("quit", "tray.quit", true)?;
    let menu = Menu::with_items(
        app,
        &[
            &show.0,
            &ptt.0,
            &hands_free,
            &mute,
            &new.0,
            &settings.0,
            &update.0,
            &sep,
            &quit.0,
        ],
    )?;
    app.manage(Items {
        hands_free,
        mute,
        plain: vec![show, ptt, new, settings, update, quit],
    });
    let mut builder = TrayIconBuilder::with_id(TRAY)
        .tooltip(status.tooltip(lang))
        .menu(&menu)
        .show_menu_on_left_click(false)
        .on_menu_event(|app, event| on_menu(app, event.id().as_ref()))
        .on_tray_icon_event(|tray, event| {
            if let TrayIconEvent::Click {
                button: MouseButton::Left,
                button_state: MouseButtonState::Up,
                ..
            } = event
            {
                show_main(tray.app_handle());
            }
        });
    if let Some(img) = image(status.icon()) {
        builder = builder.icon(img).icon_as_template(template(status.icon()));
    }
    builder.build(app)?;
    Ok(())
}

fn on_menu(app: &AppHandle, id: &str) {
    let state = app.state::<AppState>();
    match id {
        "show" => show_main(app),
        "ptt" => {
            let _ = state.key(hark_core::session::ptt::Key::Toggle);
        }
        // A check item ticks itself when clicked: what it shows is set again from what
        // happened (conversation mode may fail to start).
        "hands_free" => {
            let on = !state.settings().hands_free;
            crate::runtime::spawn_hands_free(app, on);
        }
        "mute" => {
            let _ = state.toggle_muted();
            show_switches(app);
        }
        "new" => {
            let app = app.clone();
            tauri::async_runtime::spawn(async move {
                if let Err(e) = crate::runtime::switch(&app, None).await {
                    app.state::<AppState>().problem(e);
                }
            });
        }
        "settings" => {
            show_main(app);
            state.emit(AppEvent::Navigate { view: View::Settings });
        }
        "update" => {
            let app = app.clone();
            tauri::async_runtime::spawn(async move {
                let found = crate::update::check(&app).await;
                let state = app.state::<AppState>();
                match found {
                    Ok(message) => state.emit(AppEvent::Notice { message }),
                    Err(e) => state.problem(e),
                }
            });
        }
        "quit" => app.exit(0),
        _ => {}
    }
}

/// The tray follows the status.
pub fn show_status(app: &AppHandle, status: &Status) {
    if let Some(tray) = app.tray_by_id(TRAY) {
        let lang = app.try_state::<AppState>().map_or("en", |s| s.ui_language());
        // Icon and template flag at once (set_icon alone clears the flag on macOS).
        let _ = tray.set_icon_with_as_template(image(status.icon()), template(status.icon()));
        let _ = tray.set_tooltip(Some(status.tooltip(lang)));
    }
    if let Status::HandsFree { .. } | Status::Ready = status {
        show_switches(app);
    }
}

/// The menu and tooltip in the UI language now in effect (after a change of it).
pub fn relabel(app: &AppHandle) {
    let (Some(items), Some(state)) = (app.try_state::<Items>(), app.try_state::<AppState>()) else {
        return;
    };
    let lang = state.ui_language();
    for (item, key) in &items.plain {
        let _ = item.set_text(crate::i18n::text(lang, key));
    }
    let _ = items.hands_free.set_text(crate::i18n::text(lang, "tray.handsFree"));
    let _ = items.mute.set_text(crate::i18n::text(lang, "tray.mute"));
    show_status(app, &state.status());
}

/// The menu's switches follow conversation mode and its mute.
pub fn show_switches(app: &AppHandle) {
    let (Some(switches), Some(state)) = (app.try_state::<Items>(), app.try_state::<AppState>()) else {
        return;
    };
    let on = crate::state::lock(&state.hands_free).clone();
    let _ = switches.hands_free.set_checked(on.is_some());
    let _ = switches.mute.set_enabled(on.is_some());
    let _ = switches.mute.set_checked(on.is_some_and(|h| h.mute.is_muted()));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 22: the README promised a template image on macOS, and none was made. The idle
    /// icon is one there (the menu bar's own colour), the coloured states never are, and
    /// elsewhere nothing is.
    #[test]
    fn on_macos_the_idle_icon_is_a_template_and_the_coloured_states_are_not() {
        assert_eq!(template(TrayIcon::Idle), cfg!(target_os = "macos"));
        for state in [
            TrayIcon::HandsFree,
            TrayIcon::Listening,
            TrayIcon::Thinking,
            TrayIcon::Speaking,
            TrayIcon::Error,
        ] {
            assert!(!template(state), "{state:?}");
        }
        for state in [
            TrayIcon::Idle,
            TrayIcon::HandsFree,
            TrayIcon::Listening,
            TrayIcon::Error,
        ] {
            assert!(image(state).is_some(), "{state:?} decodes");
        }
    }
}
