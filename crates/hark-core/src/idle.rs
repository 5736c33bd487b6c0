//! A model kept in memory while it is used and freed after a while without use: the
//! offline speech model (whisper) and the natural voice (Kokoro) each hold theirs in an
//! [`IdleSlot`].
//!
//! Written here rather than taken from a crate: what is needed is a value loaded under a
//! lock (two callers never load twice), a timer restarted by each use, and no polling; a
//! cache crate (moka, cached) evicts by its own clock from a background task or on access,
//! and would not wait for a use in progress to end.

use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// A poisoned lock here only means a panic elsewhere mid-update of a plain value.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A value loaded on demand and dropped after `unload_after` without use. Clones share it.
pub struct IdleSlot<T> {
    inner: Arc<Inner<T>>,
}

impl<T> Clone for IdleSlot<T> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }
}

struct Inner<T> {
    value: Mutex<Option<Arc<T>>>,
    /// How long an unused value stays; `None`: while the slot lives.
    unload_after: Mutex<Option<Duration>>,
    /// Each use (and each change of `unload_after`) tells the unloader, which restarts its
    /// wait; dropping the slot drops this sender, which ends the unloader.
    touched: Mutex<mpsc::Sender<()>>,
}

impl<T: Send + Sync + 'static> IdleSlot<T> {
    /// An empty slot; `name` names its unloader thread and its log line.
    pub fn new(name: &'static str, unload_after: Option<Duration>) -> std::io::Result<Self> {
        let (touched, rx) = mpsc::channel();
        let inner = Arc::new(Inner {
            value: Mutex::new(None),
            unload_after: Mutex::new(unload_after),
            touched: Mutex::new(touched),
        });
        // The unloader sleeps until the value has gone unused for `unload_after` (a timed
        // wait on the channel, restarted by each use: no polling), and holds only a weak
        // reference, so it ends with the slot.
        let weak = Arc::downgrade(&inner);
        std::thread::Builder::new()
            .name(format!("hark-{name}-unload"))
            .spawn(move || loop {
                let Some(wait) = weak.upgrade().map(|i| *lock(&i.unload_after)) else {
                    return;
                };
                let outcome = match wait {
                    Some(wait) => rx.recv_timeout(wait),
                    None => rx.recv().map_err(|_| mpsc::RecvTimeoutError::Disconnected),
                };
                match outcome {
                    Ok(()) => {}
                    Err(mpsc::RecvTimeoutError::Disconnected) => return,
                    Err(mpsc::RecvTimeoutError::Timeout) => {
                        if let Some(inner) = weak.upgrade() {
                            let mut value = lock(&inner.value);
                            // A use holds its own reference: in use is not idle (its end
                            // touches the channel and the wait starts over).
                            if value.as_ref().is_some_and(|v| Arc::strong_count(v) == 1) {
                                *value = None;
                                tracing::debug!("{name} unloaded after {wait:?} unused");
                            }
                        }
                        // Unloaded (or in use): nothing to time until the next touch.
                        if rx.recv().is_err() {
                            return;
                        }
                    }
                }
            })?;
        Ok(Self { inner })
    }

    /// The value, loading it first if needed (under the slot's lock: two callers never load
    /// twice). Counts as a use.
    pub fn get_or_try_load<E>(&self, load: impl FnOnce() -> Result<T, E>) -> Result<Arc<T>, E> {
        let mut slot = lock(&self.inner.value);
        self.touch();
        if let Some(v) = slot.as_ref() {
            return Ok(v.clone());
        }
        let v = Arc::new(load()?);
        *slot = Some(v.clone());
        Ok(v)
    }

    /// Loads the value on a background thread named `thread`, so a first use does not wait
    /// for it (a warm-up). A failure is logged, prefixed with `what`, and comes back at the
    /// first use, which tries again.
    pub fn load_in_background<E: std::fmt::Display>(
        &self,
        thread: &str,
        what: &'static str,
        load: impl FnOnce() -> Result<T, E> + Send + 'static,
    ) {
        let slot = self.clone();
        let _ = std::thread::Builder::new().name(thread.into()).spawn(move || {
            if let Err(e) = slot.get_or_try_load(load) {
                tracing::warn!("{what}: {e}");
            }
        });
    }

    /// Runs `f` with the value, loading it first if needed, then marks the end of the use
    /// (idle time counts from there, not from its start), whatever `f` returned.
    pub fn use_with<E, R>(
        &self,
        load: impl FnOnce() -> Result<T, E>,
        f: impl FnOnce(&T) -> Result<R, E>,
    ) -> Result<R, E> {
        let value = self.get_or_try_load(load)?;
        let out = f(&value);
        drop(value); // an unload after the touch is not held up by this use
        self.touch();
        out
    }

    /// Marks a use (call it when a use ends too: idle time counts from there).
    pub fn touch(&self) {
        let _ = lock(&self.inner.touched).send(());
    }

    /// How long the value stays loaded without use; `None` keeps it while the slot lives.
    pub fn set_unload_after(&self, after: Option<Duration>) {
        *lock(&self.inner.unload_after) = after;
        self.touch();
    }

    /// Whether the value is in memory now.
    pub fn is_loaded(&self) -> bool {
        lock(&self.inner.value).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_loads_once_is_freed_when_idle_and_kept_while_in_use() {
        let slot: IdleSlot<String> = IdleSlot::new("test", Some(Duration::from_millis(100))).unwrap();
        let mut loads = 0;
        let a = slot
            .get_or_try_load(|| {
                loads += 1;
                Ok::<_, ()>("x".to_string())
            })
            .unwrap();
        let b = slot.get_or_try_load(|| Err(())).unwrap();
        assert!(Arc::ptr_eq(&a, &b) && loads == 1, "loaded once");
        // Held (in use): not freed.
        std::thread::sleep(Duration::from_millis(300));
        assert!(slot.is_loaded());
        drop((a, b));
        slot.touch();
        std::thread::sleep(Duration::from_millis(300));
        assert!(!slot.is_loaded(), "freed after 100 ms unused");
        // A failed load leaves the slot empty, and the next load tries again.
        assert!(slot.get_or_try_load(|| Err::<String, _>("no")).is_err());
        assert!(!slot.is_loaded());
        slot.set_unload_after(None);
        slot.get_or_try_load(|| Ok::<_, ()>("y".into())).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        assert!(slot.is_loaded(), "kept while the slot lives");
    }
}
