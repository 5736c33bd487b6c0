//! `hark keys` against the real Secret Service (started by scripts/test.sh).

use std::io::Write;
use std::process::{Command, Output, Stdio};

use hark_e2e::keychain::{require_secret_service, secret_tool_lookup};
use hark_e2e::FakeLlm;

fn run(service: &str, args: &[&str], stdin: &str) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_hark"))
        .args(args)
        .env("HARK_KEYCHAIN_SERVICE", service)
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    c.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    c.wait_with_output().unwrap()
}

/// One `hark chat` turn against `base_url` with the keychain service; returns the output.
fn chat_once(service: &str, base_url: &str) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hark.db");
    let mut child = Command::new(env!("CARGO_BIN_EXE_hark"))
        .arg("--db")
        .arg(&db)
        .args(["chat", "--llm", "anthropic", "--base-url", base_url])
        .env("HARK_KEYCHAIN_SERVICE", service)
        .env_remove("ANTHROPIC_API_KEY")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"My name is Sam.\n").unwrap();
    let o = child.wait_with_output().unwrap();
    // The key is in no file the CLI wrote.
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        for key in [OFFICIAL_KEY, ENDPOINT_KEY] {
            assert!(!bytes.windows(key.len()).any(|w| w == key.as_bytes()));
        }
    }
    o
}

const OFFICIAL_KEY: &str = "sk-ant-official-from-the-keychain-9d1e";
const ENDPOINT_KEY: &str = "sk-ant-for-the-proxy-only-4b7a";

/// Issue 9: the key stored for a provider went to any base URL. Now the official key goes
/// only to the official endpoint, and a proxy gets the key saved for its URL.
#[test]
#[ignore = "needs a Secret Service (scripts/test.sh starts one)"]
fn a_key_set_with_the_cli_goes_only_to_the_endpoint_it_was_saved_for() {
    require_secret_service();
    let service = format!("hark-cli-test-{}", std::process::id());
    let o = run(&service, &["keys", "set", "anthropic"], &format!("{OFFICIAL_KEY}\n"));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(secret_tool_lookup(&service, "anthropic").as_deref(), Some(OFFICIAL_KEY));
    let status = String::from_utf8_lossy(&run(&service, &["keys", "status"], "").stdout).to_string();
    assert!(
        status.contains("anthropic (official endpoint): stored in the keychain"),
        "{status}"
    );
    assert!(status.contains("openai (official endpoint): absent"), "{status}");

    // A proxy on another address never sees the official key.
    let proxy = FakeLlm::anthropic(ENDPOINT_KEY);
    let o = chat_once(&service, &proxy.base_url());
    assert!(!o.status.success(), "no key for that endpoint: the turn fails");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("auth"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    for r in proxy.requests() {
        assert_ne!(
            r.header("x-api-key"),
            Some(OFFICIAL_KEY),
            "the official key went to the proxy"
        );
    }

    // Saved for the proxy's URL, its own key is used there.
    let url = proxy.base_url();
    let o = run(
        &service,
        &["keys", "set", "anthropic", "--base-url", &url],
        &format!("{ENDPOINT_KEY}\n"),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = chat_once(&service, &url);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "Nice to meet you, Sam!\n");
    assert_eq!(proxy.last().header("x-api-key"), Some(ENDPOINT_KEY));

    // A key is never saved for plain http to another computer.
    let o = run(
        &service,
        &["keys", "set", "openai", "--base-url", "http://192.168.1.20:11434/v1"],
        "sk-x\n",
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("https://"));

    for args in [
        &["keys", "delete", "anthropic"][..],
        &["keys", "delete", "anthropic", "--base-url", &url],
    ] {
        assert!(run(&service, args, "").status.success());
    }
    assert_eq!(secret_tool_lookup(&service, "anthropic"), None);
    let o = run(&service, &["keys", "set", "anthropic"], "\n");
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no key given"));
}
