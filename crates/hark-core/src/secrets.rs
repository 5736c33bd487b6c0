//! API keys: only in the OS keychain (macOS Keychain, Windows Credential Manager, Linux
//! Secret Service), with `ANTHROPIC_API_KEY` / `OPENAI_API_KEY` / `DEEPGRAM_API_KEY`
//! overriding for development and CI. Keys never reach logs, exports or settings files:
//! [`ApiKey`] has no `Debug`/`Display` that shows the value.

use serde::Serialize;

/// The keychain service name Hark's entries are stored under.
pub const SERVICE: &str = "hark";

/// Providers that take a key.
pub const PROVIDERS: &[&str] = &["anthropic", "openai", "deepgram"];

/// The environment variable that overrides a provider's key.
pub fn env_var(provider: &str) -> Option<&'static str> {
    match provider {
        "anthropic" => Some("ANTHROPIC_API_KEY"),
        "openai" => Some("OPENAI_API_KEY"),
        "deepgram" => Some("DEEPGRAM_API_KEY"),
        _ => None,
    }
}

/// A secret key. Its value is only reachable through [`ApiKey::expose`].
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

/// Where a key came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KeySource {
    Environment,
    Keychain,
}

/// Keychain failures, worded for the person who has to fix them.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SecretError {
    #[error("unknown provider {0:?}: keys are kept for anthropic, openai and deepgram")]
    UnknownProvider(String),
    #[error("the key is empty")]
    EmptyKey,
    #[error("no keyring service is available ({0}); install and start gnome-keyring or KWallet, or set the environment variable")]
    Unavailable(String),
    #[error("the keyring is locked ({0}); unlock it and try again")]
    Locked(String),
    #[error("keychain error: {0}")]
    Other(String),
}

fn map_err(e: keyring::Error) -> SecretError {
    match e {
        keyring::Error::PlatformFailure(inner) => SecretError::Unavailable(inner.to_string()),
        keyring::Error::NoStorageAccess(inner) => SecretError::Locked(inner.to_string()),
        other => SecretError::Other(other.to_string()),
    }
}

/// Hark's entries in the OS keychain.
#[derive(Debug, Clone)]
pub struct Keychain {
    /// The keychain service name; tests use their own so they never touch real keys.
    service: String,
}

impl Default for Keychain {
    /// Hark's own service name, or `HARK_KEYCHAIN_SERVICE` when set (side-by-side installs
    /// and tests that must not touch the user's real entries).
    fn default() -> Self {
        let service = std::env::var("HARK_KEYCHAIN_SERVICE").ok().filter(|s| !s.is_empty());
        Self {
            service: service.unwrap_or_else(|| SERVICE.to_string()),
        }
    }
}

impl Keychain {
    /// A keychain under another service name (tests, side-by-side installs).
    pub fn with_service(service: impl Into<String>) -> Self {
        Self {
            service: service.into(),
        }
    }

    fn entry(&self, provider: &str) -> Result<keyring::Entry, SecretError> {
        if env_var(provider).is_none() {
            return Err(SecretError::UnknownProvider(provider.to_string()));
        }
        keyring::Entry::new(&self.service, provider).map_err(map_err)
    }

    /// The key for a provider: the environment variable if set, else the keychain.
    pub fn get(&self, provider: &str) -> Result<Option<(ApiKey, KeySource)>, SecretError> {
        let var = env_var(provider).ok_or_else(|| SecretError::UnknownProvider(provider.to_string()))?;
        if let Some(v) = std::env::var(var).ok().filter(|v| !v.trim().is_empty()) {
            return Ok(Some((ApiKey(v.trim().to_string()), KeySource::Environment)));
        }
        self.get_stored(provider).map(|k| k.map(|k| (k, KeySource::Keychain)))
    }

    /// The key's value for building a provider client, or `None`. An unusable keychain counts
    /// as no key: the provider then reports the missing key, with where keys come from.
    pub fn value(&self, provider: &str) -> Option<String> {
        self.get(provider).ok().flatten().map(|(k, _)| k.0)
    }

    /// The key stored in the keychain only (ignores the environment).
    pub fn get_stored(&self, provider: &str) -> Result<Option<ApiKey>, SecretError> {
        match self.entry(provider)?.get_password() {
            Ok(k) => Ok(Some(ApiKey(k))),
            Err(keyring::Error::NoEntry) => Ok(None),
            Err(e) => Err(map_err(e)),
        }
    }

    /// Stores a key (surrounding whitespace, as pasted, is removed).
    pub fn set(&self, provider: &str, key: &str) -> Result<(), SecretError> {
        let key = key.trim();
        if key.is_empty() {
            return Err(SecretError::EmptyKey);
        }
        self.entry(provider)?.set_password(key).map_err(map_err)
    }

    /// Deletes a stored key; `false` when there was none.
    pub fn delete(&self, provider: &str) -> Result<bool, SecretError> {
        match self.entry(provider)?.delete_credential() {
            Ok(()) => Ok(true),
            Err(keyring::Error::NoEntry) => Ok(false),
            Err(e) => Err(map_err(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_never_print() {
        let k = ApiKey("sk-secret-123".into());
        assert_eq!(format!("{k:?}"), "ApiKey(<redacted>)");
    }

    #[test]
    fn unknown_providers_and_empty_keys_are_refused_before_the_keychain() {
        let kc = Keychain::with_service("hark-test-unused");
        assert!(matches!(kc.set("acme", "k"), Err(SecretError::UnknownProvider(_))));
        assert!(matches!(kc.set("openai", "  \n"), Err(SecretError::EmptyKey)));
    }
}
