//! The embedding model (issue 24): a sentence's meaning as a unit vector, offline, through
//! the ONNX Runtime that Moonshine and the natural voice run on.
//!
//! The model is a BERT-style encoder (its ONNX takes `input_ids`, `attention_mask` and
//! `token_type_ids` and gives `last_hidden_state`); its `tokenizer.json` is read with
//! Hugging Face's `tokenizers` crate. The sentence vector is pooled from the token vectors
//! here, as the model was trained (the mean over the real tokens, or the first token's),
//! then normalised, so cosine similarity is a dot product. One thread: it runs beside a
//! turn at the lowest priority and must not take the core the turn needs.

use std::path::PathBuf;
use std::sync::Mutex;

use ort::session::Session;
use ort::value::Tensor;
use tokenizers::{Tokenizer, TruncationParams};

use super::index::Embed;
use crate::models::{Manifest, ModelError, ModelKind, ModelStore};
use crate::provider::{ErrorKind, ProviderError};

const PROVIDER: &str = "memory";

/// How a model's token vectors make the sentence's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pooling {
    /// The mean of the token vectors under the attention mask (sentence-transformers'
    /// MiniLM, e5, gte).
    Mean,
    /// The first token's (`[CLS]`) vector (bge).
    Cls,
}

/// An embedding model as the manifest pins it, and how it is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EmbedModel {
    /// The manifest id of its ONNX file; also what is stored with each vector.
    pub id: &'static str,
    /// The manifest id of its `tokenizer.json`.
    pub tokenizer_id: &'static str,
    pub pooling: Pooling,
    /// Put before a search's text (asymmetric models are trained with one).
    pub query_prefix: &'static str,
    /// Put before a stored text.
    pub document_prefix: &'static str,
    /// Tokens read of a text at most (the rest is cut).
    pub max_tokens: usize,
}

/// Hark's embedding model: all-MiniLM-L6-v2 (sentence-transformers), int8. No other small
/// model is in a registry package as ONNX (PyPI and npm were searched for bge-small,
/// gte-small, e5-small, arctic-embed, multi-qa-MiniLM and the ms-marco rerankers); this
/// export's int8 arithmetic embeds a message in ~3 ms on one core, 3x its float twin.
/// It was trained for sentence similarity with mean pooling and no prefixes, on at most
/// 128 tokens (longer texts are cut at 256, as sentence-transformers does).
pub const MODEL: EmbedModel = EmbedModel {
    id: "minilm-l6",
    tokenizer_id: "minilm-l6-tokenizer",
    pooling: Pooling::Mean,
    query_prefix: "",
    document_prefix: "",
    max_tokens: 256,
};

/// Where the files of [`MODEL`] are in `store` (whether or not they are there yet).
pub fn files(manifest: &Manifest, store: &ModelStore) -> Result<EmbedFiles, ModelError> {
    let specs = manifest.with_requirements(MODEL.id)?;
    let find = |id: Option<&str>, kind: ModelKind| {
        specs
            .iter()
            .find(|s| id.map_or(s.kind == kind, |id| s.id == id))
            .map(|s| store.path(s))
            .ok_or_else(|| {
                ModelError::Manifest(format!(
                    "the embedding model's entry lacks its {} on this platform ({})",
                    id.unwrap_or("runtime"),
                    crate::models::this_platform()
                ))
            })
    };
    Ok(EmbedFiles {
        model: find(Some(MODEL.id), ModelKind::Embed)?,
        tokenizer: find(Some(MODEL.tokenizer_id), ModelKind::Embed)?,
        runtime: find(None, ModelKind::Runtime)?,
    })
}

/// Where its files are (whether or not they are there yet).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbedFiles {
    pub model: PathBuf,
    pub tokenizer: PathBuf,
    /// ONNX Runtime's library.
    pub runtime: PathBuf,
}

/// A loaded embedding model.
pub struct Embedder {
    spec: EmbedModel,
    tokenizer: Tokenizer,
    session: Mutex<Session>,
    /// Whether the ONNX takes `token_type_ids` (some exports leave it out).
    token_types: bool,
}

fn engine_err(m: impl Into<String>) -> ProviderError {
    ProviderError::new(PROVIDER, ErrorKind::LocalEngine, m)
}

impl Embedder {
    /// Loads ONNX Runtime (once per process), the tokenizer and the model; blocking (about
    /// a third of a second).
    pub fn load(spec: EmbedModel, files: &EmbedFiles) -> Result<Self, ProviderError> {
        crate::onnx::load_runtime(PROVIDER, &files.runtime, spec.id)?;
        let mut tokenizer = Tokenizer::from_file(&files.tokenizer).map_err(|e| {
            engine_err(format!(
                "{} is not a tokenizer.json the embedding model can use ({e}); fetch it again with `hark models fetch {}`",
                files.tokenizer.display(),
                spec.tokenizer_id
            ))
        })?;
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: spec.max_tokens,
                ..Default::default()
            }))
            .map_err(|e| engine_err(format!("the embedding tokenizer's truncation: {e}")))?;
        tokenizer.with_padding(None);
        let session = crate::onnx::session(PROVIDER, &files.model, 1, "the embedding model")?;
        let has = |name: &str| session.inputs().iter().any(|o| o.name() == name);
        let missing = ["input_ids", "attention_mask"]
            .into_iter()
            .find(|n| !has(n))
            .map(|n| format!("input {n}"))
            .or_else(|| {
                (!session.outputs().iter().any(|o| o.name() == "last_hidden_state"))
                    .then(|| "output last_hidden_state".to_string())
            });
        if let Some(m) = missing {
            return Err(engine_err(format!(
                "{} is not the embedding model: it has no {m}; fetch it again with `hark models fetch {}`",
                files.model.display(),
                spec.id
            )));
        }
        let token_types = has("token_type_ids");
        Ok(Self {
            spec,
            tokenizer,
            session: Mutex::new(session),
            token_types,
        })
    }

    pub fn spec(&self) -> EmbedModel {
        self.spec
    }

    /// Unit vectors of `texts`, each with `prefix` before it; blocking.
    fn vectors(&self, prefix: &str, texts: &[&str]) -> Result<Vec<Vec<f32>>, ProviderError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let mut encodings = Vec::with_capacity(texts.len());
        for t in texts {
            let text = format!("{prefix}{}", t.trim());
            let e = self
                .tokenizer
                .encode(text.as_str(), true)
                .map_err(|e| engine_err(format!("cannot tokenize a text for the embedding model: {e}")))?;
            encodings.push(e);
        }
        let rows = encodings.len();
        let width = encodings.iter().map(|e| e.get_ids().len()).max().unwrap_or(0).max(1);
        // Padded to the longest (pad id 0, mask 0): a padded row gives the same vector as
        // the text alone, since the mask keeps the padding out of attention and pooling.
        let mut ids = vec![0i64; rows * width];
        let mut mask = vec![0i64; rows * width];
        for (r, e) in encodings.iter().enumerate() {
            for (c, (&id, &m)) in e.get_ids().iter().zip(e.get_attention_mask()).enumerate() {
                ids[r * width + c] = i64::from(id);
                mask[r * width + c] = i64::from(m);
            }
        }
        let run_err = |e: ort::Error| engine_err(format!("the embedding model failed: {e}"));
        let shape = [rows, width];
        let mut inputs = ort::inputs![
            "input_ids" => Tensor::from_array((shape, ids)).map_err(run_err)?,
            "attention_mask" => Tensor::from_array((shape, mask.clone())).map_err(run_err)?,
        ];
        if self.token_types {
            inputs.push((
                "token_type_ids".into(),
                Tensor::from_array((shape, vec![0i64; rows * width]))
                    .map_err(run_err)?
                    .into(),
            ));
        }
        let mut session = self.session.lock().unwrap_or_else(|p| p.into_inner());
        let outputs = session.run(inputs).map_err(run_err)?;
        let hidden = outputs
            .get("last_hidden_state")
            .ok_or_else(|| engine_err("the embedding model returned no last_hidden_state"))?;
        let (shape, values) = hidden.try_extract_tensor::<f32>().map_err(run_err)?;
        let dim = shape.last().and_then(|d| usize::try_from(*d).ok()).unwrap_or(0);
        if shape.len() != 3 || dim == 0 || values.len() != rows * width * dim {
            return Err(engine_err(format!(
                "the embedding model returned a last_hidden_state of shape {:?}",
                &shape[..]
            )));
        }
        Ok((0..rows)
            .map(|r| {
                pool(
                    self.spec.pooling,
                    &values[r * width * dim..(r + 1) * width * dim],
                    &mask[r * width..(r + 1) * width],
                    dim,
                )
            })
            .collect())
    }
}

/// The sentence's unit vector from its token vectors (`width` rows of `dim`) and mask.
pub fn pool(pooling: Pooling, tokens: &[f32], mask: &[i64], dim: usize) -> Vec<f32> {
    let mut v = vec![0f32; dim];
    match pooling {
        Pooling::Cls => v.copy_from_slice(&tokens[..dim]),
        Pooling::Mean => {
            let mut n = 0f32;
            for (row, &m) in tokens.chunks_exact(dim).zip(mask) {
                if m != 0 {
                    n += 1.0;
                    for (a, x) in v.iter_mut().zip(row) {
                        *a += x;
                    }
                }
            }
            for a in &mut v {
                *a /= n.max(1.0);
            }
        }
    }
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        for a in &mut v {
            *a /= norm;
        }
    }
    v
}

impl Embed for Embedder {
    fn model_id(&self) -> &str {
        self.spec.id
    }

    fn embed_documents(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
        self.vectors(self.spec.document_prefix, texts)
            .map_err(|e| e.to_string())
    }

    fn embed_query(&self, text: &str) -> Result<Vec<f32>, String> {
        self.vectors(self.spec.query_prefix, &[text])
            .map_err(|e| e.to_string())?
            .pop()
            .ok_or_else(|| "no vector".to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_pooling_leaves_the_padding_out_and_normalises() {
        // Two real tokens and one padding token of dimension 2.
        let tokens = [1.0, 0.0, 3.0, 0.0, 100.0, 100.0];
        let v = pool(Pooling::Mean, &tokens, &[1, 1, 0], 2);
        assert_eq!(v, [1.0, 0.0]);
        let v = pool(Pooling::Cls, &[3.0, 4.0, 0.0, 0.0], &[1, 1], 2);
        assert!((v[0] - 0.6).abs() < 1e-6 && (v[1] - 0.8).abs() < 1e-6, "{v:?}");
        // All padding (an empty text): no NaN.
        assert_eq!(pool(Pooling::Mean, &[0.0, 0.0], &[0], 2), [0.0, 0.0]);
    }
}
