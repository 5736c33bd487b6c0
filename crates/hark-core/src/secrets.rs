//! API keys: only in the OS keychain (macOS Keychain, Windows Credential Manager, Linux
//! Secret Service), with `ANTHROPIC_API_KEY` / `OPENAI_API_KEY` / `DEEPGRAM_API_KEY`
//! overriding for development and CI. Keys never reach logs, exports or settings files:
//! [`ApiKey`] has no `Debug`/`Display` that shows the value.
//!
//! A key belongs to an endpoint ([`KeySlot`]): a provider's official endpoint, or the base
//! URL it was saved for (`hark keys set openai --base-url URL`). A request carries a stored
//! key only to the endpoint it belongs to, so an OpenAI key is never sent to a proxy or a
//! look-alike host by changing the base URL. The environment variables are the developer's
//! explicit choice and go wherever the base URL points.

use serde::Serialize;

/// The keychain service name Hark's entries are stored under.
pub const SERVICE: &str = "hark";

/// Providers that take a key.
pub use crate::endpoints::PROVIDERS;

/// The environment variable that overrides a provider's key.
pub fn env_var(provider: &str) -> Option<&'static str> {
    crate::endpoints::key_env_var(provider)
}

/// A provider's official endpoint (where a key saved without `--base-url` goes).
pub fn official_endpoint(provider: &str) -> Option<&'static str> {
    crate::endpoints::official(provider)
}

/// An endpoint in one spelling: scheme and host lower-cased, no trailing slash, no query.
/// `None` for text that is not an http(s) URL.
pub fn normalize_endpoint(url: &str) -> Option<String> {
    let parsed = reqwest::Url::parse(url.trim()).ok()?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        return None;
    }
    let mut out = format!("{}://{}", parsed.scheme(), parsed.host_str()?.to_ascii_lowercase());
    if let Some(port) = parsed.port() {
        out.push_str(&format!(":{port}"));
    }
    out.push_str(parsed.path().trim_end_matches('/'));
    Some(out)
}

/// Where a key belongs: a provider's official endpoint, or one base URL.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct KeySlot {
    pub provider: String,
    /// The base URL the key is bound to; `None`: the provider's official endpoint.
    pub endpoint: Option<String>,
}

impl KeySlot {
    /// The slot of the provider's official endpoint.
    pub fn official(provider: &str) -> Self {
        Self {
            provider: provider.to_string(),
            endpoint: None,
        }
    }

    /// The slot for requests to `base_url` (the official slot when it is the official
    /// endpoint, however spelled).
    pub fn for_url(provider: &str, base_url: &str) -> Self {
        let url = normalize_endpoint(base_url).unwrap_or_else(|| base_url.trim().trim_end_matches('/').to_string());
        let official = official_endpoint(provider).and_then(normalize_endpoint);
        Self {
            provider: provider.to_string(),
            endpoint: (official.as_deref() != Some(url.as_str())).then_some(url),
        }
    }

    /// The slot for an optional base URL (`None`: the official endpoint).
    pub fn for_base_url(provider: &str, base_url: Option<&str>) -> Self {
        match base_url.map(str::trim).filter(|u| !u.is_empty()) {
            Some(u) => Self::for_url(provider, u),
            None => Self::official(provider),
        }
    }

    /// The keychain entry's user name: the provider, or `provider@endpoint`.
    fn user(&self) -> String {
        match &self.endpoint {
            None => self.provider.clone(),
            Some(e) => format!("{}@{e}", self.provider),
        }
    }
}

impl std::fmt::Display for KeySlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.endpoint {
            None => write!(f, "{} (official endpoint)", self.provider),
            Some(e) => write!(f, "{} at {e}", self.provider),
        }
    }
}

/// A tool server's secret (`hark mcp add`): its bearer token, bound to the URL it was
/// saved for, or one of the environment variables of a program it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerSecret {
    /// Sent as `Authorization: Bearer …` to this URL only: a server whose URL changes no
    /// longer finds it.
    Token { server: String, url: String },
    /// Given to the server's program in its environment, and nowhere else.
    Env { server: String, var: String },
}

impl ServerSecret {
    fn user(&self) -> String {
        match self {
            ServerSecret::Token { server, url } => {
                let url = normalize_endpoint(url).unwrap_or_else(|| url.trim().to_string());
                format!("mcp:{server}@{url}")
            }
            ServerSecret::Env { server, var } => format!("mcp:{server}:env:{var}"),
        }
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
#[cfg_attr(feature = "specta", derive(specta::Type))]
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

    fn entry(&self, slot: &KeySlot) -> Result<keyring::Entry, SecretError> {
        if env_var(&slot.provider).is_none() {
            return Err(SecretError::UnknownProvider(slot.provider.clone()));
        }
        keyring::Entry::new(&self.service, &slot.user()).map_err(map_err)
    }

    /// The key for requests to a slot's endpoint: the provider's environment variable if
    /// set (it goes wherever the developer points it), else the key stored for exactly that
    /// endpoint.
    pub fn get(&self, slot: &KeySlot) -> Result<Option<(ApiKey, KeySource)>, SecretError> {
        let var = env_var(&slot.provider).ok_or_else(|| SecretError::UnknownProvider(slot.provider.clone()))?;
        if let Some(v) = std::env::var(var).ok().filter(|v| !v.trim().is_empty()) {
            return Ok(Some((ApiKey(v.trim().to_string()), KeySource::Environment)));
        }
        self.get_stored(slot).map(|k| k.map(|k| (k, KeySource::Keychain)))
    }

    /// The key's value for building a client, or `None`. An unusable keychain counts as no
    /// key: the provider then reports the missing key, with where keys come from.
    pub fn value(&self, slot: &KeySlot) -> Option<String> {
        self.get(slot).ok().flatten().map(|(k, _)| k.0)
    }

    /// The key stored in the keychain for a slot only (ignores the environment).
    pub fn get_stored(&self, slot: &KeySlot) -> Result<Option<ApiKey>, SecretError> {
        match self.entry(slot)?.get_password() {
            Ok(k) => Ok(Some(ApiKey(k))),
            Err(keyring::Error::NoEntry) => Ok(None),
            Err(e) => Err(map_err(e)),
        }
    }

    /// Stores a key for a slot (surrounding whitespace, as pasted, is removed).
    pub fn set(&self, slot: &KeySlot, key: &str) -> Result<(), SecretError> {
        let key = key.trim();
        if key.is_empty() {
            return Err(SecretError::EmptyKey);
        }
        self.entry(slot)?.set_password(key).map_err(map_err)
    }

    /// Deletes a slot's stored key; `false` when there was none.
    pub fn delete(&self, slot: &KeySlot) -> Result<bool, SecretError> {
        delete_entry(&self.entry(slot)?)
    }

    /// A tool server's stored secret.
    pub fn server_secret(&self, secret: &ServerSecret) -> Result<Option<ApiKey>, SecretError> {
        match self.server_entry(secret)?.get_password() {
            Ok(k) => Ok(Some(ApiKey(k))),
            Err(keyring::Error::NoEntry) => Ok(None),
            Err(e) => Err(map_err(e)),
        }
    }

    /// Stores a tool server's secret (whitespace around it removed).
    pub fn set_server_secret(&self, secret: &ServerSecret, value: &str) -> Result<(), SecretError> {
        let value = value.trim();
        if value.is_empty() {
            return Err(SecretError::EmptyKey);
        }
        self.server_entry(secret)?.set_password(value).map_err(map_err)
    }

    /// Deletes a tool server's secret; `false` when there was none.
    pub fn delete_server_secret(&self, secret: &ServerSecret) -> Result<bool, SecretError> {
        delete_entry(&self.server_entry(secret)?)
    }

    fn server_entry(&self, secret: &ServerSecret) -> Result<keyring::Entry, SecretError> {
        keyring::Entry::new(&self.service, &secret.user()).map_err(map_err)
    }
}

fn delete_entry(entry: &keyring::Entry) -> Result<bool, SecretError> {
    match entry.delete_credential() {
        Ok(()) => Ok(true),
        Err(keyring::Error::NoEntry) => Ok(false),
        Err(e) => Err(map_err(e)),
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
        assert!(matches!(
            kc.set(&KeySlot::official("acme"), "k"),
            Err(SecretError::UnknownProvider(_))
        ));
        assert!(matches!(
            kc.set(&KeySlot::official("openai"), "  \n"),
            Err(SecretError::EmptyKey)
        ));
    }

    /// Issue 9: the OpenAI key was sent to whatever base URL was configured. A key now
    /// belongs to one endpoint: the official one, or the URL it was saved for.
    #[test]
    fn a_key_belongs_to_the_endpoint_it_was_saved_for() {
        assert_eq!(KeySlot::for_base_url("openai", None), KeySlot::official("openai"));
        assert_eq!(
            KeySlot::for_url("openai", "HTTPS://API.OpenAI.com/v1/"),
            KeySlot::official("openai"),
            "the official endpoint however spelled"
        );
        let router = KeySlot::for_url("openai", "https://openrouter.ai/api/v1/");
        assert_eq!(router.endpoint.as_deref(), Some("https://openrouter.ai/api/v1"));
        assert_ne!(router.user(), KeySlot::official("openai").user());
        assert_ne!(
            KeySlot::for_url("openai", "https://api.openai.com.evil.example/v1").user(),
            KeySlot::official("openai").user()
        );
        assert_eq!(router.to_string(), "openai at https://openrouter.ai/api/v1");
        assert_eq!(
            KeySlot::for_url("anthropic", "https://api.anthropic.com"),
            KeySlot::official("anthropic")
        );
    }
}
