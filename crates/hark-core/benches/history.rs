//! Benchmarks of the history engine, printed as figures next to their goals.
//!
//! Run: `cargo bench -p hark-core --bench history`
//! - append + trim + count per turn with a 10,000-turn record (goal ≤ 50 µs)
//! - export and import of 10,000 turns (goal ≤ 200 ms each)
//! - tokenizer throughput (o200k exact, and the estimate)

use std::hint::black_box;
use std::time::{Duration, Instant};

use hark_core::conversation::{AssistantMessage, Conversation, HistorySettings, Usage};
use hark_core::store::{export, import, Store, StoredSession};
use hark_core::tokens::TokenCounter;

const TURNS: usize = 10_000;

fn user_text(i: usize) -> String {
    format!(
        "Turn {i}: could you remind me what we said about the trip to Kyoto and the budget of {} dollars?",
        3000 + i
    )
}

fn reply_text(i: usize) -> String {
    format!(
        "Of course. In turn {i} we planned three days in Kyoto, two in Tokyo, and a budget of about {} dollars, \
         with the temple visits in the morning to avoid the crowds.",
        3000 + i
    )
}

fn reply(i: usize) -> AssistantMessage {
    AssistantMessage {
        generated: reply_text(i),
        usage: Some(Usage {
            input_tokens: Some(900),
            output_tokens: Some(40),
            estimated_input_tokens: 880,
            estimated_output_tokens: 38,
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn build(model: &str, settings: HistorySettings) -> Conversation {
    let mut c = Conversation::new("bench", model, "You are Hark, a helpful voice assistant.", settings);
    for i in 0..TURNS {
        c.push_user(&user_text(i)).expect("non-empty");
        c.push_reply(reply(i));
    }
    c
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn report(name: &str, samples: &mut [Duration], goal: Duration) {
    samples.sort();
    let mean = samples.iter().sum::<Duration>() / samples.len() as u32;
    let p95 = percentile(samples, 0.95);
    let verdict = if p95 <= goal { "meets" } else { "MISSES" };
    println!(
        "{name:<58} mean {:>8.2} µs  p50 {:>8.2} µs  p95 {:>8.2} µs  ({verdict} goal ≤ {} µs)",
        mean.as_secs_f64() * 1e6,
        percentile(samples, 0.5).as_secs_f64() * 1e6,
        p95.as_secs_f64() * 1e6,
        goal.as_micros()
    );
}

/// One turn on top of a 10,000-turn record: append the user message (counted with the
/// model's tokenizer), find the trimmed window (turns and budget), append the reply (counted
/// too). Building the request (copying the window's messages) is timed apart: it grows with
/// the size of the context, not of the record.
fn per_turn(label: &str, model: &str, settings: HistorySettings) {
    let mut c = build(model, settings);
    let mut engine = Vec::with_capacity(1000);
    let mut request = Vec::with_capacity(1000);
    let mut turns = 0;
    for i in TURNS..TURNS + 1000 {
        let u = user_text(i);
        let r = reply(i);
        let t = Instant::now();
        c.push_user(&u).expect("non-empty");
        let window = c.window();
        c.push_reply(r);
        engine.push(t.elapsed());
        turns = window.turns;
        let t = Instant::now();
        black_box(c.prompt().expect("fits"));
        request.push(t.elapsed());
    }
    report(
        &format!("append+trim+count per turn, {label}"),
        &mut engine,
        Duration::from_micros(50),
    );
    request.sort();
    println!(
        "{:<58} p50 {:>8.2} µs for a {turns}-turn context (no goal)",
        "  building the request from the window",
        percentile(&request, 0.5).as_secs_f64() * 1e6
    );
}

fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let t = Instant::now();
    let v = f();
    (v, t.elapsed())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    println!("Hark history benchmarks ({} turns in the record)\n", TURNS);
    per_turn("max_turns=10, gpt-4o (o200k)", "gpt-4o", HistorySettings::default());
    per_turn(
        "max_turns=10, claude (estimate)",
        "claude-haiku-4-5",
        HistorySettings::default(),
    );
    per_turn(
        "unlimited turns, 128k budget, gpt-4o",
        "gpt-4o",
        HistorySettings {
            max_turns: 0,
            ..HistorySettings::default()
        },
    );

    // Export and import of 10,000 turns.
    let c = build("gpt-4o", HistorySettings::default());
    let session = StoredSession {
        meta: hark_core::store::SessionMeta::new("bench", c.system_prompt(), c.settings()),
        summary: None,
        messages: c.record().to_vec(),
    };
    let mut best = [Duration::MAX; 4];
    let mut size = 0;
    for _ in 0..5 {
        let (json, t_export) = timed(|| export::to_json(&session));
        size = json.len();
        let (parsed, t_import) = timed(|| import::parse(&json).expect("own export"));
        let (_, t_resume) = timed(|| black_box(parsed.1.conversation("gpt-4o")));
        let (md, t_md) = timed(|| export::to_markdown(&session));
        black_box(md);
        for (b, t) in best.iter_mut().zip([t_export, t_import, t_resume, t_md]) {
            *b = (*b).min(t);
        }
    }
    let goal = 200.0;
    let mark = |v: f64| if v <= goal { "meets" } else { "MISSES" };
    println!();
    println!(
        "export 10,000 turns to JSON ({:.1} MB)                   {:>8.1} ms  ({} goal ≤ 200 ms)",
        size as f64 / 1e6,
        ms(best[0]),
        mark(ms(best[0]))
    );
    println!(
        "import 10,000 turns from JSON (parse + validate)             {:>8.1} ms  ({} goal ≤ 200 ms)",
        ms(best[1]),
        mark(ms(best[1]))
    );
    println!(
        "rebuild the context engine over 10,000 turns (count all)    {:>8.1} ms",
        ms(best[2])
    );
    println!(
        "export 10,000 turns to Markdown                              {:>8.1} ms",
        ms(best[3])
    );

    let store = Store::open_in_memory().expect("sqlite");
    let (_, t_insert) = timed(|| store.insert_session(&session).expect("insert"));
    let (_, t_load) = timed(|| store.load_session("bench").expect("load"));
    println!(
        "SQLite: write 10,000 turns in one transaction               {:>8.1} ms",
        ms(t_insert)
    );
    println!(
        "SQLite: load 10,000 turns                                   {:>8.1} ms",
        ms(t_load)
    );

    // Tokenizer throughput.
    let text: String = (0..4000)
        .map(|i| format!("{} {} ", user_text(i), reply_text(i)))
        .collect();
    println!();
    for (name, counter) in [
        ("o200k_base (exact)", TokenCounter::for_model("gpt-4o")),
        ("estimate", TokenCounter::estimate()),
    ] {
        counter.count("warm up");
        let (tokens, t) = timed(|| counter.count(black_box(&text)));
        println!(
            "tokenizer {name:<20} {:>7.1} MB/s  {:>10.0} tokens/s  ({} tokens in {:.1} MB)",
            text.len() as f64 / 1e6 / t.as_secs_f64(),
            tokens as f64 / t.as_secs_f64(),
            tokens,
            text.len() as f64 / 1e6
        );
    }
    let (_, t) = timed(|| TokenCounter::for_model("gpt-4").count("cold start of the cl100k table"));
    println!("tokenizer table build (cl100k, once per process)   {:>8.1} ms", ms(t));
}
