//! `hark chat`: one utterance per stdin line; replies stream to stdout.
//!
//! Lines starting with `/` are commands (`/reset`, `/system TEXT`, `/max-turns N`,
//! `/history`, `/help`); start a line with `//` to say something that begins with a slash.
//! A failed turn prints one line on stderr (or an `error` event) and the chat goes on; the
//! exit status is 1 if any turn failed. Ctrl-C cancels the reply in flight and ends the chat.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use hark_core::conversation::{Message, MessageKind, ReplyOutcome};
use hark_core::session::{ChatSession, TurnError, TurnEvent};

use crate::session_args::SessionArgs;
use hark_core::store::export;
use serde_json::json;
use tokio::io::AsyncBufReadExt;
use tokio_util::sync::CancellationToken;

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

    /// Plain output only; model text loses any terminal control sequences.
    fn text(&self, s: &str) {
        if !self.json {
            let mut o = std::io::stdout().lock();
            let _ = o.write_all(crate::terminal::printable(s).as_bytes());
            let _ = o.flush();
        }
    }

    fn error(&self, kind: &str, message: &str, next_step: &str) {
        if self.json {
            self.event(json!({"type": "error", "kind": kind, "message": message, "next_step": next_step}));
        } else {
            eprintln!("hark: {kind}: {} ({next_step})", crate::terminal::printable(message));
        }
    }
}

pub async fn run(args: SessionArgs, db: PathBuf) -> Result<ExitCode> {
    let out = Out { json: args.json };
    let opened = args.open(&db, &args.profile(), None).await?;
    let (_local, memory, tool_servers) = (opened.local, opened.memory, opened.tool_servers);
    let (mut session, resumed) = (opened.session, opened.resumed);
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
                // A refusal with no words, or a reply the length limit cut off, is said so.
                if let Some(n) = hark_core::session::notice(&reply) {
                    out.text(&format!("\n[{n}]"));
                }
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
                out.error(e.kind().as_str(), &e.to_string(), e.next_step());
                failed = true;
            }
        }
    }

    if let Some(path) = &args.export {
        session.settle_summary().await?;
        let json = export::to_json(&session.stored()?);
        std::fs::write(path, json).with_context(|| format!("cannot write the export to {}", path.display()))?;
        out.event(json!({"type": "exported", "path": path.display().to_string()}));
    }
    // What this chat said is embedded before it ends (a few milliseconds a message), so
    // the next session finds it by meaning at once.
    if let Some(memory) = memory {
        let _ = tokio::task::spawn_blocking(move || memory.finish(std::time::Duration::from_secs(5))).await;
    }
    if let Some(servers) = tool_servers {
        servers.shutdown().await;
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
        TurnEvent::ToolStarted { call } => {
            out.event(json!({"type": "tool_call", "id": call.id, "name": call.name, "arguments": call.arguments}));
            if !out.json {
                eprintln!("hark: [{}…]", crate::terminal::printable(&call.name));
            }
        }
        TurnEvent::ToolFinished {
            call_id,
            name,
            state,
            content,
        } => out.event(json!({"type": "tool_result", "id": call_id, "name": name, "state": state, "content": content})),
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
                ReplyOutcome::Refused { .. } => "refused",
                ReplyOutcome::CutOff => "cut_off",
            },
        ),
        _ => (json!(null), json!(null), "complete"),
    };
    json!({
        "type": "reply", "id": reply.id, "text": reply.text(), "outcome": outcome,
        "notice": hark_core::session::notice(reply),
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
                eprintln!("system: {}", crate::terminal::printable(&conv.system_text()));
                for m in h {
                    eprintln!("{}: {}", m.kind_name(), crate::terminal::printable(m.text()));
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
