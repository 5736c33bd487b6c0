//! The global shortcuts through the desktop's GlobalShortcuts portal (issue 48). In a
//! Wayland session, X11 key grabs (tauri-plugin-global-shortcut) hear nothing unless an
//! XWayland window has the focus, so there Hark asks the desktop itself
//! (`org.freedesktop.portal.GlobalShortcuts`, xdg-desktop-portal 1.16 and later: KDE
//! Plasma, GNOME 48 and later, Hyprland…) to bind push-to-talk, conversation mode and its
//! mute. The desktop may ask the user to confirm them once, and may assign other keys; it
//! sends `Activated` when a shortcut goes down and `Deactivated` when it comes up, so
//! holding the key to talk works as on X11.
//!
//! Owns: whether the portal is used (`wanted`), a setting's accelerator as a portal trigger
//! (`trigger`), the portal session, its binding again when Settings change (`rebind`), the
//! keys the desktop assigned to push-to-talk (shown in the window), and, when there is no
//! portal or the desktop refused, what to bind instead (`no_global_shortcuts`: the window
//! says it in its language). Spoken
//! through `ashpd` with its async-io flavour: its tokio flavour would switch the app's
//! one zbus 5 to tokio, under which tauri-plugin-single-instance's blocking D-Bus call at
//! start-up panics ("Cannot start a runtime from within a runtime").

use std::sync::Arc;

use ashpd::desktop::global_shortcuts::{GlobalShortcuts, NewShortcut};
use futures_util::StreamExt;
use tauri::{AppHandle, Manager};
use tokio::sync::Notify;

use super::{label, Action, Platform};
use crate::events::{AppEvent, NoGlobalShortcuts};
use crate::settings::AppSettings;
use crate::state::{lock, AppState};

/// The ids Hark's shortcuts have at the portal, each with its action. Distinctive, because
/// xdg-desktop-portal 1.16 sends every session's `Activated` to every listener.
const IDS: [(Action, &str); 3] = [
    (Action::PushToTalk, "hark-push-to-talk"),
    (Action::HandsFree, "hark-conversation-mode"),
    (Action::Mute, "hark-mute"),
];

/// Whether Hark's shortcuts go through the portal: in a Wayland session (as Handy and
/// OpenWhispr tell one: `WAYLAND_DISPLAY`, or `XDG_SESSION_TYPE=wayland`), or when
/// `HARK_SHORTCUTS=portal` says so (`x11`: never).
pub fn wanted() -> bool {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    match env("HARK_SHORTCUTS").as_deref() {
        Some("portal") => true,
        Some("x11") => false,
        _ => {
            env("WAYLAND_DISPLAY").is_some()
                || env("XDG_SESSION_TYPE").is_some_and(|t| t.eq_ignore_ascii_case("wayland"))
        }
    }
}

/// A setting's accelerator (`CommandOrControl+Shift+Space`) as the trigger the portal is
/// offered (`CTRL+SHIFT+space`: the freedesktop shortcuts specification's modifiers, `CTRL`,
/// `ALT`, `SHIFT` and `LOGO`, then an xkb key name).
pub fn trigger(accelerator: &str) -> String {
    accelerator
        .split('+')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| {
            let lower = p.to_ascii_lowercase();
            match lower.as_str() {
                "commandorcontrol" | "cmdorctrl" | "commandorctrl" | "cmdorcontrol" | "control" | "ctrl" => {
                    "CTRL".to_string()
                }
                "alt" | "option" => "ALT".into(),
                "shift" => "SHIFT".into(),
                "super" | "meta" | "command" | "cmd" => "LOGO".into(),
                _ => key_name(p),
            }
        })
        .collect::<Vec<_>>()
        .join("+")
}

/// A key of an accelerator (the W3C code names tauri's accelerators take, or a bare key) as
/// xkb names it.
fn key_name(key: &str) -> String {
    if let Some(k) = key.strip_prefix("Key").or_else(|| key.strip_prefix("Digit")) {
        if k.chars().count() == 1 {
            return k.to_ascii_lowercase();
        }
    }
    let named = match key.to_ascii_lowercase().as_str() {
        "space" => "space",
        "enter" | "return" => "Return",
        "escape" | "esc" => "Escape",
        "tab" => "Tab",
        "backspace" => "BackSpace",
        "delete" => "Delete",
        "insert" => "Insert",
        "home" => "Home",
        "end" => "End",
        "pageup" => "Page_Up",
        "pagedown" => "Page_Down",
        "arrowup" | "up" => "Up",
        "arrowdown" | "down" => "Down",
        "arrowleft" | "left" => "Left",
        "arrowright" | "right" => "Right",
        "pause" => "Pause",
        "printscreen" => "Print",
        "scrolllock" => "Scroll_Lock",
        "capslock" => "Caps_Lock",
        "minus" => "minus",
        "equal" => "equal",
        "comma" => "comma",
        "period" => "period",
        "slash" => "slash",
        "backslash" => "backslash",
        "semicolon" => "semicolon",
        "quote" => "apostrophe",
        "backquote" => "grave",
        "bracketleft" => "bracketleft",
        "bracketright" => "bracketright",
        _ => "",
    };
    if !named.is_empty() {
        return named.into();
    }
    // F1…F24 keep their case; one letter or digit is xkb's lower-case name.
    if key.chars().count() == 1 {
        key.to_ascii_lowercase()
    } else {
        key.to_string()
    }
}

/// The setting's accelerator for each of Hark's shortcuts.
fn accelerator(settings: &AppSettings, action: Action) -> &str {
    match action {
        Action::PushToTalk => &settings.shortcut,
        Action::HandsFree => &settings.hands_free_shortcut,
        Action::Mute => &settings.mute_shortcut,
    }
}

/// The portal session's handle in the app's state.
pub struct Portal {
    rebind: Notify,
}

/// What a shortcut does when the desktop says it went down (`true`) or up.
pub type OnShortcut = fn(&AppHandle, Action, bool);

/// Starts the portal session on the app's runtime; the app's state keeps its handle.
pub fn start(app: &AppHandle, on: OnShortcut) {
    let portal = Arc::new(Portal { rebind: Notify::new() });
    app.manage(portal.clone());
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        loop {
            match session(&app, &portal, on).await {
                // Settings changed: bind again.
                Ok(()) => continue,
                Err(e) => {
                    tracing::warn!("no global shortcuts through the desktop's portal: {e}");
                    let state = app.state::<AppState>();
                    let instead = no_global_shortcuts(&e);
                    *lock(&state.no_global_shortcuts) = Some(instead.clone());
                    state.emit(AppEvent::Shortcut {
                        label: label(&state.settings().shortcut, Platform::current()),
                        unavailable: Some(instead),
                    });
                    // A change in Settings tries again.
                    portal.rebind.notified().await;
                }
            }
        }
    });
}

/// Binds the shortcuts again (Settings changed them), if the portal is in use.
pub fn rebind(app: &AppHandle) {
    if let Some(p) = app.try_state::<Arc<Portal>>() {
        // Until the desktop says which keys it assigned now, the window shows the setting's.
        *lock(&app.state::<AppState>().assigned_shortcut) = None;
        p.rebind.notify_one();
    }
}

/// One portal session: created, its shortcuts bound, their presses passed on, until
/// Settings change (`Ok`) or the portal fails.
async fn session(app: &AppHandle, portal: &Portal, on: OnShortcut) -> Result<(), ashpd::Error> {
    let shortcuts = GlobalShortcuts::new().await?;
    let session = shortcuts.create_session().await?;
    // Listening before binding: a press right after the desktop's confirmation is not lost.
    let mut down = std::pin::pin!(shortcuts.receive_activated().await?);
    let mut up = std::pin::pin!(shortcuts.receive_deactivated().await?);
    let state = app.state::<AppState>();
    let settings = state.settings();
    let lang = state.ui_language();
    let wanted: Vec<NewShortcut> = IDS
        .iter()
        .map(|(action, id)| {
            let description = crate::i18n::text(
                lang,
                match action {
                    Action::PushToTalk => "tray.ptt",
                    Action::HandsFree => "tray.handsFree",
                    Action::Mute => "tray.mute",
                },
            );
            NewShortcut::new(*id, description).preferred_trigger(trigger(accelerator(&settings, *action)).as_str())
        })
        .collect();
    let bound = shortcuts.bind_shortcuts(&session, &wanted, None).await?.response()?;
    let keys: Vec<(Action, String)> = IDS
        .iter()
        .map(|(action, id)| {
            let assigned = bound
                .shortcuts()
                .iter()
                .find(|s| s.id() == *id)
                .map(|s| s.trigger_description().to_string())
                .unwrap_or_default();
            (*action, assigned)
        })
        .collect();
    tracing::info!(?keys, "global shortcuts bound through the desktop's portal");
    // The window shows the push-to-talk keys the desktop assigned (it may not be the keys
    // asked for), in its words.
    let ptt = keys
        .iter()
        .find(|(a, _)| *a == Action::PushToTalk)
        .map(|(_, k)| k.clone())
        .filter(|k| !k.is_empty());
    *lock(&state.assigned_shortcut) = ptt.clone();
    *lock(&state.no_global_shortcuts) = None;
    state.emit(AppEvent::Shortcut {
        label: ptt.unwrap_or_else(|| label(&settings.shortcut, Platform::current())),
        unavailable: None,
    });
    let action_of = |id: &str| IDS.iter().find(|(_, i)| *i == id).map(|(a, _)| *a);
    loop {
        tokio::select! {
            Some(a) = down.next() => {
                if let Some(action) = action_of(a.shortcut_id()) {
                    on(app, action, true);
                }
            }
            Some(d) = up.next() => {
                if let Some(action) = action_of(d.shortcut_id()) {
                    on(app, action, false);
                }
            }
            _ = portal.rebind.notified() => {
                let _ = session.close().await;
                return Ok(());
            }
        }
    }
}

/// What to bind instead when the desktop gives Hark no global shortcut (`e` says why): the
/// desktop in use (`XDG_CURRENT_DESKTOP`) and what to paste in its settings, for the window
/// to say in its language.
fn no_global_shortcuts(e: &ashpd::Error) -> NoGlobalShortcuts {
    let exe = std::env::current_exe()
        .ok()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "hark-app".into());
    instead(
        matches!(e, ashpd::Error::Response(_)),
        &std::env::var("XDG_CURRENT_DESKTOP").unwrap_or_default(),
        &exe,
    )
}

/// [`no_global_shortcuts`], of the desktop named as `XDG_CURRENT_DESKTOP` names it
/// (`ubuntu:GNOME`, `KDE`, `sway`, `Hyprland`) and Hark's program at `exe`.
fn instead(refused: bool, current_desktop: &str, exe: &str) -> NoGlobalShortcuts {
    // A path with a space (an AppImage in "My Apps") is one word to the desktop's shell.
    let exe = if exe.contains(char::is_whitespace) {
        format!("'{}'", exe.replace('\'', r"'\''"))
    } else {
        exe.to_string()
    };
    let command = format!("{exe} --toggle");
    let names = current_desktop.to_ascii_lowercase();
    let (desktop, paste) = if names.contains("gnome") {
        ("gnome", command)
    } else if names.contains("kde") {
        ("kde", command)
    } else if names.contains("sway") {
        ("sway", format!("bindsym Ctrl+Shift+space exec {command}"))
    } else if names.contains("hyprland") {
        ("hyprland", format!("bind = CTRL SHIFT, space, exec, {command}"))
    } else {
        ("other", command)
    };
    NoGlobalShortcuts {
        refused,
        desktop: desktop.into(),
        paste,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The portal is offered the settings' keys in the shortcuts specification's words.
    #[test]
    fn accelerators_become_portal_triggers() {
        assert_eq!(trigger("CommandOrControl+Shift+Space"), "CTRL+SHIFT+space");
        assert_eq!(trigger("CommandOrControl+Alt+Shift+H"), "CTRL+ALT+SHIFT+h");
        assert_eq!(trigger("Ctrl+Alt+Shift+F11"), "CTRL+ALT+SHIFT+F11");
        assert_eq!(trigger("Super+KeyH"), "LOGO+h");
        assert_eq!(trigger("Alt+Digit1"), "ALT+1");
        assert_eq!(trigger("Control+ArrowUp"), "CTRL+Up");
        assert_eq!(trigger("Shift+PageDown"), "SHIFT+Page_Down");
    }

    /// With no global shortcut, what to bind instead: the desktop told by
    /// `XDG_CURRENT_DESKTOP`, and the exact command or configuration line to paste.
    #[test]
    fn with_no_global_shortcut_the_desktop_s_way_to_bind_the_toggle() {
        let gnome = instead(false, "ubuntu:GNOME", "/usr/bin/hark-app");
        assert_eq!(
            (gnome.desktop.as_str(), gnome.paste.as_str()),
            ("gnome", "/usr/bin/hark-app --toggle")
        );
        assert!(!gnome.refused);
        assert_eq!(instead(true, "KDE", "/usr/bin/hark-app").desktop, "kde");
        assert!(instead(true, "KDE", "/usr/bin/hark-app").refused);
        assert_eq!(
            instead(false, "sway", "/usr/bin/hark-app").paste,
            "bindsym Ctrl+Shift+space exec /usr/bin/hark-app --toggle"
        );
        assert_eq!(
            instead(false, "Hyprland", "/opt/Hark/hark-app").paste,
            "bind = CTRL SHIFT, space, exec, /opt/Hark/hark-app --toggle"
        );
        let other = instead(false, "", "/home/sam/My Apps/Hark.AppImage");
        assert_eq!(other.desktop, "other");
        assert_eq!(other.paste, "'/home/sam/My Apps/Hark.AppImage' --toggle");
    }
}
