//! API keys in the real OS keychain: on Linux the Secret Service (gnome-keyring), which
//! `scripts/test.sh` starts, unlocked, inside a private `dbus-run-session`.

use hark_core::secrets::{KeySlot, KeySource, Keychain};
use hark_e2e::keychain::{require_secret_service, secret_tool_lookup};

#[test]
#[ignore = "needs a Secret Service (scripts/test.sh starts one)"]
fn stores_reads_and_deletes_a_key_in_the_secret_service() {
    require_secret_service();
    let service = format!("hark-test-{}", std::process::id());
    let kc = Keychain::with_service(&service);
    let anthropic = KeySlot::official("anthropic");
    let key = "sk-ant-test-ü-πß-0123456789";
    assert!(kc.get_stored(&anthropic).unwrap().is_none());
    kc.set(&anthropic, &format!("  {key}\n")).unwrap();
    assert_eq!(kc.get_stored(&anthropic).unwrap().unwrap().expose(), key);
    // Really in the Secret Service: libsecret's own client finds the item.
    assert_eq!(secret_tool_lookup(&service, "anthropic").as_deref(), Some(key));
    // The environment overrides the keychain; without it the keychain answers.
    if std::env::var_os("ANTHROPIC_API_KEY").is_none() {
        let (k, source) = kc.get(&anthropic).unwrap().unwrap();
        assert_eq!((k.expose(), source), (key, KeySource::Keychain));
    }
    assert!(kc.delete(&anthropic).unwrap());
    assert!(kc.get_stored(&anthropic).unwrap().is_none());
    assert_eq!(secret_tool_lookup(&service, "anthropic"), None);
    assert!(
        !kc.delete(&anthropic).unwrap(),
        "deleting twice reports nothing was there"
    );
}

/// Issue 9: a key saved for a custom endpoint is its own keychain entry, and the official
/// key is not what a request to that endpoint gets.
#[test]
#[ignore = "needs a Secret Service (scripts/test.sh starts one)"]
fn a_key_for_a_custom_endpoint_is_a_separate_entry() {
    require_secret_service();
    let service = format!("hark-test-slots-{}", std::process::id());
    let kc = Keychain::with_service(&service);
    let official = KeySlot::official("openai");
    let router = KeySlot::for_url("openai", "https://openrouter.ai/api/v1/");
    kc.set(&official, "sk-official-1234567890").unwrap();
    kc.set(&router, "sk-or-router-0987654321").unwrap();
    assert_eq!(
        secret_tool_lookup(&service, "openai@https://openrouter.ai/api/v1").as_deref(),
        Some("sk-or-router-0987654321")
    );
    if std::env::var_os("OPENAI_API_KEY").is_none() {
        assert_eq!(kc.value(&router).as_deref(), Some("sk-or-router-0987654321"));
        assert_eq!(kc.value(&official).as_deref(), Some("sk-official-1234567890"));
        let elsewhere = KeySlot::for_url("openai", "https://api.groq.com/openai/v1");
        assert_eq!(
            kc.value(&elsewhere),
            None,
            "no key for an endpoint nobody saved one for"
        );
    }
    assert!(kc.delete(&router).unwrap());
    assert!(kc.delete(&official).unwrap());
}
