//! The commands the windows may call. Each is thin: take the state, call one core method,
//! map the error. None of them ever returns a key, and none takes a file path from the
//! page: files are chosen here, in the system's dialogs.
//!
//! # Layout
//! - `app`: what a window needs at start, subscribing, logs, the fatal start-up recovery.
//! - `talk`: push-to-talk, conversation mode (hands-free) and its mute, the conversation's context (reset, turns kept, system prompt,
//!   summary), the introduction's microphone, speaker and practice checks.
//! - `sessions`: list, open, new, delete, export and import.
//! - `settings`: saving settings, the shortcut, keys, devices, the choices offered.
//! - `memory`: remembered facts and the search over past conversations.
//! - `models`: the offline models' download (start, pause).
//!
//! Tauri runs a command without `async` on the main thread, where it holds up the window's
//! event loop (a close request, a redraw) until it returns. Commands that touch the
//! keychain, SQLite or the disk are `async` or `#[tauri::command(async)]` (the thread
//! pool); only ones that hand a message to a channel stay on the main thread.
//!
//! Every command is listed in [`builder`], which generates the window's TypeScript bindings
//! (`ui/src/lib/bindings.ts`, checked by a test) and in `build.rs`, which permissions it.

pub mod app;
pub mod memory;
pub mod models;
pub mod sessions;
pub mod settings;
pub mod talk;
pub mod tools;
pub mod view;

use tauri_specta::{collect_commands, Builder};

/// Every command, for the invoke handler and the bindings.
pub fn builder() -> Builder<tauri::Wry> {
    Builder::<tauri::Wry>::new().commands(collect_commands![
        app::subscribe,
        app::app_state,
        app::open_logs_folder,
        app::start_fresh,
        app::open_fatal_folder,
        app::check_for_updates,
        app::finish_onboarding,
        app::restart_onboarding,
        app::quit,
        talk::ptt,
        talk::ptt_toggle,
        talk::set_hands_free,
        talk::set_muted,
        talk::refresh,
        talk::reset_context,
        talk::set_max_turns,
        talk::set_system_prompt,
        talk::set_summary,
        talk::practice,
        talk::mic_check,
        talk::play_sample,
        talk::preview_voice,
        sessions::list_sessions,
        sessions::search_sessions,
        sessions::rename_session,
        sessions::open_session,
        sessions::new_session,
        sessions::delete_session,
        sessions::export_session,
        sessions::import_session,
        settings::save_settings,
        settings::set_shortcut,
        settings::set_ui_language,
        settings::key_status,
        settings::set_key,
        settings::delete_key,
        settings::test_connection,
        settings::list_devices,
        settings::open_privacy_settings,
        memory::list_facts,
        memory::add_fact,
        memory::update_fact,
        memory::delete_fact,
        memory::search_memory,
        models::start_download,
        models::pause_download,
        models::list_models,
        models::fetch_model,
        models::delete_model,
        tools::tool_servers,
        tools::add_tool_server,
        tools::remove_tool_server,
        tools::test_tool_server,
        tools::set_tool_consent,
        tools::answer_consent,
    ])
}

/// Where the bindings live, from the crate's directory.
pub const BINDINGS: &str = "../ui/src/lib/bindings.ts";

/// The bindings' text as the commands and types are now.
pub fn bindings() -> Result<String, String> {
    use specta_typescript::{BigIntExportBehavior, Typescript};
    let dir = std::env::temp_dir().join(format!("hark-bindings-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let file = dir.join("bindings.ts");
    builder()
        .export(
            Typescript::default()
                // Token counts and sizes fit a double (2^53): numbers, not BigInt.
                .bigint(BigIntExportBehavior::Number)
                .header("// Generated from the Rust types by tauri-specta: do not edit.\n// Regenerate: HARK_WRITE_BINDINGS=1 cargo test -p hark-app bindings\n/* eslint-disable */\n// @ts-nocheck"),
            &file,
        )
        .map_err(|e| e.to_string())?;
    let text = std::fs::read_to_string(&file).map_err(|e| e.to_string())?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(text)
}

#[cfg(test)]
mod tests {
    /// The window's types are generated from these commands and types; a change on either
    /// side without regenerating fails here (and so in CI).
    #[test]
    fn bindings_match_the_rust_commands_and_types() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(super::BINDINGS);
        let now = super::bindings().expect("the bindings generate");
        if std::env::var_os("HARK_WRITE_BINDINGS").is_some() {
            std::fs::write(&path, &now).unwrap();
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == now,
            "ui/src/lib/bindings.ts is out of date: run `HARK_WRITE_BINDINGS=1 cargo test -p hark-app bindings`"
        );
    }
}
