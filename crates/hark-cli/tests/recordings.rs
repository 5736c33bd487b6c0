//! The vendors' own streams, replayed byte for byte to `hark chat` from a loopback server:
//! OpenAI's Chat Completions streams recorded from the real API (openai-python's inline
//! snapshots) and Anthropic's Messages streams (anthropic-sdk-python's streaming fixtures).
//! `tests/recorded/README.md` names each file's source, licence and what it holds. For
//! each one, what a user expects: the text assembled exactly and the usage recorded; tool
//! calls run and answered in order, each paired with its result (rule 10); a refusal said in
//! the provider's words (or, when it sent none, said so by Hark) and recorded as a refusal;
//! a reply the length limit cut off recorded and said so, a tool call it cut never run; an
//! unknown block passed over without losing the rest; of several choices, the first.
//! The long texts expected (`recorded-text/`) were assembled from the recordings by a
//! separate reader (Python's json, each chunk's `delta.content` of choice 0 or each
//! `text_delta`), not by Hark's client. The real conversation files (the SDKs' recorded
//! transcripts and sessions, OpenAI's cookbook JSON Lines) go through `hark import`.

mod common;

use std::path::Path;

use hark_e2e::{recorded, Behaviour, FakeLlm};
use serde_json::Value;

const KEY: &str = "sk-recordings-test-7d1e";

/// What the record and the output must hold after one recording is replayed.
struct Expect {
    file: &'static str,
    /// The recorded reply's text (`generated`), exactly.
    text: &'static str,
    /// Its outcome, as the export writes `status`.
    outcome: &'static str,
    /// What Hark said after it (`session::notice`), if anything.
    notice: Option<&'static str>,
    /// The refusal's own words, when the provider sent them.
    reason: Option<&'static str>,
    /// The tool calls that ran, in order: name and arguments as streamed.
    calls: &'static [(&'static str, &'static str)],
    /// The usage the provider reported: input and output tokens.
    usage: (u64, u64),
}

/// A whole reply in words: complete, no tool call, nothing said after it.
fn complete(file: &'static str, text: &'static str, usage: (u64, u64)) -> Expect {
    Expect {
        file,
        text,
        outcome: "complete",
        notice: None,
        reason: None,
        calls: &[],
        usage,
    }
}

const CUT_OFF: Option<&str> = Some("My answer was cut off there: it reached the length limit.");
const DECLINED: Option<&str> = Some("The model declined to answer that.");

/// Replays `e.file` to `hark chat --json --export`, and returns what went wrong, if anything.
fn replay(flavor: &str, e: &Expect) -> Result<(), String> {
    let dir = tempfile::tempdir().unwrap();
    let (db, export) = (dir.path().join("hark.db"), dir.path().join("export.json"));
    let (server, mut cmd) = match flavor {
        "openai-python" => {
            let server = FakeLlm::openai(Some(KEY));
            let mut cmd = common::hark(&db);
            cmd.env("OPENAI_API_KEY", KEY)
                .env("HARK_OPENAI_BASE_URL", server.base_url())
                .args(["chat", "--llm", "openai", "--model", "gpt-4o-2024-08-06"]);
            (server, cmd)
        }
        _ => {
            let server = FakeLlm::anthropic(KEY);
            let mut cmd = common::hark(&db);
            cmd.env("ANTHROPIC_API_KEY", KEY)
                .env("HARK_ANTHROPIC_BASE_URL", server.base_url())
                .args(["chat", "--llm", "anthropic", "--model", "claude-sonnet-4-5"]);
            (server, cmd)
        }
    };
    server.push(Behaviour::Replay(body(flavor, e.file)));
    cmd.arg("--json").arg("--export").arg(&export);
    let o = common::run_with_stdin(cmd, "What's the weather like in San Francisco?\n");
    let stderr = String::from_utf8_lossy(&o.stderr);
    if !o.status.success() {
        return Err(format!("hark chat failed: {stderr}"));
    }
    let events: Vec<Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let of = |ty: &str| events.iter().filter(|v| v["type"] == ty).collect::<Vec<_>>();
    let exported: Value = serde_json::from_str(&std::fs::read_to_string(&export).unwrap()).unwrap();
    let messages = exported["messages"].as_array().cloned().unwrap_or_default();
    let mut wrong = Vec::new();

    // The recorded reply: the first assistant message.
    let reply = messages
        .iter()
        .find(|m| m["kind"] == "assistant")
        .cloned()
        .unwrap_or(Value::Null);
    check(
        &mut wrong,
        "the recorded text",
        reply["generated"].clone(),
        e.text.into(),
    );
    check(
        &mut wrong,
        "the outcome",
        reply["outcome"]["status"].clone(),
        e.outcome.into(),
    );
    check(
        &mut wrong,
        "the refusal's words",
        reply["outcome"]["reason"].clone(),
        e.reason.into(),
    );
    check(
        &mut wrong,
        "input tokens",
        reply["usage"]["input_tokens"].clone(),
        e.usage.0.into(),
    );
    check(
        &mut wrong,
        "output tokens",
        reply["usage"]["output_tokens"].clone(),
        e.usage.1.into(),
    );
    // The words streamed as they came: the deltas of the first reply add up to its text.
    let streamed: String = events
        .iter()
        .take_while(|v| v["type"] != "tool_call" && v["type"] != "reply")
        .filter(|v| v["type"] == "delta")
        .filter_map(|v| v["text"].as_str())
        .collect();
    check(&mut wrong, "the streamed words", streamed.into(), e.text.into());

    // Tool calls: each one ran and its result is paired with it, in order.
    let called: Vec<(String, String)> = of("tool_call")
        .iter()
        .map(|v| {
            (
                v["name"].as_str().unwrap().into(),
                v["arguments"].as_str().unwrap().into(),
            )
        })
        .collect();
    let want: Vec<(String, String)> = e.calls.iter().map(|(n, a)| (n.to_string(), a.to_string())).collect();
    check(
        &mut wrong,
        "the calls run",
        serde_json::json!(called),
        serde_json::json!(want),
    );
    let ids = |ty: &str| of(ty).iter().map(|v| v["id"].clone()).collect::<Vec<_>>();
    // Results come as the tools finish; the record keeps each after the calls, in their order.
    let (mut results, mut calls) = (ids("tool_result"), ids("tool_call"));
    let recorded_results: Vec<Value> = messages
        .iter()
        .filter(|m| m["kind"] == "tool_result")
        .map(|m| m["call_id"].clone())
        .collect();
    check(
        &mut wrong,
        "the record's results in the calls' order",
        recorded_results.into(),
        calls.clone().into(),
    );
    results.sort_by_key(Value::to_string);
    calls.sort_by_key(Value::to_string);
    check(&mut wrong, "a result for each call", results.into(), calls.into());
    if !e.calls.is_empty() {
        // The next request carried each call, then its result (rule 10).
        let requests = server.requests();
        let body = &requests.get(1).map(|r| r.body.clone()).unwrap_or(Value::Null);
        let sent = body["messages"].to_string();
        for id in ids("tool_call") {
            let id = id.as_str().unwrap_or_default();
            let (call, result) = (sent.find(&format!("\"id\":\"{id}\"")), sent.rfind(id));
            if !matches!((call, result), (Some(c), Some(r)) if c < r) {
                wrong.push(format!(
                    "the next request lacks the call {id} and its result after it: {sent}"
                ));
            }
        }
    } else if server.requests().len() != 1 {
        wrong.push(format!("{} requests, one expected", server.requests().len()));
    }

    // The final reply event: its outcome and what Hark said after it.
    let last = of("reply").last().cloned().cloned().unwrap_or(Value::Null);
    if e.calls.is_empty() {
        check(
            &mut wrong,
            "the reply event's outcome",
            last["outcome"].clone(),
            e.outcome.into(),
        );
        check(&mut wrong, "the notice", last["notice"].clone(), e.notice.into());
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(wrong.join("\n  "))
    }
}

/// A recording's response body: a whole file, or `FILE#N`, the body of the `N`th
/// exchange of a transcript the SDK recorded (request and response, as JSON).
fn body(vendor: &str, file: &str) -> String {
    match file.split_once('#') {
        None => recorded(vendor, file),
        Some((file, n)) => {
            let exchanges: Value = serde_json::from_str(&recorded(vendor, file)).unwrap();
            let n: usize = n.parse().unwrap();
            exchanges[n]["response"]["body"].as_str().unwrap().to_string()
        }
    }
}

fn check(wrong: &mut Vec<String>, what: &str, got: Value, want: Value) {
    if got != want {
        wrong.push(format!("{what}: got {got}, want {want}"));
    }
}

fn replay_all(flavor: &str, table: &[Expect]) {
    let mut failed = Vec::new();
    for e in table {
        match replay(flavor, e) {
            Ok(()) => println!("{flavor} {}: {} as expected", e.file, e.outcome),
            Err(why) => failed.push(format!("{}:\n  {why}", e.file)),
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {} recordings:\n{}",
        failed.len(),
        table.len(),
        failed.join("\n")
    );
}

#[test]
fn openai_s_recorded_streams_give_what_a_user_expects() {
    let weather = r#"{"city":"San Francisco","temperature":61,"units":"f"}"#;
    replay_all(
        "openai-python",
        &[
            complete(
                "83b060bae42eb41c4f1edbb7c1542b954b37d9dfd1910b964ddebc9677e6ae85.bin",
                "Foo!",
                (9, 2),
            ),
            Expect {
                file: "e2aad469b71d1d4894ff833ea147020a9d875eb7ce644a0ff355581690a4cbfd.bin",
                text: include_str!(
                    "recorded-text/e2aad469b71d1d4894ff833ea147020a9d875eb7ce644a0ff355581690a4cbfd.text"
                ),
                outcome: "complete",
                notice: None,
                reason: None,
                calls: &[],
                usage: (14, 30),
            },
            complete(
                "7e5ea4d12e7cc064399b6631415e65923f182256b6e6b752950a3aaa2ad2320a.bin",
                weather,
                (79, 14),
            ),
            // Three choices (`n: 3`): the first one's words.
            complete(
                "a491adda08c3d4fde95f5b2ee3f60f7f745f1a56d82e62f58031cc2add502380.bin",
                r#"{"city":"San Francisco","temperature":65,"units":"f"}"#,
                (79, 42),
            ),
            // With logprobs in every chunk.
            Expect {
                file: "d615580118391ee13492193e3a8bb74642d23ac1ca13fe37cb6e889b66f759f6.bin",
                text: include_str!(
                    "recorded-text/d615580118391ee13492193e3a8bb74642d23ac1ca13fe37cb6e889b66f759f6.text"
                ),
                outcome: "complete",
                notice: None,
                reason: None,
                calls: &[],
                usage: (19, 177),
            },
            // `finish_reason: "length"` after `{"`.
            Expect {
                file: "4cc50a6135d254573a502310e6af1246f55edb6ad95fa24059f160996b68866d.bin",
                text: "{\"",
                outcome: "cut_off",
                notice: CUT_OFF,
                reason: None,
                calls: &[],
                usage: (79, 1),
            },
            // Refusals: `delta.refusal`, `content: null`.
            Expect {
                file: "173417d553406f034f643e5db3f8d591fb691ebac56f5ae39a22cc7d455c5353.bin",
                text: "I'm sorry, I can't assist with that request.",
                outcome: "refused",
                notice: None,
                reason: Some("I'm sorry, I can't assist with that request."),
                calls: &[],
                usage: (79, 11),
            },
            Expect {
                file: "569c877e69429d4cbc1577d2cd6dd33878095c68badc6b6654a69769b391a1c1.bin",
                text: "I'm very sorry, but I can't assist with that.",
                outcome: "refused",
                notice: None,
                reason: Some("I'm very sorry, but I can't assist with that."),
                calls: &[],
                usage: (79, 12),
            },
            // Tool calls: one, and two in parallel.
            Expect {
                file: "2018feb66ae13fcf5333d61b95849decc68d3f63bd38172889367e1afb1e04f7.bin",
                text: "",
                outcome: "complete",
                notice: None,
                reason: None,
                calls: &[("get_weather", r#"{"city":"New York City"}"#)],
                usage: (44, 16),
            },
            Expect {
                file: "a247c49c5fcd492bfb7a02a3306ad615ed8d8f649888ebfddfbc3ee151f44d46.bin",
                text: "",
                outcome: "complete",
                notice: None,
                reason: None,
                calls: &[("get_weather", r#"{"city":"San Francisco","state":"CA"}"#)],
                usage: (48, 19),
            },
            Expect {
                file: "c6aa7e397b7123c3501f25df3a05d4daf7e8ad6d61ffa406ab5361fe36a8d5b1.bin",
                text: "",
                outcome: "complete",
                notice: None,
                reason: None,
                calls: &[("GetWeatherArgs", r#"{"city":"Edinburgh","country":"UK","units":"c"}"#)],
                usage: (76, 24),
            },
            Expect {
                file: "f82268f2fefd5cfbc7eeb59c297688be2f6ca0849a6e4f17851b517310841d9b.bin",
                text: "",
                outcome: "complete",
                notice: None,
                reason: None,
                calls: &[
                    (
                        "GetWeatherArgs",
                        r#"{"city": "Edinburgh", "country": "GB", "units": "c"}"#,
                    ),
                    ("get_stock_price", r#"{"ticker": "AAPL", "exchange": "NASDAQ"}"#),
                ],
                usage: (149, 60),
            },
        ],
    );
}

#[test]
fn anthropic_s_streams_give_what_a_user_expects() {
    replay_all(
        "anthropic-sdk-python",
        &[
            // Streams recorded from the API in the SDK's tool-runner transcripts.
            Expect {
                file: "transcripts/555fb399-a54c-455b-9ac5-2c9673f18e12.json#0",
                text: "",
                outcome: "complete",
                notice: None,
                reason: None,
                calls: &[("get_weather", r#"{"location": "San Francisco, CA", "units": "f"}"#)],
                usage: (656, 74),
            },
            complete(
                "transcripts/555fb399-a54c-455b-9ac5-2c9673f18e12.json#1",
                include_str!("recorded-text/555fb399-1.text"),
                (770, 38),
            ),
            complete(
                "transcripts/771c64ff-a0af-4cd9-8080-a5a539da7cb9.json#1",
                include_str!("recorded-text/771c64ff-1.text"),
                (770, 27),
            ),
            complete(
                "transcripts/9381e2b7-7fa1-46f7-9f78-46dc8431ea9d.json#0",
                "[12345,67890]",
                (135, 10),
            ),
            complete("basic_response.txt", "Hello there!", (11, 6)),
            Expect {
                file: "tool_use_response.txt",
                text: "I'll check the current weather in Paris for you.",
                outcome: "complete",
                notice: None,
                reason: None,
                calls: &[("get_weather", r#"{"location": "Paris"}"#)],
                usage: (377, 65),
            },
            // `max_tokens` mid tool input: the text is kept and said cut off; the call,
            // its JSON unfinished, never runs.
            Expect {
                file: "incomplete_partial_json_response.txt",
                text: "I'll create a comprehensive tax guide for someone with multiple W2s and save it in a file called taxes.txt. Let me do that for you now.",
                outcome: "cut_off",
                notice: CUT_OFF,
                reason: None,
                calls: &[],
                usage: (450, 124),
            },
            // A refusal with no text and the API's explanation: the explanation is said.
            Expect {
                file: "refusal_response.txt",
                text: "This request was refused due to policy.",
                outcome: "refused",
                notice: None,
                reason: Some("This request was refused due to policy."),
                calls: &[],
                usage: (20, 0),
            },
            // A refusal after thinking and a word, with no explanation: Hark says so.
            Expect {
                file: "stream-a-refusal.sse",
                text: "Hi",
                outcome: "refused",
                notice: DECLINED,
                reason: None,
                calls: &[],
                usage: (28, 106),
            },
            // A refusal after a server tool's blocks (`server_tool_use`,
            // `web_search_tool_result`), passed over.
            Expect {
                file: "stream-a-toolrefusal.sse",
                text: include_str!("recorded-text/stream-a-toolrefusal.text"),
                outcome: "refused",
                notice: DECLINED,
                reason: None,
                calls: &[],
                usage: (28, 106),
            },
            // An unknown block (`compaction`) before the text.
            complete("compaction_response.txt", "Hello there!", (30, 8)),
            complete("fallback_response.txt", "Hello there!", (25, 8)),
            complete("fallback_credit_response.txt", "Hello there!", (25, 8)),
            complete("stream-b-fallback.sse", include_str!("recorded-text/stream-b-fallback.text"), (31, 547)),
        ],
    );
}

/// Each recording's file is the vendor's, unchanged: its sha256 is the one the README lists.
#[test]
fn the_recordings_are_the_vendors_files_unchanged() {
    let listed = hark_e2e::recorded_listed();
    for (file, _) in &listed {
        hark_e2e::recorded_bytes(file);
    }
    assert_eq!(listed.len(), 63, "every recording is listed");
}

/// The export (`hark export`) of the one conversation in `db`.
fn exported(db: &Path) -> Value {
    let o = common::hark(db).args(["sessions", "--json"]).output().unwrap();
    let list: Value = serde_json::from_slice(&o.stdout).unwrap();
    let o = common::hark(db)
        .args(["export", list[0]["id"].as_str().unwrap()])
        .output()
        .unwrap();
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Real files import (issue 46): each of the Anthropic SDK's recorded tool-runner and parse
/// transcripts, as a conversation (the last request's messages and the API's answer to
/// it), either imports or is refused with a reason a person can act on. Server tools
/// (`server_tool_use` with its `web_search_tool_result`) become a call that ran elsewhere
/// and its result; three files were refused whole for them before.
#[test]
fn the_sdk_s_recorded_conversations_import() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/recorded/anthropic-sdk-python/transcripts");
    let mut files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    let tmp = tempfile::tempdir().unwrap();
    let (mut imported, mut refused) = (Vec::new(), Vec::new());
    for path in &files {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let exchanges: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let last = exchanges.as_array().unwrap().last().unwrap();
        let mut conversation = last["request"]["body"].clone();
        let answer = &last["response"]["body"];
        if answer["type"] == "message" {
            let reply = serde_json::json!({"role": "assistant", "content": answer["content"]});
            conversation["messages"].as_array_mut().unwrap().push(reply);
        }
        let file = tmp.path().join(&name);
        std::fs::write(&file, conversation.to_string()).unwrap();
        let db = tmp.path().join(format!("{name}.db"));
        let o = common::hark(&db).arg("import").arg(&file).output().unwrap();
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        if o.status.success() {
            imported.push(name.clone());
        } else {
            refused.push((name.clone(), said.clone()));
        }
        if name.starts_with("32da0815") && o.status.success() {
            // A web search the API ran: the call, and its result's titles and addresses.
            let exported = exported(&db);
            let messages = exported["messages"].as_array().unwrap();
            let call = messages
                .iter()
                .find_map(|m| m["tool_calls"].as_array().and_then(|c| c.first()).cloned())
                .unwrap_or_else(|| panic!("no call in {exported}"));
            assert_eq!(call["name"], "web_search");
            assert_eq!(call["client_side"], false, "the API ran it");
            assert_eq!(call["arguments"], r#"{"query":"San Francisco weather today"}"#);
            let result = messages.iter().find(|m| m["kind"] == "tool_result").unwrap();
            assert_eq!(result["state"], "done");
            let text = result["content"].as_str().unwrap();
            assert!(
                text.contains("San Francisco, CA Weather Forecast | AccuWeather (https://www.accuweather.com/"),
                "{text}"
            );
            // The answer's words, written with the search, are kept beside its call.
            let answer = messages.iter().find(|m| m["kind"] == "assistant").unwrap();
            assert!(
                answer["generated"].as_str().unwrap().contains("San Francisco"),
                "{answer}"
            );
        }
    }
    println!("imported {} of {}: {imported:?}", imported.len(), files.len());
    // The one refused: the SDK's test of a tool result sent with no call, which the API
    // refused too (its answer is an invalid_request_error).
    assert_eq!(refused.len(), 1, "{refused:#?}");
    assert!(refused[0].0.starts_with("f59a9391"), "{refused:#?}");
    assert!(
        refused[0].1.contains("which no earlier assistant message made"),
        "{refused:#?}"
    );
    assert_eq!(imported.len(), 17);
}

/// Real files import (issue 46): the `History` messages of Deepgram Voice Agent sessions
/// recorded from the real API by deepgram-python-sdk's tests (each session's events, the
/// History messages in the order they came) import as Deepgram conversations; the session
/// with function calls gives each call, as recorded, paired with its result.
#[test]
fn deepgram_s_recorded_agent_histories_import() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/recorded/deepgram-python-sdk/agent");
    let mut files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    let tmp = tempfile::tempdir().unwrap();
    let mut messages_imported = 0;
    for path in &files {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let events: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        // The SDK logged the History messages it had no type for as `Unhandled`, raw.
        let history: Vec<Value> = events
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|e| e["data"]["raw"].as_str())
            .filter_map(|raw| serde_json::from_str::<Value>(raw).ok())
            .filter(|m| m["type"] == "History")
            .collect();
        assert!(!history.is_empty(), "{name} holds History messages");
        let file = tmp.path().join(&name);
        std::fs::write(&file, Value::Array(history.clone()).to_string()).unwrap();
        let db = tmp.path().join(format!("{name}.db"));
        let o = common::hark(&db).arg("import").arg(&file).output().unwrap();
        let said = String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{name}: {said}");
        assert!(said.contains("(Deepgram format)"), "{name}: {said}");
        let exported = exported(&db);
        let messages = exported["messages"].as_array().unwrap();
        messages_imported += messages.len();
        let calls: Vec<&Value> = messages
            .iter()
            .filter_map(|m| m["tool_calls"].as_array())
            .flatten()
            .collect();
        let recorded_calls: Vec<&Value> = history
            .iter()
            .filter_map(|m| m["function_calls"].as_array())
            .flatten()
            .collect();
        assert_eq!(calls.len(), recorded_calls.len(), "{name}");
        for (call, recorded) in calls.iter().zip(&recorded_calls) {
            assert_eq!(call["id"], recorded["id"], "{name}");
            assert_eq!(call["name"], recorded["name"], "{name}");
            assert_eq!(call["arguments"], recorded["arguments"], "{name}");
            assert_eq!(call["client_side"], recorded["client_side"], "{name}");
            let result = messages
                .iter()
                .find(|m| m["kind"] == "tool_result" && m["call_id"] == call["id"])
                .unwrap_or_else(|| panic!("{name}: no result for {call}"));
            assert_eq!(result["content"], recorded["response"], "{name}");
        }
        println!("{name}: {} messages, {} calls", messages.len(), calls.len());
    }
    assert_eq!(files.len(), 6);
    println!("{messages_imported} messages imported from {} sessions", files.len());
}

/// Real files import (issue 46): every JSON Lines file in OpenAI's cookbook. The two chat
/// fine-tuning files import as a conversation for each line, every message kept (the drone
/// file's calls, which have no results in it, each paired with a result that says none was
/// recorded, so the history stays whole: rule 10); the datasets of other kinds are refused
/// with the line and what it holds, and nothing is written. Before, each was refused for
/// "trailing characters at line 2", the conversations with it.
#[test]
fn the_cookbook_s_json_lines_files_import_a_conversation_a_line_or_are_refused() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/recorded/openai-cookbook");
    let tmp = tempfile::tempdir().unwrap();
    let import = |file: &str| {
        let db = tmp.path().join(format!("{file}.db"));
        let o = common::hark(&db).arg("import").arg(dir.join(file)).output().unwrap();
        let said = String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
        (db, o.status.success(), said)
    };
    let sessions = |db: &Path| -> Vec<Value> {
        let o = common::hark(db).args(["sessions", "--json"]).output().unwrap();
        serde_json::from_slice::<Value>(&o.stdout)
            .ok()
            .and_then(|v| v.as_array().cloned())
            .unwrap_or_default()
    };
    // The messages counted by a separate reader (Python's json): every one but the system
    // prompt's, and a result for each call.
    for (file, conversations, messages) in [
        ("toy_chat_fine_tuning.jsonl", 5, 15),
        ("drone_training.jsonl", 103, 309),
    ] {
        let (db, ok, said) = import(file);
        assert!(ok, "{file}: {said}");
        assert!(
            said.contains(&format!(
                "imported {conversations} conversations, {messages} messages (ChatLines format)"
            )),
            "{file}: {said}"
        );
        assert_eq!(sessions(&db).len(), conversations, "{file}");
        println!("{file}: {conversations} conversations, {messages} messages");
    }
    // One drone conversation whole: its system prompt, the question as its title, the call
    // as recorded and the result the file did not give.
    let (db, _, said) = import("drone_training.jsonl");
    let first = said.lines().nth(1).unwrap().trim().to_string();
    let o = common::hark(&db).args(["export", &first]).output().unwrap();
    let exported: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(
        exported["session"]["system_prompt"]
            .as_str()
            .unwrap_or_default()
            .contains("controls a drone"),
        "{exported}"
    );
    assert_eq!(
        exported["session"]["title"],
        "Let's get the drone in the air, how high should it go?"
    );
    let messages = exported["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3, "{exported}");
    assert_eq!(
        messages[0]["text"],
        "Let's get the drone in the air, how high should it go?"
    );
    let call = &messages[1]["tool_calls"][0];
    assert_eq!(call["name"], "takeoff_drone");
    assert_eq!(call["arguments"], r#"{"altitude": 100}"#);
    assert_eq!(messages[2]["kind"], "tool_result");
    assert_eq!(messages[2]["state"], "error");
    assert_eq!(messages[2]["content"], "no result was recorded in the imported history");

    for (file, holds) in [
        ("dbpedia_samples.jsonl", r#"an object with keys ["category", "text"]"#),
        (
            "example_requests_to_parallel_process.jsonl",
            r#"an object with keys ["input", "metadata", "model"]"#,
        ),
        (
            "scifact_claims.jsonl",
            r#"an object with keys ["cited_doc_ids", "claim", "evidence", "id"]"#,
        ),
        (
            "guardrail_test_data.jsonl",
            r#"an object with keys ["data", "expected_triggers", "id"]"#,
        ),
        (
            "input_guardrail_test_data.jsonl",
            r#"an object with keys ["data", "expected_triggers", "id"]"#,
        ),
    ] {
        let (db, ok, said) = import(file);
        assert!(!ok, "{file} imported: {said}");
        assert!(
            said.contains(&format!(
                "line 1 is not a conversation ({holds}): Hark imports JSON Lines files"
            )),
            "{file}: {said}"
        );
        assert!(sessions(&db).is_empty(), "{file}: nothing is written");
    }
    let listed = std::fs::read_dir(&dir)
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "jsonl"))
        .count();
    assert_eq!(listed, 7, "every file is tried");
}
