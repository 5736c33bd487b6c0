//! Long-term memory in the store (rule 12): facts the user asked Hark to remember, and
//! search over the messages of every session: by words (SQLite FTS5), and by meaning
//! with the vectors of `vectors` (issue 24), the two merged by reciprocal-rank fusion.

use chrono::{DateTime, Utc};
use rusqlite::{params, OptionalExtension};
use serde::{Deserialize, Serialize};

pub use super::vectors::Nearest;
use super::{parse_time, Store, StoreError};

/// A fact the user asked Hark to remember ("remember that I take my tea without sugar").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Fact {
    pub id: String,
    pub text: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// The session in which it was remembered, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

/// A message found by full-text search.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct SearchHit {
    pub session_id: String,
    pub session_title: Option<String>,
    /// Record index of the message in its session.
    pub seq: i64,
    /// "user" or "assistant".
    pub kind: String,
    pub text: String,
    pub created_at: DateTime<Utc>,
}

/// Why a message was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "lowercase")]
pub enum Matched {
    /// Its words (FTS5).
    Words,
    /// Its meaning (the nearest vectors).
    Meaning,
    /// Both.
    Both,
}

/// A message found by [`Store::search_memory`], with why and how well.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Found {
    #[serde(flatten)]
    pub hit: SearchHit,
    pub matched: Matched,
    /// Its score in the search (see [`Fusion`]): higher is better.
    pub score: f32,
    /// Cosine similarity of its meaning to the query's, when it has a vector.
    pub similarity: Option<f32>,
}

/// The query's meaning for [`Store::search_memory`]: its unit vector under `model`.
#[derive(Debug, Clone, Copy)]
pub struct Meaning<'a> {
    pub model: &'a str,
    pub vector: &'a [f32],
}

/// How the two searches are merged (measured on the labelled set of `benches/recall.rs`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fusion {
    /// Candidates taken from each search.
    pub depth: usize,
    /// How the meaning search ranks and what it leaves out; the word search's results are
    /// held to the same (a word in common is no reason to recall a message about
    /// something else).
    pub nearest: Nearest,
    /// Added to the score of a message the word search found too.
    pub words_bonus: f32,
    /// Whether the word search's results are held to the floor of meaning (recall: a word
    /// in common is no reason to recall a message about something else). A search the
    /// user types shows every message with the words, below those found by meaning.
    pub words_need_meaning: bool,
    /// Merge by reciprocal-rank fusion with this constant instead (each search's rank r
    /// scores 1 / (k + r)); measured worse, kept for the benchmark's comparison.
    pub rrf: Option<f32>,
}

impl Fusion {
    /// Recall (rule 12) and `search_past_conversations`: what the user stated, in the order
    /// of meaning; the word search only brings candidates, each judged by its meaning like
    /// the others. Measured on the labelled set (`scripts/bench-recall.sh`): plain
    /// reciprocal-rank fusion of the two searches reached hit@3 0.71 (0.44 on paraphrases,
    /// where every result of the word search is wrong and still gets a vote); this 0.92
    /// (0.83), hit@1 0.85; ranking questions 0.15 lower instead of leaving them out, 0.92
    /// (0.83) at hit@1 0.79, 0.10 lower 0.90 (0.81); a bonus of 0.05 for a word in common
    /// 0.88 (0.75); a floor of 0.35 lost paraphrases (0.82, 0.64), 0.25 gained nothing.
    pub fn recall() -> Self {
        Self {
            depth: 20,
            nearest: Nearest {
                user_only: true,
                questions: false,
                question_penalty: 0.0,
                min_similarity: 0.30,
            },
            words_bonus: 0.0,
            words_need_meaning: true,
            rrf: None,
        }
    }

    /// The Memory view and `hark memory search`: every message, by the same order, an
    /// earlier question 0.15 lower than a statement as near, and every message with the
    /// words searched for (those not near in meaning after the others).
    pub fn search() -> Self {
        Self {
            nearest: Nearest {
                user_only: false,
                questions: true,
                question_penalty: 0.15,
                min_similarity: 0.30,
            },
            words_need_meaning: false,
            ..Self::recall()
        }
    }
}

/// Where a search must not look in one session: what the model already sees (from
/// `from_seq` on) and what the user reset away (before `below_seq`).
#[derive(Debug, Clone, Copy)]
pub struct Exclude<'a> {
    pub session_id: &'a str,
    /// Messages at or after this record index are left out.
    pub from_seq: usize,
    /// Messages before this record index are left out (0: none).
    pub below_seq: usize,
}

/// Longest fact accepted, in characters: a fact is a sentence, not a document.
pub const MAX_FACT_CHARS: usize = 500;

/// Errors of memory edits, each naming the problem.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MemoryError {
    #[error("a fact cannot be empty")]
    EmptyFact,
    #[error("a fact is at most {MAX_FACT_CHARS} characters (this one has {0})")]
    FactTooLong(usize),
    #[error("no remembered fact {0:?}")]
    NoFact(String),
    #[error("fact id {0:?} matches several facts; give more characters")]
    AmbiguousFact(String),
    #[error("no remembered fact contains {0:?}")]
    NoMatch(String),
    #[error("several remembered facts match {0:?} ({1}); name the one to forget exactly")]
    SeveralMatch(String, String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<rusqlite::Error> for MemoryError {
    fn from(e: rusqlite::Error) -> Self {
        MemoryError::Store(StoreError::Sql(e))
    }
}

fn check_fact(text: &str) -> Result<String, MemoryError> {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.is_empty() {
        return Err(MemoryError::EmptyFact);
    }
    let n = text.chars().count();
    if n > MAX_FACT_CHARS {
        return Err(MemoryError::FactTooLong(n));
    }
    Ok(text)
}

impl Store {
    /// Remembers a fact. The same text remembered twice is kept once (the existing fact is
    /// returned).
    pub fn add_fact(&self, text: &str, session_id: Option<&str>) -> Result<Fact, MemoryError> {
        let text = check_fact(text)?;
        let conn = self.lock();
        let existing = conn
            .query_row(
                "SELECT id, text, created_at, updated_at, session_id FROM facts WHERE lower(text) = lower(?1)",
                params![text],
                fact_row,
            )
            .optional()?;
        if let Some(f) = existing {
            return Ok(f);
        }
        let now = Utc::now();
        let fact = Fact {
            id: crate::conversation::new_id(),
            text,
            created_at: now,
            updated_at: now,
            session_id: session_id.map(str::to_string),
        };
        conn.execute(
            "INSERT INTO facts (id, text, created_at, updated_at, session_id) VALUES (?1, ?2, ?3, ?3, ?4)",
            params![fact.id, fact.text, now.to_rfc3339(), fact.session_id],
        )?;
        drop(conn);
        self.wrote();
        Ok(fact)
    }

    /// Every remembered fact, oldest first.
    pub fn facts(&self) -> Result<Vec<Fact>, StoreError> {
        let conn = self.lock();
        let mut stmt =
            conn.prepare("SELECT id, text, created_at, updated_at, session_id FROM facts ORDER BY created_at, id")?;
        let rows = stmt.query_map([], fact_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Finds a fact by its id or a unique prefix of it.
    pub fn resolve_fact(&self, id_or_prefix: &str) -> Result<String, MemoryError> {
        let ids: Vec<String> = {
            let conn = self.lock();
            let mut stmt =
                conn.prepare("SELECT id FROM facts WHERE id = ?1 OR substr(id, 1, length(?1)) = ?1 LIMIT 2")?;
            let rows = stmt.query_map(params![id_or_prefix], |r| r.get(0))?;
            rows.collect::<Result<_, _>>()?
        };
        if id_or_prefix.is_empty() || ids.is_empty() {
            return Err(MemoryError::NoFact(id_or_prefix.to_string()));
        }
        if ids.iter().any(|i| i == id_or_prefix) {
            return Ok(id_or_prefix.to_string());
        }
        match ids.len() {
            1 => Ok(ids.into_iter().next().unwrap_or_default()),
            _ => Err(MemoryError::AmbiguousFact(id_or_prefix.to_string())),
        }
    }

    /// Rewrites a fact (id or unique prefix).
    pub fn update_fact(&self, id: &str, text: &str) -> Result<Fact, MemoryError> {
        let text = check_fact(text)?;
        let id = self.resolve_fact(id)?;
        let conn = self.lock();
        conn.execute(
            "UPDATE facts SET text = ?2, updated_at = ?3 WHERE id = ?1",
            params![id, text, Utc::now().to_rfc3339()],
        )?;
        let fact = conn.query_row(
            "SELECT id, text, created_at, updated_at, session_id FROM facts WHERE id = ?1",
            params![id],
            fact_row,
        )?;
        drop(conn);
        self.wrote();
        Ok(fact)
    }

    /// Forgets a fact (id or unique prefix). Returns what was forgotten.
    pub fn delete_fact(&self, id: &str) -> Result<Fact, MemoryError> {
        let id = self.resolve_fact(id)?;
        let conn = self.lock();
        let fact = conn.query_row(
            "SELECT id, text, created_at, updated_at, session_id FROM facts WHERE id = ?1",
            params![id],
            fact_row,
        )?;
        conn.execute("DELETE FROM facts WHERE id = ?1", params![id])?;
        Ok(fact)
    }

    /// Forgets the one fact `words` names, for "forget that I like tea": a fact equal to it
    /// (ignoring case, spacing and a final full stop), else the only fact that contains it
    /// as a substantial part (at least a third of the fact, at least 4 characters). Several
    /// matches are refused with the list, so a model asked to forget one thing cannot erase
    /// a memory wholesale with one letter (issue 9).
    pub fn forget_one(&self, words: &str) -> Result<Fact, MemoryError> {
        let norm = |t: &str| {
            t.split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .trim_end_matches(['.', '!', '?'])
                .to_lowercase()
        };
        let needle = norm(words);
        if needle.is_empty() {
            return Err(MemoryError::EmptyFact);
        }
        let facts = self.facts()?;
        let exact: Vec<&Fact> = facts.iter().filter(|f| norm(&f.text) == needle).collect();
        let candidates: Vec<&Fact> = if exact.is_empty() {
            facts
                .iter()
                .filter(|f| {
                    let t = norm(&f.text);
                    t.contains(&needle)
                        && needle.chars().count() >= 4
                        && needle.chars().count() * 3 >= t.chars().count()
                })
                .collect()
        } else {
            exact
        };
        match candidates.as_slice() {
            [] => Err(MemoryError::NoMatch(words.trim().to_string())),
            [one] => self.delete_fact(&one.id),
            several => Err(MemoryError::SeveralMatch(
                words.trim().to_string(),
                several.iter().map(|f| f.text.clone()).collect::<Vec<_>>().join(" | "),
            )),
        }
    }

    /// Full-text search over user and assistant messages of every session, best matches
    /// first. `query` is free text: its words are matched with OR (stemmed), so a question
    /// finds the statement that answers it. An empty or all-stopword query finds nothing.
    pub fn search_messages(
        &self,
        query: &str,
        exclude: Option<Exclude<'_>>,
        limit: usize,
    ) -> Result<Vec<SearchHit>, StoreError> {
        let Some(expr) = match_expression(query) else {
            return Ok(Vec::new());
        };
        let (ex_session, ex_from, ex_below) = exclude
            .map(|e| (e.session_id.to_string(), e.from_seq as i64, e.below_seq as i64))
            .unwrap_or_default();
        let conn = self.lock();
        let mut stmt = conn.prepare_cached(
            "SELECT f.session_id, s.title, f.seq, m.kind, m.text, m.created_at
             FROM messages_fts f
             JOIN messages m ON m.session_id = f.session_id AND m.seq = f.seq
             JOIN sessions s ON s.id = f.session_id
             WHERE messages_fts MATCH ?1
               AND m.kind IN ('user', 'assistant')
               AND NOT (f.session_id = ?2 AND (f.seq >= ?3 OR f.seq < ?5))
             ORDER BY bm25(messages_fts), f.seq DESC
             LIMIT ?4",
        )?;
        let rows = stmt.query_map(params![expr, ex_session, ex_from, limit as i64, ex_below], hit_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}

impl Store {
    /// Search by words and, with `meaning`, by meaning, best first (see [`Fusion`]).
    /// With `meaning`, only messages at least `fusion.nearest.min_similarity` similar to
    /// the query are found, by either search (a message not embedded yet is judged by its
    /// words alone). Without it, this is the word search.
    pub fn search_memory(
        &self,
        query: &str,
        meaning: Option<Meaning<'_>>,
        exclude: Option<Exclude<'_>>,
        limit: usize,
        fusion: Fusion,
    ) -> Result<Vec<Found>, StoreError> {
        let words = self.search_messages(query, exclude, fusion.depth.max(limit))?;
        let rrf = |rank: usize| 1.0 / (fusion.rrf.unwrap_or(60.0) + rank as f32 + 1.0);
        let Some(meaning) = meaning else {
            return Ok(words
                .into_iter()
                .take(limit)
                .enumerate()
                .map(|(rank, hit)| Found {
                    hit,
                    matched: Matched::Words,
                    score: rrf(rank),
                    similarity: None,
                })
                .collect());
        };
        let near = self.nearest_messages(meaning.model, meaning.vector, exclude, fusion.depth, fusion.nearest)?;
        let mut found: Vec<Found> = Vec::new();
        for (rank, (session_id, seq, similarity, score)) in near.into_iter().enumerate() {
            if let Some(hit) = self.message_hit(&session_id, seq)? {
                found.push(Found {
                    hit,
                    matched: Matched::Meaning,
                    score: if fusion.rrf.is_some() { rrf(rank) } else { score },
                    similarity: Some(similarity),
                });
            }
        }
        let keys: Vec<(&str, i64)> = words.iter().map(|h| (h.session_id.as_str(), h.seq)).collect();
        let similarities = self.message_similarities(meaning.model, meaning.vector, &keys)?;
        for (rank, (hit, similarity)) in words.into_iter().zip(similarities).enumerate() {
            if let Some(f) = found
                .iter_mut()
                .find(|f| f.hit.session_id == hit.session_id && f.hit.seq == hit.seq)
            {
                f.matched = Matched::Both;
                f.score += if fusion.rrf.is_some() {
                    rrf(rank)
                } else {
                    fusion.words_bonus
                };
                continue;
            }
            let question = hit.text.trim_end().ends_with('?');
            if similarity.is_some_and(|s| s < fusion.nearest.min_similarity) && fusion.words_need_meaning
                || fusion.nearest.user_only && hit.kind != "user"
                || !fusion.nearest.questions && question
            {
                continue;
            }
            let score = match (fusion.rrf, similarity) {
                (Some(_), _) => rrf(rank),
                // Not embedded yet: ranked as a message at the floor.
                (None, s) => {
                    s.unwrap_or(fusion.nearest.min_similarity)
                        - if question { fusion.nearest.question_penalty } else { 0.0 }
                        + fusion.words_bonus
                }
            };
            found.push(Found {
                hit,
                matched: Matched::Words,
                score,
                similarity,
            });
        }
        // Best score first; a tie goes to the closer meaning.
        found.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then(b.similarity.unwrap_or(0.0).total_cmp(&a.similarity.unwrap_or(0.0)))
        });
        found.truncate(limit);
        Ok(found)
    }

    /// One user or assistant message as a search result.
    fn message_hit(&self, session_id: &str, seq: i64) -> Result<Option<SearchHit>, StoreError> {
        let conn = self.lock();
        Ok(conn
            .query_row(
                "SELECT m.session_id, s.title, m.seq, m.kind, m.text, m.created_at
                 FROM messages m JOIN sessions s ON s.id = m.session_id
                 WHERE m.session_id = ?1 AND m.seq = ?2 AND m.kind IN ('user', 'assistant')",
                params![session_id, seq],
                hit_row,
            )
            .optional()?)
    }
}

/// A search result from a row of (session_id, title, seq, kind, text, created_at).
fn hit_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<SearchHit> {
    Ok(SearchHit {
        session_id: r.get(0)?,
        session_title: r.get(1)?,
        seq: r.get(2)?,
        kind: r.get(3)?,
        text: r.get(4)?,
        created_at: parse_time(&r.get::<_, String>(5)?),
    })
}

fn fact_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Fact> {
    Ok(Fact {
        id: r.get(0)?,
        text: r.get(1)?,
        created_at: parse_time(&r.get::<_, String>(2)?),
        updated_at: parse_time(&r.get::<_, String>(3)?),
        session_id: r.get(4)?,
    })
}

/// Words that carry no topic: left out of searches so "what's my name" looks for "name".
const STOPWORDS: &[&str] = &[
    "a", "about", "am", "an", "and", "any", "are", "as", "at", "be", "but", "by", "can", "could", "did", "do", "does",
    "for", "from", "had", "has", "have", "he", "her", "hers", "him", "his", "how", "i", "if", "in", "is", "it", "its",
    "just", "know", "me", "mine", "my", "no", "not", "of", "on", "or", "our", "please", "remember", "she", "so",
    "tell", "that", "the", "their", "them", "then", "there", "they", "this", "to", "us", "was", "we", "were", "what",
    "whats", "when", "where", "which", "who", "why", "will", "with", "would", "you", "your",
];

/// The FTS5 MATCH expression for free text: each remaining word quoted (so no word can be
/// read as FTS syntax), joined with OR. `None` when no word is left.
pub fn match_expression(query: &str) -> Option<String> {
    let mut words: Vec<String> = Vec::new();
    for raw in query.split(|c: char| !c.is_alphanumeric() && c != '\'') {
        let w = raw.trim_matches('\'').to_lowercase();
        let w = w.strip_suffix("'s").unwrap_or(&w).replace('\'', "");
        if w.chars().count() < 2 || STOPWORDS.contains(&w.as_str()) || words.contains(&w) {
            continue;
        }
        words.push(w);
    }
    (!words.is_empty()).then(|| {
        words
            .iter()
            .map(|w| format!("\"{w}\""))
            .collect::<Vec<_>>()
            .join(" OR ")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::{HistorySettings, Message, MessageKind};
    use crate::store::SessionMeta;

    fn said(store: &Store, session: &str, kind: MessageKind) -> Message {
        let m = Message::new(kind);
        store.save_message(session, &m).unwrap();
        m
    }

    fn user(text: &str) -> MessageKind {
        MessageKind::User { text: text.into() }
    }

    /// A store in memory with these sessions.
    fn with_sessions(ids: &[&str]) -> Store {
        let store = Store::open_in_memory().unwrap();
        for id in ids {
            store
                .create_session(&SessionMeta::new(*id, "", HistorySettings::default()))
                .unwrap();
        }
        store
    }

    #[test]
    fn a_question_finds_the_statement_in_an_earlier_session_but_not_the_current_context() {
        let store = with_sessions(&["s1", "s2"]);
        said(&store, "s1", user("My name is Sam and I live in Paris."));
        said(&store, "s1", user("I like green tea."));
        said(&store, "s2", user("What's my name?"));

        let hits = store
            .search_messages(
                "What's my name?",
                Some(Exclude {
                    session_id: "s2",
                    from_seq: 0,
                    below_seq: 0,
                }),
                5,
            )
            .unwrap();
        assert_eq!(hits.len(), 1, "{hits:?}");
        assert_eq!(hits[0].session_id, "s1");
        assert_eq!(hits[0].text, "My name is Sam and I live in Paris.");
        // Stemming: "lives" finds "live".
        assert_eq!(store.search_messages("who lives in Paris", None, 5).unwrap().len(), 1);
        assert!(store.search_messages("what is it", None, 5).unwrap().is_empty());
        // FTS syntax in the query is just text.
        assert!(store.search_messages("name\" OR NEAR(", None, 5).is_ok());
    }

    #[test]
    fn the_index_follows_edits_and_deletes() {
        let store = Store::open_in_memory().unwrap();
        store
            .create_session(&SessionMeta::new("s1", "", HistorySettings::default()))
            .unwrap();
        let mut m = said(&store, "s1", user("I own a kayak."));
        m.kind = user("I own a canoe.");
        assert_eq!(store.save_message("s1", &m).unwrap(), 0, "an edit in place");
        assert!(store.search_messages("kayak", None, 5).unwrap().is_empty());
        assert_eq!(store.search_messages("canoe", None, 5).unwrap().len(), 1);
        store.delete_session("s1").unwrap();
        assert!(store.search_messages("canoe", None, 5).unwrap().is_empty());
    }

    #[test]
    fn facts_are_added_once_edited_and_forgotten_by_id_prefix_or_words() {
        let store = Store::open_in_memory().unwrap();
        let a = store.add_fact("  The user's name is   Sam. ", None).unwrap();
        assert_eq!(a.text, "The user's name is Sam.");
        assert_eq!(store.add_fact("the user's name is sam.", None).unwrap().id, a.id);
        store.add_fact("The user likes green tea.", Some("s1")).unwrap();
        assert_eq!(store.facts().unwrap().len(), 2);

        // Ids made in the same millisecond share a long prefix: a short one is ambiguous.
        assert!(matches!(
            store.update_fact(&a.id[..8], "x"),
            Err(MemoryError::AmbiguousFact(_))
        ));
        let edited = store.update_fact(&a.id, "The user's name is Samantha.").unwrap();
        assert_eq!(edited.id, a.id);
        assert!(matches!(store.add_fact(" ", None), Err(MemoryError::EmptyFact)));
        assert!(matches!(
            store.add_fact(&"x".repeat(MAX_FACT_CHARS + 1), None),
            Err(MemoryError::FactTooLong(_))
        ));
        assert!(matches!(store.delete_fact("nope"), Err(MemoryError::NoFact(_))));

        let gone = store.forget_one("green tea").unwrap();
        assert_eq!(gone.text, "The user likes green tea.");
        assert_eq!(store.delete_fact(&a.id).unwrap().text, "The user's name is Samantha.");
        assert!(store.facts().unwrap().is_empty());
    }

    /// Issue 9: `forget_fact` deleted every fact containing its words, so "a" erased the
    /// whole memory.
    #[test]
    fn forgetting_takes_one_exact_fact_or_refuses() {
        let store = Store::open_in_memory().unwrap();
        for f in [
            "I like green tea.",
            "I like black tea.",
            "My name is Sam.",
            "A cat named Tom lives with me.",
        ] {
            store.add_fact(f, None).unwrap();
        }
        assert!(
            matches!(store.forget_one("a"), Err(MemoryError::NoMatch(_))),
            "one letter forgets nothing"
        );
        assert!(
            matches!(store.forget_one("tea"), Err(MemoryError::NoMatch(_))),
            "too small a part"
        );
        let e = store.forget_one("I like").unwrap_err();
        assert!(
            matches!(&e, MemoryError::SeveralMatch(_, list) if list.contains("green") && list.contains("black")),
            "{e}"
        );
        assert_eq!(store.facts().unwrap().len(), 4, "nothing was forgotten by the refusals");
        assert_eq!(store.forget_one("i like GREEN tea").unwrap().text, "I like green tea.");
        assert_eq!(store.forget_one("my name is sam").unwrap().text, "My name is Sam.");
        assert_eq!(store.facts().unwrap().len(), 2);
    }

    /// Issue 24: a question finds by meaning what shares no word with it; a word in common
    /// with something unrelated recalls nothing; each result says why it was found.
    #[test]
    fn the_hybrid_search_finds_meaning_and_drops_words_without_it() {
        use crate::store::vectors::Unembedded;
        let store = with_sessions(&["s1", "s2"]);
        // Vectors by hand: heating [1,0,0], travel [0,1,0], milk [0,0,1].
        let texts = [
            ("s1", "The radiator in the bedroom is broken.", [1.0f32, 0.1, 0.0]),
            ("s1", "Why does a skin form when you're heating milk?", [0.0, 0.1, 1.0]),
            ("s2", "I fly to Lisbon on Friday.", [0.0, 1.0, 0.0]),
            ("s2", "Is the heating on in Lisbon?", [0.9, 0.4, 0.0]),
        ];
        for (s, t, _) in texts {
            said(&store, s, user(t));
        }
        let made: Vec<(Unembedded, Vec<f32>)> = store
            .unembedded("m", 10)
            .unwrap()
            .into_iter()
            .map(|r| {
                let v = texts.iter().find(|(_, t, _)| *t == r.text).unwrap().2;
                let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                (r, v.iter().map(|x| x / n).collect())
            })
            .collect();
        store.put_vectors("m", &made).unwrap();
        let meaning = |v: &'static [f32]| Meaning { model: "m", vector: v };
        let find = |q: &str, v: &'static [f32], fusion: Fusion| {
            let found = store.search_memory(q, Some(meaning(v)), None, 3, fusion).unwrap();
            found.into_iter().map(|f| (f.hit.text, f.matched)).collect::<Vec<_>>()
        };
        let (radiator, milk, lisbon_q) = (
            "The radiator in the bedroom is broken.".to_string(),
            "Why does a skin form when you're heating milk?".to_string(),
            "Is the heating on in Lisbon?".to_string(),
        );

        // "What did we say about the heating?": recall finds the radiator by meaning, and
        // neither question (they state nothing), least of all the milk (a word in common,
        // nothing in meaning).
        let heating: &'static [f32] = &[1.0, 0.0, 0.0];
        assert_eq!(
            find("What did we say about the heating?", heating, Fusion::recall()),
            [(radiator.clone(), Matched::Meaning)]
        );
        // The Memory view's search shows everything, in the order of meaning: the question
        // on heating in Lisbon (near in meaning, and the word), then the milk (the word only).
        assert_eq!(
            find("What did we say about the heating?", heating, Fusion::search()),
            [
                (radiator, Matched::Meaning),
                (lisbon_q, Matched::Both),
                (milk.clone(), Matched::Words)
            ]
        );
        // Words alone (no model): the words only.
        let words = store
            .search_memory("What did we say about the heating?", None, None, 3, Fusion::search())
            .unwrap();
        assert!(words.iter().all(|f| f.matched == Matched::Words));
        assert!(!words.iter().any(|f| f.hit.text.contains("radiator")), "{words:?}");
        // Nothing near in meaning: recall takes nothing, the view shows the word's message.
        let baby: &'static [f32] = &[-1.0, -1.0, 0.0];
        assert!(find("How do I heat milk for the baby?", baby, Fusion::recall()).is_empty());
        assert_eq!(
            find("How do I heat milk for the baby?", baby, Fusion::search()).first(),
            Some(&(milk, Matched::Words))
        );
    }

    #[test]
    fn match_expression_quotes_topic_words() {
        assert_eq!(match_expression("What's my name?").as_deref(), Some("\"name\""));
        assert_eq!(
            match_expression("Where do I keep the kayak's paddle?").as_deref(),
            Some("\"keep\" OR \"kayak\" OR \"paddle\"")
        );
        assert_eq!(match_expression("what is it"), None);
    }

    #[test]
    fn a_schema_1_database_is_indexed_when_opened() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.db");
        {
            let conn = rusqlite::Connection::open(&path).unwrap();
            conn.execute_batch(
                "CREATE TABLE sessions (id TEXT PRIMARY KEY, title TEXT, created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
                     system_prompt TEXT NOT NULL DEFAULT '', settings TEXT NOT NULL DEFAULT '{}', provider TEXT, model TEXT);
                 CREATE TABLE messages (session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE, seq INTEGER NOT NULL,
                     id TEXT NOT NULL, kind TEXT NOT NULL, text TEXT NOT NULL, created_at TEXT NOT NULL, body TEXT NOT NULL,
                     PRIMARY KEY (session_id, seq), UNIQUE (session_id, id));
                 INSERT INTO sessions VALUES ('old', NULL, '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z', '', '{}', NULL, NULL);
                 INSERT INTO messages VALUES ('old', 0, 'm0', 'user', 'My name is Sam.', '2026-01-01T00:00:00Z', '{}');
                 PRAGMA user_version = 1;",
            )
            .unwrap();
        }
        let store = Store::open(&path).unwrap();
        let hits = store.search_messages("What's my name?", None, 5).unwrap();
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].session_id, "old");
    }
}
