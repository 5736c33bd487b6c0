//! API keys in the real OS keychain: on Linux the Secret Service (gnome-keyring), which
//! `scripts/test.sh` starts, unlocked, inside a private `dbus-run-session`.

use hark_core::secrets::{KeySource, Keychain};
use hark_e2e::keychain::{secret_service_expected, secret_tool_lookup};

#[test]
fn stores_reads_and_deletes_a_key_in_the_secret_service() {
    if !secret_service_expected() {
        return;
    }
    let service = format!("hark-test-{}", std::process::id());
    let kc = Keychain::with_service(&service);
    let key = "sk-ant-test-ü-πß-0123456789";
    assert!(kc.get_stored("anthropic").unwrap().is_none());
    kc.set("anthropic", &format!("  {key}\n")).unwrap();
    assert_eq!(kc.get_stored("anthropic").unwrap().unwrap().expose(), key);
    // Really in the Secret Service: libsecret's own client finds the item.
    assert_eq!(secret_tool_lookup(&service, "anthropic").as_deref(), Some(key));
    // The environment overrides the keychain; without it the keychain answers.
    if std::env::var_os("ANTHROPIC_API_KEY").is_none() {
        let (k, source) = kc.get("anthropic").unwrap().unwrap();
        assert_eq!((k.expose(), source), (key, KeySource::Keychain));
    }
    assert!(kc.delete("anthropic").unwrap());
    assert!(kc.get_stored("anthropic").unwrap().is_none());
    assert_eq!(secret_tool_lookup(&service, "anthropic"), None);
    assert!(
        !kc.delete("anthropic").unwrap(),
        "deleting twice reports nothing was there"
    );
}
