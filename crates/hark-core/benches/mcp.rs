//! The cost of the user's tools (issue 25), against the real reference server
//! (`@modelcontextprotocol/server-everything` from npm, over stdio), in one run:
//!
//! - a tool round trip to its `echo`, p50 and p95: through the MCP SDK alone (`rmcp`'s
//!   `call_tool` on a started server), and through Hark's tool (the consent check, the
//!   SDK call, the result's text and its cap), side by side;
//! - the time until 5 servers have started and listed their tools, started together as a
//!   session starts them.
//!
//! Run: `scripts/bench-mcp.sh` (installs the server; a release build).

use std::sync::Arc;
use std::time::{Duration, Instant};

use hark_core::secrets::Keychain;
use hark_core::store::{SessionMeta, Store};
use hark_core::tools::consent::{Consent, Refuse};
use hark_core::tools::mcp::config::{ServerConfig, ToolServers, Transport};
use hark_core::tools::mcp::McpTools;
use hark_core::tools::{ToolContext, Toolbox};
use rmcp::model::CallToolRequestParams;

const CALLS: usize = 300;
const STARTS: usize = 5;

fn server(name: &str, program: &str) -> ServerConfig {
    let mut consent = std::collections::BTreeMap::new();
    consent.insert("echo".to_string(), Consent::Always);
    ServerConfig {
        name: name.into(),
        transport: Transport::Stdio {
            command: program.into(),
            args: vec![],
            env: vec![],
        },
        enabled: true,
        consent,
    }
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i].as_secs_f64() * 1000.0
}

fn figures(mut d: Vec<Duration>) -> (f64, f64) {
    d.sort();
    (percentile(&d, 0.5), percentile(&d, 0.95))
}

fn tools(servers: Vec<ServerConfig>) -> Arc<McpTools> {
    let file = ToolServers {
        servers,
        ..ToolServers::default()
    };
    McpTools::new(file, None, Keychain::default(), Arc::new(Refuse), Arc::new(|_| {}))
}

#[tokio::main]
async fn main() {
    let program = std::env::var("HARK_TEST_MCP_EVERYTHING")
        .expect("HARK_TEST_MCP_EVERYTHING: run scripts/bench-mcp.sh, which installs the server");

    // Round trips: one started server, the SDK alone, then Hark's tool, alternating in
    // blocks so that both see the same machine.
    let hub = tools(vec![server("everything", &program)]);
    assert!(hub.start().await.is_empty(), "server-everything did not start");
    let peer = hub.peer("everything").await.expect("a started server");
    let store = Arc::new(Store::open_in_memory().unwrap());
    store
        .create_session(&SessionMeta::new("bench", "", Default::default()))
        .unwrap();
    let ctx = ToolContext {
        store,
        session_id: "bench".into(),
        context_from: 0,
    };
    let toolbox = Toolbox::none().with_source(hub.clone());
    let args = r#"{"message": "hello from the benchmark"}"#;
    let json_args = serde_json::json!({"message": "hello from the benchmark"});
    let (mut sdk, mut hark) = (Vec::new(), Vec::new());
    for _ in 0..10 {
        // Warm-up.
        toolbox.run("everything__echo", args, &ctx).await.unwrap();
    }
    for block in 0..CALLS / 10 {
        for _ in 0..10 {
            if block % 2 == 0 {
                let t = Instant::now();
                let params = CallToolRequestParams::new("echo").with_arguments(json_args.as_object().unwrap().clone());
                peer.call_tool(params).await.unwrap();
                sdk.push(t.elapsed());
            } else {
                let t = Instant::now();
                let r = toolbox.run("everything__echo", args, &ctx).await.unwrap();
                hark.push(t.elapsed());
                assert_eq!(r, "Echo: hello from the benchmark");
            }
        }
    }
    hub.shutdown().await;
    let (s50, s95) = figures(sdk);
    let (h50, h95) = figures(hark);
    println!(
        "tool round trip to server-everything's echo over stdio ({} calls each)",
        CALLS / 2
    );
    println!("  {:<34} {:>9} {:>9}", "", "p50 ms", "p95 ms");
    println!("  {:<34} {:>9.2} {:>9.2}", "rmcp call_tool alone", s50, s95);
    println!("  {:<34} {:>9.2} {:>9.2}", "Hark's tool (consent, call, cap)", h50, h95);
    println!("  {:<34} {:>9.2} {:>9.2}", "Hark's overhead", h50 - s50, h95 - s95);

    // Five servers started together, until each has listed its tools.
    let mut starts = Vec::new();
    for _ in 0..STARTS {
        let hub = tools((1..=5).map(|i| server(&format!("everything{i}"), &program)).collect());
        let t = Instant::now();
        let failed = hub.start().await;
        starts.push(t.elapsed());
        assert!(failed.is_empty(), "{failed:?}");
        let listed: usize = hub.views().iter().map(|v| v.tools.len()).sum();
        assert!(listed >= 5 * 10, "each server listed its tools ({listed})");
        hub.shutdown().await;
    }
    let (p50, p95) = figures(starts);
    println!("5 servers started together until all have listed their tools ({STARTS} runs)");
    println!("  p50 {:.0} ms, p95 {:.0} ms", p50, p95);
}
