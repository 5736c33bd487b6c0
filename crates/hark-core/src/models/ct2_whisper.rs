//! CTranslate2 Whisper (the faster-whisper model format) to whisper.cpp's ggml format.
//!
//! The only packaged English Whisper model reachable from the registries is a CTranslate2
//! one; whisper.cpp reads ggml. This is a faithful port of the reference converter
//! (the numpy `ct2_to_ggml.py` of the offline probe that first ran this stack): same tensors, same order, same types, same
//! mel filter bank, so its output is byte for byte the file the manifest pins.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::Path;

use half::f16;

/// Why a conversion failed.
#[derive(Debug, thiserror::Error)]
pub enum ConvertError {
    #[error("cannot read {path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("cannot write the converted model: {0}")]
    Write(#[from] std::io::Error),
    #[error("{0} is not a CTranslate2 Whisper model: {1}")]
    Format(String, String),
}

/// One CTranslate2 variable: shape, and values as f32 (`f16` keeps the raw halves too).
struct Var {
    shape: Vec<usize>,
    f32s: Vec<f32>,
    halves: Option<Vec<u16>>,
}

fn rd<const N: usize>(r: &mut impl Read) -> std::io::Result<[u8; N]> {
    let mut b = [0u8; N];
    r.read_exact(&mut b)?;
    Ok(b)
}

fn read_str(r: &mut impl Read) -> std::io::Result<String> {
    let n = u16::from_le_bytes(rd::<2>(r)?) as usize;
    let mut b = vec![0u8; n];
    r.read_exact(&mut b)?;
    b.pop(); // NUL terminator
    Ok(String::from_utf8_lossy(&b).to_string())
}

/// A CTranslate2 model: spec name, variables, aliases.
type Ct2Model = (String, HashMap<String, Var>, HashMap<String, String>);

/// Reads `model.bin`.
fn load(bytes: &[u8]) -> std::io::Result<Ct2Model> {
    let mut r = bytes;
    let ver = u32::from_le_bytes(rd::<4>(&mut r)?);
    let name = if ver >= 2 { read_str(&mut r)? } else { String::new() };
    if ver >= 2 {
        rd::<4>(&mut r)?; // revision
    }
    let n = u32::from_le_bytes(rd::<4>(&mut r)?);
    let mut vars = HashMap::new();
    for _ in 0..n {
        let vname = read_str(&mut r)?;
        let rank = rd::<1>(&mut r)?[0] as usize;
        let mut shape = Vec::with_capacity(rank);
        for _ in 0..rank {
            shape.push(u32::from_le_bytes(rd::<4>(&mut r)?) as usize);
        }
        let dtype = rd::<1>(&mut r)?[0];
        let nbytes = u32::from_le_bytes(rd::<4>(&mut r)?) as usize;
        let mut buf = vec![0u8; nbytes];
        r.read_exact(&mut buf)?;
        let (f32s, halves) = match dtype {
            0 => (
                buf.chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect(),
                None,
            ),
            1 => (buf.iter().map(|&b| b as i8 as f32).collect(), None),
            2 => (
                buf.chunks_exact(2)
                    .map(|c| i16::from_le_bytes([c[0], c[1]]) as f32)
                    .collect(),
                None,
            ),
            3 => (
                buf.chunks_exact(4)
                    .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f32)
                    .collect(),
                None,
            ),
            4 => {
                let h: Vec<u16> = buf.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
                (h.iter().map(|&b| f16::from_bits(b).to_f32()).collect(), Some(h))
            }
            5 => (
                buf.chunks_exact(2)
                    .map(|c| f32::from_bits((u16::from_le_bytes([c[0], c[1]]) as u32) << 16))
                    .collect(),
                None,
            ),
            d => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("variable {vname}: unknown dtype {d}"),
                ))
            }
        };
        vars.insert(vname, Var { shape, f32s, halves });
    }
    let mut aliases = HashMap::new();
    if ver >= 3 {
        let na = u32::from_le_bytes(rd::<4>(&mut r)?);
        for _ in 0..na {
            let a = read_str(&mut r)?;
            let v = read_str(&mut r)?;
            aliases.insert(a, v);
        }
    }
    Ok((name, vars, aliases))
}

/// A tensor to write: values, shape, and the source halves when they can be copied as is.
struct Tensor {
    name: String,
    shape: Vec<usize>,
    f32s: Vec<f32>,
    halves: Option<Vec<u16>>,
}

impl Tensor {
    fn of(name: &str, v: &Var) -> Self {
        Self {
            name: name.to_string(),
            shape: v.shape.clone(),
            f32s: v.f32s.clone(),
            halves: v.halves.clone(),
        }
    }

    fn named(self, name: String) -> Self {
        Self { name, ..self }
    }

    /// The values as f16 bits: the source's own halves when it had them (no copy).
    fn f16_bits(&self) -> std::borrow::Cow<'_, [u16]> {
        match &self.halves {
            Some(h) => std::borrow::Cow::Borrowed(h),
            None => self.f32s.iter().map(|&x| f16::from_f32(x).to_bits()).collect(),
        }
    }
}

/// Splits a variable along its first axis into `N` equal parts (numpy's `split`).
fn split<const N: usize>(v: &Var) -> [Tensor; N] {
    let per = v.f32s.len() / N;
    let mut shape = v.shape.clone();
    shape[0] /= N;
    std::array::from_fn(|i| Tensor {
        name: String::new(),
        shape: shape.clone(),
        f32s: v.f32s[i * per..(i + 1) * per].to_vec(),
        halves: v.halves.as_ref().map(|h| h[i * per..(i + 1) * per].to_vec()),
    })
}

/// The mel filter bank (Slaney scale, as librosa/whisper compute it), in f64 then f32.
fn mel_filters(sr: f64, n_fft: usize, n_mels: usize) -> Vec<f32> {
    let f_sp = 200.0 / 3.0;
    let min_log_hz = 1000.0;
    let min_log_mel = min_log_hz / f_sp;
    let logstep = 6.4f64.ln() / 27.0;
    let hz_to_mel = |f: f64| {
        if f >= min_log_hz {
            min_log_mel + (f.max(1e-10) / min_log_hz).ln() / logstep
        } else {
            f / f_sp
        }
    };
    let mel_to_hz = |m: f64| {
        if m >= min_log_mel {
            min_log_hz * (logstep * (m - min_log_mel)).exp()
        } else {
            f_sp * m
        }
    };
    let linspace = |a: f64, b: f64, n: usize| -> Vec<f64> {
        let step = (b - a) / (n - 1) as f64;
        let mut v: Vec<f64> = (0..n).map(|i| i as f64 * step + a).collect();
        v[n - 1] = b;
        v
    };
    let n_freq = 1 + n_fft / 2;
    let fftfreqs = linspace(0.0, sr / 2.0, n_freq);
    let mel_f: Vec<f64> = linspace(hz_to_mel(0.0), hz_to_mel(sr / 2.0), n_mels + 2)
        .into_iter()
        .map(mel_to_hz)
        .collect();
    let fdiff: Vec<f64> = mel_f.windows(2).map(|w| w[1] - w[0]).collect();
    let mut w = vec![0f32; n_mels * n_freq];
    for i in 0..n_mels {
        let enorm = 2.0 / (mel_f[i + 2] - mel_f[i]);
        for (j, &f) in fftfreqs.iter().enumerate() {
            let lower = -(mel_f[i] - f) / fdiff[i];
            let upper = (mel_f[i + 2] - f) / fdiff[i + 1];
            let m = lower.min(upper);
            // numpy's maximum(0, -0.0) keeps the -0.0; f64::max would not (one bit of the pin).
            let m = if m < 0.0 { 0.0 } else { m };
            w[i * n_freq + j] = (m * enorm) as f32;
        }
    }
    w
}

/// GPT-2's byte-to-unicode table, reversed: the character standing for each byte.
fn unicode_to_byte() -> HashMap<char, u8> {
    let mut bs: Vec<u32> = (b'!' as u32..=b'~' as u32)
        .chain(0xA1..=0xAC)
        .chain(0xAE..=0xFF)
        .collect();
    let mut cs = bs.clone();
    let mut n = 0;
    for b in 0..256u32 {
        if !bs.contains(&b) {
            bs.push(b);
            cs.push(256 + n);
            n += 1;
        }
    }
    bs.into_iter()
        .zip(cs)
        .filter_map(|(b, c)| Some((char::from_u32(c)?, b as u8)))
        .collect()
}

/// Converts the CTranslate2 model in `dir` (model.bin, tokenizer.json) to a ggml file.
pub fn convert(dir: &Path, out: &mut impl Write) -> Result<(), ConvertError> {
    let read = |name: &str| {
        let p = dir.join(name);
        std::fs::read(&p).map_err(|source| ConvertError::Read {
            path: p.display().to_string(),
            source,
        })
    };
    let bad = |why: String| ConvertError::Format(dir.display().to_string(), why);
    let bytes = read("model.bin")?;
    let (spec, vars, _) = load(&bytes).map_err(|e| bad(e.to_string()))?;
    if spec != "WhisperSpec" {
        return Err(bad(format!("the spec is {spec:?}, not WhisperSpec")));
    }
    let var = |k: &str| vars.get(k).ok_or_else(|| bad(format!("missing variable {k}")));
    let layers = |prefix: &str| {
        let mut ids: Vec<usize> = vars
            .keys()
            .filter_map(|k| k.strip_prefix(prefix)?.split('/').next()?.parse().ok())
            .collect();
        ids.sort();
        ids.dedup();
        ids.len()
    };
    let n_audio_layer = layers("encoder/layer_");
    let n_text_layer = layers("decoder/layer_");
    let emb = var("decoder/embeddings/weight")?;
    let (n_vocab, n_state) = (emb.shape[0], emb.shape[1]);
    let n_mels = var("encoder/conv1/weight")?.shape[1];
    let hp: [i32; 11] = [
        n_vocab as i32,
        var("encoder/position_encodings/encodings")?.shape[0] as i32,
        n_state as i32,
        var("encoder/num_heads")?.f32s[0] as i32,
        n_audio_layer as i32,
        var("decoder/position_encodings/encodings")?.shape[0] as i32,
        n_state as i32,
        var("decoder/num_heads")?.f32s[0] as i32,
        n_text_layer as i32,
        n_mels as i32,
        1,
    ];

    let mut t: Vec<Tensor> = Vec::new();
    let put = |t: &mut Vec<Tensor>, name: &str, key: &str| -> Result<(), ConvertError> {
        t.push(Tensor::of(name, var(key)?));
        Ok(())
    };
    put(
        &mut t,
        "encoder.positional_embedding",
        "encoder/position_encodings/encodings",
    )?;
    put(&mut t, "encoder.conv1.weight", "encoder/conv1/weight")?;
    put(&mut t, "encoder.conv1.bias", "encoder/conv1/bias")?;
    put(&mut t, "encoder.conv2.weight", "encoder/conv2/weight")?;
    put(&mut t, "encoder.conv2.bias", "encoder/conv2/bias")?;
    put(&mut t, "encoder.ln_post.weight", "encoder/layer_norm/gamma")?;
    put(&mut t, "encoder.ln_post.bias", "encoder/layer_norm/beta")?;
    // The conv biases become column vectors.
    for x in t
        .iter_mut()
        .filter(|x| x.name.starts_with("encoder.conv") && x.name.ends_with(".bias"))
    {
        x.shape = vec![x.shape[0], 1];
    }

    // Self-attention and MLP of one block; the fused QKV projection is split, and the key
    // bias (always zero in Whisper) is dropped, as whisper.cpp expects.
    let block = |t: &mut Vec<Tensor>, src: &str, dst: &str, i: usize| -> Result<(), ConvertError> {
        let s = format!("{src}/layer_{i}");
        let d = format!("{dst}.blocks.{i}");
        for (to, from) in [
            ("mlp_ln.weight", "ffn/layer_norm/gamma"),
            ("mlp_ln.bias", "ffn/layer_norm/beta"),
            ("mlp.0.weight", "ffn/linear_0/weight"),
            ("mlp.0.bias", "ffn/linear_0/bias"),
            ("mlp.2.weight", "ffn/linear_1/weight"),
            ("mlp.2.bias", "ffn/linear_1/bias"),
            ("attn_ln.weight", "self_attention/layer_norm/gamma"),
            ("attn_ln.bias", "self_attention/layer_norm/beta"),
        ] {
            put(t, &format!("{d}.{to}"), &format!("{s}/{from}"))?;
        }
        let [q, k, v] = split::<3>(var(&format!("{s}/self_attention/linear_0/weight"))?);
        let [qb, kb, vb] = split::<3>(var(&format!("{s}/self_attention/linear_0/bias"))?);
        if kb.f32s.iter().any(|&x| x != 0.0) {
            return Err(bad(format!("{s}: the key bias is not zero")));
        }
        for (name, x) in [
            ("query.weight", q),
            ("query.bias", qb),
            ("key.weight", k),
            ("value.weight", v),
            ("value.bias", vb),
        ] {
            t.push(x.named(format!("{d}.attn.{name}")));
        }
        put(
            t,
            &format!("{d}.attn.out.weight"),
            &format!("{s}/self_attention/linear_1/weight"),
        )?;
        put(
            t,
            &format!("{d}.attn.out.bias"),
            &format!("{s}/self_attention/linear_1/bias"),
        )
    };
    for i in 0..n_audio_layer {
        block(&mut t, "encoder", "encoder", i)?;
    }
    put(
        &mut t,
        "decoder.positional_embedding",
        "decoder/position_encodings/encodings",
    )?;
    put(&mut t, "decoder.token_embedding.weight", "decoder/embeddings/weight")?;
    put(&mut t, "decoder.ln.weight", "decoder/layer_norm/gamma")?;
    put(&mut t, "decoder.ln.bias", "decoder/layer_norm/beta")?;
    for i in 0..n_text_layer {
        block(&mut t, "decoder", "decoder", i)?;
        let s = format!("decoder/layer_{i}/attention");
        let d = format!("decoder.blocks.{i}.cross_attn");
        put(&mut t, &format!("{d}_ln.weight"), &format!("{s}/layer_norm/gamma"))?;
        put(&mut t, &format!("{d}_ln.bias"), &format!("{s}/layer_norm/beta"))?;
        put(&mut t, &format!("{d}.query.weight"), &format!("{s}/linear_0/weight"))?;
        put(&mut t, &format!("{d}.query.bias"), &format!("{s}/linear_0/bias"))?;
        let [k, v] = split::<2>(var(&format!("{s}/linear_1/weight"))?);
        let [kb, vb] = split::<2>(var(&format!("{s}/linear_1/bias"))?);
        if kb.f32s.iter().any(|&x| x != 0.0) {
            return Err(bad(format!("{s}: the key bias is not zero")));
        }
        for (name, x) in [("key.weight", k), ("value.weight", v), ("value.bias", vb)] {
            t.push(x.named(format!("{d}.{name}")));
        }
        put(&mut t, &format!("{d}.out.weight"), &format!("{s}/linear_2/weight"))?;
        put(&mut t, &format!("{d}.out.bias"), &format!("{s}/linear_2/bias"))?;
    }

    // The vocabulary: GPT-2 byte-level tokens below the end-of-text id (whisper.cpp adds
    // the special tokens itself).
    let tok: serde_json::Value =
        serde_json::from_slice(&read("tokenizer.json")?).map_err(|e| bad(format!("tokenizer.json: {e}")))?;
    let vocab_map = tok["model"]["vocab"]
        .as_object()
        .ok_or_else(|| bad("tokenizer.json has no model.vocab".into()))?;
    let n_base = if n_vocab >= 51865 { 50257 } else { 50256 };
    let dec = unicode_to_byte();
    let mut by_id: Vec<Option<Vec<u8>>> = vec![None; n_base];
    for (token, id) in vocab_map {
        let Some(id) = id.as_u64().map(|i| i as usize).filter(|&i| i < n_base) else {
            continue;
        };
        let bytes: Option<Vec<u8>> = token.chars().map(|c| dec.get(&c).copied()).collect();
        by_id[id] = Some(bytes.ok_or_else(|| bad(format!("token {token:?} is not byte-level")))?);
    }
    let vocab: Vec<Vec<u8>> = by_id
        .into_iter()
        .enumerate()
        .map(|(i, b)| b.ok_or_else(|| bad(format!("the vocabulary has no token {i}"))))
        .collect::<Result<_, _>>()?;

    let w32 = |out: &mut dyn Write, x: i32| out.write_all(&x.to_le_bytes());
    w32(out, 0x6767_6d6c)?;
    for x in hp {
        w32(out, x)?;
    }
    let mf = mel_filters(16000.0, 400, n_mels);
    w32(out, n_mels as i32)?;
    w32(out, 201)?;
    for x in &mf {
        out.write_all(&x.to_le_bytes())?;
    }
    w32(out, vocab.len() as i32)?;
    for b in &vocab {
        w32(out, b.len() as i32)?;
        out.write_all(b)?;
    }
    const F32_NAMES: [&str; 4] = [
        "encoder.conv1.bias",
        "encoder.conv2.bias",
        "encoder.positional_embedding",
        "decoder.positional_embedding",
    ];
    for x in &t {
        let f32_out = x.shape.len() < 2 || F32_NAMES.contains(&x.name.as_str());
        w32(out, x.shape.len() as i32)?;
        w32(out, x.name.len() as i32)?;
        w32(out, if f32_out { 0 } else { 1 })?;
        for &d in x.shape.iter().rev() {
            w32(out, d as i32)?;
        }
        out.write_all(x.name.as_bytes())?;
        if f32_out {
            let mut buf = Vec::with_capacity(x.f32s.len() * 4);
            for v in &x.f32s {
                buf.extend_from_slice(&v.to_le_bytes());
            }
            out.write_all(&buf)?;
        } else {
            let mut buf = Vec::with_capacity(x.f32s.len() * 2);
            for h in x.f16_bits().iter() {
                buf.extend_from_slice(&h.to_le_bytes());
            }
            out.write_all(&buf)?;
        }
    }
    out.flush()?;
    Ok(())
}
