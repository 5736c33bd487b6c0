//! Driving the real app: tauri-driver + WebKitWebDriver on the virtual display, with the
//! virtual speaker and microphone, the private Secret Service and loopback providers that
//! scripts/test.sh provides. Each test runs the app with its own config, database, log
//! and keychain service.
//!
//! No test here asserts a time (issue 21). Where a step is waited for, the wait ends on
//! the event (a phase in the page, a row in the database, a process gone) and its
//! deadline only catches a hang: each is at least 10× what the step takes on this 2-core
//! machine, said beside it.
#![allow(dead_code)] // each test file uses part of it

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{json, Value};

/// Why these tests are ignored for a plain `cargo test`.
pub const NEEDS: &str = "needs scripts/test.sh (display, virtual audio, keyring, models)";

/// Fails unless the display, audio, session bus and tauri-driver are there.
pub fn require_environment() {
    for v in ["DISPLAY", "PULSE_SERVER", "DBUS_SESSION_BUS_ADDRESS", "HARK_MODELS_DIR"] {
        assert!(
            std::env::var_os(v).is_some(),
            "{v} is not set: run the tests through scripts/test.sh"
        );
    }
    assert!(
        Command::new("tauri-driver").arg("--help").output().is_ok(),
        "tauri-driver is missing: scripts/install-deps.sh installs it"
    );
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// tauri-driver, stopped with SIGTERM so it also stops WebKitWebDriver (and the app).
pub struct Driver(Child);

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = Command::new("kill").arg("-TERM").arg(self.0.id().to_string()).status();
        let _ = self.0.wait();
        stop_test_apps(Duration::from_secs(5)); // an app exits in ~0.2 s on TERM
    }
}

/// Marks the apps the tests start (in their environment), so only those are ever stopped.
const TEST_APP_MARK: &str = "HARK_STARTED_BY_TEST=1";

/// The running (not zombie) `hark-app` processes a test started.
fn test_apps() -> Vec<String> {
    let out = Command::new("pgrep").args(["-x", "hark-app"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|p| p.trim().to_string())
        .filter(|pid| running(pid))
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|v| v == TEST_APP_MARK.as_bytes()))
        })
        .collect()
}

/// Waits up to `grace` for the apps the tests started to exit, then stops them. Closing
/// the WebDriver session closes the window, and a closed window only hides Hark (it lives
/// in the tray by design), so an app left behind is stopped here as a user would quit it.
pub fn stop_test_apps(grace: Duration) {
    let deadline = Instant::now() + grace;
    while !test_apps().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    for signal in ["-TERM", "-KILL"] {
        let left = test_apps();
        if left.is_empty() {
            return;
        }
        let _ = Command::new("kill").arg(signal).args(&left).status();
        // An app exits in ~0.2 s on TERM; after 5 s it is sent KILL.
        let deadline = Instant::now() + Duration::from_secs(5);
        while !test_apps().is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// Whether a process is there and not a zombie (state `Z` in /proc/PID/stat: exited, not
/// reaped yet by its parent).
fn running(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            stat.rsplit_once(')')
                .map(|(_, rest)| !rest.trim_start().starts_with('Z'))
        })
        .unwrap_or(false)
}

/// The app under test: the WebDriver client and its driver.
pub struct App {
    pub c: Client,
    pub driver: Driver,
    pub dir: PathBuf,
}

/// Where an app's files go, and what it starts with.
pub struct Setup {
    pub dir: PathBuf,
    pub config: PathBuf,
    pub db: PathBuf,
    pub logs: PathBuf,
    pub service: String,
    pub env: Vec<(String, PathBuf)>,
}

impl Setup {
    /// A fresh directory for one app run, with these settings (`None`: no settings file at
    /// all, a first run).
    pub fn new(dir: &Path, name: &str, settings: Option<Value>) -> Self {
        let config = dir.join(format!("{name}-config"));
        std::fs::create_dir_all(&config).unwrap();
        if let Some(s) = settings {
            std::fs::write(config.join("settings.json"), s.to_string()).unwrap();
        }
        Setup {
            dir: dir.to_path_buf(),
            config,
            db: dir.join(format!("{name}.db")),
            logs: dir.join(format!("{name}-logs")),
            service: format!("hark-{name}-test-{}", std::process::id()),
            // Hark's own debug lines, so a failure's log shows the voice turn's course
            // (listening, thinking, speaking, idle), not only the start-up.
            // English unless a test says otherwise: the window's words follow the system's
            // language (LANGUAGE, LC_ALL and LC_MESSAGES before LANG; empty ones count as unset).
            env: vec![
                ("HARK_LOG".into(), "warn,hark_app=debug,hark_core=debug".into()),
                ("LANGUAGE".into(), "".into()),
                ("LC_ALL".into(), "".into()),
                ("LC_MESSAGES".into(), "".into()),
                ("LANG".into(), "C.UTF-8".into()),
                // The X11 key grab for the shortcuts, even where the tests run in a Wayland
                // session (tests/portal.rs asks for the desktop's portal).
                ("HARK_SHORTCUTS".into(), "x11".into()),
            ],
        }
    }

    pub fn env(mut self, key: &str, value: impl Into<PathBuf>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }
}

/// `gdbus call --session ARGS` (5 s at most, UTF-8 whatever the test's locale): what it
/// printed, trimmed, or `None` if the call failed.
pub fn bus_call(args: &[&str]) -> Option<String> {
    let out = Command::new("gdbus")
        .args(["call", "--session", "--timeout", "5"])
        .args(args)
        .env("LC_ALL", "C.UTF-8")
        .output()
        .expect("gdbus (scripts/test.sh installs libglib2.0-bin)");
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Whether a hark-app holds its single-instance name on the session bus
/// (tauri-plugin-single-instance: the identifier and `.SingleInstance`).
pub fn single_instance_taken() -> bool {
    bus_call(&[
        "-d",
        "org.freedesktop.DBus",
        "-o",
        "/org/freedesktop/DBus",
        "-m",
        "org.freedesktop.DBus.NameHasOwner",
        "app.hark.desktop.SingleInstance",
    ])
    .is_some_and(|o| o.contains("true"))
}

/// The tests share one virtual microphone and speaker: one app at a time.
pub static ONE_APP: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Starts the app under tauri-driver with the setup's config dir, database, log dir and
/// keychain service, and no API keys in the environment.
pub async fn open_app(setup: &Setup) -> App {
    // The previous test's app is gone first (its driver was stopped, it may still be
    // exiting, or a failed test left it): tests count processes and share the shortcut
    // keys and the audio devices.
    // An app exits in ~0.2 s; 15 s only catches one that does not.
    stop_test_apps(Duration::from_secs(10));
    let deadline = Instant::now() + Duration::from_secs(15);
    while app_processes() > 0 {
        assert!(
            Instant::now() < deadline,
            "an earlier hark-app did not exit: {}",
            String::from_utf8_lossy(
                &Command::new("ps")
                    .args(["-o", "pid,ppid,stat,etime,args", "-C", "hark-app"])
                    .output()
                    .unwrap()
                    .stdout
            )
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Its single-instance name is free too: the bus lets go of it only once it has handled
    // the exit, and a start before that forwards its arguments to the process that left
    // and fails ("NoReply: Message recipient disconnected", in the languages test on a
    // clean-clone run; WebKitWebDriver then waited for the window for ever).
    while single_instance_taken() {
        assert!(
            Instant::now() < deadline,
            "the single-instance name is still held after the earlier hark-app exited"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // No key held down by an earlier test that failed mid-press.
    let _ = Command::new("xdotool")
        .args(["keyup", "ctrl", "alt", "shift", "super", "space"])
        .status();
    // tauri-driver and WebKitWebDriver each listen on a port picked free just before; one
    // picked by another process meanwhile (or a native port still held by the previous
    // test's driver) ends the session request early (a clean-clone run saw
    // `IncompleteMessage`), so the start is tried again with new ports, at most three times.
    let mut attempt = 0;
    let (c, driver) = loop {
        attempt += 1;
        let port = free_port();
        let mut cmd = Command::new("tauri-driver");
        cmd.args(["--port", &port.to_string(), "--native-port", &free_port().to_string()])
            .env("HARK_CONFIG_DIR", &setup.config)
            .env("HARK_DB", &setup.db)
            .env("HARK_LOG_DIR", &setup.logs)
            .env("HARK_KEYCHAIN_SERVICE", &setup.service)
            .env(
                TEST_APP_MARK.split('=').next().unwrap(),
                TEST_APP_MARK.split('=').nth(1).unwrap(),
            )
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("OPENAI_API_KEY")
            .env_remove("DEEPGRAM_API_KEY")
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        for (k, v) in &setup.env {
            cmd.env(k, v);
        }
        let driver = Driver(cmd.spawn().expect("tauri-driver"));
        // tauri-driver listens within ~0.1 s; 20 s only catches one that never does.
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "tauri-driver did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        let mut caps = serde_json::Map::new();
        caps.insert(
            "tauri:options".into(),
            json!({ "application": env!("CARGO_BIN_EXE_hark-app") }),
        );
        // A session comes in seconds; an app that failed to start leaves WebKitWebDriver
        // waiting for its window for ever, so a minute without one is a failed try (the
        // app's log says why).
        let mut builder = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new());
        builder.capabilities(caps);
        let url = format!("http://127.0.0.1:{port}");
        let session = builder.connect(&url);
        let failure = match tokio::time::timeout(Duration::from_secs(60), session).await {
            Ok(Ok(c)) => break (c, driver),
            Ok(Err(e)) => e.to_string(),
            Err(_) => format!("none within 60 s; the app's log: {}", log_tail(setup, 5)),
        };
        if attempt >= 3 {
            panic!("a WebDriver session with the app, after {attempt} tries: {failure}");
        }
        eprintln!("no WebDriver session on try {attempt} ({failure}); starting the driver again");
        drop(driver);
        stop_test_apps(Duration::from_secs(10));
    };
    let app = App {
        c,
        driver,
        dir: setup.dir.clone(),
    };
    app.wait("the window", "return document.body.dataset.ready === 'true'", |v| {
        v == true
    })
    .await;
    app
}

impl App {
    pub async fn js(&self, script: &str) -> Value {
        self.c.execute(script, vec![]).await.unwrap()
    }

    /// Polls a script until `pred` holds for its value (60 s at most: the slowest step
    /// waited for this way, a spoken offline turn, takes ~3 s here).
    pub async fn wait(&self, what: &str, script: &str, pred: impl Fn(&Value) -> bool) -> Value {
        self.wait_for(what, script, Duration::from_secs(60), pred).await
    }

    pub async fn wait_for(&self, what: &str, script: &str, limit: Duration, pred: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + limit;
        loop {
            let v = self.js(script).await;
            if pred(&v) {
                return v;
            }
            if Instant::now() > deadline {
                let banners = self
                    .js("return document.querySelector('#banners')?.innerText ?? ''")
                    .await;
                // What the window showed: a wait that ends here is read from this and the log.
                let shown = self
                    .js("return (document.querySelector('#onboarding') ? `the introduction at ${document.querySelector('#onboarding').dataset.step}: ` : '') + document.body.innerText.slice(0, 600)")
                    .await;
                let log = logs_under(&self.dir, 40);
                panic!("timed out waiting for {what}; last value {v}; banners: {banners}\nthe window showed: {shown}\nthe app's log:\n{log}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Waits for the status line's state ("ready", "listening", ...).
    pub async fn phase(&self, want: &'static str) {
        self.wait(
            want,
            "return document.querySelector('#state')?.dataset.phase ?? null",
            |v| v == want,
        )
        .await;
    }

    pub async fn click(&self, css: &str) {
        self.c.find(Locator::Css(css)).await.unwrap().click().await.unwrap();
    }

    /// Clicks with a script (for buttons below the fold of a dialog).
    pub async fn click_js(&self, css: &str) {
        let s = format!("document.querySelector({}).click(); return true", json!(css));
        self.js(&s).await;
    }

    /// Chooses the option of a select (by the start of its label) as a user would: the
    /// change event follows.
    pub async fn choose(&self, select: &str, label_start: &str) {
        let s = format!(
            "const s = document.querySelector({}); const i = [...s.options].findIndex(o => o.textContent.trim().startsWith({})); \
             if (i < 0) return false; s.selectedIndex = i; s.dispatchEvent(new Event('change', {{bubbles: true}})); return true",
            json!(select),
            json!(label_start)
        );
        assert_eq!(self.js(&s).await, true, "{select} has an option {label_start:?}");
    }

    pub async fn text(&self, css: &str) -> String {
        let s = format!("return document.querySelector({})?.innerText ?? ''", json!(css));
        self.js(&s).await.as_str().unwrap_or_default().to_string()
    }

    /// Banners that are problems (not notices, not the download's progress).
    pub async fn error_banners(&self) -> String {
        self.js(
            "return [...document.querySelectorAll('#banners .banner:not(.notice):not(.progress)')].map(b => b.innerText).join(' | ')",
        )
        .await
        .as_str()
        .unwrap_or_default()
        .to_string()
    }

    /// A picture of the window as the display shows it (for docs/; `HARK_SCREENSHOTS`).
    /// Taken from the X server, not WebDriver: WebKit's own snapshot can lag behind a
    /// modal dialog that has just closed.
    pub async fn screenshot(&self, name: &str) {
        if let Some(dir) = std::env::var_os("HARK_SCREENSHOTS") {
            tokio::time::sleep(Duration::from_millis(300)).await;
            let window = visible_windows("Hark").into_iter().next().expect("the window shows");
            std::fs::create_dir_all(&dir).expect("the HARK_SCREENSHOTS folder can be made");
            let out = PathBuf::from(dir).join(name);
            let ok = Command::new("import")
                .args(["-window", &window.to_string()])
                .arg(&out)
                .status()
                .unwrap();
            assert!(ok.success(), "screenshot {name}");
        }
    }

    /// Opens Settings and waits until the dialog shows.
    pub async fn open_settings(&self) {
        self.click("#open-settings").await;
        self.wait(
            "the settings open",
            "return document.querySelector('#settings')?.open === true",
            |v| v == true,
        )
        .await;
    }

    /// Saves Settings and waits until the dialog has closed.
    pub async fn save_settings(&self) {
        self.click_js("#settings-save").await;
        self.wait(
            "the settings closed",
            "return document.querySelector('#settings') === null",
            |v| v == true,
        )
        .await;
    }

    pub async fn close(self) {
        let _ = self.c.close().await;
        drop(self.driver);
    }
}

pub const HISTORY: &str = "return Array.from(document.querySelectorAll('#history li')).map(li => ({cls: li.className, text: li.querySelector('.text') ? li.querySelector('.text').textContent : li.textContent}))";

pub fn in_context(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cls"].as_str().unwrap().contains(" in-context"))
        .map(|e| e["text"].as_str().unwrap().to_string())
        .collect()
}

/// Plays a WAV into the virtual microphone (through the virtual speaker it listens to).
pub async fn play(wav: &Path) {
    let wav = wav.to_path_buf();
    tokio::task::spawn_blocking(move || {
        assert!(Command::new("paplay")
            .arg("--device=spk")
            .arg(&wav)
            .status()
            .unwrap()
            .success());
    })
    .await
    .unwrap();
}

/// Presses (or releases) an X11 key combination, e.g. `ctrl+alt+shift+F9`: a real key
/// event, as the user's keyboard makes it, whichever window has the focus.
pub fn key(down: bool, combo: &str) {
    let ok = Command::new("xdotool")
        .args([if down { "keydown" } else { "keyup" }, "--clearmodifiers", combo])
        .status()
        .unwrap();
    assert!(ok.success());
}

/// The X11 windows named exactly `name` that are mapped (visible).
pub fn visible_windows(name: &str) -> Vec<u32> {
    let out = Command::new("xdotool")
        .args(["search", "--onlyvisible", "--name", &format!("^{name}$")])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// The last `n` lines of the app's log (`hark.log.*` in the setup's log folder), for a
/// failure message.
pub fn log_tail(setup: &Setup, n: usize) -> String {
    tail_of(&setup.logs, n)
}

/// The last `n` lines of the `hark.log.*` files in `folder`.
fn tail_of(folder: &Path, n: usize) -> String {
    let mut text = String::new();
    for entry in std::fs::read_dir(folder).into_iter().flatten().flatten() {
        if entry.file_name().to_string_lossy().starts_with("hark.log") {
            text.push_str(&std::fs::read_to_string(entry.path()).unwrap_or_default());
        }
    }
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// The last `n` lines of the logs of the apps set up in `dir` (each setup's `*-logs`
/// folder), for a failure message.
fn logs_under(dir: &Path, n: usize) -> String {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with("-logs"))
        .map(|e| tail_of(&e.path(), n))
        .collect::<Vec<_>>()
        .join("\n--\n")
}

/// Sends a window the close request a window manager sends when its close button is
/// clicked: a `WM_PROTOCOLS` client message carrying `WM_DELETE_WINDOW`, and waits until
/// the X server has processed it.
///
/// The wait is the fix for issue 21's "the window did not hide": this sent the request,
/// flushed and hung up at once, and on a loaded machine Xvfb sometimes took the hang-up
/// before the request, which was then never delivered (the app's main loop never woke:
/// no GDK_DELETE reached GTK). Under `stress -c 2`, the same close test failed in 5 of 5
/// runs without the wait and passed with Xlib's `XSendEvent` + `XCloseDisplay` (which
/// syncs before closing); a checked request is the same round trip.
pub fn request_close(window: u32) {
    use x11rb::protocol::xproto::{ClientMessageEvent, ConnectionExt, EventMask};
    let (conn, _) = x11rb::connect(None).expect("the X display");
    let atom = |name: &str| conn.intern_atom(false, name.as_bytes()).unwrap().reply().unwrap().atom;
    let (protocols, delete) = (atom("WM_PROTOCOLS"), atom("WM_DELETE_WINDOW"));
    let event = ClientMessageEvent::new(32, window, protocols, [delete, x11rb::CURRENT_TIME, 0, 0, 0]);
    conn.send_event(false, window, EventMask::NO_EVENT, event)
        .unwrap()
        .check()
        .expect("the X server took the close request");
}

/// How many `hark-app` processes run. An exited one that its parent has not reaped yet (a
/// zombie) is not running and does not count.
pub fn app_processes() -> usize {
    let out = Command::new("pgrep").args(["-x", "hark-app"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|pid| running(pid.trim()))
        .count()
}

/// Starts `hark-app` as a person does, from a launcher: no WebDriver, the setup's
/// environment. Stopped (TERM) when dropped.
pub struct Launched(std::process::Child);

impl Launched {
    pub fn start(setup: &Setup) -> Self {
        // As `open_app`: the previous test's app is gone first (tests count processes).
        // An app exits in ~0.2 s; 15 s only catches one that does not.
        stop_test_apps(Duration::from_secs(10));
        for _ in 0..3 {
            let deadline = Instant::now() + Duration::from_secs(15);
            while app_processes() > 0 {
                assert!(Instant::now() < deadline, "an earlier hark-app did not exit");
                std::thread::sleep(Duration::from_millis(100));
            }
            let mut cmd = app_command(setup);
            let (mark, on) = TEST_APP_MARK.split_once('=').unwrap();
            cmd.env(mark, on)
                .env_remove("ANTHROPIC_API_KEY")
                .env_remove("OPENAI_API_KEY")
                .env_remove("DEEPGRAM_API_KEY");
            let mut child = cmd.spawn().unwrap();
            // An earlier test's app still leaving holds the single-instance name for a
            // moment; a start in that moment hands over to it and exits within ~0.3 s
            // (seen under `stress -c 2`). Such a start is tried again once it has gone.
            let settle = Instant::now() + Duration::from_secs(3);
            while Instant::now() < settle && child.try_wait().unwrap().is_none() {
                std::thread::sleep(Duration::from_millis(100));
            }
            if child.try_wait().unwrap().is_none() {
                return Launched(child);
            }
        }
        panic!("hark-app handed over to another instance three times");
    }
}

impl Drop for Launched {
    fn drop(&mut self) {
        // TERM as a user's quit; an app exits in ~0.2 s, and one still there after 5 s is
        // killed, so a stuck exit never hangs the test.
        let _ = Command::new("kill").arg(self.0.id().to_string()).status();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline && matches!(self.0.try_wait(), Ok(None)) {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits until the window named `name` shows (or hides): the change takes milliseconds,
/// a start a few seconds; `deadline` only catches a hang.
pub async fn wait_visible(name: &str, shown: bool, deadline: Duration, what: &str) -> Vec<u32> {
    let until = Instant::now() + deadline;
    loop {
        let w = visible_windows(name);
        if w.is_empty() != shown {
            return w;
        }
        assert!(Instant::now() < until, "{what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `hark-app` with the setup's config dir, database, log dir, keychain service and extra
/// environment, its output discarded: what a launch from a launcher and a second launch
/// share.
fn app_command(setup: &Setup) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hark-app"));
    cmd.env("HARK_CONFIG_DIR", &setup.config)
        .env("HARK_DB", &setup.db)
        .env("HARK_LOG_DIR", &setup.logs)
        .env("HARK_KEYCHAIN_SERVICE", &setup.service)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    for (k, v) in &setup.env {
        cmd.env(k, v);
    }
    cmd
}

/// Runs `hark-app ARGS` as a second launch (with the first one's environment); returns
/// its exit status and how long it took.
pub fn second_launch(setup: &Setup, args: &[&str]) -> (std::process::ExitStatus, Duration) {
    let started = Instant::now();
    let mut child = app_command(setup).args(args).spawn().unwrap();
    // A second launch hands over and exits in ~0.3 s; 30 s only catches a hang.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return (status, started.elapsed());
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("a second launch `hark-app {}` did not exit", args.join(" "));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The share of a signal's energy at `hz` (Goertzel), at its best over 50 ms windows 10 ms
/// apart: 1.0 for a pure tone at `hz`, near 0 for speech or silence. The cues last 90 ms,
/// so some window lies wholly inside one wherever it falls (with 100 ms windows 50 ms
/// apart the best window could hold 70 ms of it, and a start cue measured 0.44 once in a
/// clean-clone run).
pub fn tone_share(samples: &[f32], hz: f32) -> f32 {
    let n = 800;
    let w = 2.0 * std::f32::consts::PI * hz / 16_000.0;
    let coeff = 2.0 * w.cos();
    (0..samples.len().saturating_sub(n) + 1)
        .step_by(160)
        .map(|at| {
            let win = &samples[at..(at + n).min(samples.len())];
            let (mut s1, mut s2) = (0f32, 0f32);
            for x in win {
                let s0 = x + coeff * s1 - s2;
                s2 = s1;
                s1 = s0;
            }
            // |X|² / (N/2)² is A² for a sine of amplitude A at `hz`; its mean energy is A²/2.
            let power = (s1 * s1 + s2 * s2 - coeff * s1 * s2) / (win.len() as f32 / 2.0).powi(2);
            let energy: f32 = win.iter().map(|x| x * x).sum::<f32>() / win.len() as f32;
            if energy < 1e-5 {
                0.0
            } else {
                power / (2.0 * energy)
            }
        })
        .fold(0.0, f32::max)
}

/// Files under `dir` whose bytes contain `needle`.
pub fn files_containing(dir: &Path, needle: &[u8], found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = entry.path();
        if p.is_dir() {
            files_containing(&p, needle, found);
        } else if let Ok(bytes) = std::fs::read(&p) {
            if bytes.windows(needle.len()).any(|w| w == needle) {
                found.push(p);
            }
        }
    }
}

/// The turns of the store's newest session, as (kind, text).
pub fn stored(db: &Path) -> Vec<(String, String)> {
    let store = hark_core::store::Store::open(db).unwrap();
    let Some(s) = store.list_sessions().unwrap().into_iter().next() else {
        return Vec::new();
    };
    store
        .load_session(&s.id)
        .unwrap()
        .messages
        .iter()
        .map(|m| (m.kind_name().to_string(), m.text().to_string()))
        .collect()
}

/// Waits until the newest stored session holds `n` messages.
pub async fn wait_stored(db: &Path, n: usize) -> Vec<(String, String)> {
    // A spoken turn is stored once its reply has been spoken, ~1–3 s after the release
    // here for a short reply. The first run's SmolLM2 can ramble to its whole reply budget
    // (a clean-clone run saw a paragraph of made-up French): spoken, about a minute. 180 s
    // only catches a hang.
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let m = stored(db);
        if m.len() >= n {
            return m;
        }
        assert!(
            Instant::now() < deadline,
            "the record has {m:?}, waiting for {n} messages"
        );
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
}

/// Settings for a test app: onboarded, its own shortcuts (push-to-talk as given; conversation
/// mode and its mute the same key with Super for Alt, and with Super for Ctrl, so that no
/// other test's app can hold them), plus `extra`.
pub fn settings(shortcut: &str, extra: Value) -> Value {
    let mut s = json!({
        "onboarded": true, "shortcut": shortcut, "sound_cues": false,
        "hands_free_shortcut": shortcut.replacen("Alt", "Super", 1),
        "mute_shortcut": shortcut.replacen("Ctrl", "Super", 1),
    });
    for (k, v) in extra.as_object().unwrap() {
        s[k] = v.clone();
    }
    s
}

/// axe-core's audit of the page as it stands: the serious and critical violations.
pub async fn axe_serious(app: &App) -> Vec<String> {
    let axe =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../ui/node_modules/axe-core/axe.min.js"))
            .expect("axe-core (ui/node_modules: npm ci)");
    app.c.execute(&format!("{axe}\nreturn true;"), vec![]).await.unwrap();
    let r = app
        .c
        .execute_async(
            "const done = arguments[arguments.length - 1]; \
             axe.run(document, {resultTypes: ['violations']}).then(r => done(r.violations.map(v => ({id: v.id, impact: v.impact, nodes: v.nodes.map(n => n.target.join(' ')).slice(0, 3)})))).catch(e => done([{id: 'axe-error', impact: 'critical', nodes: [String(e)]}]));",
            vec![],
        )
        .await
        .unwrap();
    r.as_array()
        .unwrap()
        .iter()
        .filter(|v| matches!(v["impact"].as_str(), Some("serious" | "critical")))
        .map(|v| format!("{} ({}): {}", v["id"], v["impact"], v["nodes"]))
        .collect()
}

/// A key combination (Ctrl+Alt+Shift+`key`) grabbed on the X root window by another client,
/// as another program holding a global shortcut does; released when dropped.
pub struct XGrab {
    _conn: x11rb::rust_connection::RustConnection,
}

impl XGrab {
    /// Grabs it; panics if it cannot (someone else holds it).
    pub fn take(key: &str) -> Self {
        Self::try_take(key).unwrap_or_else(|| panic!("Ctrl+Alt+Shift+{key} is held by another client"))
    }

    /// Grabs it, or `None` when another client (Hark) holds it: X refuses a second grab
    /// with BadAccess.
    pub fn try_take(key: &str) -> Option<Self> {
        use x11rb::connection::Connection;
        use x11rb::protocol::xproto::{ConnectionExt, GrabMode, ModMask};
        let keysym: u32 = match key {
            "F10" => 0xffc7,
            "F11" => 0xffc8,
            other => panic!("no keysym for {other} here"),
        };
        let (conn, screen) = x11rb::connect(None).expect("the X display");
        let root = conn.setup().roots[screen].root;
        let (min, max) = (conn.setup().min_keycode, conn.setup().max_keycode);
        let map = conn.get_keyboard_mapping(min, max - min + 1).unwrap().reply().unwrap();
        let per = map.keysyms_per_keycode as usize;
        let keycode = map
            .keysyms
            .chunks(per)
            .position(|syms| syms.contains(&keysym))
            .map(|i| min + i as u8)
            .expect("the key's keycode");
        let mods = ModMask::CONTROL | ModMask::M1 | ModMask::SHIFT;
        let grabbed = conn
            .grab_key(false, root, mods, keycode, GrabMode::ASYNC, GrabMode::ASYNC)
            .unwrap()
            .check();
        grabbed.is_ok().then_some(Self { _conn: conn })
    }
}
