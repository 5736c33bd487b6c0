// Every command the webview may call is listed here, so each gets an `allow-*` permission
// and nothing unlisted is reachable (capabilities/main.json grants them to the main window).
const COMMANDS: &[&str] = &[
    "subscribe",
    "app_state",
    "refresh",
    "ptt",
    "reset_context",
    "set_max_turns",
    "set_system_prompt",
    "set_summary",
    "save_settings",
    "set_key",
    "delete_key",
    "test_connection",
    "list_devices",
    "list_sessions",
    "open_session",
    "new_session",
    "delete_session",
    "export_session",
    "import_session",
    "list_facts",
    "add_fact",
    "update_fact",
    "delete_fact",
    "search_memory",
];

fn main() {
    tauri_build::try_build(
        tauri_build::Attributes::new().app_manifest(tauri_build::AppManifest::new().commands(COMMANDS)),
    )
    .expect("tauri build configuration");
}
