//! Tools the user adds (issue 25), against real MCP servers from the registries, which
//! scripts/mcp-servers.sh installs: `@modelcontextprotocol/server-everything` (npm) over
//! stdio and streamable HTTP, and `mcp-server-time` (PyPI) over stdio. The chat model is
//! the loopback Anthropic or OpenAI server, which refuses a request whose tool calls and
//! results are not paired, as the real APIs do.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use hark_e2e::{Behaviour, FakeLlm, Flavor};
use serde_json::{json, Value};

const KEY: &str = "sk-ant-test-mcp";
const NEEDS: &str = "needs the MCP servers scripts/mcp-servers.sh installs (run through scripts/test.sh)";
const NEEDS_KEYRING: &str = "needs the MCP servers and a Secret Service (run through scripts/test.sh)";

fn program(var: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| panic!("{var} is not set: run the tests through scripts/test.sh ({NEEDS})"))
}

fn everything() -> String {
    program("HARK_TEST_MCP_EVERYTHING")
}

fn time_server() -> String {
    program("HARK_TEST_MCP_TIME")
}

/// A temporary database and config folder.
struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `hark` with this home's database, config folder and a keychain service of its own.
    fn hark(&self) -> Command {
        let mut c = common::hark(&self.path("hark.db"));
        c.env("HARK_CONFIG_DIR", self.path("config"))
            .env("HARK_KEYCHAIN_SERVICE", format!("hark-test-mcp-{}", std::process::id()));
        c
    }

    /// `hark ARGS`, which must succeed.
    fn ok(&self, args: &[&str]) -> Output {
        let o = self.hark().args(args).stdin(Stdio::null()).output().unwrap();
        assert!(
            o.status.success(),
            "hark {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        o
    }

    /// Changes the servers file's limits as a user would edit it.
    fn set_limit(&self, key: &str, value: u64) {
        let path = self.path("config/tools.json");
        let mut file: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        file[key] = json!(value);
        std::fs::write(&path, file.to_string()).unwrap();
    }

    /// `hark chat --json` with the loopback model of this flavour; stdin piped.
    fn chat(&self, server: &FakeLlm, flavor: Flavor) -> Command {
        let mut c = self.hark();
        c.args(["chat", "--json", "--no-recall"]);
        match flavor {
            Flavor::Anthropic => {
                c.env("ANTHROPIC_API_KEY", KEY)
                    .env("HARK_ANTHROPIC_BASE_URL", server.base_url());
            }
            Flavor::OpenAi => {
                c.args(["--llm", "openai", "--model", "local", "--base-url", &server.base_url()]);
            }
        }
        c
    }
}

fn fake(flavor: Flavor) -> FakeLlm {
    match flavor {
        Flavor::Anthropic => FakeLlm::anthropic(KEY),
        Flavor::OpenAi => FakeLlm::openai(None),
    }
}

fn run(cmd: Command, stdin: &str) -> Vec<Value> {
    let o = common::run_with_stdin(cmd, stdin);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}\n{stdout}", String::from_utf8_lossy(&o.stderr));
    stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn results(events: &[Value]) -> Vec<&Value> {
    events.iter().filter(|e| e["type"] == "tool_result").collect()
}

/// The result paired with the call in a request, in either wire format: (call id in the
/// assistant message, the id the result answers, the result's text).
fn paired_result(flavor: Flavor, body: &Value) -> (String, String, String) {
    let msgs = body["messages"].as_array().unwrap();
    match flavor {
        Flavor::Anthropic => {
            let n = msgs.len();
            let call = msgs[n - 2]["content"]
                .as_array()
                .unwrap()
                .iter()
                .find(|b| b["type"] == "tool_use")
                .unwrap();
            let result = msgs[n - 1]["content"]
                .as_array()
                .unwrap()
                .iter()
                .find(|b| b["type"] == "tool_result")
                .unwrap();
            let text = match &result["content"] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            (
                call["id"].as_str().unwrap().into(),
                result["tool_use_id"].as_str().unwrap().into(),
                text,
            )
        }
        Flavor::OpenAi => {
            let i = msgs.iter().rposition(|m| m["role"] == "tool").unwrap();
            let call = msgs[..i].iter().rev().find(|m| m["tool_calls"].is_array()).unwrap();
            (
                call["tool_calls"][0]["id"].as_str().unwrap().into(),
                msgs[i]["tool_call_id"].as_str().unwrap().into(),
                msgs[i]["content"].as_str().unwrap().into(),
            )
        }
    }
}

#[test]
#[ignore = "needs the MCP servers scripts/mcp-servers.sh installs (run through scripts/test.sh)"]
fn a_stdio_servers_tool_result_reaches_the_next_request_paired_with_its_call_in_both_wire_formats() {
    for flavor in [Flavor::Anthropic, Flavor::OpenAi] {
        let home = Home::new();
        home.ok(&["mcp", "add", "everything", "--", &everything()]);
        home.ok(&["mcp", "add", "time", "--", &time_server(), "--local-timezone", "UTC"]);
        let server = fake(flavor);
        server.push(Behaviour::CallTool {
            name: "everything__echo".into(),
            arguments: r#"{"message": "hello from the test"}"#.into(),
        });
        server.push(Behaviour::Answer);
        server.push(Behaviour::CallTool {
            name: "time__get_current_time".into(),
            arguments: r#"{"timezone": "Europe/Paris"}"#.into(),
        });
        let events = run(
            home.chat(&server, flavor),
            "Echo something.\nWhat time is it in Paris?\n",
        );

        let r = results(&events);
        assert_eq!(r.len(), 2, "{flavor:?}: {events:?}");
        assert_eq!(r[0]["name"], "everything__echo");
        assert_eq!(r[0]["state"], "done");
        assert_eq!(r[0]["content"], "Echo: hello from the test");
        assert_eq!(r[1]["name"], "time__get_current_time");
        assert!(r[1]["content"].as_str().unwrap().contains("Europe/Paris"), "{:?}", r[1]);

        let reqs = server.requests();
        assert_eq!(reqs.len(), 4, "{flavor:?}");
        let names = reqs[0].offered_tools();
        for n in [
            "get_current_time",
            "everything__echo",
            "time__get_current_time",
            "time__convert_time",
        ] {
            assert!(
                names.contains(&n.to_string()),
                "{flavor:?}: {n} not offered in {names:?}"
            );
        }
        // The server's own description and schema, as it gives them.
        let echo = reqs[0].body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "everything__echo" || t["function"]["name"] == "everything__echo")
            .unwrap()
            .clone();
        let schema = if flavor == Flavor::Anthropic {
            &echo["input_schema"]
        } else {
            &echo["function"]["parameters"]
        };
        assert_eq!(schema["properties"]["message"]["type"], "string", "{echo}");
        let (call, answers, text) = paired_result(flavor, &reqs[1].body);
        assert_eq!(call, answers, "{flavor:?}: the result answers its call");
        assert_eq!(text, "Echo: hello from the test");
        let (call, answers, text) = paired_result(flavor, &reqs[3].body);
        assert_eq!(call, answers);
        assert!(text.contains("\"timezone\": \"Europe/Paris\""), "{text}");
    }
}

/// Picks a free loopback port (the reference server takes its port from PORT only).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// server-everything in its streamable-HTTP mode, killed on drop.
struct HttpServer(Child);

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn http_everything() -> (HttpServer, String) {
    let port = free_port();
    let mut child = Command::new(everything())
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Ready once it says it listens (a generous deadline; it takes about a second).
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("listening on port") {
                let _ = tx.send(());
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(60))
        .expect("server-everything did not start listening");
    (HttpServer(child), format!("http://127.0.0.1:{port}/mcp"))
}

#[test]
#[ignore = "needs the MCP servers scripts/mcp-servers.sh installs (run through scripts/test.sh)"]
fn a_streamable_http_servers_tool_runs_in_both_wire_formats() {
    let (_server, url) = http_everything();
    for flavor in [Flavor::Anthropic, Flavor::OpenAi] {
        let home = Home::new();
        home.ok(&["mcp", "add", "remote", "--url", &url]);
        home.ok(&["mcp", "allow", "remote", "echo", "always"]);
        let llm = fake(flavor);
        llm.push(Behaviour::CallTool {
            name: "remote__echo".into(),
            arguments: r#"{"message": "over http"}"#.into(),
        });
        let events = run(home.chat(&llm, flavor), "Echo over http.\n");
        let r = results(&events);
        assert_eq!(r.len(), 1, "{events:?}");
        assert_eq!(r[0]["state"], "done");
        assert_eq!(r[0]["content"], "Echo: over http");
        let (call, answers, text) = paired_result(flavor, &llm.requests()[1].body);
        assert_eq!((call.as_str(), text.as_str()), (answers.as_str(), "Echo: over http"));
    }
}

#[test]
#[ignore = "needs the MCP servers scripts/mcp-servers.sh installs (run through scripts/test.sh)"]
fn consent_ask_refused_never_runs_the_tool_and_never_is_not_offered() {
    let home = Home::new();
    // The server's input is copied to a file: what Hark sent it, call by call.
    let log = home.path("to-server.jsonl");
    let script = format!("tee '{}' | '{}'", log.display(), everything());
    home.ok(&["mcp", "add", "everything", "--", "sh", "-c", &script]);
    home.ok(&["mcp", "allow", "everything", "echo", "ask"]);
    home.ok(&["mcp", "allow", "everything", "get-sum", "never"]);
    for flavor in [Flavor::Anthropic, Flavor::OpenAi] {
        let llm = fake(flavor);
        llm.push(Behaviour::CallTool {
            name: "everything__echo".into(),
            arguments: r#"{"message": "secret plans"}"#.into(),
        });
        // stdin is piped: there is no one to ask, so *ask* is a no.
        let events = run(home.chat(&llm, flavor), "Echo my plans.\n");
        let r = results(&events);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0]["state"], "error");
        assert!(
            r[0]["content"]
                .as_str()
                .unwrap()
                .contains("the user did not allow this call of everything: echo"),
            "{:?}",
            r[0]
        );
        let sent = std::fs::read_to_string(&log).unwrap();
        assert!(sent.contains("\"tools/list\""), "the server was started: {sent}");
        assert!(!sent.contains("tools/call"), "a refused tool never runs: {sent}");
        let names = llm.requests()[0].offered_tools();
        assert!(names.contains(&"everything__echo".to_string()));
        assert!(names.contains(&"everything__get-tiny-image".to_string()));
        assert!(
            !names.contains(&"everything__get-sum".to_string()),
            "never: not offered: {names:?}"
        );
        // The model reads the refusal, paired with its call.
        let (call, answers, text) = paired_result(flavor, &llm.requests()[1].body);
        assert_eq!(call, answers);
        assert!(text.contains("did not allow"), "{text}");
    }
    let list = String::from_utf8(home.ok(&["mcp", "list", "--json"]).stdout).unwrap();
    let views: Value = serde_json::from_str(&list).unwrap();
    let tools = views[0]["tools"].as_array().unwrap();
    let consent = |name: &str| tools.iter().find(|t| t["name"] == name).unwrap()["consent"].clone();
    assert_eq!(consent("echo"), "ask");
    assert_eq!(consent("get-sum"), "never");
}

/// Issue 46: the reference filesystem server (npm `@modelcontextprotocol/server-filesystem`)
/// added as a program on this computer: the tools it marks read-only (`readOnlyHint`) are
/// allowed by default and the ones that write ask. `hark mcp call` runs a tool the user
/// names (no consent question: they asked for it) and `hark mcp schema` prints what the
/// model is offered.
#[test]
#[ignore = "needs the MCP servers scripts/mcp-servers.sh installs (run through scripts/test.sh)"]
fn the_filesystem_server_s_read_only_tools_are_allowed_and_its_writing_tools_ask() {
    let home = Home::new();
    let folder = home.path("notes");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("list.txt"), "milk, eggs").unwrap();
    let folder = folder.to_string_lossy().to_string();
    home.ok(&[
        "mcp",
        "add",
        "files",
        "--",
        &program("HARK_TEST_MCP_FILESYSTEM"),
        &folder,
    ]);
    let list = String::from_utf8(home.ok(&["mcp", "list", "--json"]).stdout).unwrap();
    let views: Value = serde_json::from_str(&list).unwrap();
    let tools = views[0]["tools"].as_array().unwrap();
    let consent = |name: &str| {
        let t = tools
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in {tools:?}"));
        (t["consent"].as_str().unwrap().to_string(), t["read_only"] == true)
    };
    for reader in ["read_text_file", "list_directory", "search_files", "get_file_info"] {
        assert_eq!(consent(reader), ("always".to_string(), true), "{reader}");
    }
    for writer in ["write_file", "edit_file", "create_directory", "move_file"] {
        assert_eq!(consent(writer), ("ask".to_string(), false), "{writer}");
    }
    let path = format!("{folder}/list.txt");
    let args = serde_json::json!({"path": path}).to_string();
    let read = home.ok(&["mcp", "call", "files", "read_text_file", "--args", &args]);
    assert_eq!(String::from_utf8_lossy(&read.stdout).trim(), "milk, eggs");
    let schema = home.ok(&["mcp", "schema", "files", "read_text_file"]);
    let schema: Value = serde_json::from_slice(&schema.stdout).unwrap();
    assert_eq!(schema["properties"]["path"]["type"], "string", "{schema}");
    assert!(schema.get("$schema").is_none(), "{schema}");
    // A call of a tool the server does not have names it, and exits 1.
    let o = home
        .hark()
        .args(["mcp", "call", "files", "no_such_tool"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("no_such_tool"));
}

/// `hark chat --json` kept open: lines go in one at a time, events are read as they come.
struct Live {
    child: Child,
    stdin: Option<ChildStdin>,
    events: mpsc::Receiver<Value>,
}

impl Live {
    fn start(mut cmd: Command) -> Self {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(serde_json::from_str(&line).unwrap());
            }
        });
        Self {
            stdin: child.stdin.take(),
            child,
            events: rx,
        }
    }

    fn say(&mut self, line: &str) {
        writeln!(self.stdin.as_mut().unwrap(), "{line}").unwrap();
    }

    /// The next event of this type (a generous deadline: a hang catcher, not a timing).
    fn next(&self, ty: &str) -> Value {
        self.next_of(&[ty])
    }

    /// The next event of any of these types; the others before it are passed over.
    fn next_of(&self, types: &[&str]) -> Value {
        loop {
            let e = self
                .events
                .recv_timeout(Duration::from_secs(120))
                .unwrap_or_else(|_| panic!("no {types:?} event within 120 s"));
            if types.iter().any(|ty| e["type"] == *ty) {
                return e;
            }
        }
    }

    fn end(mut self) {
        drop(self.stdin.take());
        assert!(self.child.wait().unwrap().success());
    }
}

fn read_pid(path: &Path) -> String {
    for _ in 0..600 {
        if let Ok(p) = std::fs::read_to_string(path) {
            if !p.trim().is_empty() {
                return p.trim().to_string();
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("the server never wrote its pid");
}

#[test]
#[ignore = "needs the MCP servers scripts/mcp-servers.sh installs (run through scripts/test.sh)"]
fn a_server_killed_mid_call_gives_an_error_result_and_the_next_call_starts_it_again() {
    let home = Home::new();
    let pidfile = home.path("server.pid");
    let script = format!("echo $$ > '{}'; exec '{}'", pidfile.display(), everything());
    home.ok(&["mcp", "add", "everything", "--", "sh", "-c", &script]);
    let llm = fake(Flavor::OpenAi);
    llm.push(Behaviour::CallTool {
        name: "everything__trigger-long-running-operation".into(),
        arguments: r#"{"duration": 600, "steps": 1}"#.into(),
    });
    llm.push(Behaviour::Answer);
    llm.push(Behaviour::CallTool {
        name: "everything__echo".into(),
        arguments: r#"{"message": "back again"}"#.into(),
    });
    let mut chat = Live::start(home.chat(&llm, Flavor::OpenAi));
    chat.say("Run the long operation.");
    chat.next("tool_call");
    let first = read_pid(&pidfile);
    std::fs::remove_file(&pidfile).unwrap();
    // The call is in flight (the operation runs for ten minutes): the server dies.
    std::thread::sleep(Duration::from_millis(300));
    assert!(Command::new("kill").args(["-9", &first]).status().unwrap().success());
    let r = chat.next("tool_result");
    assert_eq!(r["state"], "error", "{r}");
    assert!(
        r["content"]
            .as_str()
            .unwrap()
            .contains("the tool server everything stopped during the call"),
        "{r}"
    );
    chat.next("reply");

    chat.say("Echo something.");
    let r = chat.next("tool_result");
    assert_eq!(r["state"], "done", "{r}");
    assert_eq!(r["content"], "Echo: back again");
    let second = read_pid(&pidfile);
    assert_ne!(first, second, "a new server answered");
    chat.next("reply");
    chat.end();
}

/// The Python SDK's interpreter from the venv mcp-server-time was installed in.
fn python() -> String {
    program("HARK_TEST_MCP_PYTHON")
}

/// A server whose tools change while Hark runs: `tests/mcp/changing_server.py`, on the
/// official Python SDK, adds the tool `secret` when `unlock` is called and announces it
/// with `notifications/tools/list_changed`. Hark lists the tools again, says so, and the
/// next request offers the new tool, which then runs.
#[test]
#[ignore = "needs the MCP servers scripts/mcp-servers.sh installs (run through scripts/test.sh)"]
fn a_server_that_announces_new_tools_has_them_offered_in_the_next_request() {
    let home = Home::new();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/mcp/changing_server.py");
    home.ok(&["mcp", "add", "changing", "--", &python(), script.to_str().unwrap()]);
    home.ok(&["mcp", "allow", "changing", "unlock", "always"]);
    let llm = fake(Flavor::OpenAi);
    llm.push(Behaviour::CallTool {
        name: "changing__unlock".into(),
        arguments: "{}".into(),
    });
    llm.push(Behaviour::Answer);
    llm.push(Behaviour::CallTool {
        name: "changing__secret".into(),
        arguments: "{}".into(),
    });
    let mut chat = Live::start(home.chat(&llm, Flavor::OpenAi));
    chat.say("Unlock the secret.");
    // The server announces its new tool before it answers the call, so the new listing
    // and the call's result come in either order (a CI run had the listing first, and a
    // wait for it after the result waited for ever).
    let (mut result, mut listing) = (None, None);
    while result.is_none() || listing.is_none() {
        let e = chat.next_of(&["tool_result", "tool_server_tools"]);
        if e["type"] == "tool_result" {
            result = Some(e);
        } else {
            listing = Some(e);
        }
    }
    let (r, listed) = (result.unwrap(), listing.unwrap());
    assert_eq!(r["state"], "done", "{r}");
    assert!(r["content"].as_str().unwrap().contains("unlocked"), "{r}");
    assert_eq!(listed["server"], "changing");
    assert_eq!(listed["tools"], json!(["unlock", "secret"]), "{listed}");
    chat.next("reply");

    // *ask* by default, and stdin is piped: the new tool is offered, its call refused.
    chat.say("What is the secret?");
    let r = chat.next("tool_result");
    assert_eq!(r["name"], "changing__secret");
    assert!(r["content"].as_str().unwrap().contains("did not allow"), "{r}");
    chat.next("reply");
    chat.end();
    let reqs = llm.requests();
    assert!(
        !reqs[0].offered_tools().contains(&"changing__secret".to_string()),
        "not offered before it was announced"
    );
    assert!(
        reqs[2].offered_tools().contains(&"changing__secret".to_string()),
        "offered after: {:?}",
        reqs[2].offered_tools()
    );
    // A new start of the server lists only what it starts with.
    let o = home
        .hark()
        .args(["mcp", "allow", "changing", "secret", "always"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("has no tool \"secret\" (it has: unlock)"), "{err}");
}

#[test]
#[ignore = "needs the MCP servers scripts/mcp-servers.sh installs (run through scripts/test.sh)"]
fn a_hung_call_times_out_and_an_oversized_result_is_capped() {
    let home = Home::new();
    home.ok(&["mcp", "add", "everything", "--", &everything()]);
    home.set_limit("call_timeout_secs", 3);
    home.set_limit("max_result_chars", 1000);
    let llm = fake(Flavor::Anthropic);
    llm.push(Behaviour::CallTool {
        name: "everything__trigger-long-running-operation".into(),
        arguments: r#"{"duration": 3600, "steps": 1}"#.into(),
    });
    llm.push(Behaviour::Answer);
    let long = "x".repeat(5000);
    llm.push(Behaviour::CallTool {
        name: "everything__echo".into(),
        arguments: json!({ "message": long }).to_string(),
    });
    let events = run(
        home.chat(&llm, Flavor::Anthropic),
        "Run the long operation.\nEcho a lot.\n",
    );
    let r = results(&events);
    assert_eq!(r.len(), 2, "{events:?}");
    assert_eq!(r[0]["state"], "error");
    assert_eq!(
        r[0]["content"],
        "everything: trigger-long-running-operation did not answer within 3 s; the call was cancelled"
    );
    assert_eq!(r[1]["state"], "done");
    let capped = r[1]["content"].as_str().unwrap();
    assert!(capped.starts_with(&format!("Echo: {}", "x".repeat(994))), "{capped}");
    assert!(
        capped.ends_with("[the result was cut: 1000 of its 5006 characters are shown]"),
        "{capped}"
    );
    // What the model read is the capped text, paired with its call.
    let (call, answers, text) = paired_result(Flavor::Anthropic, &llm.requests()[3].body);
    assert_eq!(call, answers);
    assert_eq!(text, capped);
}

#[test]
#[ignore = "needs the MCP servers scripts/mcp-servers.sh installs (run through scripts/test.sh)"]
fn a_server_that_cannot_start_is_named_with_its_own_words_and_the_chat_goes_on() {
    let home = Home::new();
    home.ok(&[
        "mcp",
        "add",
        "calendar",
        "--",
        "sh",
        "-c",
        "echo 'cannot open the calendar database: permission denied' >&2; exit 3",
    ]);
    home.ok(&["mcp", "add", "missing", "--", "/nonexistent/mcp-server"]);
    let o = home.hark().args(["mcp", "test", "calendar"]).output().unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("the tool server calendar could not start"), "{err}");
    assert!(
        err.contains("cannot open the calendar database: permission denied"),
        "{err}"
    );
    let o = home.hark().args(["mcp", "test", "missing"]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("no program \"/nonexistent/mcp-server\" was found"),
        "{err}"
    );

    let llm = fake(Flavor::OpenAi);
    let events = run(home.chat(&llm, Flavor::OpenAi), "Hello there.\n");
    let failed: Vec<&Value> = events.iter().filter(|e| e["type"] == "tool_server_failed").collect();
    assert_eq!(failed.len(), 2, "{events:?}");
    assert!(failed[0]["detail"].as_str().unwrap().contains("permission denied"));
    assert!(
        events.iter().any(|e| e["type"] == "reply"),
        "the chat goes on: {events:?}"
    );
}

#[test]
#[ignore = "needs the MCP servers and a Secret Service (run through scripts/test.sh)"]
fn secret_environment_variables_live_in_the_keychain_and_reach_only_the_server() {
    let _ = NEEDS_KEYRING;
    let home = Home::new();
    let secret = "s3cret-value-for-the-server";
    let o = home
        .hark()
        .args([
            "mcp",
            "add",
            "everything",
            "--env",
            "PLAIN_SETTING=visible",
            "--secret-env",
            "SERVER_TOKEN",
            "--",
        ])
        .arg(everything())
        .env("SERVER_TOKEN", secret)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let file = std::fs::read_to_string(home.path("config/tools.json")).unwrap();
    assert!(!file.contains(secret), "the secret is not in the settings file: {file}");
    assert!(file.contains("PLAIN_SETTING") && file.contains("visible"));

    let llm = fake(Flavor::OpenAi);
    llm.push(Behaviour::CallTool {
        name: "everything__get-env".into(),
        arguments: "{}".into(),
    });
    let events = run(home.chat(&llm, Flavor::OpenAi), "What is your environment?\n");
    let r = results(&events);
    assert!(r[0]["content"].as_str().unwrap().contains(secret), "{:?}", r[0]);
    assert!(r[0]["content"].as_str().unwrap().contains("visible"));

    // Removing the server removes its secret: added again without it, it cannot start.
    home.ok(&["mcp", "remove", "everything"]);
    let o = home
        .hark()
        .args(["mcp", "add", "everything", "--secret-env", "SERVER_TOKEN", "--"])
        .arg(everything())
        .output()
        .unwrap();
    assert!(!o.status.success(), "no value to store");
    assert!(String::from_utf8_lossy(&o.stderr).contains("set SERVER_TOKEN in this command's environment"));
}

/// A loopback listener that records one HTTP request's head and answers 401, as an MCP
/// endpoint refusing a token does: it shows what Hark sends where.
fn recording_listener() -> (String, mpsc::Receiver<String>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming().map_while(Result::ok) {
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut head = String::new();
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                head.push_str(&line);
            }
            let _ = tx.send(head);
            let body = r#"{"error":"invalid_token"}"#;
            let _ = (&stream).write_all(
                format!(
                    "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nWWW-Authenticate: Bearer error=\"invalid_token\"\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                )
                .as_bytes(),
            );
        }
    });
    (url, rx)
}

#[test]
#[ignore = "needs a Secret Service (run through scripts/test.sh)"]
fn a_bearer_token_goes_to_the_url_it_was_saved_for_only() {
    let home = Home::new();
    let (first, heads) = recording_listener();
    let mut add = home
        .hark()
        .args(["mcp", "add", "home", "--url", &first, "--token-stdin"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    add.stdin.take().unwrap().write_all(b"tok-for-the-first-url\n").unwrap();
    assert!(add.wait().unwrap().success());
    assert!(!std::fs::read_to_string(home.path("config/tools.json"))
        .unwrap()
        .contains("tok-for"));

    let o = home.hark().args(["mcp", "test", "home"]).output().unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("refused Hark's token"), "{err}");
    assert!(
        !err.contains("tok-for-the-first-url"),
        "the token is never printed: {err}"
    );
    let head = heads.recv_timeout(Duration::from_secs(60)).unwrap().to_lowercase();
    assert!(head.contains("authorization: bearer tok-for-the-first-url"), "{head}");

    // The same server moved to another URL: the token stays with the first.
    let (second, heads2) = recording_listener();
    home.ok(&["mcp", "add", "home", "--url", &second]);
    let _ = home.hark().args(["mcp", "test", "home"]).output().unwrap();
    let head = heads2.recv_timeout(Duration::from_secs(60)).unwrap().to_lowercase();
    assert!(!head.contains("authorization"), "{head}");
}
