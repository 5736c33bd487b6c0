//! # Hark core
//!
//! The headless engine of the Hark voice assistant. No Tauri here: the desktop app and the
//! `hark` CLI are thin adapters over this crate.
//!
//! # Layout
//! - `assembly`: the composition root: from what the user chose ([`assembly::Profile`]) and
//!   the keys present to a session's model, speech and settings; every default lives here.
//! - `conversation`: the record, the context window over it, and the history rules.
//! - `cpu`: the processor features the offline engines are built for, checked before they
//!   run.
//! - `error`: the one error taxonomy ([`error::ErrorKind`]) with each kind's next step, and
//!   the redaction of key-shaped text.
//! - `idle`: a model kept loaded while used and freed after a while unused (whisper, the
//!   natural voice).
//! - `language`: the conversation language and what each part does with it (speech-to-text
//!   requests, the system text, the OS voice).
//! - `local`: the offline language model, `hark-llm`, started as a child process.
//! - `models`: the offline models' manifest (sha256-pinned), resumable first-use downloads,
//!   and the Whisper CTranslate2 → ggml converter.
//! - `onnx`: ONNX Runtime, loaded at run time from the manifest's library, and the sessions
//!   of the models on it (the natural voice, Moonshine).
//! - `process`: starting helper programs (killed on drop, no console window on Windows).
//! - `tokens`: token counting (exact BPE for OpenAI models, calibrated estimate otherwise).
//! - `provider`: language-model providers (Anthropic Messages, OpenAI-compatible Chat
//!   Completions), the SSE parser and the provider-independent error taxonomy.
//! - `store`: SQLite persistence of sessions and messages; import and export; long-term
//!   memory (facts, full-text search).
//! - `secrets`: API keys in the OS keychain, with environment overrides.
//! - `endpoints`: the providers' official endpoints and key variables (below `secrets`,
//!   `provider` and `stt`, which all need them).
//! - `session`: running a turn end to end: record, request, stream, persist; the voice
//!   turn loop with barge-in.
//! - `audio`: capture (cpal), 16 kHz conversion (rubato), playback (rodio), WAV files.
//! - `stt`: speech-to-text (Deepgram live and prerecorded, OpenAI, offline whisper.cpp, and
//!   offline Moonshine with live words).
//! - `testing`: in-process stand-ins (model, transcriber, voice) for tests and benchmarks.
//! - `tools`: tools the model may call, the built-in ones (time, memory, search), and the
//!   user's own from MCP servers (`tools::mcp`), each behind consent (`tools::consent`).
//! - `dirs`: the config folder the app and the CLI share.
//! - `tts`: text-to-speech (Deepgram Aura-2, OpenAI, the natural offline voice (Kokoro),
//!   the quick offline voices (the quick Heart voice, the default, and Piper's Joe), the
//!   operating system's voice).

pub mod assembly;
pub mod audio;
pub mod conversation;
pub mod cpu;
pub mod dirs;
pub mod endpoints;
pub mod error;
pub mod idle;
pub mod language;
pub mod local;
pub mod models;
pub(crate) mod onnx;
pub mod process;
pub mod provider;
pub mod secrets;
pub mod session;
pub mod store;
pub mod stt;
pub mod testing;
pub mod tokens;
pub mod tools;
pub mod tts;
