//! The conversation language: what the user speaks and what Hark answers in.
//!
//! One setting reaches every part that cares: the speech-to-text request (Deepgram's
//! `language`, OpenAI's `language` form field), the system text (one sentence asking the
//! model to answer in that language), and the OS voice (espeak-ng's voice, the Windows
//! culture, the macOS voice for the locale). "Automatic" leaves each part to detect it:
//! Deepgram's multilingual model (`language=multi`), OpenAI's detection, the model
//! answering in whatever the user spoke, the OS voice's default.
//!
//! The offline speech model (whisper tiny.en) understands English only; a profile that
//! pairs it with another language is refused with that reason (see
//! [`crate::assembly::Profile::check`]).

/// The setting's value for "detect it".
pub const AUTO: &str = "auto";

/// A language Hark can be set to: every one of them is in Deepgram Nova-3's language list,
/// OpenAI transcription's ISO-639-1 codes, and espeak-ng's voices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Language {
    /// ISO 639-1, as the settings store it and the speech APIs take it.
    pub code: &'static str,
    /// Its name in English (the system text names it so).
    pub name: &'static str,
    /// Its name in itself (what Settings shows beside the English name).
    pub native: &'static str,
    /// espeak-ng's voice for it.
    pub espeak: &'static str,
    /// A locale for the OS voices that select by culture (Windows) or locale (macOS).
    pub locale: &'static str,
}

const fn lang(
    code: &'static str,
    name: &'static str,
    native: &'static str,
    espeak: &'static str,
    locale: &'static str,
) -> Language {
    Language {
        code,
        name,
        native,
        espeak,
        locale,
    }
}

/// The languages offered, English first, then by English name.
pub const LANGUAGES: &[Language] = &[
    lang("en", "English", "English", "en-us", "en-US"),
    lang("zh", "Chinese", "中文", "cmn", "zh-CN"),
    lang("cs", "Czech", "Čeština", "cs", "cs-CZ"),
    lang("da", "Danish", "Dansk", "da", "da-DK"),
    lang("nl", "Dutch", "Nederlands", "nl", "nl-NL"),
    lang("fi", "Finnish", "Suomi", "fi", "fi-FI"),
    lang("fr", "French", "Français", "fr-fr", "fr-FR"),
    lang("de", "German", "Deutsch", "de", "de-DE"),
    lang("hi", "Hindi", "हिन्दी", "hi", "hi-IN"),
    lang("it", "Italian", "Italiano", "it", "it-IT"),
    lang("ja", "Japanese", "日本語", "ja", "ja-JP"),
    lang("ko", "Korean", "한국어", "ko", "ko-KR"),
    lang("no", "Norwegian", "Norsk", "nb", "nb-NO"),
    lang("pl", "Polish", "Polski", "pl", "pl-PL"),
    lang("pt", "Portuguese", "Português", "pt", "pt-PT"),
    lang("ru", "Russian", "Русский", "ru", "ru-RU"),
    lang("es", "Spanish", "Español", "es", "es-ES"),
    lang("sv", "Swedish", "Svenska", "sv", "sv-SE"),
    lang("tr", "Turkish", "Türkçe", "tr", "tr-TR"),
    lang("uk", "Ukrainian", "Українська", "uk", "uk-UA"),
];

/// The language a setting names: `None` for automatic (`"auto"` or empty), or an error
/// that names the setting and what it may be.
pub fn parse(setting: &str) -> Result<Option<&'static Language>, String> {
    let s = setting.trim();
    if s.is_empty() || s.eq_ignore_ascii_case(AUTO) {
        return Ok(None);
    }
    LANGUAGES
        .iter()
        .find(|l| l.code.eq_ignore_ascii_case(s))
        .map(Some)
        .ok_or_else(|| {
            let codes: Vec<&str> = LANGUAGES.iter().map(|l| l.code).collect();
            format!(
                "unknown conversation language \"{s}\": use \"auto\" or one of {}",
                codes.join(", ")
            )
        })
}

impl Language {
    /// The sentence the system text carries so replies come back in this language.
    pub fn instruction(&self) -> String {
        format!(
            "The user speaks {0}. Always answer in {0}, in words that read aloud naturally.",
            self.name
        )
    }

    /// Settings' label: "German — Deutsch", "English".
    pub fn label(&self) -> String {
        if self.name == self.native {
            self.name.to_string()
        } else {
            format!("{} — {}", self.name, self.native)
        }
    }
}

/// Deepgram Aura-2's voice for a language when the user named none (Aura-2 speaks English
/// and Spanish with the voices published in its list; other languages need a voice name
/// from Deepgram's list in Settings).
pub fn deepgram_voice(lang: Option<&Language>) -> Option<&'static str> {
    match lang.map(|l| l.code) {
        Some("es") => Some("aura-2-celeste-es"),
        _ => None,
    }
}

/// The macOS voice for a locale, from `say -v '?'`'s listing (lines like
/// `Anna                de_DE    # Hallo! Ich heiße Anna.`): the first voice of that
/// locale, else the first of that language.
pub fn say_voice(listing: &str, lang: &Language) -> Option<String> {
    let want_locale = lang.locale.replace('-', "_");
    let mut same_language = None;
    for line in listing.lines() {
        let before_comment = line.split('#').next().unwrap_or("");
        let mut fields: Vec<&str> = before_comment.split_whitespace().collect();
        let Some(locale) = fields.pop() else { continue };
        if fields.is_empty() {
            continue;
        }
        let name = fields.join(" ");
        if locale.eq_ignore_ascii_case(&want_locale) {
            return Some(name);
        }
        let language = locale.split(['_', '-']).next().unwrap_or("");
        if same_language.is_none() && language.eq_ignore_ascii_case(lang.code.split('-').next().unwrap_or("")) {
            same_language = Some(name);
        }
    }
    same_language
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_and_empty_mean_detect_a_code_names_a_language_and_anything_else_is_refused() {
        assert_eq!(parse("auto").unwrap(), None);
        assert_eq!(parse("").unwrap(), None);
        assert_eq!(parse("de").unwrap().unwrap().name, "German");
        assert_eq!(parse(" ES ").unwrap().unwrap().code, "es");
        let e = parse("klingon").unwrap_err();
        assert!(
            e.contains("\"klingon\"") && e.contains("auto") && e.contains("de"),
            "{e}"
        );
    }

    #[test]
    fn codes_are_unique_and_every_language_has_its_voice_and_locale() {
        for (i, l) in LANGUAGES.iter().enumerate() {
            assert!(LANGUAGES[i + 1..].iter().all(|m| m.code != l.code), "{} twice", l.code);
            assert_eq!(l.code.len(), 2, "ISO 639-1: {}", l.code);
            assert!(!l.espeak.is_empty() && l.locale.contains('-'));
        }
    }

    #[test]
    fn the_instruction_names_the_language() {
        let de = parse("de").unwrap().unwrap();
        assert!(de.instruction().contains("Always answer in German"));
        assert_eq!(de.label(), "German — Deutsch");
        assert_eq!(parse("en").unwrap().unwrap().label(), "English");
    }

    #[test]
    fn a_macos_voice_is_picked_by_locale_then_by_language() {
        let listing = "Albert              en_US    # Hello! My name is Albert.\n\
                       Anna                de_DE    # Hallo! Ich heiße Anna.\n\
                       Grandma (German (Germany)) de_DE    # Hallo! Ich heiße Oma.\n\
                       Amélie              fr_CA    # Bonjour! Je m’appelle Amélie.\n\
                       Thomas              fr_FR    # Bonjour, je m’appelle Thomas.\n\
                       Paulina             es_MX    # Hola, me llamo Paulina.\n";
        let get = |c: &str| say_voice(listing, parse(c).unwrap().unwrap());
        assert_eq!(get("de").as_deref(), Some("Anna"));
        assert_eq!(get("fr").as_deref(), Some("Thomas"), "the exact locale wins");
        assert_eq!(get("es").as_deref(), Some("Paulina"), "else the same language");
        assert_eq!(get("ja"), None);
    }
}
