//! The smallest Tauri 2 app: one window showing one static page. Hark's idle memory is
//! measured against this (scripts/measure-rss.sh).
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() {
    if let Err(e) = tauri::Builder::default().run(tauri::generate_context!()) {
        eprintln!("empty-tauri: {e}");
        std::process::exit(1);
    }
}
