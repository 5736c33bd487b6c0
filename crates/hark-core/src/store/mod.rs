//! Persistence: one SQLite file (WAL) holding sessions, messages and summaries.
//!
//! # Layout
//! - this file: [`Store`], schema and migrations, session and message reads and writes.
//! - `export`: the versioned JSON export of a whole record, and Markdown.
//! - `import`: Hark exports, Deepgram `agent.context.messages`, OpenAI/Anthropic arrays.
//! - `memory`: long-term memory (rule 12): remembered facts and full-text search (FTS5) over
//!   every session's messages.
//! - `vectors`: meaning beside the words (issue 24): an embedding per message and fact,
//!   kept true to its row, and the nearest ones to a query.
//! - `embed`: the embedding model (all-MiniLM-L6-v2 on ONNX Runtime): a text's meaning
//!   as a unit vector.
//! - `index`: the embedding of every write in the background, resumable.
//!
//! Each message is written in its own transaction the moment it is final, so a crash
//! (even `kill -9`) loses at most the reply that was still streaming.

pub mod embed;
pub mod export;
pub mod import;
pub mod index;
pub mod memory;
pub mod vectors;

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use serde::{Deserialize, Serialize};

use crate::conversation::{Conversation, HistorySettings, Message};

/// The schema version this build writes (`PRAGMA user_version`).
pub const SCHEMA_VERSION: i64 = 3;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS sessions (
    id            TEXT PRIMARY KEY,
    title         TEXT,
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL,
    system_prompt TEXT NOT NULL DEFAULT '',
    settings      TEXT NOT NULL DEFAULT '{}',
    provider      TEXT,
    model         TEXT
);
CREATE TABLE IF NOT EXISTS messages (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    id         TEXT NOT NULL,
    kind       TEXT NOT NULL,
    text       TEXT NOT NULL,
    created_at TEXT NOT NULL,
    body       TEXT NOT NULL,
    PRIMARY KEY (session_id, seq),
    UNIQUE (session_id, id)
);
CREATE TABLE IF NOT EXISTS summaries (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    version    INTEGER NOT NULL,
    text       TEXT NOT NULL,
    through_seq INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (session_id, version)
);
-- Schema 2: long-term memory (rule 12).
CREATE TABLE IF NOT EXISTS facts (
    id         TEXT PRIMARY KEY,
    text       TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    session_id TEXT
);
-- Full-text index of every message's text. It keeps its own copy of the key (session_id,
-- seq): search results never depend on `messages.rowid`, which VACUUM may renumber.
CREATE VIRTUAL TABLE IF NOT EXISTS messages_fts USING fts5(
    text, session_id UNINDEXED, seq UNINDEXED, tokenize = 'porter unicode61'
);
CREATE TRIGGER IF NOT EXISTS messages_fts_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts (rowid, text, session_id, seq) VALUES (new.rowid, new.text, new.session_id, new.seq);
END;
CREATE TRIGGER IF NOT EXISTS messages_fts_delete AFTER DELETE ON messages BEGIN
    DELETE FROM messages_fts WHERE rowid = old.rowid;
END;
CREATE TRIGGER IF NOT EXISTS messages_fts_update AFTER UPDATE OF text ON messages BEGIN
    DELETE FROM messages_fts WHERE rowid = old.rowid;
    INSERT INTO messages_fts (rowid, text, session_id, seq) VALUES (new.rowid, new.text, new.session_id, new.seq);
END;
";

/// Storage failures, each naming what could not be done.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    #[error("cannot open the database {path}: {source}")]
    Open { path: PathBuf, source: rusqlite::Error },
    #[error("the database {path} was written by a newer Hark (schema {found}, this build knows {supported})")]
    TooNew { path: PathBuf, found: i64, supported: i64 },
    #[error("no session {0:?}")]
    NoSession(String),
    #[error("session id {0:?} matches several sessions; give more characters")]
    AmbiguousSession(String),
    #[error("a conversation's title cannot be empty")]
    EmptyTitle,
    #[error("the stored message {seq} of session {session} is unreadable: {source}")]
    Corrupt {
        session: String,
        seq: i64,
        source: serde_json::Error,
    },
    #[error("the stored history settings of session {session} are unreadable: {source}")]
    CorruptSettings { session: String, source: serde_json::Error },
    #[error("database error: {0}")]
    Sql(#[from] rusqlite::Error),
}

/// A session's metadata, as stored and exported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionMeta {
    pub id: String,
    /// The first thing the user said, shortened; `None` until then.
    pub title: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub system_prompt: String,
    pub settings: HistorySettings,
    pub provider: Option<String>,
    pub model: Option<String>,
}

impl SessionMeta {
    pub fn new(id: impl Into<String>, system_prompt: impl Into<String>, settings: HistorySettings) -> Self {
        let now = Utc::now();
        Self {
            id: id.into(),
            title: None,
            created_at: now,
            updated_at: now,
            system_prompt: system_prompt.into(),
            settings,
            provider: None,
            model: None,
        }
    }
}

/// The running summary of a session (rule 11).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub text: String,
    /// Record index of the last message the summary covers.
    pub through_seq: i64,
    pub created_at: DateTime<Utc>,
}

/// A session with its whole record.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredSession {
    pub meta: SessionMeta,
    pub summary: Option<Summary>,
    pub messages: Vec<Message>,
}

impl StoredSession {
    /// The conversation engine over this record, for `model`.
    pub fn conversation(&self, model: &str) -> Conversation {
        let mut c = Conversation::from_record(
            self.meta.id.clone(),
            model,
            self.meta.system_prompt.clone(),
            self.meta.settings,
            self.messages.clone(),
        );
        if let Some(s) = &self.summary {
            // An empty text is a summary the user cleared.
            let text = Some(s.text.clone()).filter(|t| !t.is_empty());
            c.set_summary_through(text, (s.through_seq + 1).max(0) as usize);
        }
        c
    }
}

/// One row of the session list.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct SessionInfo {
    pub id: String,
    pub title: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub messages: i64,
    pub model: Option<String>,
}

/// The SQLite store. One connection behind a std `Mutex`: every call is a short synchronous
/// statement or transaction and nothing awaits while the lock is held.
pub struct Store {
    conn: Mutex<Connection>,
    path: PathBuf,
    /// The message vectors, copied for search (`vectors`).
    vectors: Mutex<vectors::VectorCache>,
    /// How many writes of text to embed (a message, an import, a fact) this `Store` has
    /// made, for the memory's indexer to wait on.
    written: (Mutex<u64>, std::sync::Condvar),
    /// The embedding model searches find meaning with, once one is loaded.
    meaning: Mutex<Option<std::sync::Arc<dyn index::Embed>>>,
}

impl Store {
    /// Opens (creating if needed) the database at `path`, in WAL mode.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let path = path.as_ref().to_path_buf();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            let _ = std::fs::create_dir_all(dir);
        }
        let conn = Connection::open(&path).map_err(|source| StoreError::Open {
            path: path.clone(),
            source,
        })?;
        Self::init(conn, path)
    }

    /// A private in-memory database (tests, benchmarks).
    pub fn open_in_memory() -> Result<Self, StoreError> {
        Self::init(Connection::open_in_memory()?, PathBuf::from(":memory:"))
    }

    fn init(mut conn: Connection, path: PathBuf) -> Result<Self, StoreError> {
        let open_err = |source| StoreError::Open {
            path: path.clone(),
            source,
        };
        // While opening, wait as long as another process's migration of a large history
        // may take; afterwards a write waits at most `BUSY`.
        conn.busy_timeout(OPEN_WAIT).map_err(open_err)?;
        // WAL: readers never block the writer; `synchronous=NORMAL` in WAL mode is durable
        // against process crashes (a commit is in the WAL file before `COMMIT` returns).
        enter_wal(&conn).map_err(open_err)?;
        conn.pragma_update(None, "synchronous", "NORMAL").map_err(open_err)?;
        conn.pragma_update(None, "foreign_keys", "ON").map_err(open_err)?;
        migrate(&mut conn).map_err(|e| match e {
            Migration::TooNew(found) => StoreError::TooNew {
                path: path.clone(),
                found,
                supported: SCHEMA_VERSION,
            },
            Migration::Sql(e) => open_err(e),
        })?;
        conn.busy_timeout(BUSY).map_err(open_err)?;
        Ok(Self {
            conn: Mutex::new(conn),
            path,
            vectors: Mutex::default(),
            written: Default::default(),
            meaning: Mutex::new(None),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Counts a write of text to embed and wakes whoever waits for one.
    fn wrote(&self) {
        let mut n = self.written.0.lock().unwrap_or_else(|p| p.into_inner());
        *n += 1;
        self.written.1.notify_all();
    }

    /// Waits until this `Store` has made a write of text to embed since `seen` writes
    /// (or `timeout` passes: another process may have written), and returns the count.
    pub fn wait_for_write(&self, seen: u64, timeout: std::time::Duration) -> u64 {
        let n = self.written.0.lock().unwrap_or_else(|p| p.into_inner());
        let (n, _) = self
            .written
            .1
            .wait_timeout_while(n, timeout, |n| *n == seen)
            .unwrap_or_else(|p| p.into_inner());
        *n
    }

    /// The count of writes of text to embed so far (see [`wait_for_write`](Self::wait_for_write)).
    pub fn writes(&self) -> u64 {
        *self.written.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Connection> {
        // A panic while holding the lock cannot leave SQLite half-written (transactions roll
        // back on drop), so a poisoned lock is still safe to use.
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Creates a session row.
    pub fn create_session(&self, meta: &SessionMeta) -> Result<(), StoreError> {
        insert_session(&self.lock(), meta)?;
        Ok(())
    }

    /// Writes the session's settings, system prompt and model, and its title if it has
    /// none. A title already stored stays: the first user message gives it, and a rename
    /// ([`Store::rename_session`]) changes it, while an open session's copy of its
    /// metadata may be older than either (moving the turns slider wrote NULL over a
    /// conversation's title).
    pub fn update_session(&self, meta: &SessionMeta) -> Result<(), StoreError> {
        let n = self.lock().execute(
            "UPDATE sessions SET title=COALESCE(title, ?2), updated_at=?3, system_prompt=?4, settings=?5, provider=?6, model=?7 WHERE id=?1",
            params![
                meta.id,
                meta.title,
                meta.updated_at.to_rfc3339(),
                meta.system_prompt,
                serde_json::to_string(&meta.settings).unwrap_or_default(),
                meta.provider,
                meta.model
            ],
        )?;
        if n == 0 {
            return Err(StoreError::NoSession(meta.id.clone()));
        }
        Ok(())
    }

    /// Commits one message: an edit in place when the session already holds a message with
    /// its id (a tool result, heard text, voice metrics), otherwise an append at the end of
    /// the record. Returns the message's position (`seq`) in the stored record. Also stamps
    /// the session as updated and titles it on the first user message.
    ///
    /// The position is allocated inside a `BEGIN IMMEDIATE` transaction, so two writers on
    /// one session (two `hark chat --session` processes, or the app and the CLI) append one
    /// after the other and no write ever replaces another (issue 9).
    pub fn save_message(&self, session_id: &str, message: &Message) -> Result<i64, StoreError> {
        let mut conn = self.lock();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let (kind, text, body) = message_columns(session_id, message)?;
        let edited = tx.query_row(
            "UPDATE messages SET kind=?3, text=?4, body=?5 WHERE session_id=?1 AND id=?2 RETURNING seq",
            params![session_id, message.id, kind, text, body],
            |r| r.get::<_, i64>(0),
        );
        let seq = match edited {
            Ok(seq) => seq,
            Err(rusqlite::Error::QueryReturnedNoRows) => {
                let seq: i64 = tx.query_row(
                    "SELECT COALESCE(MAX(seq) + 1, 0) FROM messages WHERE session_id=?1",
                    params![session_id],
                    |r| r.get(0),
                )?;
                tx.prepare_cached(INSERT_MESSAGE)?
                    .execute(message_params(session_id, seq as usize, message)?)?;
                seq
            }
            Err(e) => return Err(e.into()),
        };
        let n = tx.execute(
            "UPDATE sessions SET updated_at=?2, title=COALESCE(title, ?3) WHERE id=?1",
            params![
                session_id,
                Utc::now().to_rfc3339(),
                message.is_user().then(|| title_of(message.text()))
            ],
        )?;
        if n == 0 {
            return Err(StoreError::NoSession(session_id.to_string()));
        }
        tx.commit()?;
        drop(conn);
        self.wrote();
        Ok(seq)
    }

    /// How many messages the stored record of a session holds (another process may have
    /// added some since this one loaded it).
    pub fn message_count(&self, session_id: &str) -> Result<usize, StoreError> {
        let n: i64 = self.lock().query_row(
            "SELECT COUNT(*) FROM messages WHERE session_id=?1",
            params![session_id],
            |r| r.get(0),
        )?;
        Ok(n as usize)
    }

    /// Appends a new version of the running summary.
    pub fn save_summary(&self, session_id: &str, summary: &Summary) -> Result<(), StoreError> {
        insert_summary(&self.lock(), session_id, summary)
    }

    /// Gives a session the title a user chose. Surrounding space is dropped; an empty title
    /// is refused, and the old one stays.
    pub fn rename_session(&self, id: &str, title: &str) -> Result<String, StoreError> {
        let title = title.split_whitespace().collect::<Vec<_>>().join(" ");
        if title.is_empty() {
            return Err(StoreError::EmptyTitle);
        }
        if self
            .lock()
            .execute("UPDATE sessions SET title=?2 WHERE id=?1", params![id, title])?
            == 0
        {
            return Err(StoreError::NoSession(id.to_string()));
        }
        Ok(title)
    }

    /// The sessions a search box finds, most recently used first: those whose title has
    /// every word of `query` in it (as a prefix of one of its words), or one of whose
    /// messages has (the full-text index, stemmed: "walk" finds "walked"). An empty query
    /// finds every session.
    pub fn search_sessions(&self, query: &str) -> Result<Vec<SessionInfo>, StoreError> {
        let words: Vec<String> = query
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect();
        let all = self.list_sessions()?;
        if words.is_empty() {
            return Ok(all);
        }
        // Each word quoted (no FTS syntax gets through) and a prefix: "par" finds "Paris".
        let expr = words.iter().map(|w| format!("\"{w}\"*")).collect::<Vec<_>>().join(" ");
        let said: std::collections::HashSet<String> = {
            let conn = self.lock();
            let mut stmt =
                conn.prepare_cached("SELECT DISTINCT session_id FROM messages_fts WHERE messages_fts MATCH ?1")?;
            let rows = stmt.query_map(params![expr], |r| r.get::<_, String>(0))?;
            rows.collect::<Result<_, _>>()?
        };
        let titled = |title: &Option<String>| {
            let title: Vec<String> = title
                .as_deref()
                .unwrap_or_default()
                .split(|c: char| !c.is_alphanumeric())
                .map(str::to_lowercase)
                .collect();
            words.iter().all(|w| title.iter().any(|t| t.starts_with(w.as_str())))
        };
        Ok(all
            .into_iter()
            .filter(|s| said.contains(&s.id) || titled(&s.title))
            .collect())
    }

    /// Sessions, most recently used first.
    pub fn list_sessions(&self) -> Result<Vec<SessionInfo>, StoreError> {
        let conn = self.lock();
        let mut stmt = conn.prepare(
            "SELECT s.id, s.title, s.created_at, s.updated_at, s.model,
                    (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id)
             FROM sessions s ORDER BY s.updated_at DESC, s.id DESC",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok(SessionInfo {
                id: r.get(0)?,
                title: r.get(1)?,
                created_at: parse_time(&r.get::<_, String>(2)?),
                updated_at: parse_time(&r.get::<_, String>(3)?),
                model: r.get(4)?,
                messages: r.get(5)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Finds a session by its id or a unique prefix of it (ids are long to type).
    pub fn resolve_session(&self, id_or_prefix: &str) -> Result<String, StoreError> {
        let conn = self.lock();
        let mut stmt = conn.prepare("SELECT id FROM sessions WHERE id = ?1 OR id LIKE ?2 ESCAPE '\\' LIMIT 2")?;
        let like = format!(
            "{}%",
            id_or_prefix
                .replace('\\', "\\\\")
                .replace('%', "\\%")
                .replace('_', "\\_")
        );
        let ids: Vec<String> = stmt
            .query_map(params![id_or_prefix, like], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        if ids.iter().any(|i| i == id_or_prefix) {
            return Ok(id_or_prefix.to_string());
        }
        match ids.len() {
            0 => Err(StoreError::NoSession(id_or_prefix.to_string())),
            1 => Ok(ids.into_iter().next().unwrap_or_default()),
            _ => Err(StoreError::AmbiguousSession(id_or_prefix.to_string())),
        }
    }

    /// Loads a session with its whole record.
    pub fn load_session(&self, id: &str) -> Result<StoredSession, StoreError> {
        let conn = self.lock();
        let meta = conn
            .query_row(
                "SELECT id, title, created_at, updated_at, system_prompt, settings, provider, model FROM sessions WHERE id=?1",
                params![id],
                |r| {
                    Ok((
                        SessionMeta {
                            id: r.get(0)?,
                            title: r.get(1)?,
                            created_at: parse_time(&r.get::<_, String>(2)?),
                            updated_at: parse_time(&r.get::<_, String>(3)?),
                            system_prompt: r.get(4)?,
                            settings: HistorySettings::default(),
                            provider: r.get(6)?,
                            model: r.get(7)?,
                        },
                        r.get::<_, String>(5)?,
                    ))
                },
            )
            .optional()?
            .ok_or_else(|| StoreError::NoSession(id.to_string()))?;
        // Unreadable settings are named, not replaced by defaults: a session silently
        // resumed with another history window would send the model something else.
        let (mut meta, settings) = meta;
        meta.settings = serde_json::from_str(&settings).map_err(|source| StoreError::CorruptSettings {
            session: id.to_string(),
            source,
        })?;
        let mut stmt = conn.prepare("SELECT seq, body FROM messages WHERE session_id=?1 ORDER BY seq")?;
        let rows = stmt.query_map(params![id], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))?;
        let mut messages = Vec::new();
        for row in rows {
            let (seq, body) = row?;
            let m = serde_json::from_str(&body).map_err(|source| StoreError::Corrupt {
                session: id.to_string(),
                seq,
                source,
            })?;
            messages.push(m);
        }
        let summary = conn
            .query_row(
                "SELECT text, through_seq, created_at FROM summaries WHERE session_id=?1 ORDER BY version DESC LIMIT 1",
                params![id],
                |r| {
                    Ok(Summary {
                        text: r.get(0)?,
                        through_seq: r.get(1)?,
                        created_at: parse_time(&r.get::<_, String>(2)?),
                    })
                },
            )
            .optional()?;
        Ok(StoredSession {
            meta,
            summary,
            messages,
        })
    }

    /// Searches find meaning with `embed` from now on (`None`: words only). The vectors
    /// are made by an [`index::Indexer`].
    pub fn set_meaning(&self, embed: Option<std::sync::Arc<dyn index::Embed>>) {
        *self.meaning.lock().unwrap_or_else(|p| p.into_inner()) = embed;
    }

    /// The embedding model searches use, if one is loaded.
    pub fn meaning(&self) -> Option<std::sync::Arc<dyn index::Embed>> {
        self.meaning.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Searches the messages of every session by words, and by meaning when an embedding
    /// model is loaded, as `fusion` says ([`memory::Fusion::recall`] for recall and its
    /// tool, [`memory::Fusion::search`] for the Memory view and `hark memory search`). A
    /// model that fails on the query leaves the words (the failure is logged).
    pub fn search(
        &self,
        query: &str,
        exclude: Option<memory::Exclude<'_>>,
        limit: usize,
        fusion: memory::Fusion,
    ) -> Result<Vec<memory::Found>, StoreError> {
        let embed = self.meaning();
        let vector = embed.as_ref().and_then(|e| match e.embed_query(query) {
            Ok(v) => Some(v),
            Err(err) => {
                tracing::warn!("searching by words only: {err}");
                None
            }
        });
        let meaning = embed.as_ref().zip(vector.as_deref()).map(|(e, v)| memory::Meaning {
            model: e.model_id(),
            vector: v,
        });
        self.search_memory(query, meaning, exclude, limit, fusion)
    }

    /// Writes the WAL into the database file (the file's size is then the data's).
    pub fn checkpoint(&self) -> Result<(), StoreError> {
        self.lock()
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
        Ok(())
    }

    /// Deletes a session and everything in it.
    pub fn delete_session(&self, id: &str) -> Result<(), StoreError> {
        if self.lock().execute("DELETE FROM sessions WHERE id=?1", params![id])? == 0 {
            return Err(StoreError::NoSession(id.to_string()));
        }
        Ok(())
    }

    /// Writes a whole session (an import) in one transaction: all of it or nothing.
    pub fn insert_session(&self, session: &StoredSession) -> Result<(), StoreError> {
        self.insert_sessions(std::slice::from_ref(session))
    }

    /// Writes whole sessions (the conversations of one imported file) in one transaction:
    /// all of them or none.
    pub fn insert_sessions(&self, sessions: &[StoredSession]) -> Result<(), StoreError> {
        let mut conn = self.lock();
        let tx = conn.transaction()?;
        for session in sessions {
            insert_session(&tx, &session.meta)?;
            {
                let mut stmt = tx.prepare_cached(INSERT_MESSAGE)?;
                for (seq, m) in session.messages.iter().enumerate() {
                    stmt.execute(message_params(&session.meta.id, seq, m)?)?;
                }
            }
            if let Some(s) = &session.summary {
                insert_summary(&tx, &session.meta.id, s)?;
            }
        }
        tx.commit()?;
        drop(conn);
        self.wrote();
        Ok(())
    }
}

/// A new message at a position no other message holds: a conflict is an error, never an
/// overwrite.
const INSERT_MESSAGE: &str = "INSERT INTO messages (session_id, seq, id, kind, text, created_at, body)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";

type MessageRow<'a> = (&'a str, i64, &'a str, &'static str, &'a str, String, String);

/// The kind, searchable text and JSON body of a message, as stored.
fn message_columns<'a>(session_id: &str, m: &'a Message) -> Result<(&'static str, &'a str, String), StoreError> {
    // Serialising our own types cannot fail (string keys only); map it anyway, no panic.
    let body = serde_json::to_string(m).map_err(|source| StoreError::Corrupt {
        session: session_id.to_string(),
        seq: -1,
        source,
    })?;
    Ok((m.kind_name(), m.text(), body))
}

fn message_params<'a>(session_id: &'a str, seq: usize, m: &'a Message) -> Result<MessageRow<'a>, StoreError> {
    let (kind, text, body) = message_columns(session_id, m)?;
    Ok((
        session_id,
        seq as i64,
        &m.id,
        kind,
        text,
        m.created_at.to_rfc3339(),
        body,
    ))
}

/// Adds the next version of a session's summary (versions keep every fold and edit).
fn insert_summary(conn: &Connection, session_id: &str, summary: &Summary) -> Result<(), StoreError> {
    conn.execute(
        "INSERT INTO summaries (session_id, version, text, through_seq, created_at)
         VALUES (?1, (SELECT COALESCE(MAX(version), 0) + 1 FROM summaries WHERE session_id=?1), ?2, ?3, ?4)",
        params![
            session_id,
            summary.text,
            summary.through_seq,
            summary.created_at.to_rfc3339()
        ],
    )?;
    Ok(())
}

fn insert_session(conn: &Connection, meta: &SessionMeta) -> Result<(), StoreError> {
    conn.execute(
        "INSERT INTO sessions (id, title, created_at, updated_at, system_prompt, settings, provider, model)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![
            meta.id,
            meta.title,
            meta.created_at.to_rfc3339(),
            meta.updated_at.to_rfc3339(),
            meta.system_prompt,
            serde_json::to_string(&meta.settings).unwrap_or_default(),
            meta.provider,
            meta.model
        ],
    )?;
    Ok(())
}

/// How long a write waits for another connection's.
const BUSY: Duration = Duration::from_secs(5);

/// How long opening waits for another process that is opening (and migrating) the same
/// database.
const OPEN_WAIT: Duration = Duration::from_secs(60);

/// Puts the database in WAL mode. Leaving a rollback journal (a new file, or one an older
/// Hark or another tool wrote) needs the file to itself, and SQLite answers `SQLITE_BUSY`
/// at once, without its busy handler, while another connection reads it, as one opening
/// at the same moment does (issue 9: two processes opening an old database at once).
/// So the switch is retried until [`OPEN_WAIT`] has passed.
fn enter_wal(conn: &Connection) -> rusqlite::Result<()> {
    let deadline = Instant::now() + OPEN_WAIT;
    loop {
        match conn.pragma_update(None, "journal_mode", "WAL") {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy && Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(10));
            }
            done => return done,
        }
    }
}

enum Migration {
    TooNew(i64),
    Sql(rusqlite::Error),
}

impl From<rusqlite::Error> for Migration {
    fn from(e: rusqlite::Error) -> Self {
        Migration::Sql(e)
    }
}

/// Brings the schema to [`SCHEMA_VERSION`] in one `BEGIN IMMEDIATE` transaction: a migration
/// killed midway leaves the database as it was, and two processes opening an old database
/// at once migrate it one after the other (the second finds it done). Each step is
/// idempotent, so even a database left half-migrated by an older Hark opens (issue 9).
fn migrate(conn: &mut Connection) -> Result<(), Migration> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let version: i64 = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if version > SCHEMA_VERSION {
        return Err(Migration::TooNew(version));
    }
    if version == SCHEMA_VERSION {
        return Ok(());
    }
    tx.execute_batch(SCHEMA)?;
    tx.execute_batch(vectors::SCHEMA)?;
    if version == 1 {
        // Schema 1 had no full-text index: index what is already recorded (from scratch,
        // whatever an interrupted older migration left in it).
        tx.execute_batch(
            "DELETE FROM messages_fts;
             INSERT INTO messages_fts (rowid, text, session_id, seq) SELECT rowid, text, session_id, seq FROM messages;",
        )?;
    }
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    tx.commit()?;
    Ok(())
}

/// A session title from the first user message: one line, at most 60 characters.
pub fn title_of(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default().trim();
    if line.chars().count() <= 60 {
        line.to_string()
    } else {
        format!("{}…", line.chars().take(59).collect::<String>())
    }
}

fn parse_time(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s)
        .map(|t| t.with_timezone(&Utc))
        .unwrap_or_default()
}

/// The default database path: `<data dir>/hark/hark.db` (e.g. `~/.local/share/hark/hark.db`).
pub fn default_db_path() -> PathBuf {
    directories::ProjectDirs::from("app", "hark", "hark")
        .map(|d| d.data_dir().join("hark.db"))
        .unwrap_or_else(|| PathBuf::from("hark.db"))
}

#[cfg(test)]
mod tests;
