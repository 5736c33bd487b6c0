//! Recording what the virtual speaker plays (`scripts/virtual-audio.sh`'s `spk` sink), for
//! the tests that read a reply back off the speaker. A recording a failed test leaves is
//! stopped when dropped: a recorder left running would outlive the test binary and hold
//! the harness's pipes.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// A recorder running until [`Recording::stop`] (or drop).
pub struct Recording {
    child: Child,
    path: PathBuf,
}

/// Starts recording the virtual speaker into `path` (16 kHz mono WAV).
pub fn record(path: &Path) -> Recording {
    let child = Command::new("parecord")
        .args([
            "--device=spk.monitor",
            "--file-format=wav",
            "--rate=16000",
            "--channels=1",
            // Delivered every 20 ms, not in parecord's default fragments of up to two
            // seconds: a recording stopped (SIGINT) right after a sound holds all of it (the
            // tray test's stop cue came out as 0.19 of a cue in a CI run).
            "--latency-msec=20",
        ])
        .arg(path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("parecord (pulseaudio-utils; scripts/test.sh installs it)");
    Recording {
        child,
        path: path.to_path_buf(),
    }
}

impl Recording {
    /// Stops the recorder and returns what it heard.
    pub fn stop(self) -> Vec<f32> {
        let path = self.path.clone();
        drop(self);
        hark_core::audio::wav::read_16k_mono(&path).unwrap()
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        // SIGINT: parecord finishes the WAV's header before it exits.
        let _ = Command::new("kill")
            .arg("-INT")
            .arg(self.child.id().to_string())
            .status();
        let _ = self.child.wait();
    }
}
