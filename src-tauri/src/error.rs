//! The error every command returns, and every banner shows: the core's [`ErrorKind`] with
//! its title and next step (written once, in `hark_core::error`), the message in plain
//! words, and the technical detail for a "details" disclosure.

use hark_core::error::ErrorKind;
use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Serialize, specta::Type, thiserror::Error)]
#[error("{kind}: {message}")]
pub struct CommandError {
    pub kind: ErrorKind,
    /// The banner's heading, from the kind.
    pub title: String,
    /// What happened, in words a user understands.
    pub message: String,
    /// What to do about it, from the kind (or more specific).
    pub next_step: String,
    /// What the library or server said, when there is more to say.
    pub detail: Option<String>,
}

impl CommandError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            title: kind.title().into(),
            message: message.into(),
            next_step: kind.next_step().into(),
            detail: None,
        }
    }

    pub fn with_next_step(mut self, next: impl Into<String>) -> Self {
        self.next_step = next.into();
        self
    }

    pub fn with_detail(mut self, detail: Option<String>) -> Self {
        self.detail = detail;
        self
    }
}

impl From<hark_core::store::StoreError> for CommandError {
    fn from(e: hark_core::store::StoreError) -> Self {
        Self::new(ErrorKind::Storage, e.to_string())
    }
}

impl From<hark_core::secrets::SecretError> for CommandError {
    fn from(e: hark_core::secrets::SecretError) -> Self {
        use hark_core::secrets::SecretError;
        let kind = match e {
            SecretError::UnknownProvider(_) | SecretError::EmptyKey => ErrorKind::Settings,
            _ => ErrorKind::Keychain,
        };
        Self::new(kind, e.to_string())
    }
}

impl From<hark_core::provider::ProviderError> for CommandError {
    fn from(e: hark_core::provider::ProviderError) -> Self {
        let detail = e.status.map(|s| format!("{} answered HTTP {s}", e.provider));
        Self::new(e.kind, format!("{}: {}", e.provider, e.message)).with_detail(detail)
    }
}

impl From<hark_core::audio::AudioError> for CommandError {
    fn from(e: hark_core::audio::AudioError) -> Self {
        Self::new(e.kind(), e.to_string()).with_detail(e.detail().map(str::to_string))
    }
}

impl From<hark_core::store::import::ImportError> for CommandError {
    fn from(e: hark_core::store::import::ImportError) -> Self {
        Self::new(ErrorKind::Import, e.to_string())
    }
}

impl From<hark_core::store::memory::MemoryError> for CommandError {
    fn from(e: hark_core::store::memory::MemoryError) -> Self {
        match e {
            hark_core::store::memory::MemoryError::Store(e) => e.into(),
            e => Self::new(ErrorKind::Settings, e.to_string()).with_next_step("change the fact and try again"),
        }
    }
}

impl From<hark_core::models::ModelError> for CommandError {
    fn from(e: hark_core::models::ModelError) -> Self {
        match e {
            // Not a failed download: one that is still running.
            hark_core::models::ModelError::Busy(_) => Self::new(ErrorKind::NotReady, e.to_string())
                .with_next_step("wait for the download to finish, or pause it, then try again"),
            e => Self::new(ErrorKind::ModelDownload, e.to_string()),
        }
    }
}

impl From<hark_core::assembly::SetupError> for CommandError {
    fn from(e: hark_core::assembly::SetupError) -> Self {
        Self::new(e.kind(), e.to_string())
    }
}

impl From<hark_core::session::TurnError> for CommandError {
    fn from(e: hark_core::session::TurnError) -> Self {
        Self::new(e.kind(), e.to_string())
            .with_next_step(e.next_step())
            .with_detail(e.detail())
    }
}

pub type CmdResult<T> = Result<T, CommandError>;
