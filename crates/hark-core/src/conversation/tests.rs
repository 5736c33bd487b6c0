//! One named test per history rule of docs/ARCHITECTURE.md (rules 1-10; 11-14 live with
//! their modules).

use super::*;
use crate::tokens::{TokenCounter, MESSAGE_OVERHEAD, REQUEST_OVERHEAD};

fn conv(max_turns: u32) -> Conversation {
    Conversation::new(
        "s1",
        "gpt-4o",
        "You are a helpful voice assistant.",
        HistorySettings {
            enabled: true,
            max_turns,
            max_context_tokens: None,
        },
    )
}

fn reply(text: &str) -> AssistantMessage {
    AssistantMessage {
        generated: text.to_string(),
        ..Default::default()
    }
}

/// Runs one complete turn: user message, prompt, reply. Returns the prompt that was sent.
fn turn(c: &mut Conversation, user: &str, assistant: &str) -> Prompt {
    c.push_user(user).unwrap();
    let p = c.prompt().unwrap();
    c.push_reply(reply(assistant));
    p
}

fn texts(p: &Prompt) -> Vec<String> {
    p.messages
        .iter()
        .map(|m| match m {
            PromptMessage::User { text } => format!("u:{text}"),
            PromptMessage::Assistant { text, .. } => format!("a:{text}"),
            PromptMessage::ToolResult { call_id, content, .. } => format!("t:{call_id}={content}"),
            PromptMessage::Note { text } => format!("n:{text}"),
        })
        .collect()
}

fn history_texts(c: &Conversation) -> Vec<String> {
    c.history()
        .iter()
        .map(|m| format!("{}:{}", &m.kind_name()[..1], m.text()))
        .collect()
}

#[test]
fn rule1_settings_default_to_enabled_ten_turns_and_model_budget() {
    let s = HistorySettings::default();
    assert!(s.enabled);
    assert_eq!(s.max_turns, 10);
    assert_eq!(s.max_context_tokens, None);
    let mut c = conv(10);
    // Default budget: the model window (gpt-4o: 128k) minus the reply budget (1024).
    assert_eq!(c.budget(), Some(128_000 - 1024));
    c.set_settings(HistorySettings {
        max_context_tokens: Some(0),
        ..s
    });
    assert_eq!(c.budget(), None, "0 means no budget");
    // Settings deserialise with defaults for missing fields.
    let parsed: HistorySettings = serde_json::from_str(r#"{"max_turns": 3}"#).unwrap();
    assert_eq!(
        parsed,
        HistorySettings {
            max_turns: 3,
            ..HistorySettings::default()
        }
    );
}

#[test]
fn rule2_trimming_removes_whole_turns_including_tool_calls() {
    let mut c = conv(2);
    c.push_user("weather in Paris?").unwrap();
    c.push_tool_calls(
        "",
        vec![ToolCall {
            id: "c1".into(),
            name: "weather".into(),
            arguments: "{}".into(),
            client_side: true,
        }],
    );
    c.resolve_tool_call("c1", ToolState::Done, "sunny").unwrap();
    c.push_reply(reply("It is sunny."));
    turn(&mut c, "thanks", "welcome");
    // Two turns fit: the tool turn is whole (call, result, reply).
    assert_eq!(c.window().turns, 2);
    assert_eq!(c.history().len(), 6);
    c.push_user("bye").unwrap();
    let p = c.prompt().unwrap();
    // The tool turn left whole: no result without its call, no reply without its question.
    assert_eq!(texts(&p), vec!["u:thanks", "a:welcome", "u:bye"]);
}

#[test]
fn rule3_user_message_enters_record_and_context_before_the_request() {
    let mut c = conv(10);
    turn(&mut c, "My name is Sam.", "Nice to meet you, Sam!");
    c.push_user("What's my name?").unwrap();
    assert_eq!(c.record().len(), 3, "recorded before any request");
    let p = c.prompt().unwrap();
    assert_eq!(
        texts(&p),
        vec!["u:My name is Sam.", "a:Nice to meet you, Sam!", "u:What's my name?"]
    );
}

#[test]
fn rule4_max_turns_5_sixth_request_carries_u2_to_u6_as_the_seed_table() {
    let mut c = conv(5);
    let mut sent = Vec::new();
    for i in 1..=6 {
        sent.push(turn(&mut c, &format!("u{i}"), &format!("a{i}")));
    }
    assert_eq!(
        texts(&sent[4]),
        vec!["u:u1", "a:a1", "u:u2", "a:a2", "u:u3", "a:a3", "u:u4", "a:a4", "u:u5"]
    );
    assert_eq!(
        texts(&sent[5]),
        vec!["u:u2", "a:a2", "u:u3", "a:a3", "u:u4", "a:a4", "u:u5", "a:a5", "u:u6"],
        "the sixth request of the seed table"
    );
    assert_eq!(
        history_texts(&c),
        vec!["u:u2", "a:a2", "u:u3", "a:a3", "u:u4", "a:a4", "u:u5", "a:a5", "u:u6", "a:a6"]
    );
    // Never an orphaned assistant message first (the seed's slice(-2n) bug).
    for p in &sent {
        assert!(matches!(p.messages[0], PromptMessage::User { .. }));
    }
    // The record lost nothing.
    assert_eq!(c.record().len(), 12);
}

#[test]
fn rule4_max_turns_zero_is_unlimited_and_the_slider_reshapes_live() {
    let mut c = conv(0);
    for i in 1..=30 {
        turn(&mut c, &format!("u{i}"), &format!("a{i}"));
    }
    assert_eq!(c.history().len(), 60);
    let s = c.settings();
    c.set_settings(HistorySettings { max_turns: 3, ..s });
    assert_eq!(
        history_texts(&c),
        vec!["u:u28", "a:a28", "u:u29", "a:a29", "u:u30", "a:a30"]
    );
    // Raising the limit again brings trimmed turns back: the context is a view of the record.
    c.set_settings(HistorySettings { max_turns: 4, ..s });
    assert_eq!(c.history().len(), 8);
    assert_eq!(c.window().dropped_turns, 26);
}

#[test]
fn rule5_budget_drops_the_oldest_whole_turns() {
    let counter = TokenCounter::for_model("gpt-4o");
    let ucost = counter.count("hello u1") + MESSAGE_OVERHEAD;
    let per_turn = ucost + counter.count("hello a1") + MESSAGE_OVERHEAD;
    // Room for the request framing, four whole turns and the current message; not five.
    let budget = REQUEST_OVERHEAD + 4 * per_turn + ucost;
    let mut c = Conversation::new(
        "s",
        "gpt-4o",
        "",
        HistorySettings {
            enabled: true,
            max_turns: 0,
            max_context_tokens: Some(budget),
        },
    );
    for i in 1..=4 {
        turn(&mut c, &format!("hello u{i}"), &format!("hello a{i}"));
    }
    assert_eq!(c.window().turns, 4);
    c.push_user("hello u5").unwrap();
    let p = c.prompt().unwrap();
    assert_eq!(p.messages.len(), 9, "four turns and the current message fit exactly");
    assert_eq!(p.estimated_tokens, budget);
    c.push_reply(reply("hello a5"));
    c.push_user("hello u6").unwrap();
    let p = c.prompt().unwrap();
    // Five turns and the current message do not: the oldest turn goes, as a whole.
    assert_eq!(texts(&p)[0], "u:hello u2");
    assert_eq!(p.messages.len(), 9);
    assert!(p.estimated_tokens <= budget);
    assert_eq!(c.window().dropped_turns, 1);
}

#[test]
fn rule5_current_message_too_big_fails_clearly_and_loses_nothing() {
    let mut c = Conversation::new(
        "s",
        "gpt-4o",
        "Be brief.",
        HistorySettings {
            enabled: true,
            max_turns: 0,
            max_context_tokens: Some(20),
        },
    );
    turn(&mut c, "hi", "hello");
    let long = "word ".repeat(50);
    c.push_user(&long).unwrap();
    let err = c.prompt().unwrap_err();
    assert!(
        matches!(err, HistoryError::ContextTooSmall { budget: 20, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("max_context_tokens"), "{err}");
    assert_eq!(c.record().len(), 3, "the message stays in the record");
    // The next, short message works: the oversized turn is simply dropped as the oldest.
    c.push_user("ok").unwrap();
    let p = c.prompt().unwrap();
    assert_eq!(texts(&p), vec!["u:ok"]);
}

#[test]
fn rule6_system_prompt_is_outside_the_context_and_swappable() {
    let mut c = conv(1);
    let p1 = turn(&mut c, "u1", "a1");
    assert_eq!(p1.system, "You are a helpful voice assistant.");
    assert!(p1.messages.iter().all(|m| !m.text().contains("helpful")));
    c.set_system_prompt("You are terse.");
    let p2 = turn(&mut c, "u2", "a2");
    assert_eq!(p2.system, "You are terse.", "effective from the next request");
    // It never counts as a turn and is never trimmed, even with max_turns = 1.
    assert_eq!(p2.messages.len(), 1);
    assert_eq!(c.turn_count(), 2);
}

#[test]
fn rule7_history_is_a_copy_and_clear_keeps_settings_and_accumulates_again() {
    let mut c = conv(4);
    turn(&mut c, "u1", "a1");
    let mut h = c.history();
    h.clear();
    assert_eq!(c.history().len(), 2, "history() returned a copy");
    c.clear();
    assert!(c.history().is_empty());
    assert_eq!(c.settings().max_turns, 4);
    assert_eq!(c.system_prompt(), "You are a helpful voice assistant.");
    let p = turn(&mut c, "u2", "a2");
    assert_eq!(texts(&p), vec!["u:u2"], "the next request starts clean");
    turn(&mut c, "u3", "a3");
    assert_eq!(history_texts(&c), vec!["u:u2", "a:a2", "u:u3", "a:a3"]);
    // The record keeps everything plus the reset marker.
    assert_eq!(c.record().len(), 7);
    assert_eq!(c.record()[2].kind, MessageKind::ContextReset);
}

#[test]
fn rule8_disabled_history_sends_only_the_current_utterance_and_the_record_grows() {
    let mut c = conv(10);
    c.set_settings(HistorySettings {
        enabled: false,
        ..HistorySettings::default()
    });
    turn(&mut c, "My name is Sam.", "Nice to meet you.");
    let p = turn(&mut c, "What's my name?", "I don't know.");
    assert_eq!(texts(&p), vec!["u:What's my name?"]);
    assert_eq!(p.system, "You are a helpful voice assistant.");
    assert!(c.history().is_empty());
    assert_eq!(c.record().len(), 4);
    // Turning it back on shows the record's turns again.
    c.set_settings(HistorySettings::default());
    assert_eq!(c.history().len(), 4);
}

#[test]
fn rule9_interrupted_reply_keeps_generated_and_heard_and_context_uses_heard() {
    let mut c = conv(10);
    c.push_user("Tell me a story").unwrap();
    let id = c
        .push_reply(reply("Once upon a time there was a fox. It lived in a wood."))
        .id
        .clone();
    c.mark_interrupted(&id, "Once upon a time", Some(900)).unwrap();
    let MessageKind::Assistant(a) = &c.record()[1].kind else {
        panic!()
    };
    assert_eq!(a.generated, "Once upon a time there was a fox. It lived in a wood.");
    assert_eq!(a.heard.as_deref(), Some("Once upon a time"));
    assert!(a.interrupted);
    c.push_user("Go on").unwrap();
    let p = c.prompt().unwrap();
    assert_eq!(texts(&p), vec!["u:Tell me a story", "a:Once upon a time", "u:Go on"]);
}

#[test]
fn rule9_nothing_heard_leaves_the_reply_out_and_merges_the_user_messages() {
    let mut c = conv(10);
    turn(&mut c, "hi", "hello");
    c.push_user("What is the capital of France?").unwrap();
    let id = c.push_reply(reply("The capital")).id.clone();
    c.mark_interrupted(&id, "", Some(0)).unwrap();
    c.push_user("Actually, of Italy?").unwrap();
    let p = c.prompt().unwrap();
    assert_eq!(
        texts(&p),
        vec![
            "u:hi",
            "a:hello",
            "u:What is the capital of France?\n\nActually, of Italy?"
        ],
        "no two user messages in a row"
    );
    // The empty reply is still in the record with what was generated.
    assert_eq!(c.record().len(), 5);
    // And a failed request (no reply at all) merges the same way.
    let mut c = conv(10);
    c.push_user("first").unwrap();
    c.push_reply(AssistantMessage {
        outcome: ReplyOutcome::Failed {
            error_kind: "server".into(),
            message: "500".into(),
        },
        ..Default::default()
    });
    c.push_user("second").unwrap();
    assert_eq!(texts(&c.prompt().unwrap()), vec!["u:first\n\nsecond"]);
}

fn call(id: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: "lookup".into(),
        arguments: r#"{"q":"x"}"#.into(),
        client_side: true,
    }
}

#[test]
fn rule10_call_and_placeholder_enter_together_and_the_result_replaces_it_in_place() {
    let mut c = conv(10);
    c.push_user("look it up").unwrap();
    let range = c.push_tool_calls("Let me check.", vec![call("c1"), call("c2")]);
    assert_eq!(range, 1..4);
    let p = c.prompt().unwrap();
    assert_eq!(
        texts(&p)[1..],
        [
            "a:Let me check.".to_string(),
            r#"t:c1={"status":"in_progress"}"#.to_string(),
            r#"t:c2={"status":"in_progress"}"#.to_string()
        ]
    );
    // Filler spoken by the model meanwhile does not count as moving on.
    c.push_reply(reply("One moment."));
    assert_eq!(
        c.resolve_tool_call("c2", ToolState::Done, "42").unwrap(),
        ToolResolution::InPlace(3)
    );
    let p = c.prompt().unwrap();
    assert_eq!(texts(&p)[3], "t:c2=42", "replaced where it sits, by call id");
    assert_eq!(c.record().len(), 5);
}

#[test]
fn rule10_late_result_after_the_conversation_moved_on_becomes_a_note() {
    let mut c = conv(10);
    c.push_user("book a table").unwrap();
    c.push_tool_calls("", vec![call("c1")]);
    c.push_user("and what's the weather?").unwrap();
    let r = c.resolve_tool_call("c1", ToolState::Done, "booked for 8pm").unwrap();
    assert_eq!(r, ToolResolution::LateNote(4));
    let MessageKind::Note { text } = &c.record()[4].kind else {
        panic!()
    };
    assert!(text.contains("booked for 8pm") && text.contains("c1"), "{text}");
}

#[test]
fn rule10_barge_in_cancels_running_calls_but_settled_results_are_final() {
    let mut c = conv(10);
    c.push_user("do two things").unwrap();
    c.push_tool_calls("", vec![call("c1"), call("c2")]);
    c.resolve_tool_call("c1", ToolState::Done, "done one").unwrap();
    assert_eq!(c.cancel_pending_tool_calls(), vec![3]);
    let MessageKind::ToolResult(r) = &c.record()[3].kind else {
        panic!()
    };
    assert_eq!(r.state, ToolState::Cancelled);
    let MessageKind::ToolResult(r) = &c.record()[2].kind else {
        panic!()
    };
    assert_eq!(r.state, ToolState::Done, "a tool result is uninterruptible");
    assert_eq!(
        c.resolve_tool_call("c1", ToolState::Done, "again").unwrap(),
        ToolResolution::AlreadySettled(2),
        "a settled result is final"
    );
    // The cancelled call's tool still finished: its result is a late note; the cancelled
    // placeholder stays as it is.
    assert_eq!(
        c.resolve_tool_call("c2", ToolState::Done, "late").unwrap(),
        ToolResolution::LateNote(4)
    );
    let MessageKind::ToolResult(r) = &c.record()[3].kind else {
        panic!()
    };
    assert_eq!(r.state, ToolState::Cancelled);
    assert!(matches!(
        c.resolve_tool_call("nope", ToolState::Done, ""),
        Err(HistoryError::UnknownToolCall(_))
    ));
}

#[test]
fn rule10_trimming_never_splits_a_call_from_its_result() {
    let mut c = Conversation::new(
        "s",
        "gpt-4o",
        "",
        HistorySettings {
            enabled: true,
            max_turns: 0,
            max_context_tokens: Some(70),
        },
    );
    c.push_user("check").unwrap();
    c.push_tool_calls("", vec![call("c1")]);
    c.resolve_tool_call("c1", ToolState::Done, "ok").unwrap();
    c.push_reply(reply("checked"));
    for i in 0..4 {
        turn(&mut c, &format!("hello u{i}"), &format!("hello a{i}"));
    }
    let p = c.prompt();
    let p = p.unwrap();
    let first = &p.messages[0];
    assert!(
        matches!(first, PromptMessage::User { .. }),
        "window starts at a turn: {first:?}"
    );
    let calls: usize = p
        .messages
        .iter()
        .filter(|m| matches!(m, PromptMessage::Assistant { tool_calls, .. } if !tool_calls.is_empty()))
        .count();
    let results = p
        .messages
        .iter()
        .filter(|m| matches!(m, PromptMessage::ToolResult { .. }))
        .count();
    assert_eq!(calls, results);
}

#[test]
fn empty_utterance_is_rejected_and_not_recorded() {
    let mut c = conv(10);
    assert_eq!(c.push_user("   \n").unwrap_err(), HistoryError::EmptyUtterance);
    assert!(c.record().is_empty());
}

#[test]
fn resume_from_record_gives_the_same_context() {
    let mut c = conv(3);
    for i in 1..=5 {
        turn(&mut c, &format!("u{i}"), &format!("a{i}"));
    }
    c.clear();
    turn(&mut c, "u6", "a6");
    let again = Conversation::from_record("s1", "gpt-4o", c.system_prompt(), c.settings(), c.record().to_vec());
    assert_eq!(again.history(), c.history());
    assert_eq!(again.window(), c.window());
}

#[test]
fn summary_and_recall_sit_beside_the_system_prompt_and_count_in_the_budget() {
    let mut c = conv(10);
    let before = c.window().tokens;
    c.set_summary(Some("The user is Sam.".into()));
    c.set_recall(Some(Recall {
        facts: vec!["- likes tea".into()],
        earlier: vec![],
    }));
    let p = turn(&mut c, "hi", "hello");
    let system = p.system_with_recall();
    assert!(system
        .starts_with("You are a helpful voice assistant.\n\nSummary of the earlier conversation:\nThe user is Sam."));
    assert!(system.ends_with("\n\nThings you remember about the user from earlier conversations:\n- likes tea"));
    assert_eq!(c.system_text(), system, "what /history shows is what the model is told");
    assert_eq!(p.messages.len(), 1, "summary and recall do not touch the context list");
    assert!(c.window().tokens > before);
    // Nothing recalled is no recall at all.
    c.set_recall(Some(Recall::default()));
    assert_eq!(c.recalled(), None);
    assert_eq!(c.system_text(), c.prompt().unwrap().system);
}

/// Rule 12 for a model that keeps the prompt it evaluated (the offline one): the facts stay
/// beside the system prompt, and the earlier messages this turn recalled come just before
/// its words, so another turn's recall leaves everything before them as it was.
#[test]
fn rule12_the_turns_recalled_messages_can_come_just_before_its_words() {
    let mut c = conv(10);
    turn(&mut c, "u1", "a1");
    c.push_user("u2").unwrap();
    let lisbon = "- On 2026-12-01 the user said: \"I fly to Lisbon on Friday.\"";
    c.set_recall(Some(Recall {
        facts: vec!["- likes tea".into()],
        earlier: vec![lisbon.into()],
    }));
    let p = c.prompt().unwrap();
    let heading = "Things you remember about the user from earlier conversations:";
    let (system, messages) = p.split_recall();
    assert_eq!(
        system,
        format!("You are a helpful voice assistant.\n\n{heading}\n- likes tea")
    );
    let split = Prompt { messages, ..p.clone() };
    assert_eq!(
        texts(&split),
        vec![
            "u:u1".to_string(),
            "a:a1".into(),
            format!("n:{heading}\n{lisbon}"),
            "u:u2".into()
        ]
    );
    // Beside the system prompt (a cloud model), the same lines, the facts first.
    assert_eq!(
        p.system_with_recall(),
        format!("You are a helpful voice assistant.\n\n{heading}\n- likes tea\n{lisbon}")
    );
    assert_eq!(texts(&p), vec!["u:u1", "a:a1", "u:u2"], "never in the context list");

    // Another recall: the system text and the turns before are unchanged.
    c.set_recall(Some(Recall {
        facts: vec!["- likes tea".into()],
        earlier: vec!["- On 2026-11-20 you said: \"Paris.\"".into()],
    }));
    let (system2, messages2) = c.prompt().unwrap().split_recall();
    assert_eq!(system2, system);
    assert_eq!(messages2[..2], split.messages[..2]);
    assert_ne!(messages2[2], split.messages[2]);
    // Earlier messages alone leave the system text as it is; no recall adds nothing.
    c.set_recall(Some(Recall {
        facts: vec![],
        earlier: vec![lisbon.into()],
    }));
    assert_eq!(
        c.prompt().unwrap().split_recall().0,
        "You are a helpful voice assistant."
    );
    c.set_recall(None);
    let plain = c.prompt().unwrap();
    assert_eq!(plain.split_recall(), (plain.system.clone(), plain.messages.clone()));
}

#[test]
fn rule11_turns_leaving_the_context_are_due_for_the_summary_and_a_stale_fold_is_discarded() {
    let mut c = conv(2);
    for i in 1..=4 {
        turn(&mut c, &format!("u{i}"), &format!("a{i}"));
    }
    let job = c.summary_due().expect("two turns left the context");
    assert_eq!(job.prior, None);
    let texts: Vec<&str> = job.messages.iter().map(|m| m.text()).collect();
    assert_eq!(texts, vec!["u1", "a1", "u2", "a2"], "whole turns, oldest first");
    assert!(c.apply_summary(&job, "S1".into()));
    assert_eq!(c.summary(), Some("S1"));
    assert!(c.summary_due().is_none(), "nothing new has left");
    assert!(c.prompt().unwrap().system.contains("S1"));
    // The next fold gets the prior summary (summaries fold, never rebuild).
    turn(&mut c, "u5", "a5");
    let job = c.summary_due().unwrap();
    assert_eq!(job.prior.as_deref(), Some("S1"));
    assert_eq!(job.messages.len(), 2);
    // The context changed under it (a reset): the result is discarded, and the reset
    // forgets the summary too.
    c.clear();
    assert!(!c.apply_summary(&job, "S2".into()));
    assert_eq!(c.summary(), None);
    assert!(c.summary_due().is_none());
}

/// One step of a random conversation for the property test.
#[derive(Debug, Clone)]
enum Step {
    User(u8),
    Reply(u8),
    /// A reply that calls `n` tools, each answered later (or never).
    Tools(u8),
    Resolve,
    Interrupt,
    Reset,
    MaxTurns(u8),
    Budget(u16),
}

fn step() -> impl proptest::strategy::Strategy<Value = Step> {
    use proptest::prelude::*;
    prop_oneof![
        4 => (1u8..60).prop_map(Step::User),
        3 => (0u8..80).prop_map(Step::Reply),
        1 => (1u8..3).prop_map(Step::Tools),
        2 => Just(Step::Resolve),
        1 => Just(Step::Interrupt),
        1 => Just(Step::Reset),
        1 => (0u8..6).prop_map(Step::MaxTurns),
        1 => (0u16..400).prop_map(Step::Budget),
    ]
}

proptest::proptest! {
    /// Whatever happened, the context window never starts with an assistant message or an
    /// orphan tool result, never splits a tool call from its result, and keeps within
    /// `max_turns` and the budget (but for the current turn alone, which fails loudly).
    #[test]
    fn the_context_window_keeps_its_invariants(steps in proptest::collection::vec(step(), 1..60)) {
        let mut c = conv(0);
        let mut call = 0u32;
        for s in steps {
            match s {
                Step::User(n) => { let _ = c.push_user(&"word ".repeat(n as usize)); }
                Step::Reply(n) => { c.push_reply(reply(&"answer ".repeat(n as usize))); }
                Step::Tools(n) => {
                    let calls = (0..n).map(|_| { call += 1; ToolCall { id: format!("c{call}"), name: "t".into(), arguments: "{}".into(), client_side: true } }).collect();
                    c.push_tool_calls("checking", calls);
                }
                Step::Resolve => {
                    let pending = c.record().iter().find_map(|m| match &m.kind {
                        MessageKind::ToolResult(r) if r.state == ToolState::InProgress => Some(r.call_id.clone()),
                        _ => None,
                    });
                    if let Some(id) = pending { c.resolve_tool_call(&id, ToolState::Done, "result").unwrap(); }
                }
                Step::Interrupt => {
                    c.cancel_pending_tool_calls();
                    if let Some(id) = c.last_reply_id().map(str::to_string) {
                        c.mark_interrupted(&id, "ans", Some(10)).unwrap();
                    }
                }
                Step::Reset => { c.clear(); }
                Step::MaxTurns(n) => c.set_settings(HistorySettings { max_turns: n as u32, ..c.settings() }),
                Step::Budget(b) => c.set_settings(HistorySettings { max_context_tokens: Some(b as u32), ..c.settings() }),
            }
            let w = c.window();
            let inside: Vec<&Message> = c.record()[w.start..w.end].iter().filter(|m| m.in_context()).collect();
            if let Some(first) = inside.first() {
                proptest::prop_assert!(first.is_user(), "the context starts with {:?}", first.kind_name());
            }
            // Calls and results come and go together.
            let calls: Vec<&str> = inside.iter().flat_map(|m| match &m.kind {
                MessageKind::Assistant(a) => a.tool_calls.iter().map(|t| t.id.as_str()).collect(),
                _ => Vec::new(),
            }).collect();
            let results: Vec<&str> = inside.iter().filter_map(|m| match &m.kind {
                MessageKind::ToolResult(r) => Some(r.call_id.as_str()),
                _ => None,
            }).collect();
            for r in &results {
                proptest::prop_assert!(calls.contains(r), "result {r} without its call");
            }
            for k in &calls {
                proptest::prop_assert!(results.contains(k), "call {k} without its result");
            }
            let settings = c.settings();
            if settings.max_turns > 0 && settings.enabled {
                proptest::prop_assert!(w.turns <= settings.max_turns as usize, "{} turns > max {}", w.turns, settings.max_turns);
            }
            if let Some(budget) = c.budget() {
                proptest::prop_assert!(w.turns == 0 || w.tokens <= budget || (w.over_budget && w.turns == 1),
                    "{} tokens over a budget of {budget} with {} turns", w.tokens, w.turns);
            }
            if !w.over_budget && w.turns > 0 {
                let p = c.prompt().unwrap();
                let starts_with_user = matches!(p.messages.first(), Some(PromptMessage::User { .. }));
                proptest::prop_assert!(starts_with_user, "the prompt starts with a user message");
                let adjacent_users = p.messages.windows(2).any(|m| matches!((&m[0], &m[1]), (PromptMessage::User { .. }, PromptMessage::User { .. })));
                proptest::prop_assert!(!adjacent_users, "two user messages in a row");
            }
        }
    }
}
