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
];

fn main() {
    tauri_build::try_build(
        tauri_build::Attributes::new().app_manifest(tauri_build::AppManifest::new().commands(COMMANDS)),
    )
    .expect("tauri build configuration");
}
