//! The global push-to-talk shortcut: registered with the system (tauri-plugin-global-shortcut,
//! handled in Rust), replaced only when the new one registers, and shown per platform.

use hark_core::error::ErrorKind;
use tauri::AppHandle;
use tauri_plugin_global_shortcut::GlobalShortcutExt;

use crate::error::CommandError;

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
    let gs = app.global_shortcut();
    if old == Some(new) && gs.is_registered(new) {
        return Ok(());
    }
    gs.register(new).map_err(|e| {
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
    })?;
    if let Some(o) = old.filter(|o| *o != new) {
        let _ = gs.unregister(o);
    }
    Ok(())
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
}
