//! The model: one llama.cpp model and context owned by one worker thread, which runs one
//! generation at a time. The KV cache is kept between requests, so a conversation's next
//! turn only evaluates what is new after the common prefix (the whole history otherwise).

use std::num::NonZeroU32;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc as std_mpsc;
use std::sync::Arc;

use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatMessage, LlamaChatTemplate, LlamaModel};
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use tokio::sync::mpsc;

use crate::api::{ApiError, ChatRequest, Utf8Stream};

/// What a generation reports, in order: text pieces, then one `Done` or `Failed`.
#[derive(Debug)]
pub enum Event {
    Text(String),
    Done {
        prompt_tokens: u32,
        completion_tokens: u32,
        /// "stop" (end of turn) or "length" (max_tokens or the context is full).
        finish_reason: &'static str,
    },
    Failed(ApiError),
}

struct Job {
    request: ChatRequest,
    events: mpsc::UnboundedSender<Event>,
}

/// Handle to the worker thread.
#[derive(Clone)]
pub struct Engine {
    jobs: std_mpsc::Sender<Job>,
    pub n_ctx: u32,
    /// Generations stopped because the client went away.
    pub abandoned: Arc<AtomicU64>,
}

/// How to load the model.
pub struct Options<'a> {
    pub model: &'a Path,
    pub n_ctx: u32,
    pub threads: i32,
}

impl Engine {
    /// Loads the model on a new worker thread; returns once it is ready (or failed).
    pub fn start(opts: Options<'_>) -> anyhow::Result<Self> {
        let (jobs, rx) = std_mpsc::channel::<Job>();
        let (ready_tx, ready_rx) = std_mpsc::channel::<anyhow::Result<u32>>();
        let path = opts.model.to_path_buf();
        let (n_ctx, threads) = (opts.n_ctx, opts.threads);
        let abandoned = Arc::new(AtomicU64::new(0));
        let counter = abandoned.clone();
        std::thread::Builder::new().name("llama".into()).spawn(move || {
            let loaded = (|| -> anyhow::Result<(LlamaBackend, LlamaModel)> {
                let mut backend = LlamaBackend::init()?;
                backend.void_logs();
                let model = LlamaModel::load_from_file(&backend, &path, &LlamaModelParams::default())
                    .map_err(|e| anyhow::anyhow!("cannot load the model {}: {e}", path.display()))?;
                Ok((backend, model))
            })();
            let (backend, model) = match loaded {
                Ok(x) => x,
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                    return;
                }
            };
            let n_ctx = n_ctx.min(model.n_ctx_train().max(512));
            let params = LlamaContextParams::default()
                .with_n_ctx(NonZeroU32::new(n_ctx))
                .with_n_batch(n_ctx)
                .with_n_threads(threads)
                .with_n_threads_batch(threads);
            let ctx = match model.new_context(&backend, params) {
                Ok(c) => c,
                Err(e) => {
                    let _ = ready_tx.send(Err(anyhow::anyhow!("cannot create a context of {n_ctx} tokens: {e}")));
                    return;
                }
            };
            let template = model
                .chat_template(None)
                .ok()
                .or_else(|| LlamaChatTemplate::new("chatml").ok());
            let _ = ready_tx.send(Ok(n_ctx));
            let mut worker = Worker {
                model: &model,
                ctx,
                template,
                cached: Vec::new(),
                n_ctx,
                abandoned: counter,
            };
            while let Ok(job) = rx.recv() {
                worker.run(job);
            }
        })?;
        let n_ctx = ready_rx
            .recv()
            .map_err(|_| anyhow::anyhow!("the model thread ended while loading"))??;
        Ok(Self { jobs, n_ctx, abandoned })
    }

    /// Queues a generation; its events arrive on the returned receiver. Dropping the
    /// receiver (the client went away) stops the generation at the next token.
    pub fn generate(&self, request: ChatRequest) -> mpsc::UnboundedReceiver<Event> {
        let (events, rx) = mpsc::unbounded_channel();
        if let Err(std_mpsc::SendError(job)) = self.jobs.send(Job { request, events }) {
            let _ = job
                .events
                .send(Event::Failed(ApiError::server("the model thread has stopped")));
        }
        rx
    }
}

struct Worker<'m> {
    model: &'m LlamaModel,
    ctx: LlamaContext<'m>,
    template: Option<LlamaChatTemplate>,
    /// The tokens whose keys and values are in the context's cache, in order.
    cached: Vec<LlamaToken>,
    n_ctx: u32,
    abandoned: Arc<AtomicU64>,
}

impl Worker<'_> {
    fn run(&mut self, job: Job) {
        let events = job.events;
        if let Err(e) = self.generate(&job.request, &events) {
            // The cache may be half-written after a failure: start clean next time.
            self.ctx.clear_kv_cache();
            self.cached.clear();
            let _ = events.send(Event::Failed(e));
        }
    }

    fn prompt_text(&self, request: &ChatRequest) -> Result<String, ApiError> {
        let chat: Vec<LlamaChatMessage> = request
            .messages
            .iter()
            .map(|m| LlamaChatMessage::new(m.role.clone(), m.content.replace('\0', "")))
            .collect::<Result<_, _>>()
            .map_err(|e| ApiError::server(format!("bad message text: {e}")))?;
        let template = self
            .template
            .as_ref()
            .ok_or_else(|| ApiError::server("the model has no chat template"))?;
        self.model
            .apply_chat_template(template, &chat, true)
            .map_err(|e| ApiError::server(format!("cannot apply the chat template: {e}")))
    }

    fn generate(&mut self, request: &ChatRequest, events: &mpsc::UnboundedSender<Event>) -> Result<(), ApiError> {
        let text = self.prompt_text(request)?;
        let vocab = self.model.vocab();
        let tokens = vocab.tokenize(text.as_bytes(), false, true);
        if tokens.is_empty() {
            return Err(ApiError::invalid("the prompt is empty", "messages"));
        }
        if tokens.len() as u32 >= self.n_ctx {
            return Err(ApiError {
                status: 400,
                message: format!(
                    "This model's maximum context length is {} tokens. However, your messages resulted in {} tokens. \
                     Please reduce the length of the messages.",
                    self.n_ctx,
                    tokens.len()
                ),
                param: Some("messages"),
                code: Some("context_length_exceeded"),
            });
        }

        // Reuse the cached prefix; evaluate at least the last prompt token for its logits.
        let mut keep = self.cached.iter().zip(&tokens).take_while(|(a, b)| a == b).count();
        keep = keep.min(tokens.len() - 1);
        self.ctx
            .clear_kv_cache_seq(Some(0), Some(keep as u32), None)
            .map_err(|e| ApiError::server(format!("cannot trim the cache: {e}")))?;
        self.cached.truncate(keep);
        let mut batch = LlamaBatch::new(self.n_ctx as usize, 1);
        let last = tokens.len() - 1;
        for (i, t) in tokens.iter().enumerate().skip(keep) {
            batch
                .add(*t, i as i32, &[0], i == last)
                .map_err(|e| ApiError::server(format!("batch: {e}")))?;
        }
        self.ctx
            .decode(&mut batch)
            .map_err(|e| ApiError::server(format!("evaluating the prompt failed: {e}")))?;
        self.cached.extend_from_slice(&tokens[keep..]);

        let mut sampler = if request.temperature <= 0.0 {
            LlamaSampler::greedy()
        } else {
            LlamaSampler::chain_simple([
                LlamaSampler::top_k(40),
                LlamaSampler::top_p(0.95, 1),
                LlamaSampler::temp(request.temperature),
                LlamaSampler::dist(request.seed),
            ])
        };
        let mut utf8 = Utf8Stream::default();
        let mut n_gen = 0u32;
        let mut finish = "length";
        let mut pos = tokens.len() as i32;
        let mut logits_at = batch.n_tokens() - 1;
        while n_gen < request.max_tokens && (pos as u32) < self.n_ctx {
            let tok = sampler.sample(&self.ctx, logits_at);
            sampler.accept(tok);
            if vocab.is_eog(tok) {
                finish = "stop";
                break;
            }
            n_gen += 1;
            let piece = vocab.token_to_piece(tok, false, None);
            let text = utf8.push(&piece);
            if !text.is_empty() && events.send(Event::Text(text)).is_err() {
                // The client went away (barge-in): stop, keeping what is cached.
                self.abandoned.fetch_add(1, Ordering::Relaxed);
                return Ok(());
            }
            batch.clear();
            batch
                .add(tok, pos, &[0], true)
                .map_err(|e| ApiError::server(format!("batch: {e}")))?;
            self.ctx
                .decode(&mut batch)
                .map_err(|e| ApiError::server(format!("generation failed: {e}")))?;
            self.cached.push(tok);
            pos += 1;
            logits_at = 0;
        }
        let rest = utf8.finish();
        if !rest.is_empty() {
            let _ = events.send(Event::Text(rest));
        }
        let _ = events.send(Event::Done {
            prompt_tokens: tokens.len() as u32,
            completion_tokens: n_gen,
            finish_reason: finish,
        });
        Ok(())
    }
}
