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

/// macOS voices that are sound effects or jokes, not a voice to answer in ("Albert" is
/// usually the first en_US voice `say -v '?'` lists): never picked for a language.
const NOVELTY_VOICES: &[&str] = &[
    "Albert",
    "Bad News",
    "Bahh",
    "Bells",
    "Boing",
    "Bubbles",
    "Cellos",
    "Deranged",
    "Good News",
    "Hysterical",
    "Jester",
    "Organ",
    "Pipe Organ",
    "Superstar",
    "Trinoids",
    "Whisper",
    "Wobble",
    "Zarvox",
];

/// Whether a macOS voice is a novelty one ("Grandma (German (Germany))": the name before the
/// parenthesis says what it is).
pub(crate) fn is_novelty_voice(name: &str) -> bool {
    let base = name.split(" (").next().unwrap_or(name);
    NOVELTY_VOICES.contains(&base)
}

/// What macOS says about its own voice: the voice chosen in System Settings → Accessibility
/// → Spoken Content (`defaults read com.apple.speech.voice.prefs SelectedVoiceName`, absent
/// until the user picks one), and the system's locale (`defaults read -g AppleLocale`, whose
/// language the system voice speaks by default).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SayDefaults {
    pub voice: Option<String>,
    pub locale: Option<String>,
}

/// The language part of a locale: `en` of `en_US`, `en-GB` or `en_US@rg=gbzzzz`.
fn language_of(locale: &str) -> &str {
    locale.split(['_', '-', '@']).next().unwrap_or("")
}

/// The macOS voice for a conversation language, from `say -v '?'`'s listing (lines like
/// `Anna                de_DE    # Hallo! Ich heiße Anna.`): `None`, meaning the system voice,
/// when the system voice speaks that language (the user's own choice, or the system's
/// default for its language); else the first voice of the locale, else the first of the
/// language, novelty voices left out.
pub fn say_voice(listing: &str, lang: &Language, system: &SayDefaults) -> Option<String> {
    let voices: Vec<(String, &str)> = listing
        .lines()
        .filter_map(|line| {
            let before_comment = line.split('#').next().unwrap_or("");
            let mut fields: Vec<&str> = before_comment.split_whitespace().collect();
            let locale = fields.pop()?;
            (!fields.is_empty()).then(|| (fields.join(" "), locale))
        })
        .collect();
    let want = language_of(lang.code);
    let system_language = match &system.voice {
        // A chosen voice speaks its locale's language (one `say` does not list: unknown).
        Some(name) => voices.iter().find(|(n, _)| n == name).map(|(_, l)| language_of(l)),
        None => system.locale.as_deref().map(language_of),
    };
    if system_language.is_some_and(|l| l.eq_ignore_ascii_case(want)) {
        return None;
    }
    let speaking = |(name, _): &&(String, &str)| !is_novelty_voice(name);
    let want_locale = lang.locale.replace('-', "_");
    voices
        .iter()
        .filter(speaking)
        .find(|(_, l)| l.eq_ignore_ascii_case(&want_locale))
        .or_else(|| {
            voices
                .iter()
                .filter(speaking)
                .find(|(_, l)| language_of(l).eq_ignore_ascii_case(want))
        })
        .map(|(name, _)| name.clone())
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
        let unknown = SayDefaults::default();
        let get = |c: &str| say_voice(listing, parse(c).unwrap().unwrap(), &unknown);
        assert_eq!(get("de").as_deref(), Some("Anna"));
        assert_eq!(get("fr").as_deref(), Some("Thomas"), "the exact locale wins");
        assert_eq!(get("es").as_deref(), Some("Paulina"), "else the same language");
        assert_eq!(get("ja"), None);
    }

    /// Issue 22: English got the first en_US voice `say` lists, which is usually Albert, a
    /// novelty voice. The system's own voice speaks when it speaks the language; otherwise
    /// novelty voices are passed over.
    #[test]
    fn english_on_macos_is_the_system_voice_or_a_real_voice_never_albert() {
        let listing = "Albert              en_US    # Hello! My name is Albert.\n\
                       Anna                de_DE    # Hallo! Ich heiße Anna.\n\
                       Bad News            en_US    # The light you see at the end of the tunnel.\n\
                       Bahh                en_US    # Do not pull the wool over my eyes.\n\
                       Eddy (English (US)) en_US    # Hello! My name is Eddy.\n\
                       Samantha            en_US    # Hello! My name is Samantha.\n\
                       Zarvox              en_US    # That looks like a peaceful planet.\n";
        let english = parse("en").unwrap().unwrap();
        let german = parse("de").unwrap().unwrap();
        let system = |voice: Option<&str>, locale: Option<&str>| SayDefaults {
            voice: voice.map(str::to_string),
            locale: locale.map(str::to_string),
        };
        // A US or British Mac, voice never changed: its default voice is English.
        assert_eq!(say_voice(listing, english, &system(None, Some("en_US"))), None);
        assert_eq!(
            say_voice(listing, english, &system(None, Some("en_GB@rg=gbzzzz"))),
            None
        );
        // The user chose Samantha: she speaks, as the system voice.
        assert_eq!(
            say_voice(listing, english, &system(Some("Samantha"), Some("de_DE"))),
            None
        );
        // A German Mac (its voice speaks German): English gets a real English voice.
        let picked = say_voice(listing, english, &system(None, Some("de_DE")));
        assert_eq!(picked.as_deref(), Some("Eddy (English (US))"));
        let picked = say_voice(listing, english, &system(Some("Anna"), None));
        assert_ne!(picked.as_deref(), Some("Albert"));
        assert!(picked.is_some());
        // Nothing known about the system: still never a novelty voice.
        let picked = say_voice(listing, english, &SayDefaults::default()).unwrap();
        assert!(!is_novelty_voice(&picked), "{picked}");
        // And German on that German Mac is the system voice.
        assert_eq!(say_voice(listing, german, &system(Some("Anna"), Some("de_DE"))), None);
    }
}
