//! Memory that finds meaning (issue 24), with the real embedding model (all-MiniLM-L6-v2
//! from HARK_MODELS_DIR, which scripts/test.sh fetches) and a real SQLite file; the chat
//! model is the loopback OpenAI-compatible server.

mod common;

use std::io::Read;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use hark_e2e::FakeLlm;
use serde_json::Value;

fn hark(db: &Path) -> Command {
    assert!(
        std::env::var_os("HARK_MODELS_DIR").is_some(),
        "HARK_MODELS_DIR is not set: run the tests through scripts/test.sh"
    );
    common::hark(db)
}

fn chat(db: &Path, server: &FakeLlm, stdin: &str) -> Output {
    chat_with(hark(db), server, stdin)
}

/// `hark chat` (`cmd` has the global options) with the loopback model; stdin piped in.
fn chat_with(mut cmd: Command, server: &FakeLlm, stdin: &str) -> Output {
    cmd.args([
        "chat",
        "--llm",
        "openai",
        "--model",
        "local",
        "--base-url",
        &server.base_url(),
    ]);
    let o = common::run_with_stdin(cmd, stdin);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    o
}

fn search(db: &Path, query: &str) -> Vec<Value> {
    let o = hark(db).args(["memory", "search", "--json", query]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice::<Value>(&o.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

const RADIATOR: &str = "By the way, the radiator in the bedroom is broken.";

#[test]
#[ignore = "needs the embedding model (scripts/test.sh fetches it)"]
fn a_paraphrased_question_in_a_new_session_recalls_the_earlier_message_by_meaning() {
    let server = FakeLlm::openai(None);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hark.db");
    chat(
        &db,
        &server,
        &format!("{RADIATOR}\nI fly to Lisbon on Friday morning.\n"),
    );
    // Words alone do not find it: the question shares no word with it.
    let o = hark(&db)
        .args(["memory", "search", "--json", "What did we say about the heating?"])
        .env("HARK_MODELS_MANIFEST", dir.path().join("no-such-manifest.json"))
        .output()
        .unwrap();
    let words_only: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        words_only,
        serde_json::json!([]),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );

    // A new session, a new process: the question recalls the statement by meaning.
    let o = chat(&db, &server, "What did we say about the heating?\n/history\n");
    let history = String::from_utf8_lossy(&o.stderr);
    // The system text, recall included, runs up to the first message.
    let system = history
        .split_once("system: ")
        .and_then(|(_, rest)| rest.split("\nuser: ").next())
        .unwrap_or_default();
    assert!(system.contains("the radiator in the bedroom is broken"), "{history}");
    assert!(!system.contains("Lisbon"), "only what it means: {history}");
    let told = server.last_turn().system().unwrap_or_default();
    assert!(
        told.contains("the radiator in the bedroom is broken"),
        "the model was told: {told}"
    );

    // The search (every message, the question just asked among them) says why each
    // result matched.
    let find = |found: &[Value], text: &str| found.iter().find(|f| f["text"] == text).cloned();
    let found = search(&db, "What did we say about the heating?");
    let radiator = find(&found, RADIATOR).unwrap_or_else(|| panic!("{found:?}"));
    assert_eq!(radiator["matched"], "meaning");
    assert!(radiator["similarity"].as_f64().unwrap() >= 0.3);
    let found = search(&db, "When is my flight to Lisbon?");
    let lisbon = find(&found, "I fly to Lisbon on Friday morning.").unwrap_or_else(|| panic!("{found:?}"));
    assert_eq!(lisbon["matched"], "both", "{found:?}");

    // Deleting the session deletes its vectors: nothing is found by meaning any more.
    let session = lisbon["session_id"].as_str().unwrap().to_string();
    let o = hark(&db).args(["delete", &session]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let found = search(&db, "What did we say about the heating?");
    assert!(found.iter().all(|f| f["text"] != RADIATOR), "{found:?}");
}

#[test]
#[ignore = "needs the embedding model (scripts/test.sh fetches it)"]
fn with_the_embedding_model_absent_recall_finds_words_and_says_so_once() {
    let server = FakeLlm::openai(None);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hark.db");
    chat(&db, &server, "My name is Sam.\n");
    // A manifest that pins no embedding model.
    let manifest = dir.path().join("models.json");
    std::fs::write(&manifest, r#"{"version": 1, "models": []}"#).unwrap();
    let mut cmd = hark(&db);
    cmd.env("HARK_MODELS_MANIFEST", &manifest);
    let o = chat_with(cmd, &server, "I like tea.\nWhat's my name?\n");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert_eq!(err.matches("memory finds words only").count(), 1, "{err}");
    // The turn went on, and words still recall.
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).lines().last(),
        Some("Your name is Sam.")
    );
}

#[test]
#[ignore = "needs the embedding model (scripts/test.sh fetches it)"]
fn indexing_an_old_database_resumes_after_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hark.db");
    // An old record: 600 messages imported (an OpenAI messages array), not embedded.
    let messages: Vec<Value> = (0..600)
        .map(|i| {
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            serde_json::json!({"role": role, "content": format!("Message {i}: we talked about topic number {} today.", i * 7)})
        })
        .collect();
    let file = dir.path().join("old.json");
    std::fs::write(&file, serde_json::to_string(&messages).unwrap()).unwrap();
    let o = hark(&db).args(["import"]).arg(&file).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    // The first reindex is killed (-9) once it has stored some batches.
    let mut child = hark(&db)
        .args(["memory", "reindex"])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let reader = {
        let seen = seen.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 256];
            while let Ok(n) = stderr.read(&mut buf) {
                if n == 0 {
                    break;
                }
                seen.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        })
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    let done_at_kill = loop {
        let text = seen.lock().unwrap().clone();
        let done = text
            .rsplit("indexed ")
            .next()
            .and_then(|t| t.split(' ').next())
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0);
        if done >= 64 {
            break done;
        }
        assert!(
            Instant::now() < deadline && child.try_wait().unwrap().is_none(),
            "reindex stored no batch within 120 s (about 3 ms a message expected): {text}"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    reader.join().unwrap();
    assert!(done_at_kill < 600, "killed before the end ({done_at_kill})");

    // The next one goes on from where the killed one stopped, and finishes.
    let o = hark(&db).args(["memory", "reindex"]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert_eq!(String::from_utf8_lossy(&o.stdout), "indexed: 600 messages and facts\n");
    let first: u64 = err
        .split("indexed ")
        .nth(1)
        .and_then(|t| t.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!(
        first >= done_at_kill,
        "resumed at {first}, the killed run had stored {done_at_kill}: {err}"
    );
}
