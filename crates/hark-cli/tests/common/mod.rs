//! Helpers the `hark talk` tests share.
#![allow(dead_code)] // each test file uses part of it

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;

/// `hark --db DB`, with no key, endpoint or provider from the developer's environment:
/// only what the test gives it.
pub fn hark(db: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_hark"));
    c.arg("--db").arg(db);
    for v in [
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "HARK_ANTHROPIC_BASE_URL",
        "HARK_OPENAI_BASE_URL",
        "HARK_LLM",
        "HARK_DB",
    ] {
        c.env_remove(v);
    }
    c
}

/// Runs a command with `stdin` written to it (then closed), and its output captured.
pub fn run_with_stdin(mut cmd: Command, stdin: &str) -> Output {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

/// Runs `hark talk --json ARGS` (`cmd` has the global options) on WAV files, one turn each,
/// writing the spoken replies to `out` (and the export, if given); returns its events.
/// Fails the test, with stderr, when the command fails.
pub fn talk(mut cmd: Command, args: &[&str], wavs: &[&Path], out: &Path, export: Option<&Path>) -> Vec<Value> {
    cmd.args(["talk", "--json"]).args(args);
    for w in wavs {
        cmd.arg("--wav").arg(w);
    }
    cmd.arg("--out").arg(out);
    if let Some(e) = export {
        cmd.arg("--export").arg(e);
    }
    let o = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}\n{stdout}", String::from_utf8_lossy(&o.stderr));
    stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// The `text` (or another field) of every event of a type.
pub fn of_type(events: &[Value], ty: &str, field: &str) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["type"] == ty)
        .map(|e| e[field].as_str().unwrap_or_default().to_string())
        .collect()
}

/// Runs a `hark talk --json` command to its end and returns its events. Fails the test,
/// with stderr, when the command fails, or when it has not ended within `deadline`: a hang
/// catcher, so pass a generous one (a turn played live takes seconds).
pub fn events_within(mut cmd: Command, deadline: Duration) -> Vec<Value> {
    let child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let Ok(o) = rx.recv_timeout(deadline) else {
        let _ = Command::new("kill").arg(pid.to_string()).status();
        panic!("hark did not finish within {deadline:?}");
    };
    let o = o.unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}\n{stdout}", String::from_utf8_lossy(&o.stderr));
    stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}
