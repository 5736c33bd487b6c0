//! `hark chat`: one utterance per stdin line; replies stream to stdout.
//!
//! Lines starting with `/` are commands (`/reset`, `/system TEXT`, `/max-turns N`,
//! `/history`, `/help`); start a line with `//` to say something that begins with a slash.
//! A failed turn prints one line on stderr (or an `error` event) and the chat goes on; the
//! exit status is 1 if any turn failed. Ctrl-C cancels the reply in flight and ends the chat.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use clap::Args;
use hark_core::conversation::{HistorySettings, Message, MessageKind, ReplyOutcome};
use hark_core::provider::{ProviderConfig, ProviderKind};
use hark_core::secrets::Keychain;
use hark_core::session::{ChatSession, TurnError, TurnEvent};
use hark_core::store::{export, Store};
use serde_json::json;
use tokio::io::AsyncBufReadExt;
use tokio_util::sync::CancellationToken;

#[derive(Args)]
pub struct ChatArgs {
    /// Language model provider (default: whichever has a key, Anthropic first; `openai`
    /// when --base-url is given).
    #[arg(long, env = "HARK_LLM")]
    llm: Option<ProviderKind>,
    /// Provider endpoint (proxy, local server). Also HARK_ANTHROPIC_BASE_URL / HARK_OPENAI_BASE_URL.
    #[arg(long)]
    base_url: Option<String>,
    /// Model name.
    #[arg(long)]
    model: Option<String>,
    /// System prompt (kept with the session; replaces the stored one when resuming).
    #[arg(long)]
    system: Option<String>,
    /// Whole turns kept in the context, counting the current one; 0 = unlimited.
    #[arg(long)]
    max_turns: Option<u32>,
    /// Token budget of the request; 0 = none; default: the model window minus the reply.
    #[arg(long)]
    max_context_tokens: Option<u32>,
    /// Send each utterance alone (the record still keeps everything).
    #[arg(long)]
    no_history: bool,
    /// Resume this session (id or unique prefix).
    #[arg(long)]
    session: Option<String>,
    /// Write the session's export JSON here at the end.
    #[arg(long)]
    export: Option<PathBuf>,
    /// One JSON event per line on stdout instead of plain replies.
    #[arg(long)]
    json: bool,
    /// Reply budget in tokens.
    #[arg(long, default_value_t = 1024)]
    max_tokens: u32,
    /// Sampling temperature.
    #[arg(long)]
    temperature: Option<f32>,
}

const DEFAULT_SYSTEM: &str = "You are Hark, a helpful voice assistant. Answer in one to three short spoken sentences.";

/// Picks the provider: explicit, else `openai` for a custom base URL, else whichever has a
/// key (Anthropic first), else Anthropic (which then explains how to add a key).
fn choose_provider(args: &ChatArgs, kc: &Keychain) -> ProviderKind {
    if let Some(k) = args.llm {
        return k;
    }
    if args.base_url.is_some() {
        return ProviderKind::OpenAi;
    }
    for k in [ProviderKind::Anthropic, ProviderKind::OpenAi] {
        if matches!(kc.get(k.as_str()), Ok(Some(_))) {
            return k;
        }
    }
    ProviderKind::Anthropic
}

fn provider_config(args: &ChatArgs) -> Result<ProviderConfig> {
    let kc = Keychain::default();
    let kind = choose_provider(args, &kc);
    let mut c = ProviderConfig::new(kind);
    if let Some(url) = &args.base_url {
        c.base_url = url.clone();
    }
    if let Some(m) = &args.model {
        c.model = m.clone();
    }
    c.max_tokens = args.max_tokens;
    c.temperature = args.temperature;
    c.api_key = match kc.get(kind.as_str()) {
        Ok(k) => k.map(|(k, _)| k.expose().to_string()),
        // A local server needs no key, so an unusable keychain only matters for the public
        // endpoints; the provider then reports the missing key with its next step.
        Err(e) if c.is_public_endpoint() => {
            bail!(
                "no {} API key: set {} or run `hark keys set {}` ({e})",
                kind.as_str(),
                hark_core::secrets::env_var(kind.as_str()).unwrap_or_default(),
                kind.as_str()
            )
        }
        Err(_) => None,
    };
    Ok(c)
}

/// Prints events: plain text or one JSON object per line.
struct Out {
    json: bool,
}

impl Out {
    fn event(&self, v: serde_json::Value) {
        if self.json {
            let mut o = std::io::stdout().lock();
            let _ = writeln!(o, "{v}");
            let _ = o.flush();
        }
    }

    fn text(&self, s: &str) {
        if !self.json {
            let mut o = std::io::stdout().lock();
            let _ = o.write_all(s.as_bytes());
            let _ = o.flush();
        }
    }

    fn error(&self, kind: &str, message: &str, next_step: &str) {
        if self.json {
            self.event(json!({"type": "error", "kind": kind, "message": message, "next_step": next_step}));
        } else {
            eprintln!("hark: {kind}: {message} ({next_step})");
        }
    }
}

pub async fn run(args: ChatArgs, db: PathBuf) -> Result<ExitCode> {
    let config = provider_config(&args)?;
    let reply_budget = config.max_tokens;
    let model = config.build().context("cannot set up the language model")?;
    let store = Arc::new(Store::open(&db)?);
    let out = Out { json: args.json };

    let (mut session, resumed) = match &args.session {
        Some(id) => {
            let id = store.resolve_session(id)?;
            (ChatSession::resume(store.clone(), &id, model)?, true)
        }
        None => {
            let settings = HistorySettings::default();
            let system = args.system.as_deref().unwrap_or(DEFAULT_SYSTEM);
            (ChatSession::create(store.clone(), model, system, settings)?, false)
        }
    };
    session.set_reply_budget(reply_budget);
    // Flags override what the session had; absent flags keep it.
    let mut settings = session.conversation().settings();
    if let Some(n) = args.max_turns {
        settings.max_turns = n;
    }
    if let Some(n) = args.max_context_tokens {
        settings.max_context_tokens = Some(n);
    }
    if args.no_history {
        settings.enabled = false;
    }
    if settings != session.conversation().settings() {
        session.set_settings(settings)?;
    }
    if resumed {
        if let Some(system) = &args.system {
            session.set_system_prompt(system)?;
        }
    }
    let conv = session.conversation();
    out.event(json!({
        "type": "session", "id": session.id(), "resumed": resumed,
        "provider": session.provider(), "model": conv.model(), "settings": conv.settings(), "db": db.display().to_string(),
    }));
    if !args.json && std::io::stderr().is_terminal() {
        eprintln!("hark: session {} ({}); /help for commands", session.id(), conv.model());
    }

    // Ctrl-C cancels the turn in flight, then the chat ends.
    let interrupted = CancellationToken::new();
    {
        let t = interrupted.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                t.cancel();
            }
        });
    }

    let prompt = std::io::stdin().is_terminal() && !args.json;
    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    let mut failed = false;
    loop {
        if prompt {
            eprint!("you> ");
        }
        let line = tokio::select! {
            l = lines.next_line() => l.context("cannot read stdin")?,
            _ = interrupted.cancelled() => None,
        };
        let Some(line) = line else { break };
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(cmd) = line.strip_prefix('/').filter(|c| !c.starts_with('/')) {
            if !command(&mut session, cmd, &out)? {
                break;
            }
            continue;
        }
        let text = line.strip_prefix('/').unwrap_or(line);
        match session.send(text, &interrupted, |e| on_turn_event(&out, e)).await {
            Ok(reply) => {
                out.text("\n");
                out.event(reply_event(&reply, &session));
            }
            Err(e) => {
                if !out.json {
                    out.text("\n");
                }
                if let TurnError::Provider(p) = &e {
                    if let Some(reply) = session.conversation().record().last().filter(|m| !m.is_user()) {
                        out.event(reply_event(reply, &session));
                    }
                    if p.kind == hark_core::provider::ErrorKind::Cancelled {
                        out.error("cancelled", "interrupted", "the partial reply is kept in the record");
                        failed = true;
                        break;
                    }
                }
                out.error(e.kind(), &e.to_string(), e.next_step());
                failed = true;
            }
        }
    }

    if let Some(path) = &args.export {
        let json = export::to_json(&session.stored()?);
        std::fs::write(path, json).with_context(|| format!("cannot write the export to {}", path.display()))?;
        out.event(json!({"type": "exported", "path": path.display().to_string()}));
    }
    if interrupted.is_cancelled() {
        return Ok(ExitCode::from(130));
    }
    Ok(if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

fn on_turn_event(out: &Out, e: TurnEvent) {
    match e {
        TurnEvent::UserRecorded(m) => out.event(json!({"type": "user", "id": m.id, "text": m.text()})),
        TurnEvent::Delta(d) => {
            out.text(&d);
            out.event(json!({"type": "delta", "text": d}));
        }
    }
}

fn reply_event(reply: &Message, session: &ChatSession) -> serde_json::Value {
    let w = session.conversation().window();
    let (usage, latency, outcome) = match &reply.kind {
        MessageKind::Assistant(a) => (
            json!(a.usage),
            json!(a.latency),
            match &a.outcome {
                ReplyOutcome::Complete => "complete",
                ReplyOutcome::Failed { .. } => "failed",
                ReplyOutcome::Cancelled => "cancelled",
            },
        ),
        _ => (json!(null), json!(null), "complete"),
    };
    json!({
        "type": "reply", "id": reply.id, "text": reply.text(), "outcome": outcome,
        "usage": usage, "latency": latency,
        "context": {"turns": w.turns, "dropped_turns": w.dropped_turns, "tokens": w.tokens},
    })
}

/// Runs a slash command; `false` ends the chat.
fn command(session: &mut ChatSession, cmd: &str, out: &Out) -> Result<bool> {
    let (name, rest) = cmd.split_once(' ').map(|(a, b)| (a, b.trim())).unwrap_or((cmd, ""));
    match name {
        "reset" | "clear" => {
            session.clear()?;
            out.event(json!({"type": "reset"}));
            if !out.json {
                eprintln!("hark: context cleared (the record keeps everything)");
            }
        }
        "system" if !rest.is_empty() => {
            session.set_system_prompt(rest)?;
            out.event(json!({"type": "system", "text": rest}));
        }
        "max-turns" => match rest.parse::<u32>() {
            Ok(n) => {
                let mut s = session.conversation().settings();
                s.max_turns = n;
                session.set_settings(s)?;
                out.event(json!({"type": "settings", "settings": s}));
            }
            Err(_) => out.error(
                "usage",
                &format!("/max-turns needs a number, got {rest:?}"),
                "e.g. /max-turns 5",
            ),
        },
        "history" => {
            let conv = session.conversation();
            let h = conv.history();
            if out.json {
                out.event(json!({"type": "history", "system": conv.system_text(), "messages": h}));
            } else {
                eprintln!("system: {}", conv.system_text());
                for m in h {
                    eprintln!("{}: {}", m.kind_name(), m.text());
                }
            }
        }
        "quit" | "exit" => return Ok(false),
        "help" => eprintln!(
            "/reset  clear the context\n/system TEXT  change the system prompt\n/max-turns N  turns kept (0 = all)\n\
             /history  show what the model sees\n/quit  end the chat\n//text  say text that starts with a slash"
        ),
        _ => out.error("usage", &format!("unknown command /{name}"), "type /help"),
    }
    Ok(true)
}
