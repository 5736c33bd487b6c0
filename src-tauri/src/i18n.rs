//! The app's words outside the window, in the UI language (issue 45): the tray's menu and
//! tooltip. They come from the window's own catalogues (`ui/src/locales/*.json`, i18next's
//! nested JSON), read at build time by `rust-i18n`, so one set of files and one
//! completeness check (`ui/scripts/check-i18n.mjs`) cover both sides. Everything the
//! window shows it translates itself from kinds the app sends (a status's state and
//! stage, a download's kinds of model).
//!
//! The UI language is its own setting (`AppSettings::ui_language`), apart from the
//! conversation language; unset, it follows the system's preferred languages
//! (`sys-locale`: `LANGUAGE`, `LC_ALL`, `LC_MESSAGES` and `LANG` on Linux, the user's
//! preferred languages on macOS and Windows), and falls back to English.

/// The UI languages, as the window lists them (`ui/src/lib/i18n.svelte.ts`).
pub const UI_LANGUAGES: &[&str] = &["en", "de", "es", "fr", "it", "pt", "ja", "zh-CN"];

/// The UI language for `setting` (the user's choice, `None`: the system's).
pub fn resolve(setting: Option<&str>) -> &'static str {
    match setting {
        Some(chosen) => supported(chosen).unwrap_or("en"),
        None => from_system(sys_locale::get_locales()),
    }
}

/// The first of the system's preferred languages (BCP 47 tags, most preferred first) that
/// Hark speaks; English when none is, or when the first is the C locale (no language).
fn from_system(preferred: impl IntoIterator<Item = String>) -> &'static str {
    for tag in preferred {
        if matches!(tag.as_str(), "C" | "POSIX") || tag.starts_with("C.") {
            return "en";
        }
        if let Some(lang) = supported(&tag) {
            return lang;
        }
    }
    "en"
}

/// The UI language a BCP 47 or POSIX tag asks for, if Hark has it: the tag itself ("de",
/// "zh-CN"), else its language ("de-AT" → "de", "pt_BR.UTF-8" → "pt"). Chinese in any
/// region or script is the Simplified Chinese catalogue, the only Chinese one.
fn supported(tag: &str) -> Option<&'static str> {
    let tag = tag.split(['.', '@']).next().unwrap_or_default().replace('_', "-");
    if let Some(exact) = UI_LANGUAGES.iter().find(|l| l.eq_ignore_ascii_case(&tag)) {
        return Some(exact);
    }
    let language = tag.split('-').next().unwrap_or_default().to_ascii_lowercase();
    match language.as_str() {
        "zh" => Some("zh-CN"),
        _ => UI_LANGUAGES.iter().find(|l| **l == language).copied(),
    }
}

/// The catalogue's text for `key` in `lang`, English where it has none.
pub fn text(lang: &str, key: &str) -> String {
    rust_i18n::t!(key, locale = lang).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_system_s_first_language_that_hark_speaks_is_the_ui_language() {
        let of = |tags: &[&str]| from_system(tags.iter().map(|t| t.to_string()));
        assert_eq!(of(&["de-DE"]), "de");
        assert_eq!(of(&["ja-JP"]), "ja");
        assert_eq!(of(&["zh-CN"]), "zh-CN");
        assert_eq!(of(&["zh-TW"]), "zh-CN");
        assert_eq!(of(&["pt-BR"]), "pt");
        // LANGUAGE=nl:fr: the first one Hark has.
        assert_eq!(of(&["nl-NL", "fr-FR"]), "fr");
        assert_eq!(of(&["C"]), "en");
        assert_eq!(of(&["C", "de-DE"]), "en", "LC_ALL=C rules over LANG");
        assert_eq!(of(&[]), "en");
        assert_eq!(of(&["sw-KE"]), "en");
    }

    #[test]
    fn a_chosen_language_is_used_and_an_unknown_one_is_english() {
        assert_eq!(resolve(Some("ja")), "ja");
        assert_eq!(resolve(Some("zh-CN")), "zh-CN");
        assert_eq!(resolve(Some("de_AT.UTF-8")), "de");
        assert_eq!(resolve(Some("klingon")), "en");
    }

    /// The tray's words come from the window's catalogues, in each language: every key the
    /// menu and the tooltip use is there (a missing one reads "en.tray.…").
    #[test]
    fn the_tray_s_words_are_the_catalogue_s() {
        assert_eq!(text("en", "tray.quit"), "Quit Hark");
        let states = [
            "starting",
            "localModel",
            "download",
            "waiting",
            "ready",
            "muted",
            "handsFreeHalf",
            "handsFree",
            "listening",
            "thinking",
            "speaking",
            "noMicrophone",
        ];
        let keys = ["show", "ptt", "handsFree", "mute", "new", "settings", "update", "quit"]
            .iter()
            .map(|k| format!("tray.{k}"))
            .chain(states.iter().map(|k| format!("tray.state.{k}")));
        for key in keys {
            for lang in UI_LANGUAGES {
                let t = text(lang, &key);
                assert!(!t.is_empty() && !t.contains("tray."), "{lang} {key}: {t}");
            }
            assert_ne!(text("de", &key), text("en", &key), "{key} is German in German");
        }
    }
}
