//! Tool calls end to end (rule 10), against both providers' wire formats: the model calls
//! a tool, Hark runs it, the result replaces the placeholder in place and the model is
//! asked again; barge-in while a tool runs; trimming never splits a call from its result.
//! The loopback servers refuse a request with an unanswered call or a stray result, as the
//! real APIs do, so every request in these tests is checked for that too.

mod common;

use std::sync::Arc;

use common::*;
use hark_core::conversation::{HistorySettings, MessageKind, ToolState};
use hark_core::provider::ErrorKind;
use hark_core::session::{ChatSession, TurnError, TurnEvent, MAX_TOOL_ROUNDS};
use hark_core::tools::Toolbox;
use hark_e2e::Behaviour;
use tokio_util::sync::CancellationToken;

fn kinds(s: &ChatSession) -> Vec<&'static str> {
    s.conversation().record().iter().map(|m| m.kind_name()).collect()
}

fn tool_state(s: &ChatSession, i: usize) -> (ToolState, String) {
    let MessageKind::ToolResult(r) = &s.conversation().record()[i].kind else {
        panic!("record[{i}] is not a tool result: {:?}", s.conversation().record()[i])
    };
    (r.state, r.content.clone())
}

#[tokio::test]
async fn a_tool_call_runs_and_its_result_replaces_the_placeholder_in_place() {
    for rig in both() {
        let store = mem_store();
        let mut s = rig.session(&store, HistorySettings::default());
        s.set_tools(Toolbox::builtin());
        let mut events = Vec::new();
        let reply = s
            .send("What time is it?", &CancellationToken::new(), |e| match e {
                TurnEvent::ToolStarted { call } => events.push(format!("started {}", call.name)),
                TurnEvent::ToolFinished { name, state, .. } => events.push(format!("{name} {state:?}")),
                _ => {}
            })
            .await
            .unwrap();
        let year = chrono::Local::now().format("%Y").to_string();
        assert!(
            reply.text().starts_with("Done: ") && reply.text().contains(&year),
            "{:?}: {}",
            rig.kind,
            reply.text()
        );
        assert_eq!(events, ["started get_current_time", "get_current_time Done"]);
        assert_eq!(kinds(&s), ["user", "assistant", "tool_result", "assistant"]);
        let (state, content) = tool_state(&s, 2);
        assert_eq!(state, ToolState::Done);
        assert!(content.contains(&year));

        let reqs = rig.server.requests();
        assert_eq!(reqs.len(), 2);
        let offered = reqs[0].offered_tools();
        assert_eq!(
            offered,
            [
                "get_current_time",
                "remember_fact",
                "forget_fact",
                "search_past_conversations"
            ]
        );
        // The second request carries the call and its result, by id, in the provider's form.
        let body = &reqs[1].body;
        let call_id = match s.conversation().record()[1].kind {
            MessageKind::Assistant(ref a) => a.tool_calls[0].id.clone(),
            _ => unreachable!(),
        };
        let text = body.to_string();
        assert!(text.contains(&call_id) && text.contains(&year), "{text}");
        // What was recorded is what was committed: the store has the settled result.
        let stored = store.load_session(s.id()).unwrap();
        assert_eq!(stored.messages, s.conversation().record());
    }
}

#[tokio::test]
async fn remember_and_forget_go_through_tools_into_the_memory() {
    for rig in both() {
        let store = mem_store();
        let mut s = rig.session(&store, HistorySettings::default());
        s.set_tools(Toolbox::builtin());
        let r = say(&mut s, "Please remember that I take my tea without sugar.")
            .await
            .unwrap();
        assert_eq!(r, "Done: Remembered: I take my tea without sugar");
        let facts = store.facts().unwrap();
        assert_eq!(facts.len(), 1);
        assert_eq!(facts[0].session_id.as_deref(), Some(s.id()));
        let r = say(&mut s, "Forget that I take my tea without sugar.").await.unwrap();
        assert_eq!(r, "Done: Forgot: I take my tea without sugar");
        assert!(store.facts().unwrap().is_empty());
        // Forgetting what is not there is an error result the model sees, not a failed turn.
        let r = say(&mut s, "Forget that I own a boat.").await.unwrap();
        assert_eq!(r, "Done: error: no remembered fact contains \"I own a boat\"");
    }
}

#[tokio::test]
async fn an_unknown_tool_or_bad_arguments_are_answered_with_an_error_result() {
    for rig in both() {
        let mut s = rig.session(&mem_store(), HistorySettings::default());
        s.set_tools(Toolbox::builtin());
        rig.server.push(Behaviour::CallTool {
            name: "launch_rockets".into(),
            arguments: "{}".into(),
        });
        let r = say(&mut s, "Do something drastic.").await.unwrap();
        assert_eq!(r, "Done: error: no tool named `launch_rockets` is available");
        rig.server.push(Behaviour::CallTool {
            name: "remember_fact".into(),
            arguments: "{\"fact\": ".into(),
        });
        let r = say(&mut s, "Remember this.").await.unwrap();
        assert!(r.starts_with("Done: error: the arguments are not valid JSON"), "{r}");
        let last = rig.server.last();
        if rig.kind == hark_core::provider::ProviderKind::Anthropic {
            assert!(last.raw_text().contains("\"is_error\":true"), "{}", last.raw_text());
        }
    }
}

#[tokio::test]
async fn a_model_that_keeps_calling_tools_is_stopped_after_the_round_limit() {
    for rig in both() {
        let mut s = rig.session(&mem_store(), HistorySettings::default());
        s.set_tools(Toolbox::builtin());
        for _ in 0..MAX_TOOL_ROUNDS {
            rig.server.push(Behaviour::CallTool {
                name: "get_current_time".into(),
                arguments: "{}".into(),
            });
        }
        s.send("Loop forever.", &CancellationToken::new(), |_| {})
            .await
            .unwrap();
        assert_eq!(rig.server.requests().len(), MAX_TOOL_ROUNDS);
        let n = s.conversation().record().len();
        assert_eq!(
            tool_state(&s, n - 1),
            (ToolState::Error, "too many tool calls in one turn".into())
        );
        // The next turn's request is still valid: every call has its answer.
        assert_eq!(say(&mut s, "My name is Sam.").await.unwrap(), "Nice to meet you, Sam!");
    }
}

#[tokio::test]
async fn barge_in_during_a_running_tool_cancels_the_call_and_its_late_result_becomes_a_note() {
    for rig in both() {
        let store = mem_store();
        let mut s = rig.session(&store, HistorySettings::default());
        let tool = GatedTool::new();
        s.set_tools(Toolbox::builtin().with(tool.clone()));
        say(&mut s, "My name is Sam.").await.unwrap();
        rig.server.push(Behaviour::CallTool {
            name: "slow_lookup".into(),
            arguments: "{}".into(),
        });
        let barge_in = CancellationToken::new();
        let mut events = Vec::new();
        let result = s
            .send("Look it up.", &barge_in, |e| {
                if let TurnEvent::ToolStarted { .. } = e {
                    // The user presses the key again while the tool runs (its gate is shut).
                    barge_in.cancel();
                }
                if let TurnEvent::ToolFinished { state, .. } = e {
                    events.push(state);
                }
            })
            .await;
        assert!(
            matches!(&result, Err(TurnError::Provider(e)) if e.kind == ErrorKind::Cancelled),
            "{result:?}"
        );
        assert_eq!(events, [ToolState::Cancelled]);
        assert_eq!(kinds(&s), ["user", "assistant", "user", "assistant", "tool_result"]);
        assert_eq!(tool_state(&s, 4).0, ToolState::Cancelled);
        assert_eq!(store.load_session(s.id()).unwrap().messages, s.conversation().record());
        assert!(s.background_running(), "the tool is still running");

        // The tool finishes after the conversation moved past it: a note, not an edit.
        tool.open();
        settle_background(&mut s).await;
        assert_eq!(tool_state(&s, 4).0, ToolState::Cancelled, "the cancelled result stays");
        let MessageKind::Note { text } = &s.conversation().record()[5].kind else {
            panic!("{:?}", kinds(&s))
        };
        assert!(text.contains("the slow answer is 42"), "{text}");
        assert!(!s.background_running());

        // The next request is valid for the provider: the call with its cancelled result,
        // the note, then the question; and the conversation goes on.
        assert_eq!(say(&mut s, "What's my name?").await.unwrap(), "Your name is Sam.");
        let sent = rig.server.last().raw_text();
        assert!(
            sent.contains("cancelled") && sent.contains("the slow answer is 42"),
            "{sent}"
        );
        assert_eq!(store.load_session(s.id()).unwrap().messages, s.conversation().record());
    }
}

#[tokio::test]
async fn trimming_and_summaries_never_split_a_tool_call_from_its_result() {
    for rig in both() {
        let store = mem_store();
        let mut s = rig.session(&store, keep_turns(2));
        s.set_tools(Toolbox::builtin());
        s.set_summarization(true);
        say(&mut s, "My name is Sam.").await.unwrap();
        for i in 0..4 {
            // Tool turns and plain turns alternate; each request must pair calls and results
            // (the server refuses it otherwise) and start with a user message.
            say(&mut s, "What time is it?").await.unwrap();
            say(&mut s, &format!("Plain turn {i}.")).await.unwrap();
            s.settle_summary().await.unwrap();
        }
        let turn_requests: Vec<_> = rig
            .server
            .requests()
            .into_iter()
            .filter(|r| !r.system().unwrap_or_default().contains("running summary"))
            .collect();
        for r in &turn_requests {
            let first = &r.messages()[0];
            assert_eq!(first.0, "user", "{:?}", r.messages());
            assert!(!first.1.contains("in_progress"), "{:?}", r.messages());
        }
        // max_turns = 2 counts whole turns: a tool turn (user, call, result, reply) stays whole.
        let last = rig.server.last_turn();
        let roles: Vec<String> = last.messages().into_iter().map(|(r, _)| r).collect();
        match rig.kind {
            hark_core::provider::ProviderKind::Anthropic => {
                assert_eq!(roles, ["user", "assistant", "user", "assistant", "user"])
            }
            hark_core::provider::ProviderKind::OpenAi => {
                assert_eq!(roles, ["user", "assistant", "tool", "assistant", "user"])
            }
        }
        // The name left the context long ago; the summary kept it.
        assert!(s.conversation().summary().unwrap_or_default().contains("Sam"));
    }
}

#[tokio::test]
async fn tool_turns_survive_a_restart_and_export_as_deepgram_function_calls() {
    let rig = both().into_iter().next().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hark.db");
    let id = {
        let store = Arc::new(hark_core::store::Store::open(&path).unwrap());
        let mut s = rig.session(&store, HistorySettings::default());
        s.set_tools(Toolbox::builtin());
        say(&mut s, "What time is it?").await.unwrap();
        s.id().to_string()
    };
    let store = Arc::new(hark_core::store::Store::open(&path).unwrap());
    let stored = store.load_session(&id).unwrap();
    assert_eq!(
        stored.messages.iter().map(|m| m.kind_name()).collect::<Vec<_>>(),
        ["user", "assistant", "tool_result", "assistant"]
    );
    let dg = hark_core::store::export::to_deepgram(&stored);
    let v: serde_json::Value = serde_json::from_str(&dg).unwrap();
    let msgs = v["agent"]["context"]["messages"].as_array().unwrap();
    assert_eq!(msgs[1]["function_calls"][0]["name"], "get_current_time");
    assert!(msgs[1]["function_calls"][0]["response"]
        .as_str()
        .unwrap()
        .contains(&chrono::Local::now().format("%Y").to_string()));
    let (_, back) = hark_core::store::import::parse(&dg).unwrap();
    assert_eq!(
        back.messages.iter().map(|m| m.kind_name()).collect::<Vec<_>>(),
        ["user", "assistant", "tool_result", "assistant"]
    );
}

#[tokio::test]
async fn turning_tools_off_after_tool_turns_keeps_every_request_valid() {
    for rig in both() {
        let mut s = rig.session(&mem_store(), HistorySettings::default());
        s.set_tools(Toolbox::builtin());
        say(&mut s, "What time is it?").await.unwrap();
        // Tools off (or a history imported with function calls, sent to a model without
        // tools): the earlier call and its result still reach the model, as text where the
        // API refuses tool blocks without tool definitions.
        s.set_tools(Toolbox::none());
        assert_eq!(say(&mut s, "My name is Sam.").await.unwrap(), "Nice to meet you, Sam!");
        let last = rig.server.last();
        assert!(last.body.get("tools").is_none());
        let year = chrono::Local::now().format("%Y").to_string();
        assert!(
            last.raw_text().contains(&year),
            "the tool's result is still in the context"
        );
    }
}
