//! espeak-ng, found and run: the natural voice's phonemes come from it everywhere, and it is
//! the OS voice on Linux.
//!
//! It is looked for where its installers put it, not only on `PATH`: an app started from
//! Finder has `PATH=/usr/bin:/bin:/usr/sbin:/sbin`, without Homebrew's folders, and the
//! Windows installer does not add its folder to `PATH`. [`candidates`] is the list, a pure
//! function of the system, its environment and Hark's own folder, so each system's list is
//! tested here; [`find`] is the first of them that is a file on this computer.
//!
//! Hark runs espeak-ng as a separate program and does not ship it: espeak-ng is GPL-3, and
//! Hark's installers carry only MIT-licensed code of its own (README: The natural voice).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::provider::{ErrorKind, ProviderError};

/// The places espeak-ng may be on `os` (as `std::env::consts::OS` names it), in the order
/// they are tried: `HARK_ESPEAK_NG` (the program's path), beside Hark's own executable
/// (`exe_dir`: a copy shipped or put there), each `PATH` entry, then the folders its
/// installers use: Homebrew (`/opt/homebrew/bin` on Apple silicon, `/usr/local/bin` on
/// Intel) and MacPorts (`/opt/local/bin`) on macOS; `%ProgramFiles%\eSpeak NG` (the
/// installer's folder; also the 64-bit one seen from a 32-bit process, and the 32-bit
/// one) on Windows; `/usr/bin` and `/usr/local/bin` elsewhere. Each place once.
pub fn candidates(os: &str, env: &dyn Fn(&str) -> Option<OsString>, exe_dir: Option<&Path>) -> Vec<PathBuf> {
    let windows = os == "windows";
    let program = if windows { "espeak-ng.exe" } else { "espeak-ng" };
    let mut dirs: Vec<PathBuf> = Vec::new();
    dirs.extend(exe_dir.map(Path::to_path_buf));
    if let Some(path) = env("PATH") {
        // The separator of the system asked about, not of the one running this.
        let separator = if windows { ';' } else { ':' };
        dirs.extend(
            path.to_string_lossy()
                .split(separator)
                .map(|d| d.trim().trim_matches('"'))
                .filter(|d| !d.is_empty())
                .map(PathBuf::from),
        );
    }
    match os {
        "macos" => dirs.extend(["/opt/homebrew/bin", "/usr/local/bin", "/opt/local/bin"].map(PathBuf::from)),
        "windows" => {
            for var in ["ProgramFiles", "ProgramW6432", "ProgramFiles(x86)"] {
                dirs.extend(
                    env(var)
                        .filter(|v| !v.is_empty())
                        .map(|v| PathBuf::from(v).join("eSpeak NG")),
                );
            }
            dirs.push(PathBuf::from(r"C:\Program Files\eSpeak NG"));
        }
        _ => dirs.extend(["/usr/bin", "/usr/local/bin"].map(PathBuf::from)),
    }
    let mut out: Vec<PathBuf> = env("HARK_ESPEAK_NG")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .into_iter()
        .collect();
    for dir in dirs {
        let candidate = dir.join(program);
        if !out.contains(&candidate) {
            out.push(candidate);
        }
    }
    out
}

/// The first candidate that is a file.
pub fn find_in(candidates: &[PathBuf]) -> Option<PathBuf> {
    candidates.iter().find(|c| c.is_file()).cloned()
}

/// espeak-ng on this computer, if it is anywhere [`candidates`] looks.
pub fn find() -> Option<PathBuf> {
    let exe_dir = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(Path::to_path_buf));
    find_in(&candidates(
        std::env::consts::OS,
        &|name| std::env::var_os(name),
        exe_dir.as_deref(),
    ))
}

/// How to install espeak-ng on `os`, in a few words for a message.
pub fn install_hint(os: &str) -> &'static str {
    match os {
        "macos" => "`brew install espeak-ng`",
        "windows" => "the espeak-ng installer, espeak-ng.msi from github.com/espeak-ng/espeak-ng/releases",
        _ => "your distribution's espeak-ng package",
    }
}

/// Runs espeak-ng with `args`, `input` on its stdin (never on the command line: no quoting
/// issues), and returns its stdout; errors name the provider that ran it.
pub(crate) async fn run(provider: &'static str, args: &[&str], input: &[u8]) -> Result<Vec<u8>, ProviderError> {
    use tokio::io::AsyncWriteExt;
    let err = |m: String| ProviderError::new(provider, ErrorKind::LocalEngine, m);
    let program = find().ok_or_else(|| {
        err(format!(
            "espeak-ng is not installed: install it ({}) or choose another voice",
            install_hint(std::env::consts::OS)
        ))
    })?;
    let mut cmd = crate::process::command(&program);
    // A copy with its data folder beside it (a portable or shipped one) finds its data
    // there; an installed one knows its own (compiled in, or the Windows registry), and
    // has no such folder beside it.
    if let Some(dir) = program.parent().filter(|d| d.join("espeak-ng-data").is_dir()) {
        cmd.env("ESPEAK_DATA_PATH", dir);
    }
    let mut child = cmd
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| err(format!("cannot run {} ({e})", program.display())))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(input).await.map_err(|e| err(e.to_string()))?;
    }
    let out = child.wait_with_output().await.map_err(|e| err(e.to_string()))?;
    if !out.status.success() {
        return Err(err(format!(
            "espeak-ng failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(out.stdout)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env_of(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let map: HashMap<String, OsString> = vars.iter().map(|(k, v)| (k.to_string(), OsString::from(v))).collect();
        move |name: &str| map.get(name).cloned()
    }

    /// Issue 22: the Windows installer puts espeak-ng in `%ProgramFiles%\eSpeak NG` and does
    /// not add it to PATH, so Hark never found it. A fake install there is found with a PATH
    /// that does not name it.
    #[test]
    fn espeak_ng_is_found_in_the_windows_installers_folder_off_the_path() {
        let program_files = tempfile::tempdir().unwrap();
        let install = program_files.path().join("eSpeak NG");
        std::fs::create_dir_all(install.join("espeak-ng-data")).unwrap();
        std::fs::write(install.join("espeak-ng.exe"), b"MZ").unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        // Quoted entries happen in a Windows PATH.
        let path = format!("{};\"{}\"", elsewhere.path().display(), elsewhere.path().display());
        let env = env_of(&[
            ("PATH", path.as_str()),
            ("ProgramFiles", program_files.path().to_str().unwrap()),
        ]);
        let list = candidates("windows", &env, None);
        assert_eq!(
            list[0],
            elsewhere.path().join("espeak-ng.exe"),
            "PATH first, its quotes off"
        );
        assert_eq!(
            list.iter()
                .filter(|c| **c == elsewhere.path().join("espeak-ng.exe"))
                .count(),
            1,
            "each place once"
        );
        assert_eq!(find_in(&list), Some(install.join("espeak-ng.exe")));
        // With no ProgramFiles variable, the installer's usual folder is still looked at.
        let bare = candidates("windows", &env_of(&[]), None);
        assert_eq!(
            bare,
            [PathBuf::from(r"C:\Program Files\eSpeak NG").join("espeak-ng.exe")]
        );
        // Not installed anywhere: nothing found.
        let env = env_of(&[("PATH", elsewhere.path().to_str().unwrap())]);
        assert_eq!(find_in(&candidates("windows", &env, None)[..1]), None);
    }

    /// Issue 22: an app started from Finder has `PATH=/usr/bin:/bin:/usr/sbin:/sbin`, without
    /// Homebrew's folders; they are looked at anyway, Apple silicon's first.
    #[test]
    fn espeak_ng_is_looked_for_in_homebrew_and_macports_off_a_finder_path() {
        let env = env_of(&[("PATH", "/usr/bin:/bin:/usr/sbin:/sbin")]);
        let list = candidates("macos", &env, None);
        let expected: Vec<PathBuf> = [
            "/usr/bin",
            "/bin",
            "/usr/sbin",
            "/sbin",
            "/opt/homebrew/bin",
            "/usr/local/bin",
            "/opt/local/bin",
        ]
        .iter()
        .map(|d| Path::new(d).join("espeak-ng"))
        .collect();
        assert_eq!(list, expected);
    }

    /// An explicit path wins, then a copy beside Hark, then the PATH; a fake Homebrew-like
    /// folder on the PATH is found. (Unix only: a Windows temp folder's drive colon would
    /// split a Unix PATH.)
    #[cfg(unix)]
    #[test]
    fn an_explicit_path_then_hark_s_own_folder_then_the_path() {
        let brew = tempfile::tempdir().unwrap();
        std::fs::write(brew.path().join("espeak-ng"), b"#!").unwrap();
        let own = tempfile::tempdir().unwrap();
        let env = env_of(&[
            ("PATH", brew.path().to_str().unwrap()),
            ("HARK_ESPEAK_NG", "/custom/espeak-ng"),
        ]);
        let list = candidates("linux", &env, Some(own.path()));
        assert_eq!(list[0], PathBuf::from("/custom/espeak-ng"));
        assert_eq!(list[1], own.path().join("espeak-ng"));
        assert_eq!(list[2], brew.path().join("espeak-ng"));
        assert_eq!(find_in(&list), Some(brew.path().join("espeak-ng")));
        // A copy beside Hark is taken before the PATH's.
        std::fs::write(own.path().join("espeak-ng"), b"#!").unwrap();
        assert_eq!(find_in(&list), Some(own.path().join("espeak-ng")));
    }
}
