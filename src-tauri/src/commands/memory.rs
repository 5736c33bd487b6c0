//! The Memory view (rule 12): remembered facts, and the search over past conversations.

use hark_core::store::memory::{Fact, Found, Fusion};
use tauri::State;

use crate::error::CmdResult;
use crate::state::AppState;

/// Every remembered fact, oldest first.
#[tauri::command(async)]
#[specta::specta]
pub fn list_facts(state: State<'_, AppState>) -> CmdResult<Vec<Fact>> {
    Ok(state.store()?.facts()?)
}

/// Remembers a fact typed in the Memory view; returns the new list.
#[tauri::command(async)]
#[specta::specta]
pub fn add_fact(state: State<'_, AppState>, text: String) -> CmdResult<Vec<Fact>> {
    let store = state.store()?;
    store.add_fact(&text, None)?;
    Ok(store.facts()?)
}

/// Rewrites a fact; returns the new list. The next turn recalls the new text.
#[tauri::command(async)]
#[specta::specta]
pub fn update_fact(state: State<'_, AppState>, id: String, text: String) -> CmdResult<Vec<Fact>> {
    let store = state.store()?;
    store.update_fact(&id, &text)?;
    Ok(store.facts()?)
}

/// Forgets a fact; returns the new list.
#[tauri::command(async)]
#[specta::specta]
pub fn delete_fact(state: State<'_, AppState>, id: String) -> CmdResult<Vec<Fact>> {
    let store = state.store()?;
    store.delete_fact(&id)?;
    Ok(store.facts()?)
}

/// Search over every session's messages, by words and by meaning (the same search as
/// recall and `hark memory search`), each result with why it was found and its score.
#[tauri::command(async)]
#[specta::specta]
pub fn search_memory(state: State<'_, AppState>, query: String) -> CmdResult<Vec<Found>> {
    Ok(state.store()?.search(&query, None, 30, Fusion::search())?)
}
