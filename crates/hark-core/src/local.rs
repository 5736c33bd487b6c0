//! The offline language model: `hark-llm` (a llama.cpp server speaking the OpenAI Chat
//! Completions format on loopback) started as a child process for a model from the
//! manifest. To the rest of Hark it is one more OpenAI-compatible provider.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::Child;

use crate::provider::{ErrorKind, ProviderConfig, ProviderError, ProviderKind};

/// The provider name used in errors and the session record.
pub const PROVIDER: &str = "local";

/// Context size the server is started with, in tokens. Small models on small machines:
/// 4096 keeps the KV cache of a 1.5B model near 100 MB.
pub const DEFAULT_CONTEXT: u32 = 4096;

/// How long loading a model may take (a 1.1 GB model loads in about a second from a warm
/// disk; a cold, slow disk needs more).
const START_TIMEOUT: Duration = Duration::from_secs(120);

/// A running `hark-llm`. Dropping it stops the server; so does this process ending in
/// any way (the server exits when the pipe to its stdin closes).
pub struct LocalLlm {
    child: Child,
    /// Held open: its closing is the server's signal to exit.
    _stdin: Option<tokio::process::ChildStdin>,
    /// The bearer token the server takes (made for this launch).
    token: String,
    base_url: String,
    model: String,
    n_ctx: u32,
}

/// Where the `hark-llm` binary is: `HARK_LLM_BIN`, next to the running executable, or on
/// the `PATH`.
pub fn server_binary() -> PathBuf {
    if let Some(p) = std::env::var_os("HARK_LLM_BIN").filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    let name = format!("hark-llm{}", std::env::consts::EXE_SUFFIX);
    if let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf))
    {
        let beside = dir.join(&name);
        if beside.is_file() {
            return beside;
        }
        // Test binaries live one level down (target/debug/deps).
        if let Some(up) = dir.parent().map(|d| d.join(&name)).filter(|p| p.is_file()) {
            return up;
        }
    }
    PathBuf::from(name)
}

/// How a server that ended before it was ready ended: what it wrote to stderr, and what its
/// exit status means when that is a failure that prints nothing (a missing DLL, an
/// instruction this CPU lacks). Waits a few seconds at most for it to end.
async fn ended(child: &mut Child) -> String {
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = tokio::time::timeout(Duration::from_secs(5), e.read_to_string(&mut err)).await;
    }
    let status = match tokio::time::timeout(Duration::from_secs(5), child.wait()).await {
        Ok(Ok(status)) => status,
        _ => return err.trim().to_string(),
    };
    #[cfg(unix)]
    let signal = std::os::unix::process::ExitStatusExt::signal(&status);
    #[cfg(not(unix))]
    let signal = None;
    let err = err.trim();
    match (exit_explained(status.code(), signal), err.is_empty()) {
        (Some(why), true) => format!("{why} ({status})"),
        (Some(why), false) => format!("{why} ({status}): {err}"),
        (None, true) => format!("it exited with {status} and said nothing"),
        (None, false) => err.to_string(),
    }
}

/// What an exit that prints nothing means, from the exit code (Windows' NTSTATUS values) or
/// the Unix signal.
fn exit_explained(code: Option<i32>, signal: Option<i32>) -> Option<&'static str> {
    // NTSTATUS values as the exit code of a process the loader or the CPU stopped.
    const DLL_NOT_FOUND: i32 = 0xC000_0135_u32 as i32;
    const ENTRYPOINT_NOT_FOUND: i32 = 0xC000_0139_u32 as i32;
    const ILLEGAL_INSTRUCTION: i32 = 0xC000_001D_u32 as i32;
    const SIGILL: i32 = 4;
    match (code, signal) {
        (Some(DLL_NOT_FOUND), _) => Some(
            "a library it needs is missing (the Microsoft Visual C++ runtime, which Hark's \
             installer puts beside it): reinstall Hark",
        ),
        (Some(ENTRYPOINT_NOT_FOUND), _) => Some(
            "a library it needs is too old (an older Microsoft Visual C++ runtime was found \
             first): reinstall Hark, or install the latest Visual C++ Redistributable",
        ),
        (Some(ILLEGAL_INSTRUCTION), _) | (_, Some(SIGILL)) => Some(
            "this processor lacks an instruction the offline engines were built for (see \
             hark_core::cpu): use a cloud model",
        ),
        _ => None,
    }
}

/// 128 random bits, hex.
fn launch_token() -> String {
    use rand::Rng;
    let bytes: [u8; 16] = rand::rng().random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn fail(message: String) -> ProviderError {
    ProviderError::new(PROVIDER, ErrorKind::LocalEngine, message)
}

impl LocalLlm {
    /// Starts the server for the model file; returns once it has loaded the model and
    /// listens. `alias` is the model name requests use; `unload_after`: the server frees
    /// the model after this long without a request (`None`: it keeps it).
    pub async fn start(
        model_file: &Path,
        alias: &str,
        n_ctx: u32,
        unload_after: Option<std::time::Duration>,
    ) -> Result<Self, ProviderError> {
        // hark-llm's llama.cpp is built for the same baseline as whisper.cpp.
        crate::cpu::offline_engines_supported(PROVIDER)?;
        let bin = server_binary();
        let threads = std::thread::available_parallelism()
            .map(|n| n.get().min(4))
            .unwrap_or(2);
        let mut child = crate::process::command(&bin)
            .arg("--model")
            .arg(model_file)
            .args(["--alias", alias, "--port", "0", "--ctx", &n_ctx.to_string()])
            .args(["--threads", &threads.to_string(), "--exit-with-stdin", "--token-stdin"])
            .args(["--unload-after", &unload_after.map_or(0, |d| d.as_secs().max(1)).to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                fail(format!(
                    "cannot start the offline model server {} ({e}); it ships next to hark (set HARK_LLM_BIN to its path)",
                    bin.display()
                ))
            })?;
        // A token for this launch only, handed over on the pipe (a command line is visible
        // to every user of the machine): other programs cannot use the model.
        let token = launch_token();
        let mut stdin = child.stdin.take();
        if let Some(pipe) = stdin.as_mut() {
            use tokio::io::AsyncWriteExt;
            if let Err(e) = pipe.write_all(format!("{token}\n").as_bytes()).await {
                // The pipe breaks when the server ended at once: say how it ended.
                return Err(fail(format!(
                    "the offline model server could not start ({e}): {}",
                    ended(&mut child).await
                )));
            }
        }
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| fail("no stdout from hark-llm".into()))?;
        let mut lines = BufReader::new(stdout).lines();
        let first = tokio::time::timeout(START_TIMEOUT, lines.next_line()).await;
        let line = match first {
            Ok(Ok(Some(line))) => line,
            Ok(_) => {
                // It exited: its stderr says why (no such file, out of memory, bad model), or
                // its exit status does when it never got to write anything.
                return Err(fail(format!(
                    "the offline model server stopped while loading {}: {}",
                    model_file.display(),
                    ended(&mut child).await
                )));
            }
            Err(_) => {
                return Err(fail(format!(
                    "the offline model server did not load {} within {} s",
                    model_file.display(),
                    START_TIMEOUT.as_secs()
                )))
            }
        };
        let base_url = line
            .rsplit(' ')
            .next()
            .filter(|u| u.starts_with("http://"))
            .ok_or_else(|| fail(format!("unexpected first line from hark-llm: {line:?}")))?
            .to_string();
        // Keep draining its output so the pipes never fill up.
        if let Some(err) = child.stderr.take() {
            tokio::spawn(async move {
                let mut lines = BufReader::new(err).lines();
                while let Ok(Some(l)) = lines.next_line().await {
                    tracing::warn!("hark-llm: {l}");
                }
            });
        }
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Ok(Self {
            child,
            _stdin: stdin,
            token,
            base_url,
            model: alias.to_string(),
            n_ctx,
        })
    }

    /// The OpenAI-compatible provider configuration for this server.
    pub fn config(&self) -> ProviderConfig {
        let mut c = ProviderConfig::new(ProviderKind::OpenAi);
        c.base_url = self.base_url.clone();
        c.model = self.model.clone();
        c.api_key = Some(self.token.clone());
        // A local model on a busy CPU can take a while before its first token.
        c.idle_timeout = Duration::from_secs(120);
        // It keeps its evaluated prompt between requests (issues 12 and 20).
        c.keeps_prefix = true;
        c
    }

    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The context size the server runs with (the conversation's token budget).
    pub fn context_window(&self) -> u32 {
        self.n_ctx
    }

    /// Whether the server process is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// hark-llm.exe without the Visual C++ runtime "dies with no message" (issue 22): the
    /// loader's exit code becomes words.
    #[test]
    fn an_exit_that_prints_nothing_is_explained_by_its_status() {
        let dll = exit_explained(Some(-1_073_741_515), None).unwrap();
        assert!(dll.contains("Visual C++ runtime"), "{dll}");
        let old = exit_explained(Some(-1_073_741_511), None).unwrap();
        assert!(old.contains("too old"), "{old}");
        let cpu = exit_explained(Some(-1_073_741_795), None).unwrap();
        assert_eq!(exit_explained(None, Some(4)), Some(cpu), "SIGILL says the same");
        assert!(cpu.contains("processor"), "{cpu}");
        assert_eq!(
            exit_explained(Some(1), None),
            None,
            "its own errors speak for themselves"
        );
        assert_eq!(exit_explained(None, Some(9)), None);
    }
}
