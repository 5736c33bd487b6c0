//! Options shared by `hark chat` and `hark talk`: the language model, the session and its
//! history settings, and opening (or resuming) the session they describe.
//!
//! With no API key anywhere (and no `--llm`/`--base-url`), the language model is the
//! offline one: the default model of the manifest, downloaded on first use, served by
//! `hark-llm` on loopback.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use hark_core::conversation::HistorySettings;
use hark_core::local::{self, LocalLlm};
use hark_core::models::{Manifest, ModelKind};
use hark_core::provider::{ProviderConfig, ProviderKind};
use hark_core::secrets::Keychain;
use hark_core::session::ChatSession;
use hark_core::store::Store;
use hark_core::tools::Toolbox;

#[derive(Args)]
pub struct SessionArgs {
    /// Language model: anthropic, openai (any OpenAI-compatible server with --base-url), or
    /// local (offline, llama.cpp). Default: whichever has a key, Anthropic first; `openai`
    /// when --base-url is given; `local` when there is no key at all.
    #[arg(long, env = "HARK_LLM")]
    pub llm: Option<Llm>,
    /// The offline model (`hark models list`), for --llm local.
    #[arg(long, env = "HARK_LOCAL_MODEL")]
    pub local_model: Option<String>,
    /// Provider endpoint (proxy, local server). Also HARK_ANTHROPIC_BASE_URL / HARK_OPENAI_BASE_URL.
    #[arg(long)]
    pub base_url: Option<String>,
    /// Model name.
    #[arg(long)]
    pub model: Option<String>,
    /// System prompt (kept with the session; replaces the stored one when resuming).
    #[arg(long)]
    pub system: Option<String>,
    /// Whole turns kept in the context, counting the current one; 0 = unlimited.
    #[arg(long)]
    pub max_turns: Option<u32>,
    /// Token budget of the request; 0 = none; default: the model window minus the reply.
    #[arg(long)]
    pub max_context_tokens: Option<u32>,
    /// Send each utterance alone (the record still keeps everything).
    #[arg(long)]
    pub no_history: bool,
    /// Fold turns that leave the context into a running summary (an extra model call each
    /// time, in the background).
    #[arg(long)]
    pub summarize: bool,
    /// Do not recall earlier conversations and remembered facts (rule 12; on by default).
    #[arg(long)]
    pub no_recall: bool,
    /// Offer the model no tools (by default it may read the time, remember and forget
    /// facts, and search past conversations).
    #[arg(long)]
    pub no_tools: bool,
    /// Resume this session (id or unique prefix).
    #[arg(long)]
    pub session: Option<String>,
    /// Write the session's export JSON here at the end.
    #[arg(long)]
    pub export: Option<PathBuf>,
    /// One JSON event per line on stdout instead of plain replies.
    #[arg(long)]
    pub json: bool,
    /// Reply budget in tokens.
    #[arg(long, default_value_t = 1024)]
    pub max_tokens: u32,
    /// Sampling temperature.
    #[arg(long)]
    pub temperature: Option<f32>,
}

const DEFAULT_SYSTEM: &str = "You are Hark, a helpful voice assistant. Answer in one to three short spoken sentences.";

/// The `--llm` choices.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Llm {
    Anthropic,
    #[value(name = "openai")]
    OpenAi,
    /// Offline: a model from the manifest run by llama.cpp (`hark-llm`).
    Local,
}

/// Picks the provider: explicit, else `openai` for a custom base URL, else whichever has a
/// key (Anthropic first), else the offline model.
fn choose_provider(args: &SessionArgs, kc: &Keychain) -> Llm {
    if let Some(k) = args.llm {
        return k;
    }
    if args.base_url.is_some() {
        return Llm::OpenAi;
    }
    for (k, llm) in [
        (ProviderKind::Anthropic, Llm::Anthropic),
        (ProviderKind::OpenAi, Llm::OpenAi),
    ] {
        if matches!(kc.get(k.as_str()), Ok(Some(_))) {
            return llm;
        }
    }
    Llm::Local
}

/// The offline model's server, started (after a first-use download) for this session.
async fn start_local(args: &SessionArgs) -> Result<LocalLlm> {
    let manifest = Manifest::load()?;
    let spec = match &args.local_model {
        Some(id) => manifest.find(id)?,
        None => manifest
            .default_for(ModelKind::Llm)
            .context("the model manifest has no default chat model")?,
    };
    if spec.kind != ModelKind::Llm {
        bail!(
            "{} is a speech model, not a chat model (see `hark models list`)",
            spec.id
        );
    }
    let path = crate::models::ensure(spec, "Hark runs offline (no API key, or --llm local)").await?;
    Ok(LocalLlm::start(&path, &spec.id, local::DEFAULT_CONTEXT).await?)
}

fn provider_config(args: &SessionArgs, kind: ProviderKind) -> Result<ProviderConfig> {
    let kc = Keychain::default();
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

/// An open session, and the offline model's server when it uses one (it stops when this
/// is dropped).
pub struct Opened {
    pub session: ChatSession,
    pub resumed: bool,
    pub local: Option<LocalLlm>,
}

impl SessionArgs {
    /// Opens the store and the session (new, or resumed with `--session`), applying the
    /// flags given over what the session had.
    pub async fn open(&self, db: &Path) -> Result<Opened> {
        let kc = Keychain::default();
        let (config, local) = match choose_provider(self, &kc) {
            Llm::Anthropic => (provider_config(self, ProviderKind::Anthropic)?, None),
            Llm::OpenAi => (provider_config(self, ProviderKind::OpenAi)?, None),
            Llm::Local => {
                let local = start_local(self).await?;
                let mut c = local.config();
                c.max_tokens = self.max_tokens;
                c.temperature = self.temperature;
                (c, Some(local))
            }
        };
        let reply_budget = config.max_tokens;
        let model = config.build().context("cannot set up the language model")?;
        let store = Arc::new(Store::open(db)?);

        let (mut session, resumed) = match &self.session {
            Some(id) => {
                let id = store.resolve_session(id)?;
                (ChatSession::resume(store.clone(), &id, model)?, true)
            }
            None => {
                let settings = HistorySettings::default();
                let system = self.system.as_deref().unwrap_or(DEFAULT_SYSTEM);
                (ChatSession::create(store.clone(), model, system, settings)?, false)
            }
        };
        session.set_reply_budget(reply_budget);
        session.set_summarization(self.summarize);
        session.set_recall(!self.no_recall);
        // Small local models do not call tools reliably: they get none.
        if !self.no_tools && local.is_none() {
            session.set_tools(Toolbox::builtin());
        }
        if let Some(l) = &local {
            session.set_model_window(l.context_window());
        }
        // Flags override what the session had; absent flags keep it.
        let mut settings = session.conversation().settings();
        if let Some(n) = self.max_turns {
            settings.max_turns = n;
        }
        if let Some(n) = self.max_context_tokens {
            settings.max_context_tokens = Some(n);
        }
        if self.no_history {
            settings.enabled = false;
        }
        if settings != session.conversation().settings() {
            session.set_settings(settings)?;
        }
        if resumed {
            if let Some(system) = &self.system {
                session.set_system_prompt(system)?;
            }
        }
        Ok(Opened {
            session,
            resumed,
            local,
        })
    }
}
