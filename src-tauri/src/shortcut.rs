//! The global shortcuts: push-to-talk, conversation mode and its mute. Registered with the
//! system (tauri-plugin-global-shortcut, handled in Rust), replaced only when the new one
//! registers, told apart when pressed, and shown per platform. In a Wayland session the
//! desktop binds them instead, through its GlobalShortcuts portal (`portal`).

use hark_core::error::ErrorKind;
use tauri::AppHandle;
use tauri_plugin_global_shortcut::{GlobalShortcutExt, Shortcut};

use crate::error::CommandError;
use crate::settings::AppSettings;

#[cfg(target_os = "linux")]
pub mod portal;

/// What a global shortcut does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    PushToTalk,
    HandsFree,
    Mute,
}

/// Which of the settings' shortcuts `pressed` is.
pub fn which(settings: &AppSettings, pressed: &Shortcut) -> Option<Action> {
    [
        (&settings.hands_free_shortcut, Action::HandsFree),
        (&settings.mute_shortcut, Action::Mute),
        (&settings.shortcut, Action::PushToTalk),
    ]
    .into_iter()
    .find(|(accelerator, _)| accelerator.parse::<Shortcut>().is_ok_and(|s| s == *pressed))
    .map(|(_, action)| action)
}

/// Two of the settings' shortcuts that are the same keys would do two things at once: the
/// second is refused, named.
pub fn distinct(settings: &AppSettings) -> Result<(), CommandError> {
    let named = [
        ("push-to-talk", &settings.shortcut),
        ("conversation mode", &settings.hands_free_shortcut),
        ("mute", &settings.mute_shortcut),
    ];
    for (i, (a, ka)) in named.iter().enumerate() {
        for (b, kb) in &named[i + 1..] {
            let same = match (ka.parse::<Shortcut>(), kb.parse::<Shortcut>()) {
                (Ok(x), Ok(y)) => x == y,
                _ => ka.eq_ignore_ascii_case(kb),
            };
            if same {
                return Err(CommandError::new(
                    ErrorKind::Shortcut,
                    format!(
                        "the {b} shortcut {} is already the {a} shortcut",
                        label(kb, Platform::current())
                    ),
                )
                .with_next_step("pick different keys for each"));
            }
        }
    }
    Ok(())
}

/// Which platform's words a label uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Platform {
    Mac,
    Other,
}

impl Platform {
    pub fn current() -> Self {
        if cfg!(target_os = "macos") {
            Platform::Mac
        } else {
            Platform::Other
        }
    }
}

/// A shortcut as a person reads it: `Ctrl+Shift+Space` on Linux and Windows, `⌘⇧Space` on
/// macOS. Never the plugin's `CommandOrControl`.
pub fn label(accelerator: &str, platform: Platform) -> String {
    let mac = platform == Platform::Mac;
    let parts: Vec<String> = accelerator
        .split('+')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| {
            let lower = p.to_ascii_lowercase();
            let word = match lower.as_str() {
                "commandorcontrol" | "cmdorctrl" | "commandorctrl" | "cmdorcontrol" => {
                    if mac {
                        "⌘"
                    } else {
                        "Ctrl"
                    }
                }
                "command" | "cmd" | "super" | "meta" => {
                    if mac {
                        "⌘"
                    } else {
                        "Super"
                    }
                }
                "control" | "ctrl" => {
                    if mac {
                        "⌃"
                    } else {
                        "Ctrl"
                    }
                }
                "alt" | "option" => {
                    if mac {
                        "⌥"
                    } else {
                        "Alt"
                    }
                }
                "shift" => {
                    if mac {
                        "⇧"
                    } else {
                        "Shift"
                    }
                }
                _ => {
                    let key = p
                        .strip_prefix("Key")
                        .or_else(|| p.strip_prefix("Digit"))
                        .filter(|k| k.chars().count() == 1)
                        .unwrap_or(p);
                    return key.to_string();
                }
            };
            word.to_string()
        })
        .collect();
    if mac {
        parts.concat()
    } else {
        parts.join("+")
    }
}

/// Registers `new` as the push-to-talk shortcut, and only then lets go of `old`: a
/// shortcut the system refuses (taken by another app, not a valid combination) is
/// refused with the reason, and the previous one stays active.
pub fn replace(app: &AppHandle, new: &str, old: Option<&str>) -> Result<(), CommandError> {
    let refused = |e: &dyn std::fmt::Display, old: Option<&str>| {
        CommandError::new(
            ErrorKind::Shortcut,
            format!("the shortcut {} cannot be used: {e}", label(new, Platform::current())),
        )
        .with_next_step(match old {
            Some(o) => format!(
                "{} stays the shortcut; pick another in Settings, or use the button",
                label(o, Platform::current())
            ),
            None => "pick another shortcut in Settings, or use the button".to_string(),
        })
    };
    // Through the desktop's portal the desktop binds it (`rebound`, once saved); here it
    // need only be keys.
    #[cfg(target_os = "linux")]
    if portal::wanted() {
        return new.parse::<Shortcut>().map(|_| ()).map_err(|e| refused(&e, None));
    }
    let gs = app.global_shortcut();
    if old == Some(new) && gs.is_registered(new) {
        return Ok(());
    }
    gs.register(new).map_err(|e| refused(&e, old))?;
    if let Some(o) = old.filter(|o| *o != new) {
        let _ = gs.unregister(o);
    }
    Ok(())
}

/// The settings' shortcuts were saved as `new` (from `old`): through the desktop's portal,
/// it binds them again (the plugin's were replaced one by one already).
pub fn rebound(app: &AppHandle, old: &AppSettings, new: &AppSettings) {
    #[cfg(target_os = "linux")]
    {
        let keys = |s: &AppSettings| {
            [
                s.shortcut.clone(),
                s.hands_free_shortcut.clone(),
                s.mute_shortcut.clone(),
            ]
        };
        if keys(old) != keys(new) {
            portal::rebind(app);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (app, old, new);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 14: the hint read `CommandOrControl+Shift+Space`.
    #[test]
    fn shortcuts_are_labelled_per_platform() {
        assert_eq!(
            label("CommandOrControl+Shift+Space", Platform::Other),
            "Ctrl+Shift+Space"
        );
        assert_eq!(label("CommandOrControl+Shift+Space", Platform::Mac), "⌘⇧Space");
        assert_eq!(label("Ctrl+Alt+Shift+F9", Platform::Other), "Ctrl+Alt+Shift+F9");
        assert_eq!(label("Ctrl+Alt+Shift+F9", Platform::Mac), "⌃⌥⇧F9");
        assert_eq!(label("Super+KeyH", Platform::Other), "Super+H");
        assert_eq!(label("Alt+Digit1", Platform::Mac), "⌥1");
    }

    /// Issue 23: conversation mode and its mute have shortcuts of their own; a press is told
    /// apart by its keys, and the same keys for two of them are refused.
    #[test]
    fn each_shortcut_is_told_apart_and_two_alike_are_refused() {
        let mut s = AppSettings::default();
        let press = |a: &str| a.parse::<Shortcut>().unwrap();
        assert_eq!(
            which(&s, &press("CommandOrControl+Shift+Space")),
            Some(Action::PushToTalk)
        );
        assert_eq!(
            which(&s, &press("CommandOrControl+Alt+Shift+H")),
            Some(Action::HandsFree)
        );
        assert_eq!(which(&s, &press("CommandOrControl+Alt+Shift+M")), Some(Action::Mute));
        assert_eq!(which(&s, &press("CommandOrControl+Shift+M")), None);
        assert_eq!(which(&s, &press("Control+Alt+M")), None);
        assert!(distinct(&s).is_ok());
        s.mute_shortcut = "CommandOrControl+Shift+Space".into();
        let e = distinct(&s).unwrap_err();
        assert!(
            e.message.contains("mute") && e.message.contains("push-to-talk"),
            "{}",
            e.message
        );
    }
}
