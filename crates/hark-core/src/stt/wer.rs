//! Word error: how far a transcript is from what was said, counted in words as speech
//! recognition is scored (substitutions, insertions and deletions over the words said).
//! The latency benchmark reports each engine's word error with it, and a test that wants
//! a transcript word for word can compare [`words`].
//!
//! Words are compared, not their spelling: case, punctuation and the way a number is
//! written do not count ("I'm 8." and "im eight" are the same words).

/// A text's words as compared: lowercase, split at white space and dashes, punctuation
/// dropped ("Don't" is "dont", "re-enter" is "re enter"), and whole numbers below a
/// million spelled out ("8" is "eight", "1,042" is "one thousand forty two"), since engines
/// write a number either way.
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for piece in text.split(|c: char| c.is_whitespace() || matches!(c, '-' | '‐' | '–' | '—')) {
        let w: String = piece
            .chars()
            .filter(|c| c.is_alphanumeric())
            .flat_map(char::to_lowercase)
            .collect();
        if w.is_empty() {
            continue;
        }
        match w.parse::<u32>() {
            Ok(n) if n < 1_000_000 && w.bytes().all(|b| b.is_ascii_digit()) => out.extend(spelled(n)),
            _ => out.push(w),
        }
    }
    out
}

const ONES: [&str; 20] = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
];

const TENS: [&str; 10] = [
    "", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety",
];

/// `n` (below a million) in words, as a speaker says it ("one hundred five").
fn spelled(n: u32) -> Vec<String> {
    if n == 0 {
        return vec![ONES[0].to_string()];
    }
    let mut out = Vec::new();
    let (thousands, rest) = (n / 1000, n % 1000);
    if thousands > 0 {
        below_thousand(thousands, &mut out);
        out.push("thousand");
    }
    below_thousand(rest, &mut out);
    out.into_iter().map(str::to_string).collect()
}

/// `n` (below a thousand) in words; nothing for 0.
fn below_thousand(n: u32, out: &mut Vec<&'static str>) {
    let (hundreds, rest) = ((n / 100) as usize, (n % 100) as usize);
    if hundreds > 0 {
        out.push(ONES[hundreds]);
        out.push("hundred");
    }
    if rest >= 20 {
        out.push(TENS[rest / 10]);
        if rest % 10 > 0 {
            out.push(ONES[rest % 10]);
        }
    } else if rest > 0 {
        out.push(ONES[rest]);
    }
}

/// The fewest word substitutions, insertions and deletions that turn `said` into `heard`
/// (Levenshtein over words).
pub fn edit_distance(said: &[String], heard: &[String]) -> usize {
    let mut prev: Vec<usize> = (0..=heard.len()).collect();
    for (i, s) in said.iter().enumerate() {
        let mut cur = vec![i + 1; heard.len() + 1];
        for (j, h) in heard.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(s != h)).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[heard.len()]
}

/// Word errors of one or more transcripts, summed so a set of clips is scored as a whole
/// (the errors over all the words said, not an average of rates).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WordErrors {
    /// Substitutions, insertions and deletions.
    pub errors: usize,
    /// Words said (the reference's).
    pub said: usize,
}

impl WordErrors {
    /// `heard` scored against `said`.
    pub fn of(said: &str, heard: &str) -> Self {
        let said = words(said);
        Self {
            errors: edit_distance(&said, &words(heard)),
            said: said.len(),
        }
    }

    /// The word error rate: errors per word said (0 when nothing was said). It can pass 1
    /// when an engine adds words.
    pub fn rate(self) -> f64 {
        if self.said == 0 {
            0.0
        } else {
            self.errors as f64 / self.said as f64
        }
    }
}

impl std::ops::AddAssign for WordErrors {
    fn add_assign(&mut self, other: Self) {
        self.errors += other.errors;
        self.said += other.said;
    }
}

impl std::iter::Sum for WordErrors {
    fn sum<I: Iterator<Item = Self>>(iter: I) -> Self {
        let mut total = Self::default();
        for e in iter {
            total += e;
        }
        total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_compared_without_case_punctuation_or_how_numbers_are_written() {
        assert_eq!(
            words("What is the capital of France?"),
            words("what is the capital of france")
        );
        assert_eq!(words("Ever tried. Ever failed."), ["ever", "tried", "ever", "failed"]);
        assert_eq!(
            words("Don't re-enter it — please"),
            ["dont", "re", "enter", "it", "please"]
        );
        assert_eq!(words("A spider has 8 legs."), words("a spider has eight legs"));
        assert_eq!(words("42"), ["forty", "two"]);
        assert_eq!(words("105"), ["one", "hundred", "five"]);
        assert_eq!(words("1,000"), ["one", "thousand"]);
        assert_eq!(words("20 0 19"), ["twenty", "zero", "nineteen"]);
        assert_eq!(
            words("999999"),
            ["nine", "hundred", "ninety", "nine", "thousand", "nine", "hundred", "ninety", "nine"]
        );
        // Not a plain number: kept as it is.
        assert_eq!(words("2nd 1000000"), ["2nd", "1000000"]);
        assert!(words(" ... ! ").is_empty());
    }

    #[test]
    fn errors_are_substitutions_insertions_and_deletions() {
        let e = |said: &str, heard: &str| WordErrors::of(said, heard).errors;
        assert_eq!(e("what is the capital of france", "What is the capital of France?"), 0);
        assert_eq!(
            e("fail again fail better", "fail again feel better"),
            1,
            "a substitution"
        );
        assert_eq!(e("try again", "try it again"), 1, "an insertion");
        assert_eq!(e("no matter try again", "no matter again"), 1, "a deletion");
        assert_eq!(e("one two three", ""), 3);
        assert_eq!(e("", "hello there"), 2);
        assert_eq!(
            e(
                "tell me a fun fact about octopuses",
                "tell me a fun fact about I'm out of to pieces"
            ),
            5,
            "one substitution and four insertions"
        );
    }

    #[test]
    fn a_set_of_clips_is_scored_over_all_its_words() {
        let total: WordErrors = [
            WordErrors::of("one two three four", "one two three four"),
            WordErrors::of("five six", "five seven"),
        ]
        .into_iter()
        .sum();
        assert_eq!(total, WordErrors { errors: 1, said: 6 });
        assert!((total.rate() - 1.0 / 6.0).abs() < 1e-12);
        assert_eq!(WordErrors::default().rate(), 0.0);
        assert_eq!(WordErrors::of("hi", "hi there you").rate(), 2.0);
    }
}
