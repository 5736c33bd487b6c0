//! Meaning beside the words (issue 24): one embedding per user or assistant message and
//! per remembered fact, kept in the same SQLite file as the messages, and the stored
//! vectors nearest to a query's.
//!
//! # Rules
//! - A vector belongs to its row and to the model that made it. Deleting a session (its
//!   messages) or forgetting a fact deletes its vectors (foreign keys, `ON DELETE
//!   CASCADE`); an edit of a message's or a fact's text deletes its vector (a trigger), so
//!   it is embedded again. Rows with no vector of the current model are *unembedded*.
//! - A vector is written only while its row still holds the text it was made from, so a
//!   vector can never describe an older text.
//! - Search is brute force: cosine (a dot product of unit vectors) over an in-memory copy
//!   of every message vector. On 2 cores that is a few milliseconds per 10,000 messages,
//!   so no approximate index (and no `sqlite-vec`) is needed. The copy follows the table:
//!   rows added since are read by id, and any deletion (counted by a trigger, in any
//!   process) reloads it whole.

use rusqlite::{params, Connection};

use super::memory::Exclude;
use super::{Store, StoreError};

/// Schema 3: the vectors and what keeps them true to their rows.
pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS message_vectors (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    seq        INTEGER NOT NULL,
    model      TEXT NOT NULL,
    vector     BLOB NOT NULL,
    UNIQUE (session_id, seq),
    FOREIGN KEY (session_id, seq) REFERENCES messages(session_id, seq) ON DELETE CASCADE
);
CREATE TABLE IF NOT EXISTS fact_vectors (
    fact_id TEXT PRIMARY KEY REFERENCES facts(id) ON DELETE CASCADE,
    model   TEXT NOT NULL,
    vector  BLOB NOT NULL
);
CREATE TRIGGER IF NOT EXISTS message_vectors_stale AFTER UPDATE OF text ON messages
WHEN old.text IS NOT new.text BEGIN
    DELETE FROM message_vectors WHERE session_id = old.session_id AND seq = old.seq;
END;
CREATE TRIGGER IF NOT EXISTS fact_vectors_stale AFTER UPDATE OF text ON facts
WHEN old.text IS NOT new.text BEGIN
    DELETE FROM fact_vectors WHERE fact_id = old.id;
END;
-- Deletions of message vectors, counted for the in-memory copies of every process.
CREATE TABLE IF NOT EXISTS vector_deletions (one INTEGER PRIMARY KEY CHECK (one = 1), n INTEGER NOT NULL);
INSERT OR IGNORE INTO vector_deletions VALUES (1, 0);
CREATE TRIGGER IF NOT EXISTS message_vectors_deleted AFTER DELETE ON message_vectors BEGIN
    UPDATE vector_deletions SET n = n + 1 WHERE one = 1;
END;
";

/// What a vector belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum VectorKey {
    /// A message: its session and record index.
    Message { session_id: String, seq: i64 },
    /// A remembered fact.
    Fact { id: String },
}

/// A row that has no vector of the current model yet, with the text to embed.
#[derive(Debug, Clone, PartialEq)]
pub struct Unembedded {
    pub key: VectorKey,
    pub text: String,
}

/// How far indexing has come: rows with a vector of the current model, of all rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct IndexProgress {
    pub done: u64,
    pub total: u64,
}

impl IndexProgress {
    pub fn complete(&self) -> bool {
        self.done >= self.total
    }
}

/// The in-memory copy of the message vectors of one model.
#[derive(Default)]
pub(super) struct VectorCache {
    model: String,
    /// The highest row id read.
    last_id: i64,
    /// `vector_deletions.n` when last read.
    deletions: i64,
    dim: usize,
    keys: Vec<Row>,
    /// `keys.len() * dim` floats, row by row.
    data: Vec<f32>,
    /// Each message's row in `keys`.
    rows: std::collections::HashMap<(String, i64), usize>,
}

/// What search needs to know of a vector's message.
#[derive(Debug, Clone)]
struct Row {
    session_id: String,
    seq: i64,
    /// Said by the user (not Hark).
    user: bool,
    /// It ends with a question mark: it asks rather than states.
    question: bool,
}

/// Which messages a meaning search ranks, and how.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Nearest {
    /// Only what the user said: what the user told Hark is what recall is for.
    pub user_only: bool,
    /// Whether questions are found at all (an earlier question states nothing: recalled,
    /// "What's my name?" only crowds out "My name is Sam.").
    pub questions: bool,
    /// Taken off a question's similarity when ranking: an earlier question states
    /// nothing, so it is rarely what a question now is looking for.
    pub question_penalty: f32,
    /// Least similarity (before the penalty) for a message to be found at all.
    pub min_similarity: f32,
}

/// A vector as stored: little-endian f32s.
fn to_blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn from_blob(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// The dot product, in 8 lanes so the compiler vectorises it.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ca.remainder().iter().zip(cb.remainder()).map(|(x, y)| x * y).sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    acc.iter().sum::<f32>() + tail
}

impl VectorCache {
    /// Brings the copy up to date with the table for `model`.
    fn sync(&mut self, conn: &Connection, model: &str) -> Result<(), StoreError> {
        let deletions: i64 = conn.query_row("SELECT n FROM vector_deletions WHERE one = 1", [], |r| r.get(0))?;
        if self.model != model || deletions != self.deletions {
            *self = VectorCache {
                model: model.to_string(),
                deletions,
                ..VectorCache::default()
            };
        }
        let mut stmt = conn.prepare_cached(
            "SELECT v.id, v.session_id, v.seq, v.vector, m.kind = 'user', rtrim(m.text) LIKE '%?'
             FROM message_vectors v JOIN messages m ON m.session_id = v.session_id AND m.seq = v.seq
             WHERE v.id > ?1 AND v.model = ?2 ORDER BY v.id",
        )?;
        let mut rows = stmt.query(params![self.last_id, model])?;
        while let Some(r) = rows.next()? {
            let id: i64 = r.get(0)?;
            let blob: Vec<u8> = r.get(3)?;
            let v = from_blob(&blob);
            self.last_id = id;
            if self.dim == 0 {
                self.dim = v.len();
            }
            // A vector of another length (a corrupt row) is left out rather than misread.
            if v.len() != self.dim || v.is_empty() {
                continue;
            }
            let (session_id, seq): (String, i64) = (r.get(1)?, r.get(2)?);
            self.rows.insert((session_id.clone(), seq), self.keys.len());
            self.keys.push(Row {
                session_id,
                seq,
                user: r.get(4)?,
                question: r.get(5)?,
            });
            self.data.extend_from_slice(&v);
        }
        Ok(())
    }

    /// The `limit` rows ranked best for `query` under `how`, best first, leaving out what
    /// `exclude` says: `(row, similarity, rank score)`.
    fn nearest(
        &self,
        query: &[f32],
        exclude: Option<Exclude<'_>>,
        limit: usize,
        how: Nearest,
    ) -> Vec<(usize, f32, f32)> {
        if self.dim == 0 || query.len() != self.dim || limit == 0 {
            return Vec::new();
        }
        let mut best: Vec<(usize, f32, f32)> = Vec::with_capacity(limit + 1);
        for (i, v) in self.data.chunks_exact(self.dim).enumerate() {
            let s = dot(query, v);
            if s < how.min_similarity {
                continue;
            }
            let row = &self.keys[i];
            if how.user_only && !row.user || !how.questions && row.question {
                continue;
            }
            let score = if row.question { s - how.question_penalty } else { s };
            if best.len() == limit && score <= best[limit - 1].2 {
                continue;
            }
            if let Some(e) = exclude {
                if row.session_id == e.session_id && (row.seq >= e.from_seq as i64 || row.seq < e.below_seq as i64) {
                    continue;
                }
            }
            let at = best.partition_point(|b| b.2 >= score);
            best.insert(at, (i, s, score));
            best.truncate(limit);
        }
        best
    }
}

impl Store {
    /// User and assistant messages, then facts, with no vector of `model`, oldest first.
    pub fn unembedded(&self, model: &str, limit: usize) -> Result<Vec<Unembedded>, StoreError> {
        let conn = self.lock();
        let mut out = Vec::new();
        let mut stmt = conn.prepare_cached(
            "SELECT m.session_id, m.seq, m.text FROM messages m
             LEFT JOIN message_vectors v ON v.session_id = m.session_id AND v.seq = m.seq AND v.model = ?1
             WHERE v.id IS NULL AND m.kind IN ('user', 'assistant') AND m.text != ''
             ORDER BY m.created_at, m.rowid LIMIT ?2",
        )?;
        let rows = stmt.query_map(params![model, limit as i64], |r| {
            Ok(Unembedded {
                key: VectorKey::Message {
                    session_id: r.get(0)?,
                    seq: r.get(1)?,
                },
                text: r.get(2)?,
            })
        })?;
        out.extend(rows.collect::<Result<Vec<_>, _>>()?);
        if out.len() < limit {
            let mut stmt = conn.prepare_cached(
                "SELECT f.id, f.text FROM facts f
                 LEFT JOIN fact_vectors v ON v.fact_id = f.id AND v.model = ?1
                 WHERE v.fact_id IS NULL ORDER BY f.created_at, f.id LIMIT ?2",
            )?;
            let rows = stmt.query_map(params![model, (limit - out.len()) as i64], |r| {
                Ok(Unembedded {
                    key: VectorKey::Fact { id: r.get(0)? },
                    text: r.get(1)?,
                })
            })?;
            out.extend(rows.collect::<Result<Vec<_>, _>>()?);
        }
        Ok(out)
    }

    /// How many of the rows to embed have a vector of `model`.
    pub fn index_progress(&self, model: &str) -> Result<IndexProgress, StoreError> {
        let conn = self.lock();
        let (total, done): (i64, i64) = conn.query_row(
            "SELECT
               (SELECT COUNT(*) FROM messages WHERE kind IN ('user', 'assistant') AND text != '')
                 + (SELECT COUNT(*) FROM facts),
               (SELECT COUNT(*) FROM message_vectors v JOIN messages m ON m.session_id = v.session_id AND m.seq = v.seq
                  WHERE v.model = ?1 AND m.kind IN ('user', 'assistant') AND m.text != '')
                 + (SELECT COUNT(*) FROM fact_vectors WHERE model = ?1)",
            params![model],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        Ok(IndexProgress {
            done: done as u64,
            total: total as u64,
        })
    }

    /// Stores vectors made by `model` from the texts in `rows`, in one transaction. A row
    /// whose text has changed since (or that is gone) gets none: it is still unembedded.
    /// Returns how many were stored.
    pub fn put_vectors(&self, model: &str, rows: &[(Unembedded, Vec<f32>)]) -> Result<usize, StoreError> {
        let mut conn = self.lock();
        let tx = conn.transaction()?;
        let mut n = 0;
        for (row, v) in rows {
            let blob = to_blob(v);
            n += match &row.key {
                VectorKey::Message { session_id, seq } => tx
                    .prepare_cached(
                        "INSERT OR REPLACE INTO message_vectors (session_id, seq, model, vector)
                     SELECT session_id, seq, ?3, ?4 FROM messages WHERE session_id = ?1 AND seq = ?2 AND text = ?5",
                    )?
                    .execute(params![session_id, seq, model, blob, row.text])?,
                VectorKey::Fact { id } => tx
                    .prepare_cached(
                        "INSERT OR REPLACE INTO fact_vectors (fact_id, model, vector)
                     SELECT id, ?2, ?3 FROM facts WHERE id = ?1 AND text = ?4",
                    )?
                    .execute(params![id, model, blob, row.text])?,
            };
        }
        tx.commit()?;
        Ok(n)
    }

    /// The messages whose vectors of `model` rank best for `query` (a unit vector) under
    /// `how`, best first: `(session_id, seq, similarity, rank score)`.
    pub fn nearest_messages(
        &self,
        model: &str,
        query: &[f32],
        exclude: Option<Exclude<'_>>,
        limit: usize,
        how: Nearest,
    ) -> Result<Vec<(String, i64, f32, f32)>, StoreError> {
        let conn = self.lock();
        let mut cache = self.vectors.lock().unwrap_or_else(|p| p.into_inner());
        cache.sync(&conn, model)?;
        Ok(cache
            .nearest(query, exclude, limit, how)
            .into_iter()
            .map(|(i, s, score)| (cache.keys[i].session_id.clone(), cache.keys[i].seq, s, score))
            .collect())
    }

    /// Each message's similarity to `query` (a unit vector) under `model`, for those of
    /// `messages` (session, seq) that have a vector.
    pub fn message_similarities(
        &self,
        model: &str,
        query: &[f32],
        messages: &[(&str, i64)],
    ) -> Result<Vec<Option<f32>>, StoreError> {
        let conn = self.lock();
        let mut cache = self.vectors.lock().unwrap_or_else(|p| p.into_inner());
        cache.sync(&conn, model)?;
        let dim = cache.dim;
        Ok(messages
            .iter()
            .map(|(s, seq)| {
                let i = *cache.rows.get(&(s.to_string(), *seq))?;
                (query.len() == dim).then(|| dot(query, &cache.data[i * dim..(i + 1) * dim]))
            })
            .collect())
    }

    /// Each fact's similarity to `query` under `model`, for the facts that have a vector.
    pub fn fact_similarities(&self, model: &str, query: &[f32]) -> Result<Vec<(String, f32)>, StoreError> {
        let conn = self.lock();
        let mut stmt = conn.prepare_cached("SELECT fact_id, vector FROM fact_vectors WHERE model = ?1")?;
        let rows = stmt.query_map(params![model], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, Vec<u8>>(1)?))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (id, blob) = row?;
            let v = from_blob(&blob);
            if v.len() == query.len() {
                out.push((id, dot(query, &v)));
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::{AssistantMessage, HistorySettings, Message, MessageKind};
    use crate::store::SessionMeta;

    const M: &str = "test-model";

    /// Every message, no penalty, at least `min` similar.
    fn all(min: f32) -> Nearest {
        Nearest {
            user_only: false,
            questions: true,
            question_penalty: 0.0,
            min_similarity: min,
        }
    }

    fn unit(v: &[f32]) -> Vec<f32> {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / n).collect()
    }

    /// A fake embedding: each text's vector is given by the test.
    fn embed_all(store: &Store, vectors: &[(&str, [f32; 3])]) -> usize {
        let rows = store.unembedded(M, 100).unwrap();
        let made: Vec<(Unembedded, Vec<f32>)> = rows
            .into_iter()
            .map(|r| {
                let v = vectors
                    .iter()
                    .find(|(t, _)| *t == r.text)
                    .map(|(_, v)| unit(v))
                    .unwrap();
                (r, v)
            })
            .collect();
        store.put_vectors(M, &made).unwrap()
    }

    fn say(store: &Store, session: &str, text: &str) -> Message {
        let m = Message::new(MessageKind::User { text: text.into() });
        store.save_message(session, &m).unwrap();
        m
    }

    #[test]
    fn vectors_follow_their_rows_through_edits_deletes_and_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v.db");
        let store = Store::open(&path).unwrap();
        for id in ["s1", "s2"] {
            store
                .create_session(&SessionMeta::new(id, "", HistorySettings::default()))
                .unwrap();
        }
        let heating = [1.0, 0.1, 0.0];
        let lisbon = [0.0, 1.0, 0.1];
        let mut m = say(&store, "s1", "The radiator in the bedroom is broken.");
        say(&store, "s2", "I fly to Lisbon on Friday.");
        let fact = store.add_fact("The user takes tea without sugar.", None).unwrap();
        assert_eq!(store.index_progress(M).unwrap(), IndexProgress { done: 0, total: 3 });
        let vecs = [
            ("The radiator in the bedroom is broken.", heating),
            ("I fly to Lisbon on Friday.", lisbon),
            ("The user takes tea without sugar.", [0.0, 0.0, 1.0]),
        ];
        assert_eq!(embed_all(&store, &vecs), 3);
        assert!(store.unembedded(M, 10).unwrap().is_empty());
        assert!(store.index_progress(M).unwrap().complete());

        let near = store
            .nearest_messages(M, &unit(&[1.0, 0.0, 0.0]), None, 5, all(0.5))
            .unwrap();
        assert_eq!(near.len(), 1, "{near:?}");
        assert_eq!((near[0].0.as_str(), near[0].1), ("s1", 0));
        // Excluded: what the model already sees in s1.
        let ex = Exclude {
            session_id: "s1",
            from_seq: 0,
            below_seq: 0,
        };
        assert!(store
            .nearest_messages(M, &unit(&[1.0, 0.0, 0.0]), Some(ex), 5, all(0.5))
            .unwrap()
            .is_empty());

        // A vector survives a reopen (a restart).
        drop(store);
        let store = Store::open(&path).unwrap();
        assert!(store.unembedded(M, 10).unwrap().is_empty());
        assert_eq!(
            store.nearest_messages(M, &unit(&lisbon), None, 1, all(0.5)).unwrap()[0].0,
            "s2"
        );

        // An edit makes the message unembedded again; a vector made from the old text is
        // refused.
        let old = Unembedded {
            key: VectorKey::Message {
                session_id: "s1".into(),
                seq: 0,
            },
            text: "The radiator in the bedroom is broken.".into(),
        };
        m.kind = MessageKind::User {
            text: "The boiler is broken.".into(),
        };
        store.save_message("s1", &m).unwrap();
        assert_eq!(store.put_vectors(M, &[(old, unit(&heating))]).unwrap(), 0);
        let pending = store.unembedded(M, 10).unwrap();
        assert_eq!(pending.len(), 1);
        assert_eq!(pending[0].text, "The boiler is broken.");
        assert!(store
            .nearest_messages(M, &unit(&heating), None, 5, all(0.5))
            .unwrap()
            .is_empty());

        // Deleting the session deletes its vectors; forgetting a fact deletes its vector.
        store.delete_session("s2").unwrap();
        assert!(store
            .nearest_messages(M, &unit(&lisbon), None, 5, all(0.5))
            .unwrap()
            .is_empty());
        let left: i64 = store
            .lock()
            .query_row("SELECT COUNT(*) FROM message_vectors", [], |r| r.get(0))
            .unwrap();
        assert_eq!(left, 0);
        assert_eq!(store.fact_similarities(M, &unit(&[0.0, 0.0, 1.0])).unwrap().len(), 1);
        store.delete_fact(&fact.id).unwrap();
        assert!(store.fact_similarities(M, &unit(&[0.0, 0.0, 1.0])).unwrap().is_empty());
        // Another model's vectors are not this one's.
        assert_eq!(store.unembedded("other-model", 10).unwrap().len(), 1);
    }

    #[test]
    fn the_nearest_are_found_best_first_among_many() {
        let store = Store::open_in_memory().unwrap();
        store
            .create_session(&SessionMeta::new("s", "", HistorySettings::default()))
            .unwrap();
        let mut rows = Vec::new();
        for i in 0..200 {
            let text = format!("message {i}");
            say(&store, "s", &text);
            let a = i as f32 / 200.0;
            rows.push((text, unit(&[a, 1.0 - a, 0.0])));
        }
        let pending = store.unembedded(M, 1000).unwrap();
        let made: Vec<_> = pending
            .into_iter()
            .map(|p| {
                let v = rows.iter().find(|(t, _)| *t == p.text).unwrap().1.clone();
                (p, v)
            })
            .collect();
        assert_eq!(store.put_vectors(M, &made).unwrap(), 200);
        let near = store
            .nearest_messages(M, &unit(&[1.0, 0.0, 0.0]), None, 3, all(-1.0))
            .unwrap();
        let seqs: Vec<i64> = near.iter().map(|n| n.1).collect();
        assert_eq!(seqs, [199, 198, 197]);
        assert!(near[0].2 >= near[1].2 && near[1].2 >= near[2].2);
    }

    #[test]
    fn recall_ranks_what_the_user_stated_above_questions_and_hark_s_replies() {
        let store = Store::open_in_memory().unwrap();
        store
            .create_session(&SessionMeta::new("s", "", HistorySettings::default()))
            .unwrap();
        say(&store, "s", "Is the heating on?");
        say(&store, "s", "The heating is broken.");
        store
            .save_message(
                "s",
                &Message::new(MessageKind::Assistant(AssistantMessage {
                    generated: "I'm sorry the heating is broken.".into(),
                    ..Default::default()
                })),
            )
            .unwrap();
        let pending = store.unembedded(M, 10).unwrap();
        let made: Vec<_> = pending.into_iter().map(|p| (p, unit(&[1.0, 0.0, 0.0]))).collect();
        store.put_vectors(M, &made).unwrap();
        let mut how = Nearest {
            user_only: true,
            questions: true,
            question_penalty: 0.1,
            min_similarity: 0.3,
        };
        let near = store
            .nearest_messages(M, &unit(&[1.0, 0.0, 0.0]), None, 5, how)
            .unwrap();
        let seqs: Vec<i64> = near.iter().map(|n| n.1).collect();
        assert_eq!(seqs, [1, 0], "the statement, then the question; not the reply");
        assert!((near[1].3 - (near[1].2 - 0.1)).abs() < 1e-6);
        how.questions = false;
        let near = store
            .nearest_messages(M, &unit(&[1.0, 0.0, 0.0]), None, 5, how)
            .unwrap();
        assert_eq!(near.iter().map(|n| n.1).collect::<Vec<_>>(), [1]);
    }

    #[test]
    fn dot_handles_every_length() {
        for n in [0, 1, 7, 8, 9, 384] {
            // Small integers: every partial sum is exact, in any order.
            let a: Vec<f32> = (0..n).map(|i| (i % 5) as f32).collect();
            let want: f32 = a.iter().map(|x| x * x).sum();
            assert_eq!(dot(&a, &a), want, "{n}");
        }
    }
}
