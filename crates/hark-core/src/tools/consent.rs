//! Consent for the user's own tools: each tool is *ask*, *always* or *never*.
//!
//! *Never* keeps a tool out of the list the model sees. *Always* runs it. *Ask* puts the
//! question to the user through whatever the adapter has (the window and the voice in the
//! app, the terminal in `hark chat`) with a time limit; no answer in time is a no, and so
//! is an adapter that has no way to ask ([`Refuse`]). The model is told a refusal in words
//! it can pass on.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// What the user chose for one tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, Hash)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "lowercase")]
pub enum Consent {
    /// Ask before each call.
    #[default]
    Ask,
    /// Run without asking.
    Always,
    /// Never offered to the model.
    Never,
}

impl Consent {
    pub fn as_str(self) -> &'static str {
        match self {
            Consent::Ask => "ask",
            Consent::Always => "always",
            Consent::Never => "never",
        }
    }
}

impl std::str::FromStr for Consent {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "ask" => Ok(Consent::Ask),
            "always" => Ok(Consent::Always),
            "never" => Ok(Consent::Never),
            other => Err(format!("{other:?} is not a consent: use ask, always or never")),
        }
    }
}

/// One question: may the model call this tool with these arguments?
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct ConsentRequest {
    /// Unique per question (the window answers by it).
    pub id: String,
    /// The server's name, as the user gave it.
    pub server: String,
    /// The tool's own name on its server.
    pub tool: String,
    /// The call's arguments, as the model wrote them (JSON text).
    pub arguments: String,
}

impl ConsentRequest {
    /// The question in words, as shown and spoken.
    pub fn question(&self) -> String {
        format!("Hark wants to use {}: {}. Allow?", self.server, self.tool)
    }
}

/// The user's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "lowercase")]
pub enum Answer {
    /// This call only.
    Yes,
    No,
    /// This call, and every later call of the tool (the tool becomes *always*).
    Always,
}

impl Answer {
    pub fn as_str(self) -> &'static str {
        match self {
            Answer::Yes => "yes",
            Answer::No => "no",
            Answer::Always => "always",
        }
    }

    /// An answer in the user's words ("yes", "no", "always", "sure", "don't"), or `None`;
    /// also in the languages of Hark's window (the window asks in them: "sag „ja“"),
    /// "no" before "always" before "yes" in any of them.
    pub fn from_words(text: &str) -> Option<Answer> {
        let t = text.trim().to_lowercase();
        let words: Vec<&str> = t
            .split(|c: char| !c.is_alphanumeric() && c != '\'')
            .filter(|w| !w.is_empty())
            .collect();
        let has = |list: &[&str]| words.iter().any(|w| list.contains(w));
        if has(&[
            "no",
            "nope",
            "don't",
            "dont",
            "deny",
            "refuse",
            "stop",
            "cancel",
            "never",
            "nein",
            "niemals",
            "non",
            "jamais",
            "nunca",
            "mai",
            "não",
            "nao",
            "いいえ",
            "いや",
            "だめ",
            "不",
            "不要",
            "不行",
            "别",
        ]) {
            Some(Answer::No)
        } else if has(&[
            "always",
            "immer",
            "siempre",
            "toujours",
            "sempre",
            "常に",
            "いつも",
            "总是",
            "始终",
            "永远",
        ]) {
            Some(Answer::Always)
        } else if has(&[
            "yes", "y", "yeah", "yep", "sure", "ok", "okay", "allow", "go", "ja", "klar", "sí", "si", "sì", "vale",
            "claro", "oui", "sim", "certo", "はい", "ええ", "うん", "是", "是的", "好", "好的", "可以",
        ]) {
            Some(Answer::Yes)
        } else {
            None
        }
    }
}

/// Puts a consent question to the user. Called while the tool's call waits; the caller
/// applies the time limit (no answer in time is a no).
#[async_trait]
pub trait Asker: Send + Sync {
    async fn ask(&self, request: &ConsentRequest) -> Answer;
}

/// No way to ask (a piped `hark chat`, a script): every *ask* is refused.
pub struct Refuse;

#[async_trait]
impl Asker for Refuse {
    async fn ask(&self, _: &ConsentRequest) -> Answer {
        Answer::No
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spoken_and_typed_answers_are_understood() {
        for (said, answer) in [
            ("Yes.", Some(Answer::Yes)),
            ("yeah go ahead", Some(Answer::Yes)),
            ("y", Some(Answer::Yes)),
            ("Always.", Some(Answer::Always)),
            ("No!", Some(Answer::No)),
            ("Don't.", Some(Answer::No)),
            ("no, never", Some(Answer::No)),
            ("What is the weather?", None),
            ("", None),
        ] {
            assert_eq!(Answer::from_words(said), answer, "{said:?}");
        }
        assert_eq!("Always".parse::<Consent>(), Ok(Consent::Always));
    }

    /// The window asks for the answer in its language (issue 45): those words are answers.
    #[test]
    fn answers_in_the_window_s_languages_are_understood() {
        for (said, answer) in [
            ("Ja.", Some(Answer::Yes)),
            ("Nein, danke.", Some(Answer::No)),
            ("Immer.", Some(Answer::Always)),
            ("Sí.", Some(Answer::Yes)),
            ("Siempre", Some(Answer::Always)),
            ("Oui !", Some(Answer::Yes)),
            ("Non.", Some(Answer::No)),
            ("Toujours.", Some(Answer::Always)),
            ("Sì, certo.", Some(Answer::Yes)),
            ("Sempre.", Some(Answer::Always)),
            ("Não.", Some(Answer::No)),
            ("Sim.", Some(Answer::Yes)),
            ("はい。", Some(Answer::Yes)),
            ("いいえ。", Some(Answer::No)),
            ("いつも", Some(Answer::Always)),
            ("是的。", Some(Answer::Yes)),
            ("不要。", Some(Answer::No)),
            ("总是", Some(Answer::Always)),
            ("Wie spät ist es?", None),
        ] {
            assert_eq!(Answer::from_words(said), answer, "{said:?}");
        }
        assert!("maybe".parse::<Consent>().unwrap_err().contains("ask, always or never"));
    }
}
