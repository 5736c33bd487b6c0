//! # hark
//!
//! The `hark` command, a thin adapter over `hark-core` for scripting, headless use and
//! black-box tests.
//!
//! # Layout
//! - `main.rs`: arguments and dispatch; every failure ends as one line on stderr and exit 1.
//! - `chat.rs`: `hark chat`, text turns from stdin (plain or `--json` events).
//! - `talk.rs`: `hark talk`, voice turns from WAV files or the microphone.
//! - `session_args.rs`: options shared by chat and talk; opening or resuming the session.
//! - `manage.rs`: `hark sessions`, `export`, `import`, `delete`, `keys`.
//! - `models.rs`: `hark models`, the offline models, and the download progress bar.
//! - `memory.rs`: `hark memory`, remembered facts and search over past conversations.
//! - `mcp.rs`: `hark mcp`, the user's tool servers, and consent asked on the terminal.
//! - `terminal.rs`: model text made safe to print (no terminal control sequences).

mod chat;
mod manage;
mod mcp;
mod memory;
mod models;
mod session_args;
mod talk;
mod terminal;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

#[derive(Parser)]
#[command(
    name = "hark",
    version,
    about = "Hark: a voice assistant that remembers, from the command line"
)]
struct Cli {
    /// The SQLite file holding sessions (default: the app's data directory).
    #[arg(long, global = true, env = "HARK_DB")]
    db: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Chat in text: one utterance per line on stdin, each reply on stdout.
    Chat(session_args::SessionArgs),
    /// Voice turns from WAV files or the microphone: speech-to-text, the model, speech.
    Talk(Box<talk::TalkArgs>),
    /// List sessions, most recent first.
    Sessions {
        /// One JSON array instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Export a session's whole record.
    Export {
        /// Session id (or a unique prefix of it).
        id: String,
        #[arg(long, value_enum, default_value_t = ExportFormat::Json)]
        format: ExportFormat,
        /// Write to this file instead of stdout.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Import a conversation as a new session: a Hark export, a Deepgram agent.context
    /// (or its messages list), or an OpenAI/Anthropic messages array.
    Import { file: PathBuf },
    /// Delete a session and its record.
    Delete { id: String },
    /// Manage API keys in the OS keychain.
    Keys {
        #[command(subcommand)]
        action: manage::KeysAction,
    },
    /// What Hark remembers across conversations: facts, and search over past sessions.
    Memory {
        #[command(subcommand)]
        action: memory::MemoryAction,
    },
    /// Tools the user adds: MCP servers (stdio programs or streamable-HTTP endpoints),
    /// with consent per tool.
    Mcp {
        #[command(subcommand)]
        action: mcp::McpAction,
    },
    /// The offline models: list, download (resumable, sha256-checked), locate.
    Models {
        #[command(subcommand)]
        action: models::ModelsAction,
    },
}

#[derive(Clone, Copy, ValueEnum)]
pub enum ExportFormat {
    /// Hark's versioned JSON (imports back losslessly).
    Json,
    /// Markdown, for people.
    Md,
    /// A Deepgram Voice Agent Settings message (agent.context.messages, function_calls).
    Deepgram,
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("HARK_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    let cli = Cli::parse();
    let db = cli.db.unwrap_or_else(hark_core::store::default_db_path);
    let result = match cli.command {
        Command::Chat(args) => match tokio::runtime::Runtime::new() {
            Ok(rt) => rt.block_on(chat::run(args, db)),
            Err(e) => Err(anyhow::anyhow!("cannot start the async runtime: {e}")),
        },
        Command::Talk(args) => match tokio::runtime::Runtime::new() {
            Ok(rt) => rt.block_on(talk::run(*args, db)),
            Err(e) => Err(anyhow::anyhow!("cannot start the async runtime: {e}")),
        },
        Command::Sessions { json } => manage::sessions(&db, json),
        Command::Export { id, format, out } => manage::export(&db, &id, format, out.as_deref()),
        Command::Import { file } => manage::import(&db, &file),
        Command::Delete { id } => manage::delete(&db, &id),
        Command::Keys { action } => manage::keys(action),
        Command::Memory { action } => match tokio::runtime::Runtime::new() {
            Ok(rt) => rt.block_on(memory::run(&db, action)),
            Err(e) => Err(anyhow::anyhow!("cannot start the async runtime: {e}")),
        },
        Command::Mcp { action } => match tokio::runtime::Runtime::new() {
            Ok(rt) => rt.block_on(mcp::run(action)),
            Err(e) => Err(anyhow::anyhow!("cannot start the async runtime: {e}")),
        },
        Command::Models { action } => match tokio::runtime::Runtime::new() {
            Ok(rt) => rt.block_on(models::run(action)),
            Err(e) => Err(anyhow::anyhow!("cannot start the async runtime: {e}")),
        },
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            // One line: the chain of causes joined, and what the audio library said.
            let mut line = format!("{e:#}").replace('\n', " ");
            if let Some(detail) = e
                .downcast_ref::<hark_core::audio::AudioError>()
                .and_then(|a| a.detail())
            {
                line.push_str(&format!(" ({detail})"));
            }
            eprintln!("hark: {}", terminal::printable(&line));
            ExitCode::FAILURE
        }
    }
}
