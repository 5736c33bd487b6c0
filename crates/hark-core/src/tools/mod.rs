//! Tools the model may call (rule 10), and Hark's built-in ones.
//!
//! A [`Toolbox`] is offered with every request (`Prompt::tools`); the providers translate
//! the specs to Anthropic `tools` / OpenAI `tools`. `session::ChatSession` runs the calls a
//! reply asks for, records their results in place of the placeholders, and asks again.
//!
//! The built-in tools are safe by construction: they read the clock, and read or write
//! Hark's own memory (facts, past conversations). Nothing touches files, the network or
//! other programs. Tools that do are the user's own: MCP servers they added ([`mcp`]),
//! each tool behind the user's consent ([`consent`]). A [`ToolSource`] offers those, and
//! its list may change between turns.

pub mod consent;
pub mod mcp;

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{json, Value};

use crate::conversation::ToolSpec;
use crate::store::memory::Exclude;
use crate::store::Store;

/// What a tool may use while it runs.
#[derive(Clone)]
pub struct ToolContext {
    pub store: Arc<Store>,
    pub session_id: String,
    /// Record index where the current context starts: a search of past conversations
    /// leaves out what the model already sees.
    pub context_from: usize,
}

/// A tool the model can call.
#[async_trait]
pub trait Tool: Send + Sync {
    /// Name, description and JSON-schema parameters, as offered to the model.
    fn spec(&self) -> ToolSpec;
    /// Runs the call. `Err` carries a message for the model ("no fact matches ...").
    async fn call(&self, arguments: &Value, ctx: &ToolContext) -> Result<String, String>;
}

/// Tools whose list can change while Hark runs (a tool server's, as it announces them).
pub trait ToolSource: Send + Sync {
    /// The tools offered now.
    fn tools(&self) -> Vec<Arc<dyn Tool>>;
}

/// The tools offered to the model: fixed ones, then those of each source as they are
/// when a request is built.
#[derive(Clone, Default)]
pub struct Toolbox {
    tools: Vec<Arc<dyn Tool>>,
    sources: Vec<Arc<dyn ToolSource>>,
}

impl std::fmt::Debug for Toolbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.all().iter().map(|t| t.spec().name))
            .finish()
    }
}

impl Toolbox {
    /// No tools (models or servers that do not support tool calls).
    pub fn none() -> Self {
        Self::default()
    }

    /// Hark's built-in tools: the time, remember/forget a fact, search past conversations.
    pub fn builtin() -> Self {
        Self::none()
            .with(CurrentTime)
            .with(RememberFact)
            .with(ForgetFact)
            .with(SearchConversations)
    }

    /// Adds a tool (replacing one of the same name).
    pub fn with(mut self, tool: impl Tool + 'static) -> Self {
        let name = tool.spec().name;
        self.tools.retain(|t| t.spec().name != name);
        self.tools.push(Arc::new(tool));
        self
    }

    /// Adds a source of tools; its tools come after the fixed ones, and a name already
    /// taken is not offered twice.
    pub fn with_source(mut self, source: Arc<dyn ToolSource>) -> Self {
        self.sources.push(source);
        self
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty() && self.sources.iter().all(|s| s.tools().is_empty())
    }

    /// Every tool offered now, each name once (the first wins).
    fn all(&self) -> Vec<Arc<dyn Tool>> {
        let mut all = self.tools.clone();
        for tool in self.sources.iter().flat_map(|s| s.tools()) {
            let name = tool.spec().name;
            if !all.iter().any(|t| t.spec().name == name) {
                all.push(tool);
            }
        }
        all
    }

    /// The specs offered with each request.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.all().iter().map(|t| t.spec()).collect()
    }

    /// The tool called `name`.
    pub fn find(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.all().into_iter().find(|t| t.spec().name == name)
    }

    /// Runs one call: parses the arguments, finds the tool, calls it. Every failure is a
    /// message for the model, never a panic or a lost call.
    pub async fn run(&self, name: &str, arguments: &str, ctx: &ToolContext) -> Result<String, String> {
        let Some(tool) = self.find(name) else {
            return Err(format!("no tool named `{name}` is available"));
        };
        let args: Value = if arguments.trim().is_empty() {
            json!({})
        } else {
            serde_json::from_str(arguments).map_err(|e| format!("the arguments are not valid JSON ({e})"))?
        };
        if !args.is_object() {
            return Err("the arguments must be a JSON object".into());
        }
        tool.call(&args, ctx).await
    }
}

fn string_arg<'a>(args: &'a Value, name: &str) -> Result<&'a str, String> {
    args.get(name)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| format!("missing string argument `{name}`"))
}

/// The local date and time.
pub struct CurrentTime;

#[async_trait]
impl Tool for CurrentTime {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "get_current_time".into(),
            description: "Returns the user's current local date, time and time zone.".into(),
            parameters: json!({"type": "object", "properties": {}, "additionalProperties": false}),
        }
    }

    async fn call(&self, _: &Value, _: &ToolContext) -> Result<String, String> {
        let now = chrono::Local::now();
        Ok(format!(
            "{} (UTC{}); ISO 8601: {}",
            now.format("%A %-d %B %Y, %H:%M"),
            now.format("%:z"),
            now.to_rfc3339_opts(chrono::SecondsFormat::Secs, false)
        ))
    }
}

/// Remembers a fact for later conversations.
pub struct RememberFact;

#[async_trait]
impl Tool for RememberFact {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "remember_fact".into(),
            description: "Saves a fact about the user to long-term memory, for later conversations. Use it when \
                          the user asks you to remember something. Write the fact as a short sentence about the \
                          user, e.g. \"The user's name is Sam.\""
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {"fact": {"type": "string", "description": "The fact, as one short sentence."}},
                "required": ["fact"],
                "additionalProperties": false
            }),
        }
    }

    async fn call(&self, args: &Value, ctx: &ToolContext) -> Result<String, String> {
        let fact = string_arg(args, "fact")?;
        let f = ctx
            .store
            .add_fact(fact, Some(&ctx.session_id))
            .map_err(|e| e.to_string())?;
        Ok(format!("Remembered: {}", f.text))
    }
}

/// Forgets remembered facts.
pub struct ForgetFact;

#[async_trait]
impl Tool for ForgetFact {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "forget_fact".into(),
            description: "Deletes one remembered fact: give its words exactly (or enough of them to name it \
                          alone). Use it when the user asks you to forget something."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {"fact": {"type": "string", "description": "The fact to forget, as remembered."}},
                "required": ["fact"],
                "additionalProperties": false
            }),
        }
    }

    async fn call(&self, args: &Value, ctx: &ToolContext) -> Result<String, String> {
        let words = string_arg(args, "fact")?;
        let gone = ctx.store.forget_one(words).map_err(|e| e.to_string())?;
        Ok(format!("Forgot: {}", gone.text))
    }
}

/// Searches earlier conversations.
pub struct SearchConversations;

#[async_trait]
impl Tool for SearchConversations {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "search_past_conversations".into(),
            description: "Search the user's earlier conversations with you, by words and by meaning. Returns \
                          matching messages with their dates."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {"query": {"type": "string", "description": "Words to look for."}},
                "required": ["query"],
                "additionalProperties": false
            }),
        }
    }

    async fn call(&self, args: &Value, ctx: &ToolContext) -> Result<String, String> {
        let query = string_arg(args, "query")?;
        let hits = ctx
            .store
            .search(
                query,
                Some(Exclude {
                    session_id: &ctx.session_id,
                    from_seq: ctx.context_from,
                    // Asked to search, it searches everything, reset or not.
                    below_seq: 0,
                }),
                8,
                crate::store::memory::Fusion::recall(),
            )
            .map_err(|e| e.to_string())?;
        if hits.is_empty() {
            return Ok(format!("Nothing in earlier conversations matches \"{query}\"."));
        }
        Ok(hits
            .iter()
            .map(|f| {
                let h = &f.hit;
                let who = if h.kind == "user" { "User" } else { "Hark" };
                format!("[{}] {who}: {}", h.created_at.format("%Y-%m-%d"), h.text)
            })
            .collect::<Vec<_>>()
            .join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::{HistorySettings, Message, MessageKind};
    use crate::store::SessionMeta;

    fn ctx() -> ToolContext {
        let store = Arc::new(Store::open_in_memory().unwrap());
        store
            .create_session(&SessionMeta::new("s1", "", HistorySettings::default()))
            .unwrap();
        ToolContext {
            store,
            session_id: "s1".into(),
            context_from: 0,
        }
    }

    #[tokio::test]
    async fn built_in_tools_remember_forget_search_and_tell_the_time() {
        let ctx = ctx();
        let tools = Toolbox::builtin();
        let names: Vec<String> = tools.specs().into_iter().map(|s| s.name).collect();
        assert_eq!(
            names,
            [
                "get_current_time",
                "remember_fact",
                "forget_fact",
                "search_past_conversations"
            ]
        );

        let time = tools.run("get_current_time", "{}", &ctx).await.unwrap();
        assert!(time.contains(&chrono::Local::now().format("%Y").to_string()), "{time}");

        let r = tools
            .run("remember_fact", r#"{"fact": "The user's name is Sam."}"#, &ctx)
            .await
            .unwrap();
        assert_eq!(r, "Remembered: The user's name is Sam.");
        assert_eq!(ctx.store.facts().unwrap()[0].session_id.as_deref(), Some("s1"));
        let f = tools
            .run("forget_fact", r#"{"fact": "name is sam"}"#, &ctx)
            .await
            .unwrap();
        assert_eq!(f, "Forgot: The user's name is Sam.");
        assert!(tools
            .run("forget_fact", r#"{"fact": "tea"}"#, &ctx)
            .await
            .unwrap_err()
            .contains("no remembered fact"));

        ctx.store
            .save_message(
                "s1",
                &Message::new(MessageKind::User {
                    text: "My kayak is red.".into(),
                }),
            )
            .unwrap();
        // What the model already sees in its context is not "past": with the context
        // starting at 0 the message is left out, once it has left the context it is found.
        let none = tools
            .run("search_past_conversations", r#"{"query": "kayak colour"}"#, &ctx)
            .await
            .unwrap();
        assert!(none.starts_with("Nothing in earlier conversations"), "{none}");
        let past = ToolContext {
            context_from: 1,
            ..ctx.clone()
        };
        let found = tools
            .run("search_past_conversations", r#"{"query": "kayak colour"}"#, &past)
            .await
            .unwrap();
        assert!(found.ends_with("User: My kayak is red."), "{found}");
    }

    #[tokio::test]
    async fn bad_calls_become_messages_for_the_model() {
        let ctx = ctx();
        let tools = Toolbox::builtin();
        assert_eq!(
            tools.run("launch_rockets", "{}", &ctx).await.unwrap_err(),
            "no tool named `launch_rockets` is available"
        );
        assert!(tools
            .run("remember_fact", "{not json", &ctx)
            .await
            .unwrap_err()
            .starts_with("the arguments are not valid JSON"));
        assert_eq!(
            tools.run("remember_fact", "{}", &ctx).await.unwrap_err(),
            "missing string argument `fact`"
        );
        assert_eq!(
            tools.run("remember_fact", "[1]", &ctx).await.unwrap_err(),
            "the arguments must be a JSON object"
        );
    }
}
