//! The rig the text-turn tests share: a loopback server per provider and sessions on it.
#![allow(dead_code)] // each test file uses part of it

use std::sync::Arc;
use std::time::Duration;

use hark_core::conversation::HistorySettings;
use hark_core::provider::{ChatModel, ProviderConfig, ProviderKind};
use hark_core::session::{ChatSession, TurnError};
use hark_core::store::Store;
use hark_e2e::FakeLlm;
use tokio_util::sync::CancellationToken;

pub const KEY: &str = "sk-test-loopback-7f3a9c";

pub struct Rig {
    pub server: FakeLlm,
    pub kind: ProviderKind,
}

impl Rig {
    pub fn new(kind: ProviderKind) -> Self {
        let server = match kind {
            ProviderKind::Anthropic => FakeLlm::anthropic(KEY),
            ProviderKind::OpenAi => FakeLlm::openai(Some(KEY)),
        };
        Self { server, kind }
    }

    pub fn config(&self) -> ProviderConfig {
        let mut c = ProviderConfig::new(self.kind);
        c.base_url = self.server.base_url();
        c.api_key = Some(KEY.to_string());
        c.model = match self.kind {
            ProviderKind::Anthropic => "claude-haiku-4-5".into(),
            ProviderKind::OpenAi => "gpt-4o-mini".into(),
        };
        c.retry.base_delay = Duration::from_millis(5);
        c.idle_timeout = Duration::from_secs(5);
        c
    }

    pub fn model(&self) -> Box<dyn ChatModel> {
        self.config().build().unwrap()
    }

    pub fn session(&self, store: &Arc<Store>, settings: HistorySettings) -> ChatSession {
        ChatSession::create(
            store.clone(),
            self.model(),
            "You are a helpful voice assistant.",
            settings,
        )
        .unwrap()
    }
}

pub fn both() -> [Rig; 2] {
    [Rig::new(ProviderKind::Anthropic), Rig::new(ProviderKind::OpenAi)]
}

pub async fn say(s: &mut ChatSession, text: &str) -> Result<String, TurnError> {
    let msg = s.send(text, &CancellationToken::new(), |_| {}).await?;
    Ok(msg.text().to_string())
}

/// History settings keeping `max_turns` whole turns.
pub fn keep_turns(max_turns: u32) -> HistorySettings {
    HistorySettings {
        max_turns,
        ..HistorySettings::default()
    }
}

pub fn mem_store() -> Arc<Store> {
    Arc::new(Store::open_in_memory().unwrap())
}

/// A tool for barge-in tests that answers "the slow answer is 42" only once the test opens
/// its gate: a barge-in while it runs needs no sleep to win a race against it, and the late
/// result comes when the test says (issue 21: orderings, not timings).
#[derive(Clone)]
pub struct GatedTool(Arc<tokio::sync::watch::Sender<bool>>);

impl GatedTool {
    pub fn new() -> Self {
        Self(Arc::new(tokio::sync::watch::Sender::new(false)))
    }

    /// Lets every call, running or to come, return its answer.
    pub fn open(&self) {
        self.0.send_replace(true);
    }
}

/// Waits for a session's background work (a late tool result) to have something for
/// `poll_background`, then applies it. Only catches a hang: the result is a channel send
/// away once the tool returns (microseconds); 20 s is far beyond that.
pub async fn settle_background(s: &mut ChatSession) {
    let signal = s.background_signal();
    tokio::time::timeout(Duration::from_secs(20), async {
        while !s.poll_background().unwrap() {
            signal.notified().await;
        }
    })
    .await
    .expect("the background result never came");
}

#[async_trait::async_trait]
impl hark_core::tools::Tool for GatedTool {
    fn spec(&self) -> hark_core::conversation::ToolSpec {
        hark_core::conversation::ToolSpec {
            name: "slow_lookup".into(),
            description: "Looks something up, slowly.".into(),
            parameters: serde_json::json!({"type": "object", "properties": {}}),
        }
    }

    async fn call(&self, _: &serde_json::Value, _: &hark_core::tools::ToolContext) -> Result<String, String> {
        let _ = self.0.subscribe().wait_for(|open| *open).await;
        Ok("the slow answer is 42".into())
    }
}
