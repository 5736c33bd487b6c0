//! Long-term recall (rule 12): what Hark remembers from earlier conversations, put beside
//! the system prompt for one turn. The context list is never touched.

use crate::conversation::{Conversation, Recall};
use crate::store::memory::{Exclude, Fact, SearchHit};
use crate::store::{Store, StoreError};

/// Facts included at most (the newest), so a long memory cannot crowd out the context.
pub const MAX_FACTS: usize = 50;
/// Earlier messages included at most per turn.
pub const MAX_HITS: usize = 3;
/// A recalled message is cut to this many characters.
const MAX_HIT_CHARS: usize = 300;

/// What a turn recalls: every remembered fact, and the earlier messages (other sessions,
/// and turns of this session that were trimmed from the context — not those the user
/// reset away) that best match what the user just said, by words and by meaning
/// (`Store::search`). `None` when there is nothing to recall.
pub fn recall_text(store: &Store, conv: &Conversation, utterance: &str) -> Result<Option<Recall>, StoreError> {
    let facts = store.facts()?;
    let hits: Vec<SearchHit> = store
        .search(
            utterance,
            Some(Exclude {
                session_id: conv.id(),
                from_seq: conv.window().start,
                below_seq: conv.floor(),
            }),
            MAX_HITS,
            crate::store::memory::Fusion::recall(),
        )?
        .into_iter()
        .map(|f| f.hit)
        .collect();
    Ok(format(&facts, &hits))
}

/// What every turn recalls before the user says anything: the remembered facts alone.
pub fn facts(store: &Store) -> Result<Option<Recall>, StoreError> {
    Ok(format(&store.facts()?, &[]))
}

fn format(facts: &[Fact], hits: &[SearchHit]) -> Option<Recall> {
    let mut recall = Recall::default();
    let skip = facts.len().saturating_sub(MAX_FACTS);
    for f in &facts[skip..] {
        recall.facts.push(format!("- {}", f.text));
    }
    // Oldest first, as they were said, not best first: the set recalled by the words so far
    // and by the finished words is often the same in another order, and the offline model
    // then finds the same text already evaluated (rule 12's note before the words).
    let mut hits: Vec<&SearchHit> = hits.iter().collect();
    hits.sort_by_key(|h| h.created_at);
    for h in hits {
        let who = if h.kind == "user" { "the user said" } else { "you said" };
        let mut text: String = h.text.chars().take(MAX_HIT_CHARS).collect();
        if text.len() < h.text.len() {
            text.push('…');
        }
        recall.earlier.push(format!(
            "- On {} {who}: \"{}\"",
            h.created_at.format("%Y-%m-%d"),
            text.replace('\n', " ")
        ));
    }
    recall.some()
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    fn hit(text: &str, day: u32) -> SearchHit {
        SearchHit {
            session_id: "s".into(),
            session_title: None,
            seq: i64::from(day),
            kind: "user".into(),
            text: text.into(),
            created_at: chrono::Utc.with_ymd_and_hms(2026, 11, day, 9, 0, 0).unwrap(),
        }
    }

    /// The recalled messages are listed as they were said, oldest first, whatever their
    /// order of relevance: the words so far and the finished words often recall the same
    /// messages ranked differently, and the same text is what the offline model already
    /// evaluated (rule 12's note before the words).
    #[test]
    fn recalled_messages_come_oldest_first_whatever_their_rank() {
        let (lisbon, mark) = (hit("I fly to Lisbon.", 20), hit("Mark moved to Toronto.", 3));
        let one = format(&[], &[lisbon.clone(), mark.clone()]).unwrap();
        let other = format(&[], &[mark, lisbon]).unwrap();
        assert_eq!(one, other);
        assert_eq!(
            one.earlier,
            vec![
                "- On 2026-11-03 the user said: \"Mark moved to Toronto.\"".to_string(),
                "- On 2026-11-20 the user said: \"I fly to Lisbon.\"".into(),
            ]
        );
        assert_eq!(format(&[], &[]), None, "nothing recalled");
    }
}
