//! Options shared by `hark chat` and `hark talk`: the language model, the session and its
//! history settings, and opening (or resuming) the session they describe.
//!
//! With no API key anywhere (and no `--llm`/`--base-url`), the language model is the
//! offline one: the default model of the manifest, downloaded on first use, served by
//! `hark-llm` on loopback.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use hark_core::assembly::{Llm as ResolvedLlm, LlmChoice, Profile, DEFAULT_REPLY_BUDGET};
use hark_core::local::LocalLlm;
use hark_core::models::{Manifest, ModelStore};
use hark_core::secrets::Keychain;
use hark_core::session::voice::VoiceLine;
use hark_core::session::ChatSession;
use hark_core::store::Store;

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
    /// A key stored for the provider's official endpoint is not sent here: store one for
    /// this URL with `hark keys set PROVIDER --base-url URL`.
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
    #[arg(long, default_value_t = DEFAULT_REPLY_BUDGET)]
    pub max_tokens: u32,
    /// Sampling temperature.
    #[arg(long)]
    pub temperature: Option<f32>,
    /// The conversation language: auto, or an ISO 639-1 code (de, fr, es, ja, …). Replies
    /// come back in it; `hark talk` transcribes and speaks it. Offline speech-to-text
    /// (whisper tiny.en) is English-only.
    #[arg(long, env = "HARK_LANGUAGE", default_value = "auto")]
    pub language: String,
}

/// The `--llm` choices.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Llm {
    Anthropic,
    #[value(name = "openai")]
    OpenAi,
    /// Offline: a model from the manifest run by llama.cpp (`hark-llm`).
    Local,
}

/// An open session, and the offline model's server when it uses one (it stops when this
/// is dropped).
pub struct Opened {
    pub session: ChatSession,
    pub resumed: bool,
    pub local: Option<LocalLlm>,
    /// The memory's background indexing, with recall on and the embedding model loaded.
    pub memory: Option<hark_core::store::index::Indexer>,
    /// The user's tool servers, when the session offers tools and there are some.
    pub tool_servers: Option<Arc<hark_core::tools::mcp::McpTools>>,
}

impl SessionArgs {
    /// The profile these flags describe (the speech fields are `hark talk`'s to fill in).
    pub fn profile(&self) -> Profile {
        let defaults = Profile::default();
        Profile {
            llm_provider: match self.llm {
                Some(Llm::Anthropic) => LlmChoice::Anthropic,
                Some(Llm::OpenAi) => LlmChoice::OpenAi,
                Some(Llm::Local) => LlmChoice::Local,
                None => LlmChoice::Auto,
            },
            llm_model: self.model.clone().unwrap_or_default(),
            local_model: self.local_model.clone(),
            llm_base_url: self.base_url.clone(),
            max_tokens: self.max_tokens,
            temperature: self.temperature,
            system_prompt: self.system.clone().unwrap_or(defaults.system_prompt),
            summarize: self.summarize,
            recall: !self.no_recall,
            tools: !self.no_tools,
            language: self.language.clone(),
            ..defaults
        }
    }

    /// Opens the store and the session (new, or resumed with `--session`), applying the
    /// flags given over what the session had. With no key at all the offline model is
    /// fetched on first use (with a progress bar) and started. With `questions` (a voice
    /// session's line: `hark talk` on the microphone), the tool servers' consent questions
    /// are put by voice.
    pub async fn open(&self, db: &Path, profile: &Profile, questions: Option<Arc<VoiceLine>>) -> Result<Opened> {
        let kc = Keychain::default();
        let manifest = Manifest::load()?;
        let models = ModelStore::default_dir();
        if profile.llm(&kc) == ResolvedLlm::Local {
            crate::models::ensure(
                profile.local_spec(&manifest)?,
                "Hark runs offline (no API key, or --llm local)",
            )
            .await?;
        }
        let chat = profile
            .chat(&kc, &manifest, &models)
            .await
            .context("cannot set up the language model")?;
        let store = Arc::new(Store::open(db)?);
        let memory = if profile.recall {
            crate::memory::attach(&store).await
        } else {
            None
        };
        let resumed = self.session.is_some();
        let id = self
            .session
            .as_deref()
            .map(|id| store.resolve_session(id))
            .transpose()?;
        let (mut session, local) = profile.open_session(&store, chat, id.as_deref())?;

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
        // The user's tool servers go beside the built-in tools, where the model gets tools.
        let tool_servers = if session.tools().is_empty() {
            None
        } else {
            crate::mcp::open(self.json, questions).await
        };
        if let Some(servers) = &tool_servers {
            let tools = session.tools().clone().with_source(servers.clone());
            session.set_tools(tools);
        }
        Ok(Opened {
            session,
            resumed,
            local,
            memory,
            tool_servers,
        })
    }
}
