//! `hark keys` against the real Secret Service (started by scripts/test.sh).

use std::io::Write;
use std::process::{Command, Output, Stdio};

use hark_e2e::keychain::{secret_service_expected, secret_tool_lookup};
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

#[test]
fn a_key_set_with_the_cli_lives_in_the_keychain_and_is_used_for_requests() {
    if !secret_service_expected() {
        return;
    }
    let service = format!("hark-cli-test-{}", std::process::id());
    let key = "sk-ant-from-the-keychain-9d1e";
    let o = run(&service, &["keys", "set", "anthropic"], &format!("{key}\n"));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(secret_tool_lookup(&service, "anthropic").as_deref(), Some(key));
    let status = String::from_utf8_lossy(&run(&service, &["keys", "status"], "").stdout).to_string();
    assert!(status.contains("anthropic: stored in the keychain"), "{status}");
    assert!(status.contains("openai: absent"), "{status}");

    // A chat picks the key up from the keychain (the loopback server accepts only it).
    let server = FakeLlm::anthropic(key);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hark.db");
    let mut c = Command::new(env!("CARGO_BIN_EXE_hark"));
    c.arg("--db").arg(&db).args(["chat"]);
    c.env("HARK_KEYCHAIN_SERVICE", &service)
        .env_remove("ANTHROPIC_API_KEY")
        .env("HARK_ANTHROPIC_BASE_URL", server.base_url());
    let mut child = c
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"My name is Sam.\n").unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "Nice to meet you, Sam!\n");
    // The key is in no file the CLI wrote.
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        assert!(!bytes.windows(key.len()).any(|w| w == key.as_bytes()));
    }

    let o = run(&service, &["keys", "delete", "anthropic"], "");
    assert!(o.status.success());
    assert_eq!(secret_tool_lookup(&service, "anthropic"), None);
    let o = run(&service, &["keys", "set", "anthropic"], "\n");
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no key given"));
}
