//! Long-term recall across sessions (rule 12), against both providers: what was said in an
//! earlier session, and facts the user asked Hark to remember, reach a new session beside
//! the system prompt — never as context messages.

mod common;

use std::sync::Arc;

use common::*;
use hark_core::conversation::HistorySettings;
use hark_core::store::Store;
use hark_core::tools::Toolbox;

#[tokio::test]
async fn recall_across_two_sessions_answers_whats_my_name() {
    for rig in both() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hark.db");
        {
            let store = Arc::new(Store::open(&path).unwrap());
            let mut one = rig.session(&store, HistorySettings::default());
            one.set_recall(true);
            assert_eq!(
                say(&mut one, "My name is Sam.").await.unwrap(),
                "Nice to meet you, Sam!"
            );
            say(&mut one, "I like green tea.").await.unwrap();
        }
        // A new session, after a restart, on the same database file.
        let store = Arc::new(Store::open(&path).unwrap());
        let mut two = rig.session(&store, HistorySettings::default());
        two.set_recall(true);
        assert_eq!(
            say(&mut two, "What's my name?").await.unwrap(),
            "Your name is Sam.",
            "{:?}",
            rig.kind
        );
        let req = rig.server.last();
        assert_eq!(req.messages().len(), 1, "recall does not touch the context list");
        let system = req.system().unwrap();
        assert!(
            system.starts_with("You are a helpful voice assistant.\n\nThings you remember"),
            "{system}"
        );
        assert!(system.contains("the user said: \"My name is Sam.\""), "{system}");
        assert!(!system.contains("green tea"), "only what matches is recalled: {system}");
        assert_eq!(two.conversation().recall(), Some(system.split_once(":\n").unwrap().1));

        // Recall off: the new session knows nothing.
        let mut three = rig.session(&store, HistorySettings::default());
        assert_eq!(
            say(&mut three, "What's my name?").await.unwrap(),
            "I don't know your name yet."
        );
    }
}

#[tokio::test]
async fn a_remembered_fact_reaches_every_later_session_and_a_forgotten_one_does_not() {
    for rig in both() {
        let store = mem_store();
        let mut one = rig.session(&store, HistorySettings::default());
        one.set_tools(Toolbox::builtin());
        say(&mut one, "Remember that my name is Ada.").await.unwrap();
        assert_eq!(store.facts().unwrap()[0].text, "my name is Ada");

        let mut two = rig.session(&store, HistorySettings::default());
        two.set_recall(true);
        assert_eq!(say(&mut two, "What's my name?").await.unwrap(), "Your name is Ada.");
        assert!(rig.server.last().system().unwrap().contains("- my name is Ada"));

        // Edited in the Memory view (or `hark memory edit`): the next turn sees the edit.
        let id = store.facts().unwrap()[0].id.clone();
        store.update_fact(&id, "my name is Grace").unwrap();
        assert_eq!(say(&mut two, "What's my name?").await.unwrap(), "Your name is Grace.");

        store.delete_fact(&id).unwrap();
        let mut three = rig.session(&store, HistorySettings::default());
        three.set_recall(true);
        // Session one's own words still match by full-text search ("Remember that my
        // name is Ada"), which is the other half of recall.
        let system = {
            say(&mut three, "What's my name?").await.unwrap();
            rig.server.last().system().unwrap()
        };
        assert!(!system.contains("- my name is Grace"), "{system}");
    }
}

#[tokio::test]
async fn turns_that_left_the_context_are_recalled_within_the_same_session() {
    for rig in both() {
        let store = mem_store();
        let mut s = rig.session(&store, keep_turns(2));
        s.set_recall(true);
        say(&mut s, "My name is Sam.").await.unwrap();
        for i in 0..3 {
            say(&mut s, &format!("Filler turn {i}.")).await.unwrap();
        }
        assert_eq!(say(&mut s, "What's my name?").await.unwrap(), "Your name is Sam.");
        let req = rig.server.last();
        assert_eq!(req.messages().len(), 3, "max_turns still holds");
        assert!(!req.messages()[0].1.contains("Sam"));
    }
}
