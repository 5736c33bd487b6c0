//! Starting the helper programs Hark runs (the offline model server, the OS voice): one
//! way, so each is killed when its handle is dropped and, on Windows, opens no console
//! window over the app.

use std::ffi::OsStr;

/// CREATE_NO_WINDOW: a GUI app's child console program would otherwise flash a console
/// window for each utterance spoken or each model started.
#[cfg(windows)]
const CREATE_NO_WINDOW: u32 = 0x0800_0000;

/// A command for a helper program: killed when dropped; no console window on Windows.
pub fn command(program: impl AsRef<OsStr>) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(program);
    cmd.kill_on_drop(true);
    #[cfg(windows)]
    cmd.creation_flags(CREATE_NO_WINDOW);
    cmd
}

/// The same for a quick check run and waited for at once (`espeak-ng --version`): no
/// console window on Windows.
pub fn blocking_command(program: impl AsRef<OsStr>) -> std::process::Command {
    #[allow(unused_mut)] // mutated on Windows only
    let mut cmd = std::process::Command::new(program);
    #[cfg(windows)]
    {
        use std::os::windows::process::CommandExt;
        cmd.creation_flags(CREATE_NO_WINDOW);
    }
    cmd
}
