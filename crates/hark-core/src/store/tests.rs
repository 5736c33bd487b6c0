use super::export::{self, to_json, to_markdown};
use super::import::{parse, parse_file, strip_json_comments, ImportError, ImportFormat, MAX_CONVERSATIONS};
use super::*;
use crate::conversation::{AssistantMessage, MessageKind, PromptMessage, ToolCall, ToolState, Usage};

const DEEPGRAM_HISTORY: &str = include_str!("../../tests/fixtures/deepgram-history.jsonc");
const DEEPGRAM_FUNCTIONS: &str = include_str!("../../tests/fixtures/deepgram-function-calls.jsonc");

fn sample_session(store: &Store) -> Conversation {
    let meta = SessionMeta::new("sess-1", "Be brief.", HistorySettings::default());
    store.create_session(&meta).unwrap();
    let mut c = Conversation::new("sess-1", "gpt-4o", "Be brief.", HistorySettings::default());
    let save_last = |c: &Conversation| {
        let i = c.record().len() - 1;
        store.save_message("sess-1", &c.record()[i]).unwrap();
    };
    c.push_user("My name is Sam.").unwrap();
    save_last(&c);
    c.push_reply(AssistantMessage {
        generated: "Nice to meet you, Sam!".into(),
        usage: Some(Usage {
            input_tokens: Some(20),
            output_tokens: Some(7),
            estimated_input_tokens: 19,
            estimated_output_tokens: 7,
            cached_input_tokens: Some(12),
        }),
        ..Default::default()
    });
    save_last(&c);
    c.push_user("Look up the weather").unwrap();
    save_last(&c);
    let range = c.push_tool_calls(
        "",
        vec![ToolCall {
            id: "c1".into(),
            name: "weather".into(),
            arguments: "{}".into(),
            client_side: true,
        }],
    );
    for i in range {
        store.save_message("sess-1", &c.record()[i]).unwrap();
    }
    let c1 = match c.resolve_tool_call("c1", ToolState::Done, "sunny").unwrap() {
        crate::conversation::ToolResolution::InPlace(i) => i,
        other => panic!("{other:?}"),
    };
    store.save_message("sess-1", &c.record()[c1]).unwrap();
    let id = c
        .push_reply(AssistantMessage {
            generated: "It is sunny and warm today.".into(),
            ..Default::default()
        })
        .id
        .clone();
    save_last(&c);
    let i = c.mark_interrupted(&id, "It is sunny", Some(700)).unwrap();
    store.save_message("sess-1", &c.record()[i]).unwrap();
    c.clear();
    save_last(&c);
    c
}

#[test]
fn messages_are_committed_and_a_session_resumes_with_the_same_context() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hark.db");
    let c = {
        let store = Store::open(&path).unwrap();
        sample_session(&store)
    };
    // A new process: open the file again.
    let store = Store::open(&path).unwrap();
    let loaded = store.load_session("sess-1").unwrap();
    assert_eq!(
        loaded.messages,
        c.record(),
        "every message, tool result settled in place, heard text kept"
    );
    assert_eq!(loaded.meta.title.as_deref(), Some("My name is Sam."));
    let resumed = loaded.conversation("gpt-4o");
    assert_eq!(resumed.history(), c.history());
    let mode: String = store
        .lock()
        .pragma_query_value(None, "journal_mode", |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let list = store.list_sessions().unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].messages, 7);
    assert_eq!(store.resolve_session("sess").unwrap(), "sess-1");
    assert!(matches!(store.resolve_session("nope"), Err(StoreError::NoSession(_))));
}

#[test]
fn a_database_from_a_newer_hark_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hark.db");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.pragma_update(None, "user_version", 99).unwrap();
    }
    let err = Store::open(&path).err().unwrap();
    assert!(err.to_string().contains("newer Hark"), "{err}");
}

#[test]
fn delete_session_removes_its_messages() {
    let store = Store::open_in_memory().unwrap();
    sample_session(&store);
    store.delete_session("sess-1").unwrap();
    assert!(store.list_sessions().unwrap().is_empty());
    let n: i64 = store
        .lock()
        .query_row("SELECT COUNT(*) FROM messages", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 0);
}

#[test]
fn rule14_export_is_versioned_complete_and_round_trips() {
    let store = Store::open_in_memory().unwrap();
    sample_session(&store);
    store
        .save_summary(
            "sess-1",
            &Summary {
                text: "Sam asked about weather.".into(),
                through_seq: 3,
                created_at: Utc::now(),
            },
        )
        .unwrap();
    let session = store.load_session("sess-1").unwrap();
    let json = to_json(&session);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["format"], "hark.conversation");
    assert_eq!(v["version"], 1);
    assert_eq!(v["session"]["settings"]["max_turns"], 10);
    assert_eq!(v["summary"]["text"], "Sam asked about weather.");
    assert_eq!(v["totals"]["turns"], 2);
    assert_eq!(v["totals"]["input_tokens"], 20);
    assert_eq!(v["totals"]["cached_input_tokens"], 12);
    assert_eq!(v["totals"]["context_resets"], 1);
    let msgs = v["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 7);
    assert!(msgs.iter().all(|m| m["id"].is_string() && m["created_at"].is_string()));
    assert_eq!(msgs[5]["generated"], "It is sunny and warm today.");
    assert_eq!(msgs[5]["heard"], "It is sunny");
    assert_eq!(msgs[5]["interrupted"], true);
    assert_eq!(msgs[4]["state"], "done");
    assert_eq!(msgs[6]["kind"], "context_reset");

    let (format, imported) = parse(&json).unwrap();
    assert_eq!(format, ImportFormat::Hark);
    assert_ne!(imported.meta.id, session.meta.id, "an import is a new session");
    assert_eq!(imported.messages, session.messages);
    assert_eq!(imported.summary, session.summary);
    assert_eq!(imported.meta.system_prompt, "Be brief.");
    store.insert_session(&imported).unwrap();
    assert_eq!(
        store.load_session(&imported.meta.id).unwrap().messages,
        session.messages
    );

    let md = to_markdown(&session);
    assert!(md.contains("**You**") && md.contains("My name is Sam."));
    assert!(md.contains("Interrupted. Heard: “It is sunny”"));
    assert!(md.contains("Context reset"));
    assert!(md.contains("Tool `weather` result: sunny"));
}

#[test]
fn rule13_imports_the_deepgram_history_sample_verbatim() {
    let (format, s) = parse(DEEPGRAM_HISTORY).unwrap();
    assert_eq!(format, ImportFormat::Deepgram);
    let texts: Vec<(&str, &str)> = s.messages.iter().map(|m| (m.kind_name(), m.text())).collect();
    assert_eq!(
        texts,
        vec![
            ("user", "Hello, I'm looking for help with my account."),
            ("assistant", "Hello! I'd be happy to help you with your account. What specific issue are you experiencing?"),
            ("user", "I can't remember my username."),
            ("assistant", "I can help you recover your username. I'll need to verify a few details first. Could you provide the email address associated with your account?"),
        ]
    );
    assert_eq!(
        s.meta.title.as_deref(),
        Some("Hello, I'm looking for help with my account.")
    );
}

#[test]
fn rule13_imports_the_deepgram_function_call_sample_as_call_and_result() {
    let (_, s) = parse(DEEPGRAM_FUNCTIONS).unwrap();
    assert_eq!(s.messages.len(), 4);
    let MessageKind::Assistant(a) = &s.messages[1].kind else {
        panic!("{:?}", s.messages[1])
    };
    assert_eq!(a.tool_calls[0].id, "fc_weather_12345");
    assert_eq!(a.tool_calls[0].name, "get_weather");
    assert_eq!(a.tool_calls[0].arguments, r#"{"location": "New York"}"#);
    assert!(a.tool_calls[0].client_side);
    let MessageKind::ToolResult(r) = &s.messages[2].kind else {
        panic!()
    };
    assert_eq!(r.state, ToolState::Done);
    assert!(r
        .content
        .starts_with("The current weather in New York is partly cloudy"));
    // The imported conversation makes a valid request: call then result, then the reply.
    let p = s.conversation("claude-haiku-4-5").prompt().unwrap();
    assert!(matches!(&p.messages[1], PromptMessage::Assistant { tool_calls, .. } if tool_calls.len() == 1));
    assert!(matches!(&p.messages[2], PromptMessage::ToolResult { call_id, .. } if call_id == "fc_weather_12345"));
}

#[test]
fn rule13_imports_openai_and_anthropic_message_arrays() {
    let openai = r#"[
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_9", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]},
        {"role": "tool", "tool_call_id": "call_9", "content": "18C, clear"},
        {"role": "assistant", "content": [{"type": "text", "text": "18 degrees and clear."}]}
    ]"#;
    let (format, s) = parse(openai).unwrap();
    assert_eq!(format, ImportFormat::ChatMessages);
    assert_eq!(s.meta.system_prompt, "You are terse.");
    let kinds: Vec<&str> = s.messages.iter().map(|m| m.kind_name()).collect();
    assert_eq!(kinds, vec!["user", "assistant", "tool_result", "assistant"]);
    assert_eq!(s.messages[2].text(), "18C, clear");

    let anthropic = r#"{"system": "Be kind.", "messages": [
        {"role": "user", "content": "What's 2+2?"},
        {"role": "assistant", "content": [{"type": "text", "text": "Let me check."},
            {"type": "tool_use", "id": "toolu_1", "name": "calc", "input": {"expr": "2+2"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "4"}]},
        {"role": "assistant", "content": "It's 4."}
    ]}"#;
    let (_, s) = parse(anthropic).unwrap();
    assert_eq!(s.meta.system_prompt, "Be kind.");
    let kinds: Vec<&str> = s.messages.iter().map(|m| m.kind_name()).collect();
    assert_eq!(kinds, vec!["user", "assistant", "tool_result", "assistant"]);
    let MessageKind::Assistant(a) = &s.messages[1].kind else {
        panic!()
    };
    assert_eq!(a.tool_calls[0].arguments, r#"{"expr":"2+2"}"#);
    assert_eq!(s.messages[2].text(), "4");
}

/// Issue 46: the API's own tools (a web search it ran) are a call that ran elsewhere and
/// its result, where the file was refused whole ("unsupported content block"); a block of
/// a type Hark cannot show is kept as a note after its message.
#[test]
fn rule13_anthropic_server_tools_import_as_call_and_result_and_an_unknown_block_as_a_note() {
    let anthropic = r#"{"messages": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": [
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "Paris weather"}},
            {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [
                {"type": "web_search_result", "title": "Paris forecast", "url": "https://example.org/paris", "encrypted_content": "x"}]},
            {"type": "server_tool_use", "id": "srvtoolu_2", "name": "web_fetch", "input": {"url": "https://example.org/x"}},
            {"type": "web_fetch_tool_result", "tool_use_id": "srvtoolu_2", "content": {"type": "web_fetch_tool_error", "error_code": "url_not_accessible"}},
            {"type": "compaction", "content": "opaque"},
            {"type": "text", "text": "Sunny, 21 degrees."}]},
        {"role": "user", "content": "Thanks"}
    ]}"#;
    let (_, s) = parse(anthropic).unwrap();
    let kinds: Vec<&str> = s.messages.iter().map(|m| m.kind_name()).collect();
    assert_eq!(
        kinds,
        ["user", "assistant", "tool_result", "tool_result", "note", "user"]
    );
    let MessageKind::Assistant(a) = &s.messages[1].kind else {
        panic!()
    };
    assert_eq!(a.generated, "Sunny, 21 degrees.");
    assert_eq!(a.tool_calls.len(), 2);
    assert!(a.tool_calls.iter().all(|c| !c.client_side), "the API ran them");
    assert_eq!(a.tool_calls[0].arguments, r#"{"query":"Paris weather"}"#);
    let MessageKind::ToolResult(r) = &s.messages[2].kind else {
        panic!()
    };
    assert_eq!(
        (r.state, r.content.as_str()),
        (ToolState::Done, "Paris forecast (https://example.org/paris)")
    );
    let MessageKind::ToolResult(r) = &s.messages[3].kind else {
        panic!()
    };
    assert_eq!(
        (r.state, r.content.as_str()),
        (ToolState::Error, "error: url_not_accessible")
    );
    assert!(s.messages[4].text().contains("compaction"), "{}", s.messages[4].text());
    // Malformed content still refuses the file.
    let err = parse(r#"[{"role": "user", "content": [{"text": "no type"}]}]"#).unwrap_err();
    assert!(
        err.to_string()
            .contains("[0].content[0].type: a content block without a type"),
        "{err}"
    );
}

/// Rule 13, JSON Lines (OpenAI's chat fine-tuning files): a conversation on each line, each
/// a session of its own, written in one transaction; a problem is named with its line, and
/// one bad line refuses the whole file.
#[test]
fn rule13_json_lines_import_a_conversation_a_line_and_name_the_line_of_a_problem() {
    let lines = concat!(
        r#"{"messages": [{"role": "system", "content": "Be terse."}, {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."}]}"#,
        "\n",
        r#"{"messages": [{"role": "user", "content": "Fly up"}, {"role": "assistant", "tool_calls": [{"id": "call_id", "type": "function", "function": {"name": "takeoff", "arguments": "{}"}}]}], "tools": [], "parallel_tool_calls": false}"#,
        "\n"
    );
    let imported = parse_file(lines).unwrap();
    assert_eq!(imported.format, ImportFormat::ChatLines);
    assert_eq!(imported.sessions.len(), 2);
    assert_eq!(imported.messages(), 5);
    let (a, b) = (&imported.sessions[0], &imported.sessions[1]);
    assert_eq!(a.meta.system_prompt, "Be terse.");
    assert_eq!(a.meta.title.as_deref(), Some("Hi"));
    assert_eq!(b.meta.title.as_deref(), Some("Fly up"));
    assert_ne!(a.meta.id, b.meta.id);
    // The same call id on two lines is no clash: each line is its own conversation.
    let again = format!("{lines}{}", lines.lines().nth(1).unwrap());
    assert_eq!(parse_file(&again).unwrap().sessions.len(), 3);
    let store = Store::open_in_memory().unwrap();
    store.insert_sessions(&imported.sessions).unwrap();
    assert_eq!(store.list_sessions().unwrap().len(), 2);
    assert_eq!(store.load_session(&b.meta.id).unwrap().messages.len(), 3);

    // One conversation, or a pretty-printed one: read as before.
    let one = parse_file(lines.lines().next().unwrap()).unwrap();
    assert_eq!((one.format, one.sessions.len()), (ImportFormat::ChatMessages, 1));

    let cases: Vec<(String, &str)> = vec![
        (
            format!("{lines}{}\n", r#"{"messages": [{"role": "bot", "content": "hi"}]}"#),
            "line 3: messages[0].role: must be system, developer, user, assistant or tool",
        ),
        (
            format!("{lines}\n\n{}\n", r#"{"messages": []}"#),
            "line 5: holds no messages",
        ),
        (
            format!("{lines}{}\n", r#"{"messages": [{"role": "user", "content": "x"}"#),
            "not valid JSON: EOF while parsing",
        ),
        (
            format!("{}\n{lines}", r#"{"text": "a", "category": "b"}"#),
            r#"line 1 is not a conversation (an object with keys ["category", "text"])"#,
        ),
        (format!("{lines}[1, 2]\n"), "line 3 is not a conversation (an array)"),
    ];
    for (text, expected) in &cases {
        let err = parse_file(text).unwrap_err();
        assert!(
            err.to_string().contains(expected),
            "{text}\n→ {err}\n  (expected to mention {expected:?})"
        );
    }
    let many = "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}]}\n".repeat(MAX_CONVERSATIONS + 1);
    assert!(
        matches!(parse_file(&many).unwrap_err(), ImportError::TooMany { count, .. } if count == MAX_CONVERSATIONS + 1)
    );
}

#[test]
fn rule13_a_bad_file_is_rejected_with_the_problem_named_and_nothing_changes() {
    let store = Store::open_in_memory().unwrap();
    sample_session(&store);
    let before = store.load_session("sess-1").unwrap();
    let cases: Vec<(&str, &str)> = vec![
        ("{\"messages\": [", "not valid JSON"),
        ("42", "unrecognised file"),
        (r#"{"hello": 1}"#, "unrecognised file"),
        (
            r#"[{"role": "bot", "content": "hi"}]"#,
            "[0].role: must be system, developer, user, assistant or tool; found \"bot\"",
        ),
        (
            r#"[{"type": "History", "role": "user", "content": "hi"}, {"type": "Chat", "role": "user", "content": "x"}]"#,
            "[1]: type must be \"History\"",
        ),
        (
            r#"{"agent": {"context": {"messages": [{"type": "History", "role": "user"}]}}}"#,
            "agent.context.messages[0].content: missing or not a string",
        ),
        (
            r#"[{"role": "tool", "tool_call_id": "x", "content": "r"}]"#,
            "no earlier assistant message made",
        ),
        (
            r#"{"format": "hark.conversation", "version": 7, "messages": []}"#,
            "version 7",
        ),
        (
            r#"{"format": "hark.conversation", "version": 1, "session": {}, "messages": [{"kind": "shout", "id": "1", "created_at": "2026-01-01T00:00:00Z"}]}"#,
            "messages[0]: unknown variant `shout`",
        ),
        ("[]", "holds no messages"),
    ];
    for (text, expected) in cases {
        let err = parse(text).unwrap_err();
        assert!(
            err.to_string().contains(expected),
            "{text}\n→ {err}\n  (expected to mention {expected:?})"
        );
    }
    assert!(matches!(
        parse("{\n  \"a\": ,\n}").unwrap_err(),
        ImportError::Syntax { line: 2, .. }
    ));
    assert_eq!(
        store.load_session("sess-1").unwrap(),
        before,
        "the current conversation is untouched"
    );
    assert_eq!(store.list_sessions().unwrap().len(), 1);
}

#[test]
fn json_comments_are_stripped_outside_strings_only() {
    let s = strip_json_comments("{\"url\": \"http://x//y\", // note\n \"a\": /* b */ 1}");
    let v: serde_json::Value = serde_json::from_str(&s).unwrap();
    assert_eq!(v["url"], "http://x//y");
    assert_eq!(v["a"], 1);
}

#[test]
fn totals_count_turns_tokens_and_resets() {
    let store = Store::open_in_memory().unwrap();
    let c = sample_session(&store);
    let t = export::totals(c.record());
    assert_eq!(
        (t.turns, t.input_tokens, t.output_tokens, t.context_resets),
        (2, 20, 7, 1)
    );
}

/// The sample session exported as Hark's format, to be bent into a bad file.
fn exported_sample() -> serde_json::Value {
    let store = Store::open_in_memory().unwrap();
    sample_session(&store);
    serde_json::from_str(&to_json(&store.load_session("sess-1").unwrap())).unwrap()
}

fn import_error(v: &serde_json::Value) -> String {
    parse(&v.to_string()).unwrap_err().to_string()
}

#[test]
fn import_refuses_a_file_over_the_size_cap_before_reading_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("video.json");
    // A sparse file: its length is over the cap without writing 64 MB.
    std::fs::File::create(&path)
        .unwrap()
        .set_len(import::MAX_BYTES + 1)
        .unwrap();
    let err = import::read_file(&path).unwrap_err();
    assert!(
        err.to_string().contains(&format!(
            "Hark imports conversations of up to {} bytes",
            import::MAX_BYTES
        )),
        "{err}"
    );
    let small = dir.path().join("ok.json");
    std::fs::write(&small, r#"[{"role": "user", "content": "hi"}]"#).unwrap();
    assert!(parse(&import::read_file(&small).unwrap()).is_ok());
}

#[test]
fn import_accepts_a_utf8_byte_order_mark() {
    let text = format!("\u{feff}{}", r#"[{"role": "user", "content": "hi"}]"#);
    let (format, s) = parse(&text).unwrap();
    assert_eq!(format, ImportFormat::ChatMessages);
    assert_eq!(s.messages[0].text(), "hi");
    let hark = format!("\u{feff}{}", exported_sample());
    assert_eq!(parse(&hark).unwrap().0, ImportFormat::Hark);
}

#[test]
fn import_names_duplicate_message_ids() {
    let mut v = exported_sample();
    v["messages"][2]["id"] = v["messages"][0]["id"].clone();
    let err = import_error(&v);
    assert!(
        err.contains("messages[2].id") && err.contains("is also the id of messages[0]"),
        "{err}"
    );
}

#[test]
fn import_refuses_a_tool_result_without_its_call() {
    // Hark's own format: the result's call is gone.
    let mut v = exported_sample();
    v["messages"].as_array_mut().unwrap().remove(3);
    let err = import_error(&v);
    assert!(
        err.contains("a tool result for call \"c1\", which no earlier message made"),
        "{err}"
    );
    // OpenAI: a tool message answering nothing.
    let err = parse(r#"[{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "c9", "content": "r"}]"#)
        .unwrap_err()
        .to_string();
    assert!(err.contains("[1]: a tool result for call \"c9\""), "{err}");
    // Anthropic: a tool_result block answering nothing.
    let err = parse(r#"[{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t9", "content": "r"}]}]"#)
        .unwrap_err()
        .to_string();
    assert!(err.contains("[0].content[0]: a tool result for call \"t9\""), "{err}");
}

#[test]
fn import_refuses_a_second_result_for_one_call() {
    let mut v = exported_sample();
    let mut second = v["messages"][4].clone();
    second["id"] = "another-id".into();
    second["content"] = "rainy".into();
    v["messages"].as_array_mut().unwrap().insert(5, second);
    let err = import_error(&v);
    assert!(
        err.contains("messages[5]: a second result for tool call \"c1\""),
        "{err}"
    );

    let openai = r#"[
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        {"role": "tool", "tool_call_id": "c1", "content": "rainy"}
    ]"#;
    let err = parse(openai).unwrap_err().to_string();
    assert!(err.contains("[3]: a second result for tool call \"c1\""), "{err}");

    let deepgram = r#"[{"type": "History", "function_calls": [
        {"id": "f1", "name": "a", "arguments": "{}", "response": "1", "client_side": true},
        {"id": "f1", "name": "a", "arguments": "{}", "response": "2", "client_side": true}]}]"#;
    let err = parse(deepgram).unwrap_err().to_string();
    assert!(
        err.contains("[0].function_calls[1].id") && err.contains("a second result"),
        "{err}"
    );
}

#[test]
fn import_checks_summary_through_seq() {
    for bad in [
        serde_json::json!(7),
        serde_json::json!(-2),
        serde_json::json!("3"),
        serde_json::Value::Null,
    ] {
        let mut v = exported_sample();
        v["summary"] = serde_json::json!({"text": "s", "through_seq": bad, "created_at": "2026-01-01T00:00:00Z"});
        let err = import_error(&v);
        assert!(
            err.contains("summary.through_seq: must be the position of a message of this file (-1 to 6)"),
            "{bad} → {err}"
        );
    }
    let mut v = exported_sample();
    v["summary"] = serde_json::json!({"text": "s", "through_seq": 3, "created_at": "2026-01-01T00:00:00Z"});
    assert_eq!(parse(&v.to_string()).unwrap().1.summary.unwrap().through_seq, 3);
}

#[test]
fn unreadable_stored_settings_are_named_not_replaced_by_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hark.db");
    let store = Store::open(&path).unwrap();
    sample_session(&store);
    drop(store);
    // Another program (or a bad disk) left settings that are not JSON.
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute("UPDATE sessions SET settings='{\"max_turns\": ' WHERE id='sess-1'", [])
        .unwrap();
    drop(conn);
    let store = Store::open(&path).unwrap();
    let err = store.load_session("sess-1").unwrap_err();
    assert!(matches!(err, StoreError::CorruptSettings { .. }), "{err:?}");
    assert!(
        err.to_string()
            .contains("the stored history settings of session sess-1 are unreadable"),
        "{err}"
    );
    // The messages are still there, for export or repair.
    assert_eq!(store.message_count("sess-1").unwrap(), 7);
}

/// Issue 9 (a clean-clone CI failure): three processes opening a database that is still in
/// rollback-journal mode at the same moment. Leaving the rollback journal for WAL needs the
/// file to itself, and SQLite answers "database is locked" at once, without waiting, to
/// whichever loses; its open failed. In one round in ten or so here, so a hundred rounds
/// fail without the retry with near certainty.
#[test]
fn stores_opening_a_rollback_journal_database_at_once_all_open() {
    for round in 0..100 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hark.db");
        Connection::open(&path)
            .unwrap()
            .execute_batch("CREATE TABLE other (x); INSERT INTO other VALUES (1);")
            .unwrap();
        let start = std::sync::Arc::new(std::sync::Barrier::new(3));
        let openers: Vec<_> = (0..3)
            .map(|_| {
                let (path, start) = (path.clone(), start.clone());
                std::thread::spawn(move || {
                    start.wait();
                    Store::open(&path).map(|_| ())
                })
            })
            .collect();
        for o in openers {
            if let Err(e) = o.join().unwrap() {
                panic!("round {round}: {e}");
            }
        }
        let mode: String = Connection::open(&path)
            .unwrap()
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
    }
}

/// A session with one thing said in it.
fn said(store: &Store, id: &str, text: &str) {
    store
        .create_session(&SessionMeta::new(id, "", HistorySettings::default()))
        .unwrap();
    let m = crate::conversation::Message::new(MessageKind::User { text: text.into() });
    store.save_message(id, &m).unwrap();
}

/// The sidebar's search (issue 45): a word said in a conversation or in its title finds it,
/// words are prefixes and all must match, nothing can be read as FTS syntax.
#[test]
fn a_search_finds_conversations_by_a_word_said_in_them_or_their_title() {
    let store = Store::open_in_memory().unwrap();
    said(&store, "a", "My bike lock code is 3582");
    said(&store, "b", "What is the capital of France?");
    said(&store, "c", "Tell me a story about a fox");
    store.rename_session("b", "Trip planning").unwrap();
    let found = |q: &str| -> Vec<String> { store.search_sessions(q).unwrap().into_iter().map(|s| s.id).collect() };
    assert_eq!(found("bike"), ["a"]);
    assert_eq!(found("capital"), ["b"], "a word said");
    assert_eq!(found("trip"), ["b"], "a word of the title");
    assert_eq!(found("plan"), ["b"], "a prefix of a title's word");
    assert_eq!(found("Fran"), ["b"], "a prefix of a word said");
    assert_eq!(found("fox story"), ["c"], "every word");
    assert!(found("fox France").is_empty(), "every word, not any");
    assert!(found("zebra").is_empty());
    // FTS5's syntax is only words here: no error, and OR is a word to find.
    assert!(found("bike\" OR \"fox").is_empty());
    assert_eq!(found("bike*)(^"), ["a"]);
    assert_eq!(found("  ").len(), 3, "no words: every conversation");
}

/// Renaming keeps the title over later writes of the open session's metadata (the turns
/// slider, the system prompt): they wrote NULL over it before.
#[test]
fn a_renamed_title_stays_when_the_open_session_saves_its_settings() {
    let store = Store::open_in_memory().unwrap();
    said(&store, "a", "My bike lock code is 3582");
    let title = |store: &Store| store.list_sessions().unwrap()[0].title.clone();
    assert_eq!(title(&store).as_deref(), Some("My bike lock code is 3582"));
    // The open session's copy of its metadata, from before its first message.
    let stale = SessionMeta::new("a", "", HistorySettings::default());
    store.update_session(&stale).unwrap();
    assert_eq!(
        title(&store).as_deref(),
        Some("My bike lock code is 3582"),
        "the first message's title stays"
    );
    assert_eq!(store.rename_session("a", "  Bike   lock ").unwrap(), "Bike lock");
    store.update_session(&stale).unwrap();
    assert_eq!(title(&store).as_deref(), Some("Bike lock"));
    assert!(matches!(store.rename_session("a", "   "), Err(StoreError::EmptyTitle)));
    assert_eq!(
        title(&store).as_deref(),
        Some("Bike lock"),
        "a refused rename changes nothing"
    );
    assert!(matches!(
        store.rename_session("nope", "x"),
        Err(StoreError::NoSession(_))
    ));
}
