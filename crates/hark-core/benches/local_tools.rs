//! Do the offline chat models call tools reliably? (issue 25, point 5: tools are offered to
//! a local model only if one does.)
//!
//! Each chat model of the manifest (or those `HARK_BENCH_LLMS=id,id` names) gets the 32
//! spoken requests of `benches/local_tools/set.json`: 20 that need one of Hark's built-in
//! tools (the time, remember or forget a fact, search past conversations) and 12 that need
//! none, some of them traps ("Remember when we were kids…", "What time does the sun set in
//! Norway?"). The model sees Hark's system prompt with the four tools described the way
//! Qwen2.5's own chat template describes tools when it is given some: the Hermes block
//! (`# Tools`, the specs inside `<tools></tools>`, calls inside `<tool_call></tool_call>`)
//! after the system text. hark-llm renders the system message as text, so this is what the
//! template's tool branch would produce, except for its example line, written here with
//! single braces (the 1.5B's GGUF template doubles them, and the model copies that). SmolLM2
//! has no tool format of its own; it gets the same block.
//!
//! Replies are greedy and read leniently, as a real parser would have to: a `<tool_call>`
//! block, a fenced JSON block, or a bare JSON object with a `name` (and `arguments`). A
//! request that needs a tool is right when the right tool is called with usable arguments
//! (the fact or the query present, naming what was said); one that needs none is a false
//! call when any tool is called.
//!
//! Prints, per model: the right calls, the false calls, how calls were written, and the
//! time per reply (p50, p95); then the verdict against the bar for offering tools: at least
//! 90 % right and at most 10 % false calls (a false call answers "tell me a joke" with a
//! tool, or asks the user's consent for nothing).
//!
//! Run: `scripts/bench-local-tools.sh` (fetches the models; release builds).
//! `HARK_BENCH_VERBOSE=1` prints each reply.

use std::time::Instant;

use hark_core::assembly::DEFAULT_SYSTEM_PROMPT;
use hark_core::conversation::{Prompt, PromptMessage, ToolSpec};
use hark_core::local::{LocalLlm, DEFAULT_CONTEXT};
use hark_core::models::{Manifest, ModelKind, ModelSpec, ModelStore};
use hark_core::provider::openai::OpenAi;
use hark_core::provider::ChatModel;
use hark_core::tools::Toolbox;
use serde::Deserialize;
use serde_json::{json, Value};

/// The bar for offering tools with a local model.
const RIGHT_AT_LEAST: f64 = 0.90;
const FALSE_AT_MOST: f64 = 0.10;

#[derive(Deserialize)]
struct Set {
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    say: String,
    tool: Option<String>,
    #[serde(default)]
    arg: Option<String>,
    #[serde(default)]
    has: Vec<String>,
}

/// How a call was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    Tag,
    Fenced,
    Bare,
}

/// A call read from a reply: how it was written, the tool's name, its arguments.
#[derive(Debug)]
struct Call {
    form: Form,
    name: String,
    arguments: Value,
}

/// The Hermes tool block of Qwen2.5's chat template, after the system text.
fn system_with_tools(system: &str, tools: &[ToolSpec]) -> String {
    let mut s = format!(
        "{system}\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n\
         You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
    );
    for t in tools {
        let spec = json!({"type": "function", "function": {
            "name": t.name, "description": t.description, "parameters": t.parameters,
        }});
        s.push('\n');
        s.push_str(&spec.to_string());
    }
    s.push_str(
        "\n</tools>\n\nFor each function call, return a json object with function name and arguments \
         within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \
         \"arguments\": <args-json-object>}\n</tool_call>",
    );
    s
}

/// The first JSON object in `text`, if one parses from its first `{`.
fn first_object(text: &str) -> Option<Value> {
    let start = text.find('{')?;
    let mut stream = serde_json::Deserializer::from_str(&text[start..]).into_iter::<Value>();
    match stream.next() {
        Some(Ok(v)) if v.is_object() => Some(v),
        _ => None,
    }
}

/// A call in a reply, written any of the ways the models write them.
fn read_call(reply: &str) -> Option<Call> {
    let (form, object) = if let Some(i) = reply.find("<tool_call>") {
        let body = &reply[i + "<tool_call>".len()..];
        let body = body.split("</tool_call>").next().unwrap_or(body);
        (Form::Tag, first_object(body)?)
    } else if let Some(i) = reply.find("```") {
        let body = &reply[i + 3..];
        let body = body.split("```").next().unwrap_or(body);
        (Form::Fenced, first_object(body)?)
    } else {
        (Form::Bare, first_object(reply)?)
    };
    let name = object.get("name")?.as_str()?.to_string();
    let arguments = match object.get("arguments").or_else(|| object.get("parameters")) {
        Some(Value::String(s)) => serde_json::from_str(s).unwrap_or(Value::Null),
        Some(v) => v.clone(),
        None => json!({}),
    };
    Some(Call { form, name, arguments })
}

/// Whether `call` is the right answer to `case` (which needs a tool).
fn is_right(case: &Case, call: &Call) -> bool {
    if Some(&call.name) != case.tool.as_ref() || !call.arguments.is_object() {
        return false;
    }
    let Some(arg) = &case.arg else { return true };
    let value = call.arguments[arg].as_str().unwrap_or_default().to_lowercase();
    !value.trim().is_empty() && (case.has.is_empty() || case.has.iter().any(|w| value.contains(w.as_str())))
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

struct Figures {
    id: String,
    right: usize,
    need: usize,
    false_calls: usize,
    none: usize,
    forms: [usize; 3],
    ms: Vec<f64>,
}

async fn run_model(spec: &ModelSpec, models: &ModelStore, set: &Set, verbose: bool) -> Figures {
    let server = LocalLlm::start(&models.path(spec), &spec.id, DEFAULT_CONTEXT, None)
        .await
        .expect("hark-llm (scripts/bench-local-tools.sh sets HARK_LLM_BIN)");
    let mut config = server.config();
    config.temperature = Some(0.0);
    config.max_tokens = 120;
    let model = OpenAi::new(config).expect("the loopback client");
    let system = system_with_tools(DEFAULT_SYSTEM_PROMPT, &Toolbox::builtin().specs());
    let mut f = Figures {
        id: spec.id.clone(),
        right: 0,
        need: 0,
        false_calls: 0,
        none: 0,
        forms: [0; 3],
        ms: Vec::new(),
    };
    for case in &set.cases {
        let prompt = Prompt {
            system: system.clone(),
            messages: vec![PromptMessage::User { text: case.say.clone() }],
            ..Default::default()
        };
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let start = Instant::now();
        let reply = model.stream(&prompt, &tx).await.expect("a reply").text;
        f.ms.push(start.elapsed().as_secs_f64() * 1e3);
        let call = read_call(&reply);
        if let Some(c) = &call {
            f.forms[c.form as usize] += 1;
        }
        let verdict = match (&case.tool, &call) {
            (Some(_), Some(c)) if is_right(case, c) => {
                f.right += 1;
                "right"
            }
            (Some(_), _) => "wrong",
            (None, Some(_)) => {
                f.false_calls += 1;
                "FALSE CALL"
            }
            (None, None) => "no call (right)",
        };
        if case.tool.is_some() {
            f.need += 1;
        } else {
            f.none += 1;
        }
        if verbose {
            eprintln!(
                "[{}] {:?} → {verdict}: {}",
                spec.id,
                case.say,
                reply.replace('\n', "⏎").chars().take(200).collect::<String>()
            );
        }
    }
    drop(server);
    f.ms.sort_by(f64::total_cmp);
    f
}

fn main() {
    let set: Set = serde_json::from_str(include_str!("local_tools/set.json")).expect("the set");
    let verbose = std::env::var_os("HARK_BENCH_VERBOSE").is_some();
    let manifest = Manifest::load().expect("the models manifest");
    let models = ModelStore::default_dir();
    let specs: Vec<&ModelSpec> = match std::env::var("HARK_BENCH_LLMS") {
        Ok(ids) => ids
            .split(',')
            .map(|id| {
                manifest
                    .find(id.trim())
                    .expect("HARK_BENCH_LLMS: chat models of the manifest")
            })
            .collect(),
        Err(_) => manifest.models.iter().filter(|m| m.kind == ModelKind::Llm).collect(),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let figures: Vec<Figures> = rt.block_on(async {
        let mut all = Vec::new();
        for spec in &specs {
            models
                .ensure(spec, &|_| {})
                .await
                .expect("the model (scripts/fetch-models.sh)");
            all.push(run_model(spec, &models, &set, verbose).await);
        }
        all
    });

    let need = set.cases.iter().filter(|c| c.tool.is_some()).count();
    println!(
        "Local tool calls ({} requests that need a tool, {} that need none; greedy; Qwen2.5's Hermes tool block)",
        need,
        set.cases.len() - need
    );
    println!(
        "{:<22} {:>12} {:>13} {:>18} {:>16}  verdict",
        "model", "right calls", "false calls", "tag/fenced/bare", "reply p50/p95"
    );
    for f in &figures {
        let right = f.right as f64 / f.need.max(1) as f64;
        let false_rate = f.false_calls as f64 / f.none.max(1) as f64;
        let pass = right >= RIGHT_AT_LEAST && false_rate <= FALSE_AT_MOST;
        println!(
            "{:<22} {:>5}/{:<2} {:>3.0}% {:>4}/{:<2} {:>4.0}% {:>8}/{}/{} {:>8.0}/{:.0} ms  {}",
            f.id,
            f.right,
            f.need,
            right * 100.0,
            f.false_calls,
            f.none,
            false_rate * 100.0,
            f.forms[0],
            f.forms[1],
            f.forms[2],
            percentile(&f.ms, 0.5),
            percentile(&f.ms, 0.95),
            if pass {
                "reliable: tools may be offered"
            } else {
                "not reliable: no tools"
            }
        );
    }
    println!(
        "The bar: at least {:.0} % right calls and at most {:.0} % false calls.",
        RIGHT_AT_LEAST * 100.0,
        FALSE_AT_MOST * 100.0
    );
}
