//! Issue 12: start-up builds no tokenizer table for a model that has none (Anthropic, a
//! local model); an OpenAI model's is built on another thread. Its own test binary, so no
//! other test has built a table in this process first.

use hark_core::conversation::{Conversation, HistorySettings};
use hark_core::tokens;

#[test]
fn only_a_model_with_an_exact_tokenizer_builds_a_table() {
    for model in ["claude-sonnet-4-5", "qwen2.5-coder-1.5b", "llama3.2"] {
        let mut c = Conversation::new(
            "s",
            model,
            "You are Hark, a voice assistant.",
            HistorySettings::default(),
        );
        c.push_user("Hello there, what is the time?").unwrap();
        assert!(c.window().tokens > 0);
        assert!(!tokens::table_built(), "{model} built a tokenizer table");
    }
    tokens::warm_up("claude-sonnet-4-5");
    assert!(!tokens::table_built());
    // An OpenAI model: built in the background by warm_up, or by the first count.
    tokens::warm_up("gpt-4o-mini");
    let c = Conversation::new("s", "gpt-4o-mini", "Be brief.", HistorySettings::default());
    assert!(tokens::table_built());
    assert_eq!(c.counter().method(), "o200k_base");
}
