//! The memory's indexing (issue 24): every message and fact written gets its embedding in
//! the background, so a turn never waits for one, and a database from before (or one the
//! indexing was stopped in, even by `kill -9`) is indexed where it stopped.
//!
//! The work is a loop over [`Store::unembedded`]: a batch of rows with no vector of the
//! model, embedded and stored in one transaction, until none is left; then it waits for
//! the store's next write. What is stored is committed per batch, so stopping loses at
//! most one batch's work.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use super::vectors::{IndexProgress, Unembedded};
use super::{Store, StoreError};

/// Rows embedded and stored together: small enough that a stop loses little, large
/// enough that a transaction's cost is shared.
pub const BATCH: usize = 16;

/// How long the indexing sleeps with nothing written through this process's store
/// before it looks again (another process may have written).
const IDLE_LOOK: Duration = Duration::from_secs(30);

/// An embedding model, as the store needs one.
pub trait Embed: Send + Sync {
    /// Names the model (and its version): stored with each vector, so a vector is only
    /// compared with those of the same model.
    fn model_id(&self) -> &str;

    /// Unit vectors for stored texts (messages, facts), one per text.
    fn embed_documents(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String>;

    /// The unit vector of a search (what the user asked).
    fn embed_query(&self, text: &str) -> Result<Vec<f32>, String>;
}

/// Why indexing stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IndexError {
    #[error("the embedding model failed: {0}")]
    Embed(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Embeds one batch of unembedded rows. Returns how many rows were left to embed before
/// it (0: nothing to do).
pub fn index_batch(store: &Store, embed: &dyn Embed) -> Result<usize, IndexError> {
    let rows = store.unembedded(embed.model_id(), BATCH)?;
    if rows.is_empty() {
        return Ok(0);
    }
    let texts: Vec<&str> = rows.iter().map(|r| r.text.as_str()).collect();
    let vectors = embed.embed_documents(&texts).map_err(IndexError::Embed)?;
    if vectors.len() != rows.len() {
        return Err(IndexError::Embed(format!(
            "{} vectors for {} texts",
            vectors.len(),
            rows.len()
        )));
    }
    let n = rows.len();
    let made: Vec<(Unembedded, Vec<f32>)> = rows.into_iter().zip(vectors).collect();
    store.put_vectors(embed.model_id(), &made)?;
    Ok(n)
}

/// Indexes everything unembedded now, in the calling thread (`hark memory reindex`),
/// reporting progress after each batch; `stop` ends it between batches.
pub fn index_all(
    store: &Store,
    embed: &dyn Embed,
    stop: &AtomicBool,
    mut progress: impl FnMut(IndexProgress),
) -> Result<IndexProgress, IndexError> {
    progress(store.index_progress(embed.model_id())?);
    while !stop.load(Ordering::Relaxed) && index_batch(store, embed)? > 0 {
        progress(store.index_progress(embed.model_id())?);
    }
    Ok(store.index_progress(embed.model_id())?)
}

/// The background indexing of one store: a thread at the lowest priority, stopped when
/// this is dropped (between batches).
pub struct Indexer {
    stop: Arc<AtomicBool>,
    progress: watch::Receiver<IndexProgress>,
    thread: Option<std::thread::JoinHandle<()>>,
    store: Arc<Store>,
    embed: Arc<dyn Embed>,
}

impl Indexer {
    /// Starts indexing `store` with `embed`: what is unembedded now, then each write.
    /// A failure of the model is logged and retried at the next write.
    pub fn start(store: Arc<Store>, embed: Arc<dyn Embed>) -> std::io::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let initial = store.index_progress(embed.model_id()).unwrap_or_default();
        let (tx, progress) = watch::channel(initial);
        let thread = {
            let (store, stop, embed) = (store.clone(), stop.clone(), embed.clone());
            std::thread::Builder::new()
                .name("hark-memory-index".into())
                .spawn(move || {
                    crate::cpu::lower_this_threads_priority();
                    run(&store, &*embed, &stop, &tx);
                })?
        };
        Ok(Self {
            stop,
            progress,
            thread: Some(thread),
            store,
            embed,
        })
    }

    /// Stops the background work and indexes what is left in the calling thread for at
    /// most `within` (blocking): a command that ends (`hark chat`) leaves what it wrote
    /// embedded, so the next one finds it by meaning at once. Returns how far it came.
    pub fn finish(mut self, within: Duration) -> IndexProgress {
        self.halt();
        let deadline = std::time::Instant::now() + within;
        while std::time::Instant::now() < deadline {
            match index_batch(&self.store, &*self.embed) {
                Ok(n) if n > 0 => {}
                _ => break,
            }
        }
        self.store.index_progress(self.embed.model_id()).unwrap_or_default()
    }

    /// Stops the thread between batches and waits for it.
    fn halt(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wakes it from its wait; it sees `stop` before another batch.
        self.store.wrote();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }

    /// How far it has come (changes after each batch).
    pub fn progress(&self) -> watch::Receiver<IndexProgress> {
        self.progress.clone()
    }
}

fn run(store: &Store, embed: &dyn Embed, stop: &AtomicBool, progress: &watch::Sender<IndexProgress>) {
    let mut seen = store.writes();
    let mut failing = false;
    while !stop.load(Ordering::Relaxed) {
        match index_batch(store, embed) {
            Ok(n) if n > 0 => {
                failing = false;
                if let Ok(p) = store.index_progress(embed.model_id()) {
                    progress.send_replace(p);
                }
                continue;
            }
            Ok(_) => {
                if let Ok(p) = store.index_progress(embed.model_id()) {
                    progress.send_replace(p);
                }
            }
            Err(e) => {
                // Once per spell of failures, not per write.
                if !failing {
                    tracing::warn!("the memory's indexing stopped: {e}");
                }
                failing = true;
            }
        }
        seen = store.wait_for_write(seen, IDLE_LOOK);
    }
}

impl Drop for Indexer {
    fn drop(&mut self) {
        self.halt();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::{HistorySettings, Message, MessageKind};
    use crate::store::SessionMeta;

    /// A model that maps a text to a fixed vector by its length, and counts its calls.
    struct Fake {
        calls: std::sync::atomic::AtomicUsize,
        fail: AtomicBool,
    }

    impl Embed for Fake {
        fn model_id(&self) -> &str {
            "fake-1"
        }
        fn embed_documents(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
            self.calls.fetch_add(1, Ordering::Relaxed);
            if self.fail.load(Ordering::Relaxed) {
                return Err("no model".into());
            }
            Ok(texts.iter().map(|t| vec![t.len() as f32, 1.0]).collect())
        }
        fn embed_query(&self, text: &str) -> Result<Vec<f32>, String> {
            Ok(vec![text.len() as f32, 1.0])
        }
    }

    fn fake() -> Arc<Fake> {
        Arc::new(Fake {
            calls: Default::default(),
            fail: AtomicBool::new(false),
        })
    }

    #[test]
    fn index_all_embeds_in_batches_and_resumes_where_it_stopped() {
        let store = Store::open_in_memory().unwrap();
        store
            .create_session(&SessionMeta::new("s", "", HistorySettings::default()))
            .unwrap();
        for i in 0..(BATCH * 2 + 3) {
            store
                .save_message("s", &Message::new(MessageKind::User { text: format!("m{i}") }))
                .unwrap();
        }
        let model = fake();
        // Stopped after the first batch.
        let stop = AtomicBool::new(false);
        let p = index_all(&store, &*model, &stop, |p| {
            if p.done > 0 {
                stop.store(true, Ordering::Relaxed);
            }
        })
        .unwrap();
        assert_eq!((p.done, p.total), (BATCH as u64, (BATCH * 2 + 3) as u64));
        let mut seen = Vec::new();
        let p = index_all(&store, &*model, &AtomicBool::new(false), |p| seen.push(p.done)).unwrap();
        assert!(p.complete());
        assert_eq!(seen, [16, 32, 35]);
        assert_eq!(model.calls.load(Ordering::Relaxed), 3, "nothing embedded twice");
    }

    #[test]
    fn the_background_indexer_embeds_each_write_and_stops_when_dropped() {
        let store = Arc::new(Store::open_in_memory().unwrap());
        store
            .create_session(&SessionMeta::new("s", "", HistorySettings::default()))
            .unwrap();
        store
            .save_message("s", &Message::new(MessageKind::User { text: "before".into() }))
            .unwrap();
        let model = fake();
        let indexer = Indexer::start(store.clone(), model.clone()).unwrap();
        let mut progress = indexer.progress();
        let wait_for = |progress: &mut watch::Receiver<IndexProgress>, done: u64| {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .build()
                .unwrap();
            rt.block_on(async {
                tokio::time::timeout(
                    Duration::from_secs(30),
                    progress.wait_for(|p| p.done == done && p.complete()),
                )
                .await
                .expect("indexed within 30 s (a few ms expected)")
                .unwrap();
            });
        };
        wait_for(&mut progress, 1);
        store.add_fact("The user likes tea.", None).unwrap();
        wait_for(&mut progress, 2);
        // A failing model leaves rows unembedded, and a later write retries them.
        model.fail.store(true, Ordering::Relaxed);
        store
            .save_message("s", &Message::new(MessageKind::User { text: "during".into() }))
            .unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while model.calls.load(Ordering::Relaxed) < 3 {
            assert!(std::time::Instant::now() < deadline, "the write woke the indexer");
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(store.index_progress("fake-1").unwrap().done, 2);
        model.fail.store(false, Ordering::Relaxed);
        store
            .save_message("s", &Message::new(MessageKind::User { text: "after".into() }))
            .unwrap();
        wait_for(&mut progress, 4);
        drop(indexer);
        store
            .save_message("s", &Message::new(MessageKind::User { text: "stopped".into() }))
            .unwrap();
        // The thread has ended: nothing is embedded after the drop.
        assert_eq!(store.index_progress("fake-1").unwrap().done, 4);
    }
}
