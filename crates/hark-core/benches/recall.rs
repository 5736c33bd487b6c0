//! Recall by meaning against recall by words (issue 24), on a labelled set, in one run.
//!
//! The set (`benches/recall/recall-set.json`, made and checked by the scripts beside it)
//! is a record of 2,262 messages in 170 sessions, 72 questions about something said in
//! one of them — half paraphrases that share no content word with their target (after
//! stemming), half that share a word — and 24 questions that nothing in it answers. Each
//! question is searched as a turn's recall searches (the best [`MAX_HITS`]), by FTS5 alone
//! and by the hybrid search (FTS5 and the embeddings, reciprocal-rank fusion, a least
//! similarity).
//!
//! It prints hit@1 and hit@3 for both, overall, on the paraphrases and on the lexical
//! questions; the wrong-recall rate (a question with no answer that recalls something);
//! and the costs: embedding time per message, indexing 10,000 messages, the database's
//! growth per 10,000 messages, query time at 10,000 and 100,000 messages (p50, p95), and
//! the resident memory the model adds.
//!
//! Run: `scripts/bench-recall.sh` (fetches the embedding model; a release build).
//! `HARK_BENCH_FUSION=min_similarity,question_penalty,words_bonus` tries other settings;
//! `HARK_BENCH_QUICK=1` leaves out the costs at 10,000 and 100,000 messages.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use hark_core::conversation::{AssistantMessage, HistorySettings, Message, MessageKind};
use hark_core::models::{Manifest, ModelStore};
use hark_core::session::recall::MAX_HITS;
use hark_core::store::embed::{self, Embedder};
use hark_core::store::index::{index_all, Embed};
use hark_core::store::memory::{Fusion, Meaning, Nearest};
use hark_core::store::vectors::{IndexProgress, Unembedded};
use hark_core::store::{SessionMeta, Store};
use serde::Deserialize;

#[derive(Deserialize)]
struct Set {
    sessions: Vec<SetSession>,
    queries: Vec<Query>,
    no_answer: Vec<NoAnswer>,
}

#[derive(Deserialize)]
struct SetSession {
    id: String,
    messages: Vec<SetMessage>,
}

#[derive(Deserialize)]
struct SetMessage {
    role: String,
    text: String,
}

#[derive(Deserialize)]
struct Query {
    text: String,
    kind: String,
    target: Target,
}

#[derive(Deserialize)]
struct Target {
    session: String,
    index: i64,
}

#[derive(Deserialize)]
struct NoAnswer {
    text: String,
}

fn message(role: &str, text: &str) -> Message {
    Message::new(if role == "user" {
        MessageKind::User { text: text.into() }
    } else {
        MessageKind::Assistant(AssistantMessage {
            generated: text.into(),
            ..Default::default()
        })
    })
}

/// Writes the set's sessions into `store` (`copy` > 0 gives the session ids a suffix, for
/// the larger records).
fn fill(store: &Store, set: &Set, copy: usize) {
    for s in &set.sessions {
        let id = if copy == 0 {
            s.id.clone()
        } else {
            format!("{}-{copy}", s.id)
        };
        store
            .create_session(&SessionMeta::new(id.clone(), "", HistorySettings::default()))
            .unwrap();
        for m in &s.messages {
            store.save_message(&id, &message(&m.role, &m.text)).unwrap();
        }
    }
}

fn rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// The fusion tried (`HARK_BENCH_FUSION=min_similarity,question_penalty,words_bonus`: with
/// a penalty, questions are ranked lower instead of left out), or recall's.
fn fusion() -> Fusion {
    let mut f = Fusion::recall();
    if let Ok(v) = std::env::var("HARK_BENCH_FUSION") {
        let x: Vec<f32> = v
            .split(',')
            .map(|x| x.trim().parse().expect("HARK_BENCH_FUSION: numbers"))
            .collect();
        f.nearest.min_similarity = x[0];
        f.nearest.question_penalty = x[1];
        f.nearest.questions = x[1] > 0.0;
        f.words_bonus = x[2];
    }
    f
}

#[derive(Default)]
struct Score {
    at1: usize,
    at3: usize,
    n: usize,
}

impl Score {
    fn add(&mut self, rank: Option<usize>) {
        self.n += 1;
        self.at1 += usize::from(rank == Some(0));
        self.at3 += usize::from(rank.is_some_and(|r| r < 3));
    }
    fn show(&self) -> String {
        let r = |x: usize| x as f64 / self.n.max(1) as f64;
        format!("{:.2} {:.2}", r(self.at1), r(self.at3))
    }
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let set: Set = serde_json::from_str(
        &std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/recall/recall-set.json")).unwrap(),
    )
    .unwrap();
    let manifest = Manifest::load().unwrap();
    let models = ModelStore::new(hark_core::models::models_dir());
    let files = embed::files(&manifest, &models).expect("the manifest pins the embedding model");
    let before = rss_mb();
    let t = Instant::now();
    let model = Arc::new(Embedder::load(embed::MODEL, &files).expect("scripts/bench-recall.sh fetched the model"));
    model.embed_query("warm up").unwrap();
    let load_ms = t.elapsed().as_secs_f64() * 1000.0;
    let model_mb = rss_mb() - before;
    let fusion = fusion();
    // Plain reciprocal-rank fusion over every message, for comparison.
    let rrf = Fusion {
        nearest: Nearest {
            user_only: false,
            questions: true,
            question_penalty: 0.0,
            ..fusion.nearest
        },
        rrf: Some(60.0),
        ..fusion
    };
    // The Memory view's search (every message, questions ranked lower), and recall's.
    let searches = [
        ("fts5", None),
        ("hybrid (rrf)", Some(rrf)),
        ("search (view)", Some(Fusion::search())),
        ("hybrid (hark)", Some(fusion)),
    ];

    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("recall.db")).unwrap();
    fill(&store, &set, 0);
    let messages = set.sessions.iter().map(|s| s.messages.len()).sum::<usize>();
    let t = Instant::now();
    let p = index_all(&store, &*model, &Default::default(), |_| {}).unwrap();
    let per_message_ms = t.elapsed().as_secs_f64() * 1000.0 / p.done.max(1) as f64;
    println!(
        "recall benchmark: {} sessions, {messages} messages, {} questions ({} paraphrases), {} with no answer; model {} ({} pooling), fusion {fusion:?}",
        set.sessions.len(),
        set.queries.len(),
        set.queries.iter().filter(|q| q.kind == "paraphrase").count(),
        set.no_answer.len(),
        embed::MODEL.id,
        format!("{:?}", embed::MODEL.pooling).to_lowercase(),
    );

    // A question searched one way (`None`: words alone), as a turn's recall asks.
    let ask = |text: &str, v: &[f32], how: Option<Fusion>| {
        let meaning = how.map(|_| Meaning {
            model: model.model_id(),
            vector: v,
        });
        store
            .search_memory(text, meaning, None, MAX_HITS, how.unwrap_or(fusion))
            .unwrap()
    };
    let mut scores: HashMap<(&str, &str), Score> = HashMap::new();
    let mut query_ms = Vec::new();
    for q in &set.queries {
        let t = Instant::now();
        let v = model.embed_query(&q.text).unwrap();
        query_ms.push(t.elapsed().as_secs_f64() * 1000.0);
        for (name, how) in searches {
            let found = ask(&q.text, &v, how);
            let rank = found
                .iter()
                .position(|f| f.hit.session_id == q.target.session && f.hit.seq == q.target.index);
            scores.entry((name, "all")).or_default().add(rank);
            scores.entry((name, q.kind.as_str())).or_default().add(rank);
        }
    }
    let mut wrong: HashMap<&str, usize> = HashMap::new();
    for q in &set.no_answer {
        let v = model.embed_query(&q.text).unwrap();
        for (name, how) in searches {
            let found = ask(&q.text, &v, how);
            *wrong.entry(name).or_default() += usize::from(!found.is_empty());
        }
    }
    println!(
        "\n                 hit@1 hit@3  all | paraphrase | lexical     wrong recall (of {})",
        set.no_answer.len()
    );
    for (name, _) in searches {
        println!(
            "{name:<16} {} | {} | {}     {:.1} % ({})",
            scores[&(name, "all")].show(),
            scores[&(name, "paraphrase")].show(),
            scores[&(name, "lexical")].show(),
            100.0 * wrong[name] as f64 / set.no_answer.len() as f64,
            wrong[name]
        );
    }
    let h = |kind| {
        let s = &scores[&("hybrid (hark)", kind)];
        s.at3 as f64 / s.n as f64
    };
    let lexical_loss = scores[&("hybrid (hark)", "lexical")].at3 < scores[&("fts5", "lexical")].at3;
    println!(
        "goals: hybrid hit@3 ≥ 0.90 overall ({:.2}: {}), ≥ 0.80 on paraphrases ({:.2}: {}), no loss on lexical ({}), wrong recall ≤ 5 % ({:.1} %: {})",
        h("all"),
        if h("all") >= 0.9 { "met" } else { "not met" },
        h("paraphrase"),
        if h("paraphrase") >= 0.8 { "met" } else { "not met" },
        if lexical_loss { "a loss" } else { "met" },
        100.0 * wrong["hybrid (hark)"] as f64 / set.no_answer.len() as f64,
        if wrong["hybrid (hark)"] as f64 <= 0.05 * set.no_answer.len() as f64 { "met" } else { "not met" },
    );

    // Costs.
    query_ms.sort_by(f64::total_cmp);
    println!(
        "\ncosts: model load {load_ms:.0} ms, resident memory added {model_mb:.1} MB; embedding a stored message {per_message_ms:.1} ms (mean over {}), a question p50 {:.1} ms p95 {:.1} ms",
        p.done,
        percentile(&query_ms, 0.5),
        percentile(&query_ms, 0.95)
    );
    if std::env::var_os("HARK_BENCH_QUICK").is_none() {
        scale(&set, &*model, fusion);
    }
}

/// Indexing 10,000 messages (real embeddings), the file's growth, and query time at
/// 10,000 and 100,000 messages (the larger record's vectors are random unit vectors: a
/// search's cost does not depend on them).
fn scale(set: &Set, model: &dyn Embed, fusion: Fusion) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("scale.db");
    let store = Store::open(&path).unwrap();
    let size = |store: &Store| {
        store.checkpoint().unwrap();
        std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0) as f64 / 1e6
    };
    let mut copy = 0;
    let count = |store: &Store| store.index_progress(model.model_id()).unwrap().total;
    while count(&store) < 10_000 {
        copy += 1;
        fill(&store, set, copy);
    }
    let messages = count(&store);
    let without = size(&store);
    let t = Instant::now();
    let p: IndexProgress = index_all(&store, model, &Default::default(), |_| {}).unwrap();
    let secs = t.elapsed().as_secs_f64();
    let with = size(&store);
    println!(
        "indexing {messages} messages: {secs:.1} s ({:.1} ms each); the file grew {:.1} MB ({:.1} → {:.1} MB), {:.1} MB per 10,000 messages",
        secs * 1000.0 / p.done as f64,
        with - without,
        without,
        with,
        (with - without) * 10_000.0 / messages as f64
    );
    let queries: Vec<Vec<f32>> = set
        .queries
        .iter()
        .map(|q| model.embed_query(&q.text).unwrap())
        .collect();
    let timed = |store: &Store| {
        let mut ms = Vec::new();
        for _ in 0..3 {
            for (q, v) in set.queries.iter().zip(&queries) {
                let t = Instant::now();
                let meaning = Meaning {
                    model: model.model_id(),
                    vector: v,
                };
                store
                    .search_memory(&q.text, Some(meaning), None, MAX_HITS, fusion)
                    .unwrap();
                ms.push(t.elapsed().as_secs_f64() * 1000.0);
            }
        }
        ms.sort_by(f64::total_cmp);
        (percentile(&ms, 0.5), percentile(&ms, 0.95))
    };
    let (p50, p95) = timed(&store);
    println!("query (words + meaning, embedding excluded) at {messages} messages: p50 {p50:.1} ms, p95 {p95:.1} ms (goal p95 ≤ 15 ms)");

    // 100,000: the same texts again, with random vectors.
    let dim = queries[0].len();
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut random_unit = || {
        let v: Vec<f32> = (0..dim)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                (seed >> 40) as f32 / (1u64 << 24) as f32 - 0.5
            })
            .collect();
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.into_iter().map(|x| x / n).collect::<Vec<f32>>()
    };
    while count(&store) < 100_000 {
        copy += 1;
        fill(&store, set, copy);
        loop {
            let rows = store.unembedded(model.model_id(), 4096).unwrap();
            if rows.is_empty() {
                break;
            }
            let made: Vec<(Unembedded, Vec<f32>)> = rows.into_iter().map(|r| (r, random_unit())).collect();
            store.put_vectors(model.model_id(), &made).unwrap();
        }
    }
    let messages = count(&store);
    let (p50, p95) = timed(&store);
    println!("query at {messages} messages: p50 {p50:.1} ms, p95 {p95:.1} ms (goal p95 ≤ 60 ms)");
}
