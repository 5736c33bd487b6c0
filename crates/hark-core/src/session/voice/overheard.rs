//! Whether a voice heard over Hark's reply is a barge-in (issue 49), decided by its words.
//!
//! Hands-free, the microphone hears the room while Hark speaks, cleaned of Hark's voice by
//! echo cancellation. A canceller that has not converged (a fresh AEC3 in a reply's first
//! second, a machine too busy to keep up) lets some of Hark's voice through, and the voice
//! activity detector cannot tell that from a person: on a fresh machine it heard 120 ms of
//! it and Hark cut its own reply. No level or share of the echo separates the two in every
//! room and on every load, but the words do: Hark knows what it is saying. So speech heard
//! over a reply only pauses it (`Action::PauseAndListen`), and the recogniser's words of it
//! decide:
//!
//! - no words, or only words Hark is saying around then (the sentence playing, the one
//!   before, whose echo may still be in the room, and the next): Hark's own voice; the
//!   reply plays on from where it paused;
//! - only backchannels ("mm-hmm", "yeah", "okay"): someone listening, not interrupting
//!   (LiveKit's agents and pipecat ask the same of an interruption: words, and more than
//!   a backchannel), and the recognisers' usual words for a breath or a click; it plays on;
//! - two words or more of anything else, or one word that stops a speaker ("stop",
//!   "wait", "what?"): a barge-in; the reply is cut where it paused, and the words are the
//!   next turn. One other word alone is not: it is what a recogniser makes of a fragment of
//!   Hark's voice (whisper heard "1" in the first syllables of "Once upon a time"), and a
//!   person who interrupts says more, or one of those words (LiveKit's agents ask a
//!   minimum of words of an interruption for the same reason).
//!
//! Those rules hold for a voice that went on past Hark's own (`past_echo`: the reply paused
//! for it, or ended, and its echo had died away before the voice did): some of it at least
//! was not Hark's. A voice that ended while Hark's voice could still be in the microphone
//! may be Hark's alone, and a recogniser can read a fragment of Hark's voice as words Hark
//! never said: whisper read "…there was a fox", let through a cold canceller, as "That
//! wasn't a fault." (a run of the room test, issue 49), three words that are no near miss
//! of Hark's. Letters cannot catch that, so such a voice is a barge-in only by a word that
//! stops a speaker; everything else said in it is taken for Hark's. Someone who interrupts
//! either says such a word or goes on past the pause, and what goes on past it is heard
//! with Hark silent. The cost: a few words said over the reply that end before its echo
//! does ("Tell me more") do not interrupt it.
//!
//! A word counts as Hark's when it is one of Hark's words or a near miss of one (one letter
//! off for a word of four letters or more, two for eight or more: a recogniser hearing a
//! voice through a canceller mishears). Words are compared as the word-error measure
//! compares them ([`words`]: case, punctuation and the way a number is written do not
//! count). Scripts written without spaces (Chinese, Japanese, Thai…) are compared
//! character by character.
//!
//! What this cannot tell: a user who says only words Hark is saying at that moment ("Paris?"
//! while Hark says "…is Paris"), or one word that is not a stopping one, does not interrupt
//! it; the key still does.

use crate::stt::wer::words;

/// Words that keep a conversation going without taking a turn, and the recognisers' usual
/// words for a breath, a click or a lip smack (whisper's "Thank you." on near silence,
/// Moonshine's "Yeah."), in the conversation languages most often used. Compared after
/// [`words`] (lowercase, no punctuation); Chinese and Japanese character by character.
const BACKCHANNELS: &[&str] = &[
    "mm", "mmm", "mhm", "mmhmm", "mmhm", "hm", "hmm", "uh", "uhhuh", "um", "umm", "ah", "oh", "huh", "yeah", "yes",
    "yep", "yup", "ok", "okay", "right", "sure", "thanks", "thank", "you", "alright", "i", "see", "ja", "genau", "aha",
    "achso", "oui", "ouais", "daccord", "sí", "si", "vale", "claro", "sim", "certo", "は", "い", "う", "ん", "え",
    "嗯", "哦", "对", "好",
];

/// Words that stop a speaker on their own: one of them is a barge-in.
const STOPPING: &[&str] = &[
    "stop", "wait", "hold", "pause", "hey", "hark", "no", "nope", "what", "sorry", "excuse", "enough", "quiet",
    "cancel", "shh", "shush", "halt", "stopp", "warte", "nein", "moment", "arrête", "arrete", "attends", "non", "para",
    "espera", "basta", "aspetta", "pare", "espere", "não", "nao", "停", "等", "止", "待",
];

/// Whose voice the words heard over a reply were.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Voice {
    /// No words, or Hark's own (a stray word among them is a recogniser's reading of a
    /// fragment of its voice): the canceller let Hark's voice through.
    Hark,
    /// Only backchannels: someone listening.
    Listener,
    /// Someone else's words: a barge-in.
    Someone,
}

/// Whose voice `heard` (the recogniser's words of speech heard over the reply) was, with
/// `hark_says` the words of the reply, and `past_echo` whether the voice went on past where
/// Hark's own voice could still be in the microphone. Someone else's: one word that stops
/// a speaker, or, past the echo, two words or more that are neither Hark's nor
/// backchannels, and at least as many as Hark's among them (a long stretch of Hark's voice
/// read back with a few words wrong is still Hark's).
pub fn whose(heard: &str, hark_says: &str, past_echo: bool) -> Voice {
    let hark = tokens(hark_says);
    let heard = tokens(heard);
    let backchannel = |w: &String| BACKCHANNELS.contains(&w.as_str());
    let (harks, others): (Vec<&String>, Vec<&String>) = heard
        .iter()
        .filter(|w| !backchannel(w))
        .partition(|w| hark.iter().any(|h| near(w, h)));
    let stops = others.iter().any(|w| STOPPING.contains(&w.as_str()));
    if stops || (past_echo && others.len() >= 2 && others.len() >= harks.len()) {
        Voice::Someone
    } else if !heard.is_empty() && heard.iter().all(backchannel) {
        Voice::Listener
    } else {
        Voice::Hark
    }
}

/// Whether `heard`, a voice that went on past Hark's echo, is a barge-in ([`whose`] is
/// [`Voice::Someone`]).
pub fn is_barge_in(heard: &str, hark_says: &str) -> bool {
    whose(heard, hark_says, true) == Voice::Someone
}

/// A text's words as compared, with each character of a word in a script written without
/// spaces a word of its own.
fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for w in words(text) {
        if w.chars().any(unspaced) {
            out.extend(w.chars().map(String::from));
        } else {
            out.push(w);
        }
    }
    out
}

/// A character of a script written without spaces between words.
fn unspaced(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF     // Hiragana, Katakana
        | 0x3400..=0x4DBF   // CJK extension A
        | 0x4E00..=0x9FFF   // CJK unified ideographs
        | 0xF900..=0xFAFF   // CJK compatibility ideographs
        | 0x0E00..=0x0E7F   // Thai
        | 0x0E80..=0x0EFF   // Lao
        | 0x1000..=0x109F   // Myanmar
        | 0x1780..=0x17FF   // Khmer
    )
}

/// Whether `heard` is Hark's word `said`, or a recogniser's near miss of it.
fn near(heard: &str, said: &str) -> bool {
    if heard == said {
        return true;
    }
    let shorter = heard.chars().count().min(said.chars().count());
    let allowed = match shorter {
        0..=3 => 0,
        4..=7 => 1,
        _ => 2,
    };
    allowed > 0 && strsim::levenshtein(heard, said) <= allowed
}

#[cfg(test)]
mod tests {
    use super::*;

    const REPLY: &str =
        "Once upon a time there was a fox who lived in a deep green wood. Every morning it walked to the river.";

    #[test]
    fn no_words_and_hark_s_own_words_are_no_barge_in() {
        assert!(!is_barge_in("", REPLY));
        assert!(!is_barge_in("...", REPLY));
        assert!(!is_barge_in("Once upon a time.", REPLY));
        assert!(!is_barge_in("a deep green", REPLY));
        // A recogniser's near misses of Hark's words through the canceller.
        assert!(!is_barge_in("Every mourning it walked", REPLY));
        assert!(!is_barge_in("lived in a deep greene", REPLY));
    }

    #[test]
    fn backchannels_and_the_recognisers_words_for_a_breath_are_no_barge_in() {
        for heard in [
            "Mm-hmm.",
            "Yeah.",
            "Okay, okay.",
            "Thank you.",
            "Uh-huh",
            "you",
            "Ja.",
            "はい",
            "嗯",
        ] {
            assert!(!is_barge_in(heard, REPLY), "{heard}");
        }
    }

    #[test]
    fn someone_else_s_words_are_a_barge_in() {
        for heard in [
            "Stop.",
            "Wait!",
            "No.",
            "Excuse me, Hark, what is my name?",
            "Once upon a what?",
            "Yeah, but what about the bear?",
            "Halt, stopp!",
            "Arrête.",
            "止めて",
            "停",
            "What?",
            "Tell me more",
        ] {
            assert!(is_barge_in(heard, REPLY), "{heard}");
        }
    }

    /// One stray word is what a recogniser makes of a fragment of Hark's voice.
    #[test]
    fn one_other_word_alone_is_no_barge_in_unless_it_stops_a_speaker() {
        assert!(
            !is_barge_in("1.", REPLY),
            "whisper's reading of the first syllables of \"Once\""
        );
        assert!(!is_barge_in("Nights", REPLY));
        assert!(!is_barge_in("Once upon a time nights", REPLY));
        assert!(is_barge_in("Once upon a what?", REPLY));
        assert!(is_barge_in("Nights falling", REPLY));
    }

    #[test]
    fn short_words_must_match_exactly_and_long_ones_may_be_a_little_off() {
        assert!(
            is_barge_in("fax fix", REPLY),
            "one letter off a three-letter word is another word"
        );
        assert!(!is_barge_in("every mornin", REPLY));
        assert!(
            is_barge_in("marring wooden", REPLY),
            "two letters off a seven-letter word"
        );
        assert!(!is_barge_in("Every mornings", REPLY));
    }

    /// A long stretch of Hark's voice read back with a few words wrong is Hark's; someone
    /// speaking over it says more of their own.
    #[test]
    fn a_long_reading_of_hark_s_voice_with_a_few_words_wrong_is_still_hark_s() {
        let reading = "There once was a fox who lived in the deep green woods every morning it walks to a river";
        assert_eq!(whose(reading, REPLY, true), Voice::Hark);
        assert_eq!(whose("", REPLY, true), Voice::Hark);
        assert_eq!(whose("Yeah, okay.", REPLY, true), Voice::Listener);
        assert_eq!(
            whose(
                "a deep green wood can you tell me how far the river is from the town",
                REPLY,
                true
            ),
            Voice::Someone
        );
    }

    /// Issue 49: a voice that ended while Hark's own could still be in the microphone may
    /// be Hark's alone, whatever the recogniser made of it; only a word that stops a speaker
    /// makes it a barge-in.
    #[test]
    fn within_hark_s_echo_only_a_word_that_stops_a_speaker_is_a_barge_in() {
        // Whisper's words of "…there was a fox" let through a cold canceller (a room test's
        // debug log): no near miss of the reply's, and someone else's past the echo.
        let misread = "That wasn't a fault.";
        assert_eq!(whose(misread, REPLY, false), Voice::Hark);
        assert_eq!(whose(misread, REPLY, true), Voice::Someone);
        assert_eq!(whose("Tell me more", REPLY, false), Voice::Hark);
        assert_eq!(whose("Mm-hmm.", REPLY, false), Voice::Listener);
        assert_eq!(whose("", REPLY, false), Voice::Hark);
        for heard in [
            "Stop.",
            "Wait, wait.",
            "Excuse me, Hark",
            "What?",
            "No no no",
            "Arrête.",
            "停",
        ] {
            assert_eq!(whose(heard, REPLY, false), Voice::Someone, "{heard}");
        }
    }

    #[test]
    fn unspaced_scripts_are_compared_character_by_character() {
        let reply = "东京是日本的首都。";
        assert!(!is_barge_in("日本的首都", reply));
        assert!(is_barge_in("等一下", reply));
        assert!(!is_barge_in("日", "东京是首都。"), "one other character alone");
        assert!(!is_barge_in("東京は日本", "東京は日本の首都です。"));
    }
}
