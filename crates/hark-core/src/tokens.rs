//! Token counting: exact BPE counts for OpenAI models, a calibrated estimate for the rest.
//!
//! The tokenizer tables are built once per process (`tiktoken_rs` singletons), only for a
//! model that uses one (about 0.2 s of CPU for o200k), and [`warm_up`] builds it on
//! another thread while the rest of start-up runs. Every message is counted once, when it
//! enters the record (`conversation` caches the count).
//! For models without a public tokenizer (Anthropic, local models) the estimate starts from
//! characters per token and is calibrated against the input-token counts the provider reports.

use std::sync::atomic::{AtomicBool, Ordering};

use tiktoken_rs::tokenizer::{get_tokenizer, Tokenizer};
use tiktoken_rs::CoreBPE;

/// An exact tokenizer's table, built on first use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Table {
    Cl100k,
    O200k,
    O200kHarmony,
}

/// Whether any table has been built in this process.
static BUILT: AtomicBool = AtomicBool::new(false);

impl Table {
    /// The model's table, if it has an exact tokenizer.
    fn for_model(model: &str) -> Option<Self> {
        let tokenizer = get_tokenizer(model).or_else(|| {
            // Newer OpenAI families that the table may not list yet use o200k.
            ["gpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "o1", "o3", "o4", "chatgpt-4o"]
                .iter()
                .any(|p| model.starts_with(p))
                .then_some(Tokenizer::O200kBase)
        });
        match tokenizer {
            Some(Tokenizer::Cl100kBase) => Some(Table::Cl100k),
            Some(Tokenizer::O200kHarmony) => Some(Table::O200kHarmony),
            Some(Tokenizer::O200kBase) => Some(Table::O200k),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Table::Cl100k => "cl100k_base",
            Table::O200k => "o200k_base",
            Table::O200kHarmony => "o200k_harmony",
        }
    }

    /// The table, built by the first caller (others wait for it).
    fn get(self) -> &'static CoreBPE {
        let bpe = match self {
            Table::Cl100k => tiktoken_rs::cl100k_base_singleton(),
            Table::O200k => tiktoken_rs::o200k_base_singleton(),
            Table::O200kHarmony => tiktoken_rs::o200k_harmony_singleton(),
        };
        BUILT.store(true, Ordering::Relaxed);
        bpe
    }
}

/// Starts building the model's table on another thread, if it has one, so the first count
/// (when the conversation opens) waits only for what is left of it.
pub fn warm_up(model: &str) {
    if let Some(t) = Table::for_model(model) {
        let _ = std::thread::Builder::new()
            .name("hark-tokenizer".into())
            .spawn(move || {
                t.get();
            });
    }
}

/// Whether a tokenizer table has been built in this process (a start-up check: a model
/// without an exact tokenizer never builds one).
pub fn table_built() -> bool {
    BUILT.load(Ordering::Relaxed)
}

/// Per-message framing overhead in the chat formats (role markers, separators).
pub const MESSAGE_OVERHEAD: u32 = 4;

/// Reply priming overhead added once per request.
pub const REQUEST_OVERHEAD: u32 = 3;

/// ASCII characters per token for the estimate before any calibration (English prose).
const ASCII_CHARS_PER_TOKEN: f64 = 3.7;

/// How tokens are counted for one model.
#[derive(Clone)]
pub struct TokenCounter {
    /// Exact tokenizer, when the model has a public one.
    table: Option<Table>,
    /// Name of the method, shown in the UI and exports ("o200k_base", "estimate").
    method: &'static str,
    /// Reported / estimated ratio learnt from provider usage; 1.0 until calibrated.
    /// Applied to sums only, so cached per-message counts stay valid.
    calibration: f64,
    /// How many usage reports the calibration has seen (its weight grows with them).
    samples: u32,
}

impl std::fmt::Debug for TokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenCounter")
            .field("method", &self.method)
            .field("calibration", &self.calibration)
            .finish()
    }
}

impl TokenCounter {
    /// The counter for a model name. OpenAI models get their exact tokenizer; everything
    /// else gets the calibrated estimate.
    /// The table itself is built on the first count (see [`warm_up`]).
    pub fn for_model(model: &str) -> Self {
        match Table::for_model(model) {
            Some(t) => Self {
                table: Some(t),
                method: t.name(),
                calibration: 1.0,
                samples: 0,
            },
            None => Self::estimate(),
        }
    }

    /// The character-based estimate, uncalibrated.
    pub fn estimate() -> Self {
        Self {
            table: None,
            method: "estimate",
            calibration: 1.0,
            samples: 0,
        }
    }

    /// Whether counts are exact (a real tokenizer) rather than estimated.
    pub fn is_exact(&self) -> bool {
        self.table.is_some()
    }

    /// The counting method's name.
    pub fn method(&self) -> &'static str {
        self.method
    }

    /// Tokens of a text, before calibration.
    pub fn count(&self, text: &str) -> u32 {
        match self.table {
            Some(t) => t.get().encode_ordinary(text).len() as u32,
            None => estimate_tokens(text),
        }
    }

    /// Applies the learnt calibration to a raw sum of counts.
    pub fn calibrated(&self, raw: u32) -> u32 {
        (raw as f64 * self.calibration).ceil() as u32
    }

    /// The learnt reported/estimated ratio.
    pub fn calibration(&self) -> f64 {
        self.calibration
    }

    /// Learns from one provider report: the request was estimated at `estimated_raw`
    /// (uncalibrated) and the provider billed `reported` input tokens. Exact counters only
    /// absorb the provider's fixed framing differences, so they are calibrated the same way.
    pub fn calibrate(&mut self, estimated_raw: u32, reported: u32) {
        if estimated_raw == 0 || reported == 0 {
            return;
        }
        let ratio = (reported as f64 / estimated_raw as f64).clamp(0.25, 4.0);
        // A running mean for the first reports, then an exponential average that follows
        // slow drift (e.g. a conversation switching language) without jumping on one outlier.
        self.samples = self.samples.saturating_add(1);
        let weight = (1.0 / self.samples as f64).max(0.2);
        self.calibration += (ratio - self.calibration) * weight;
    }
}

/// The uncalibrated estimate: ASCII text at ~3.7 characters per token, every other
/// character (accents, CJK, emoji) about one token each, never less than one token per
/// whitespace-separated word.
pub fn estimate_tokens(text: &str) -> u32 {
    let mut ascii = 0u32;
    let mut other = 0u32;
    let mut words = 0u32;
    let mut in_word = false;
    for c in text.chars() {
        if c.is_ascii() {
            ascii += 1;
        } else {
            other += 1;
        }
        let ws = c.is_whitespace();
        if !ws && !in_word {
            words += 1;
        }
        in_word = !ws;
    }
    let by_chars = (ascii as f64 / ASCII_CHARS_PER_TOKEN).ceil() as u32 + other;
    by_chars.max(words)
}

/// The model's context window in tokens, when known; unknown models get a conservative
/// 8,192 (typical of local servers), which the user can override with `max_context_tokens`.
pub fn context_window(model: &str) -> u32 {
    if model.starts_with("claude") {
        return 200_000;
    }
    tiktoken_rs::model::get_context_size(model)
        .map(|n| n.min(u32::MAX as usize) as u32)
        .unwrap_or(8_192)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_models_count_exactly_with_their_tokenizer() {
        let c = TokenCounter::for_model("gpt-4o-mini");
        assert!(c.is_exact());
        assert_eq!(c.method(), "o200k_base");
        // "hello world" is two tokens in both o200k and cl100k.
        assert_eq!(c.count("hello world"), 2);
        let old = TokenCounter::for_model("gpt-4");
        assert_eq!(old.method(), "cl100k_base");
        assert_eq!(old.count("hello world"), 2);
    }

    #[test]
    fn other_models_are_estimated() {
        let c = TokenCounter::for_model("claude-haiku-4-5");
        assert!(!c.is_exact());
        // 44 ASCII chars / 3.7 → 12 tokens.
        assert_eq!(c.count("The quick brown fox jumps over the lazy dog."), 12);
        // Non-ASCII characters count about one token each.
        assert_eq!(estimate_tokens("こんにちは"), 5);
        assert_eq!(estimate_tokens(""), 0);
    }

    #[test]
    fn calibration_moves_towards_reported_usage() {
        let mut c = TokenCounter::estimate();
        assert_eq!(c.calibrated(100), 100);
        c.calibrate(100, 130);
        assert_eq!(c.calibrated(100), 130);
        for _ in 0..20 {
            c.calibrate(100, 110);
        }
        let r = c.calibrated(100);
        assert!((110..=112).contains(&r), "calibrated to {r}");
    }

    #[test]
    fn context_windows() {
        assert_eq!(context_window("claude-sonnet-4-5"), 200_000);
        assert_eq!(context_window("gpt-4o"), 128_000);
        assert_eq!(context_window("qwen2.5-coder-1.5b"), 8_192);
    }
}
