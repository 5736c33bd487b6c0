//! The error every command returns: a tagged `{kind, message}` the UI branches on.

use serde::Serialize;

#[derive(Debug, Clone, Serialize, thiserror::Error)]
#[error("{kind}: {message}")]
pub struct CommandError {
    /// "auth", "rate_limit", "connectivity", "audio", "storage", "settings", "keychain", ...
    pub kind: String,
    pub message: String,
}

impl CommandError {
    pub fn new(kind: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            kind: kind.into(),
            message: message.into(),
        }
    }
}

impl From<hark_core::store::StoreError> for CommandError {
    fn from(e: hark_core::store::StoreError) -> Self {
        Self::new("storage", e.to_string())
    }
}

impl From<hark_core::secrets::SecretError> for CommandError {
    fn from(e: hark_core::secrets::SecretError) -> Self {
        Self::new("keychain", e.to_string())
    }
}

impl From<hark_core::provider::ProviderError> for CommandError {
    fn from(e: hark_core::provider::ProviderError) -> Self {
        Self::new(e.kind.as_str(), e.to_string())
    }
}

impl From<hark_core::audio::AudioError> for CommandError {
    fn from(e: hark_core::audio::AudioError) -> Self {
        Self::new("audio", e.to_string())
    }
}

impl From<hark_core::store::import::ImportError> for CommandError {
    fn from(e: hark_core::store::import::ImportError) -> Self {
        Self::new("import", e.to_string())
    }
}

impl From<hark_core::store::memory::MemoryError> for CommandError {
    fn from(e: hark_core::store::memory::MemoryError) -> Self {
        match e {
            hark_core::store::memory::MemoryError::Store(e) => e.into(),
            e => Self::new("memory", e.to_string()),
        }
    }
}

pub type CmdResult<T> = Result<T, CommandError>;
