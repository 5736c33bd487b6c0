// Every command a window may call is listed here, so each gets an `allow-*` permission
// and nothing unlisted is reachable (capabilities/ grants them per window). A test checks
// this list against the commands the app registers.
const COMMANDS: &[&str] = &[
    "subscribe",
    "app_state",
    "open_logs_folder",
    "start_fresh",
    "open_fatal_folder",
    "check_for_updates",
    "finish_onboarding",
    "restart_onboarding",
    "quit",
    "ptt",
    "ptt_toggle",
    "set_hands_free",
    "set_muted",
    "refresh",
    "reset_context",
    "set_max_turns",
    "set_system_prompt",
    "set_summary",
    "practice",
    "mic_check",
    "play_sample",
    "preview_voice",
    "list_sessions",
    "search_sessions",
    "rename_session",
    "open_session",
    "new_session",
    "delete_session",
    "export_session",
    "import_session",
    "save_settings",
    "set_shortcut",
    "key_status",
    "set_key",
    "delete_key",
    "test_connection",
    "list_devices",
    "open_privacy_settings",
    "list_facts",
    "add_fact",
    "update_fact",
    "delete_fact",
    "search_memory",
    "start_download",
    "pause_download",
    "list_models",
    "fetch_model",
    "delete_model",
    "tool_servers",
    "add_tool_server",
    "remove_tool_server",
    "test_tool_server",
    "set_tool_consent",
    "answer_consent",
    "set_ui_language",
];

fn main() {
    // The tray's words are the window's catalogues, read by `rust_i18n::i18n!` as the app
    // compiles: a change to them builds the app again.
    println!("cargo:rerun-if-changed=../ui/src/locales");
    tauri_build::try_build(
        tauri_build::Attributes::new().app_manifest(tauri_build::AppManifest::new().commands(COMMANDS)),
    )
    .expect("tauri build configuration");
}
