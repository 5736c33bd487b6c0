//! ONNX Runtime for the offline models that run on it (the natural voice, Moonshine).
//!
//! Its library is a manifest entry (`onnxruntime`, one per platform) loaded at run time,
//! once per process, so nothing native is built or shipped with Hark; every model's
//! session is built here the same way.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::provider::{ErrorKind, ProviderError};

/// The library loaded, once per process: the first library that loads stays (a failed
/// load is not remembered, so a library fetched later still loads).
static RUNTIME: Mutex<Option<PathBuf>> = Mutex::new(None);

/// A poisoned lock here only means a panic elsewhere mid-update of a plain value.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Loads ONNX Runtime from `path` unless it is loaded. A missing library is an error of
/// `provider` that says to fetch the model `fetch` (which requires the library).
pub(crate) fn load_runtime(provider: &'static str, path: &Path, fetch: &str) -> Result<(), ProviderError> {
    let mut loaded = lock(&RUNTIME);
    if loaded.is_some() {
        return Ok(());
    }
    if !path.exists() {
        return Err(ProviderError::new(
            provider,
            ErrorKind::LocalEngine,
            format!(
                "ONNX Runtime's library {} is not there: fetch it with `hark models fetch {fetch}`",
                path.display()
            ),
        ));
    }
    let builder = ort::init_from(path).map_err(|e| {
        ProviderError::new(
            provider,
            ErrorKind::LocalEngine,
            format!("cannot load ONNX Runtime from {}: {e}", path.display()),
        )
    })?;
    let _ = builder.with_name("hark").commit();
    *loaded = Some(path.to_path_buf());
    Ok(())
}

/// A session for the model file `model` (`what` names it in errors: "the natural voice's
/// model") running on `threads` threads within each operator and one across them (the
/// graphs here are sequential).
pub(crate) fn session(
    provider: &'static str,
    model: &Path,
    threads: usize,
    what: &str,
) -> Result<ort::session::Session, ProviderError> {
    session_with(provider, model, threads, true, what)
}

/// [`session`], choosing whether the operator threads spin between runs (`spin`; ONNX
/// Runtime's default): a model that runs now and then, beside audio that must not wait
/// for a core, lets its threads sleep as soon as a run ends.
pub(crate) fn session_with(
    provider: &'static str,
    model: &Path,
    threads: usize,
    spin: bool,
    what: &str,
) -> Result<ort::session::Session, ProviderError> {
    let ort_err = |e: ort::Error| {
        ProviderError::new(
            provider,
            ErrorKind::LocalEngine,
            format!("cannot load {what} {}: {e}", model.display()),
        )
    };
    ort::session::Session::builder()
        .map_err(ort_err)?
        .with_intra_threads(threads.max(1))
        .map_err(|e| ort_err(e.into()))?
        .with_inter_threads(1)
        .map_err(|e| ort_err(e.into()))?
        .with_intra_op_spinning(spin)
        .map_err(|e| ort_err(e.into()))?
        .commit_from_file(model)
        .map_err(ort_err)
}
