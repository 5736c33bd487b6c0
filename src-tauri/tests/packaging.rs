//! The packaging configuration, checked where it can be without macOS or Windows: every
//! icon the bundles name exists in the format and size its name says; macOS gets the
//! microphone usage text and the audio-input entitlement under the hardened runtime;
//! Windows gets its installers and the WebView2 bootstrapper; every command is permissioned
//! and granted to the main window only; the overlay may only read the status.

use std::path::{Path, PathBuf};

use serde_json::Value;

fn here(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(p)
}

fn config() -> Value {
    serde_json::from_str(&std::fs::read_to_string(here("tauri.conf.json")).unwrap()).unwrap()
}

/// Width and height of a PNG, from its header.
fn png_size(bytes: &[u8]) -> (u32, u32) {
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "a PNG");
    let be = |i: usize| u32::from_be_bytes(bytes[i..i + 4].try_into().unwrap());
    (be(16), be(20))
}

#[test]
fn every_icon_the_bundles_name_exists_in_its_format() {
    let c = config();
    let icons: Vec<&str> = c["bundle"]["icon"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i.as_str().unwrap())
        .collect();
    for name in [
        "32x32.png",
        "128x128.png",
        "128x128@2x.png",
        "icon.png",
        "icon.icns",
        "icon.ico",
    ] {
        assert!(icons.iter().any(|i| i.ends_with(name)), "the bundle names {name}");
    }
    for icon in &icons {
        let bytes = std::fs::read(here(icon)).unwrap_or_else(|e| panic!("{icon}: {e}"));
        match Path::new(icon).extension().and_then(|e| e.to_str()) {
            Some("png") => {
                let (w, h) = png_size(&bytes);
                assert_eq!(w, h, "{icon} is square");
                let name = Path::new(icon).file_stem().unwrap().to_string_lossy().to_string();
                if let Some((size, _)) = name.split_once('x') {
                    let n: u32 = size.parse().unwrap();
                    let scale = if name.ends_with("@2x") { 2 } else { 1 };
                    assert_eq!(w, n * scale, "{icon} is {w} px wide");
                } else {
                    assert!(w >= 512, "{icon}: the large icon is at least 512 px");
                }
            }
            Some("icns") => {
                assert_eq!(&bytes[..4], b"icns", "{icon} is an ICNS file");
                let len = u32::from_be_bytes(bytes[4..8].try_into().unwrap()) as usize;
                assert_eq!(len, bytes.len(), "{icon}: its length field is its size");
                // Retina sizes for the Dock and Finder: 512 (ic09) and 1024 (ic10) px.
                for kind in [b"ic09", b"ic10"] {
                    assert!(
                        bytes.windows(4).any(|w| w == kind),
                        "{icon} has {}",
                        String::from_utf8_lossy(kind)
                    );
                }
            }
            Some("ico") => {
                assert_eq!(&bytes[..4], &[0, 0, 1, 0], "{icon} is an ICO file");
                let count = u16::from_le_bytes([bytes[4], bytes[5]]);
                assert!(count >= 5, "{icon} has sizes from 16 to 256 px ({count})");
                // A width byte of 0 means 256 px.
                let widths: Vec<u8> = (0..count as usize).map(|i| bytes[6 + i * 16]).collect();
                assert!(widths.contains(&16) && widths.contains(&0), "{icon}: {widths:?}");
            }
            other => panic!("{icon}: an icon format the bundles do not know: {other:?}"),
        }
    }
    // The tray's state icons, and macOS's template for the idle one.
    for state in ["idle", "listening", "thinking", "speaking", "error", "template"] {
        let bytes = std::fs::read(here(&format!("../icons/tray/{state}.png"))).unwrap();
        assert_eq!(png_size(&bytes), (64, 64));
    }
}

#[test]
fn macos_asks_for_the_microphone_and_may_use_it_under_the_hardened_runtime() {
    let info: plist::Dictionary = plist::from_file(here("Info.plist")).unwrap();
    let usage = info
        .get("NSMicrophoneUsageDescription")
        .and_then(|v| v.as_string())
        .expect("NSMicrophoneUsageDescription");
    assert!(usage.len() > 20 && usage.contains("listen"), "{usage}");
    let c = config();
    let mac = &c["bundle"]["macOS"];
    assert_eq!(mac["hardenedRuntime"], true);
    let file = mac["entitlements"].as_str().expect("an entitlements file");
    let ent: plist::Dictionary = plist::from_file(here(file)).unwrap();
    assert_eq!(
        ent.get("com.apple.security.device.audio-input")
            .and_then(|v| v.as_boolean()),
        Some(true),
        "without it a hardened app records silence"
    );
    assert_eq!(
        ent.get("com.apple.security.network.client")
            .and_then(|v| v.as_boolean()),
        Some(true)
    );
    assert_eq!(
        ent.get("com.apple.security.cs.disable-library-validation")
            .and_then(|v| v.as_boolean()),
        Some(true),
        "the natural voice loads ONNX Runtime's library, signed by another developer"
    );
    let targets: Vec<&str> = c["bundle"]["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    for t in ["app", "dmg", "msi", "nsis", "deb", "rpm"] {
        assert!(targets.contains(&t), "bundle target {t}");
    }
}

#[test]
fn windows_installs_webview2_and_the_sidecar_is_bundled() {
    let c = config();
    assert_eq!(
        c["bundle"]["windows"]["webviewInstallMode"]["type"],
        "downloadBootstrapper"
    );
    let extra: Value = serde_json::from_str(&std::fs::read_to_string(here("tauri.bundle.conf.json")).unwrap()).unwrap();
    assert_eq!(extra["bundle"]["externalBin"][0], "binaries/hark-llm");
    // No console window for the release app on Windows.
    let main = std::fs::read_to_string(here("src/main.rs")).unwrap();
    assert!(main.contains(r#"windows_subsystem = "windows""#));
    assert_eq!(
        c["app"]["withGlobalTauri"], false,
        "the page gets no global Tauri object"
    );
}

/// The command names in build.rs's list.
fn permissioned() -> Vec<String> {
    let build = std::fs::read_to_string(here("build.rs")).unwrap();
    let list = build
        .split("const COMMANDS")
        .nth(1)
        .unwrap()
        .split("];")
        .next()
        .unwrap();
    list.split('"').skip(1).step_by(2).map(str::to_string).collect()
}

#[test]
fn every_command_is_permissioned_and_granted_to_the_main_window_only() {
    let bindings = std::fs::read_to_string(here("../ui/src/lib/bindings.ts")).unwrap();
    let invoked: Vec<String> = bindings
        .split("TAURI_INVOKE(\"")
        .skip(1)
        .map(|s| s.split('"').next().unwrap().to_string())
        .collect();
    let mut a = permissioned();
    let mut b = invoked.clone();
    a.sort();
    b.sort();
    assert_eq!(a, b, "build.rs lists exactly the commands the app registers");
    let main: Value = serde_json::from_str(&std::fs::read_to_string(here("capabilities/main.json")).unwrap()).unwrap();
    let granted: Vec<&str> = main["permissions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    for cmd in &invoked {
        let p = format!("allow-{}", cmd.replace('_', "-"));
        assert!(granted.contains(&p.as_str()), "the main window may call {cmd}");
    }
    assert!(!granted
        .iter()
        .any(|p| p.starts_with("fs:") || p.starts_with("shell:") || p.starts_with("dialog:")));
    let overlay: Value =
        serde_json::from_str(&std::fs::read_to_string(here("capabilities/overlay.json")).unwrap()).unwrap();
    assert_eq!(overlay["windows"], serde_json::json!(["overlay"]));
    assert_eq!(
        overlay["permissions"],
        serde_json::json!(["core:event:default", "allow-subscribe", "allow-app-state"])
    );
}

/// The repository's root.
fn root() -> PathBuf {
    normalize(&here(".."))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A path with its `..` and `.` resolved by name (the file need not exist).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The values of `key:` in a workflow, in order (the rest of the line, unquoted).
fn values<'a>(workflow: &'a str, key: &str) -> Vec<&'a str> {
    let key = format!("{key}:");
    workflow
        .lines()
        .filter_map(|l| {
            let l = l.trim_start().trim_start_matches("- ");
            l.strip_prefix(key.as_str())
        })
        .map(|v| v.trim().trim_matches('"'))
        .collect()
}

/// The text of the step that uses `action` (to the next step).
fn step<'a>(workflow: &'a str, action: &str) -> &'a str {
    let at = workflow
        .find(&format!("uses: {action}"))
        .unwrap_or_else(|| panic!("a step uses {action}"));
    let rest = &workflow[at..];
    let end = rest.find("\n      - ").map_or(rest.len(), |i| i + 1);
    &rest[..end]
}

/// Runs a script of the repository with bash, with only the given variables set beyond
/// PATH and HOME.
fn script(args: &[&str], vars: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = std::process::Command::new("bash");
    cmd.args(args).current_dir(root()).env_clear();
    for var in ["PATH", "HOME"] {
        if let Some(v) = std::env::var_os(var) {
            cmd.env(var, v);
        }
    }
    cmd.envs(vars.iter().copied());
    cmd.output().expect("bash runs")
}

const WORKFLOWS: [&str; 2] = ["../.github/workflows/release.yml", "../.github/workflows/ci.yml"];

/// Every path a workflow names, resolved from the directory its step runs in (issue 22: the
/// release passed `--config src-tauri/tauri.bundle.conf.json` to tauri-action, which runs the
/// CLI in `projectPath: src-tauri` and reads the file from there, so no release job ever
/// produced an installer).
#[test]
fn every_path_the_workflows_name_resolves_from_where_its_step_runs() {
    let root = root();
    for file in WORKFLOWS {
        let workflow = read(&here(file));
        // Steps that run in a folder: it exists, with the npm scripts they run.
        for dir in values(&workflow, "working-directory") {
            let package: Value = serde_json::from_str(&read(&root.join(dir).join("package.json"))).unwrap();
            for run in workflow.split(&format!("working-directory: {dir}")).skip(1) {
                let line = run.lines().find(|l| l.trim_start().starts_with("run:")).unwrap_or("");
                for name in line.split("npm run ").skip(1) {
                    let name = name.split_whitespace().next().unwrap();
                    assert!(
                        package["scripts"][name].is_string(),
                        "{file}: {dir} has no npm script {name}"
                    );
                }
            }
        }
        // The repository's scripts, run from the root: present, and the shell scripts
        // executable.
        for name in workflow.split("scripts/").skip(1) {
            let name: String = name
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || "-_.".contains(*c))
                .collect();
            let path = root.join("scripts").join(&name);
            assert!(path.is_file(), "{file}: scripts/{name}");
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                let mode = std::fs::metadata(&path).unwrap().permissions().mode();
                assert!(
                    !name.ends_with(".sh") || mode & 0o111 != 0,
                    "{file}: scripts/{name} is executable"
                );
            }
        }
        for pattern in ["hashFiles('", "cache-dependency-path: "] {
            for rest in workflow.split(pattern).skip(1) {
                let path: String = rest.chars().take_while(|c| !"')\n".contains(*c)).collect();
                assert!(root.join(path.trim()).is_file(), "{file}: {path}");
            }
        }
    }

    // tauri-action: the CLI runs in projectPath, and every --config is read from there.
    let release = read(&here("../.github/workflows/release.yml"));
    let tauri = step(&release, "tauri-apps/tauri-action");
    let project = values(tauri, "projectPath")[0];
    let project_dir = root.join(project);
    assert!(project_dir.join("tauri.conf.json").is_file(), "projectPath {project}");
    let args = values(tauri, "args")[0];
    let configs: Vec<&str> = args
        .split("--config ")
        .skip(1)
        .map(|c| c.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(configs, ["tauri.bundle.conf.json", "tauri.updater.conf.json"], "{args}");
    for config in configs {
        let made_by_a_step = release
            .lines()
            .any(|l| l.contains("run: scripts/") && l.contains(&format!("{project}/{config}")));
        assert!(
            project_dir.join(config).is_file() || made_by_a_step,
            "--config {config} is neither in {project}/ nor written there by an earlier step"
        );
    }
    // The CLI is the one ui/package.json pins, run by node from projectPath.
    let tauri_script = values(tauri, "tauriScript")[0];
    let cli = tauri_script.strip_prefix("node ").expect("tauriScript runs node");
    let cli = normalize(&project_dir.join(cli));
    let ui = root.join("ui");
    let package = cli
        .strip_prefix(ui.join("node_modules"))
        .unwrap_or_else(|_| panic!("{} is in ui/node_modules", cli.display()));
    let pkg_name = package
        .iter()
        .take(2)
        .map(|p| p.to_string_lossy())
        .collect::<Vec<_>>()
        .join("/");
    let ui_package: Value = serde_json::from_str(&read(&ui.join("package.json"))).unwrap();
    let pinned = ui_package["devDependencies"][&pkg_name]
        .as_str()
        .unwrap_or_else(|| panic!("ui/package.json pins {pkg_name}"));
    assert!(
        pinned.chars().all(|c| c.is_ascii_digit() || c == '.'),
        "{pkg_name} is pinned exactly: {pinned}"
    );
    // Where `npm ci` has run (the test suite builds the window), the file is its bin.
    let installed = ui.join("node_modules").join(&pkg_name).join("package.json");
    if installed.is_file() {
        let bin: Value = serde_json::from_str(&read(&installed)).unwrap();
        let tauri_bin = bin["bin"]["tauri"].as_str().unwrap().trim_start_matches("./");
        assert_eq!(cli, normalize(&ui.join("node_modules").join(&pkg_name).join(tauri_bin)));
        assert!(cli.is_file(), "{}", cli.display());
    }
    // The sidecar is copied to where externalBin (relative to projectPath) names it.
    let extra: Value = serde_json::from_str(&read(&project_dir.join("tauri.bundle.conf.json"))).unwrap();
    let sidecar = format!(
        "\"{project}/{}-${{{{ matrix.target }}}}$EXE\"",
        extra["bundle"]["externalBin"][0].as_str().unwrap()
    );
    assert!(release.contains(&sidecar), "the sidecar is copied to {sidecar}");
}

/// The macos-13 images were retired in December 2025 (actions/runner-images#13046): every
/// target builds on an image that exists, the Intel Mac build on Intel hardware.
#[test]
fn every_release_target_builds_on_a_live_runner_image() {
    let release = read(&here("../.github/workflows/release.yml"));
    let (_, matrix) = release.split_once("include:").expect("a matrix");
    let (matrix, _) = matrix.split_once("runs-on:").unwrap();
    let entries: Vec<(&str, &str)> = matrix
        .split("- os:")
        .skip(1)
        .map(|e| (e.split_whitespace().next().unwrap(), values(e, "target")[0]))
        .collect();
    assert_eq!(
        entries,
        [
            ("ubuntu-22.04", "x86_64-unknown-linux-gnu"),
            ("macos-14", "aarch64-apple-darwin"),
            ("macos-15-intel", "x86_64-apple-darwin"),
            ("windows-latest", "x86_64-pc-windows-msvc"),
        ]
    );
}

/// Installers run on other computers than the one that built them: every build turns off
/// ggml's build-machine CPU targeting (whisper.cpp's build uses it by default; on an M2 runner
/// it would use instructions an M1 lacks), and on macOS every compiler targets the app's
/// minimum macOS (tauri-build passes it to the app crate only, not to whisper.cpp, llama.cpp
/// or hark-llm). One script says so for the release workflow and scripts/bundle.sh.
#[test]
fn every_installer_is_built_for_a_portable_cpu_and_the_apps_minimum_macos() {
    let linux = script(&["scripts/build-env.sh", "Linux"], &[]);
    assert!(linux.status.success(), "{linux:?}");
    assert_eq!(String::from_utf8_lossy(&linux.stdout), "GGML_NATIVE=OFF\n");
    let mac = script(&["scripts/build-env.sh", "Darwin"], &[]);
    assert!(mac.status.success(), "{mac:?}");
    let min = config()["bundle"]["macOS"]["minimumSystemVersion"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        String::from_utf8_lossy(&mac.stdout),
        format!("GGML_NATIVE=OFF\nMACOSX_DEPLOYMENT_TARGET={min}\n")
    );
    // The release exports it before anything is compiled, and sets none of it itself.
    let release = read(&here("../.github/workflows/release.yml"));
    let env_at = release
        .find("scripts/build-env.sh >> \"$GITHUB_ENV\"")
        .expect("the release exports build-env.sh");
    let first_build = release.find("cargo build").unwrap();
    assert!(env_at < first_build && env_at < release.find("tauri-apps/tauri-action").unwrap());
    assert!(!release.contains("GGML_NATIVE:") && !release.contains("MACOSX_DEPLOYMENT_TARGET:"));
    let bundle = read(&root().join("scripts/bundle.sh"));
    let env_at = bundle
        .find("< <(scripts/build-env.sh)")
        .expect("bundle.sh exports build-env.sh");
    assert!(env_at < bundle.find("cargo build").unwrap());
}

/// The four builds raced to create one draft release (issue 22): one job creates it, the
/// builds wait for it and upload to it by id.
#[test]
fn the_draft_release_is_created_once_before_the_builds() {
    let release = read(&here("../.github/workflows/release.yml"));
    assert_eq!(release.matches("createRelease(").count(), 1);
    let (_, bundle) = release.split_once("\n  bundle:").expect("a bundle job");
    assert_eq!(values(bundle, "needs"), ["release"]);
    let tauri = step(&release, "tauri-apps/tauri-action");
    assert_eq!(values(tauri, "releaseId"), ["${{ needs.release.outputs.id }}"]);
    assert!(
        values(tauri, "tagName").is_empty(),
        "a tag name would make tauri-action create a release"
    );
}

/// A secret that is not configured reaches a step as an empty variable, and the bundler
/// takes an empty APPLE_CERTIFICATE or APPLE_SIGNING_IDENTITY for one that is set: the
/// secrets reach the build only through scripts/github-env.sh, which passes the set ones.
#[test]
fn only_the_signing_secrets_that_are_set_reach_the_build() {
    let release = read(&here("../.github/workflows/release.yml"));
    let tauri = step(&release, "tauri-apps/tauri-action");
    for secret in ["APPLE_", "TAURI_SIGNING_", "WINDOWS_CERTIFICATE"] {
        assert!(!tauri.contains(secret), "tauri-action's step sets {secret}…");
    }
    let out = script(
        &["scripts/github-env.sh", "A", "B", "C"],
        &[("A", "one"), ("B", ""), ("C", "two\nlines")],
    );
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 7, "A and C, B (empty) left out: {text}");
    assert!(lines[0].starts_with("A<<") && lines[1] == "one" && lines[2] == &lines[0][3..]);
    assert!(lines[3].starts_with("C<<") && lines[4..6] == ["two", "lines"] && lines[6] == &lines[3][3..]);
}

/// The configuration a build is made from, as the Tauri CLI merges it: tauri.conf.json, then
/// each `--config` in order (objects merge, other values replace).
fn merged(configs: &[Value]) -> Value {
    fn merge(into: &mut Value, from: &Value) {
        match (into, from) {
            (Value::Object(a), Value::Object(b)) => {
                for (k, v) in b {
                    merge(a.entry(k.clone()).or_insert(Value::Null), v);
                }
            }
            (slot, v) => *slot = v.clone(),
        }
    }
    let mut out = config();
    for c in configs {
        merge(&mut out, c);
    }
    out
}

/// The updater was registered with no `plugins.updater` (the app exited at launch) and no
/// signed archives were ever made (issue 22). The release's configuration, as
/// scripts/updater-config.sh writes it, passes the app's own rule: off without the
/// variables, on (with signed archives) with them, and a half-configured build stops
/// before it is built.
#[test]
fn the_release_turns_updates_on_only_with_an_endpoint_a_key_and_signed_archives() {
    let bundle: Value = serde_json::from_str(&read(&here("tauri.bundle.conf.json"))).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("tauri.updater.conf.json");
    let out_arg = out.to_str().unwrap();
    let run = |vars: &[(&str, &str)]| {
        let _ = std::fs::remove_file(&out);
        let status = script(&["scripts/updater-config.sh", out_arg], vars).status;
        let written = std::fs::read_to_string(&out)
            .ok()
            .map(|t| serde_json::from_str::<Value>(&t).unwrap());
        (status.success(), written)
    };

    let (ok, off) = run(&[]);
    assert!(ok);
    let release = merged(&[bundle.clone(), off.unwrap()]);
    assert_eq!(hark_app::updates_in_config(&release), Ok(hark_app::Updates::Off));

    let endpoint = "https://updates.example.com/hark/latest.json";
    let (ok, on) = run(&[
        ("HARK_UPDATE_ENDPOINT", endpoint),
        ("HARK_UPDATE_PUBKEY", "dW50cnVzdGVkIGNvbW1lbnQ6IG1pbmlzaWdu"),
        ("TAURI_SIGNING_PRIVATE_KEY", "secret"),
    ]);
    assert!(ok);
    let release = merged(&[bundle.clone(), on.unwrap()]);
    assert_eq!(
        hark_app::updates_in_config(&release),
        Ok(hark_app::Updates::On {
            endpoints: vec![endpoint.to_string()]
        })
    );
    assert_eq!(release["bundle"]["createUpdaterArtifacts"], true);
    assert_eq!(
        release["bundle"]["externalBin"], bundle["bundle"]["externalBin"],
        "merged, not replaced"
    );

    // Half a configuration, or no key to sign the archives with: the build stops here.
    for vars in [
        &[("HARK_UPDATE_PUBKEY", "KEY"), ("TAURI_SIGNING_PRIVATE_KEY", "secret")][..],
        &[
            ("HARK_UPDATE_ENDPOINT", endpoint),
            ("TAURI_SIGNING_PRIVATE_KEY", "secret"),
        ][..],
        &[("HARK_UPDATE_ENDPOINT", endpoint), ("HARK_UPDATE_PUBKEY", "KEY")][..],
    ] {
        let (ok, written) = run(vars);
        assert!(!ok && written.is_none(), "{vars:?}");
    }

    // Both builds write it where their --config reads it.
    let workflow = read(&here("../.github/workflows/release.yml"));
    assert!(workflow.contains("run: scripts/updater-config.sh src-tauri/tauri.updater.conf.json"));
    let bundle_sh = read(&root().join("scripts/bundle.sh"));
    assert!(bundle_sh.contains("scripts/updater-config.sh src-tauri/tauri.updater.conf.json"));
    assert!(bundle_sh.contains("--config src-tauri/tauri.updater.conf.json"));
}

/// Without the Apple secrets a downloaded app had no signature at all, which Apple silicon
/// reports as "damaged": the fallback is an ad hoc signature (the bundler's
/// APPLE_SIGNING_IDENTITY, when set, replaces it). Windows bundles go through a signing hook
/// that signs when a certificate is configured and passes the file through otherwise
/// (issue 22).
#[test]
fn macos_falls_back_to_an_ad_hoc_signature_and_windows_has_a_signing_hook() {
    let c = config();
    assert_eq!(c["bundle"]["macOS"]["signingIdentity"], "-");
    let hook = c["bundle"]["windows"]["signCommand"].as_str().expect("a signCommand");
    // The bundler splits the string on spaces, replaces %1 with the file and runs it in
    // src-tauri (the CLI's working directory).
    let words: Vec<&str> = hook.split(' ').collect();
    assert_eq!(words.last(), Some(&"%1"), "{hook}");
    let file = words[words.iter().position(|w| *w == "-File").expect("-File") + 1];
    let script = read(&normalize(&here(file)));
    assert!(script.contains("param([Parameter(Mandatory = $true)][string]$File)"));
    assert!(
        script.contains("if (-not $env:WINDOWS_CERTIFICATE)") && script.contains("exit 0"),
        "with no certificate the hook signs nothing and succeeds"
    );
}

/// whisper.cpp and llama.cpp are C++ linked against the Visual C++ runtime's DLLs, and so is
/// ONNX Runtime's onnxruntime.dll (1.21 and later need the 14.38 runtime or newer): on a PC
/// without a recent redistributable hark-app.exe did not start and hark-llm.exe died with
/// no message (issue 22). The installers carry the runtime's DLLs beside the executables
/// (the build machine's, from Visual Studio's redistributable folder), where Windows looks
/// first, for onnxruntime.dll's imports too.
#[test]
fn windows_installers_carry_the_visual_cpp_runtime() {
    assert_eq!(config()["bundle"]["windows"]["bundleVCRuntime"], true);
}

/// The workspace's members that are Tauri apps (a `tauri.conf.json` beside their manifest).
fn tauri_apps() -> Vec<PathBuf> {
    let manifest = std::fs::read_to_string(here("../Cargo.toml")).unwrap();
    let members = manifest
        .split_once("members = [")
        .and_then(|(_, rest)| rest.split_once(']'))
        .map(|(list, _)| list)
        .expect("the workspace lists its members");
    let apps: Vec<PathBuf> = members
        .split('"')
        .skip(1)
        .step_by(2)
        .map(|m| here("..").join(m))
        .filter(|dir| dir.join("tauri.conf.json").is_file())
        .collect();
    assert!(apps.len() >= 2, "src-tauri and tools/empty-tauri: {apps:?}");
    apps
}

/// tauri-build compiles a Windows resource file from the first `.ico` a configuration's
/// `bundle.icon` names (else `icons/icon.ico` beside it) and fails the build without one:
/// tools/empty-tauri named PNGs only, so `cargo clippy --workspace` failed on Windows (issue 22).
#[test]
fn every_tauri_app_in_the_workspace_has_the_windows_icon_its_build_needs() {
    for app in tauri_apps() {
        let conf: Value = serde_json::from_str(&std::fs::read_to_string(app.join("tauri.conf.json")).unwrap()).unwrap();
        let ico = conf["bundle"]["icon"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .find(|i| i.ends_with(".ico"))
            .unwrap_or("icons/icon.ico");
        let path = app.join(ico);
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(&bytes[..4], &[0, 0, 1, 0], "{} is an ICO file", path.display());
    }
}

/// Windows checkouts turn LF into CRLF unless the repository says otherwise, and the
/// generated bindings are compared with what the code generates byte for byte: every text
/// file checks out with LF, the bindings included (issue 22).
#[test]
fn every_checkout_has_lf_line_ends() {
    let attributes = std::fs::read_to_string(here("../.gitattributes")).expect(".gitattributes");
    assert!(
        attributes.lines().any(|l| l.trim() == "* text=auto eol=lf"),
        "{attributes}"
    );
    // As git reads it (when git is here: the test suite's machines have it).
    if let Ok(out) = std::process::Command::new("git")
        .args(["check-attr", "eol", "--", "ui/src/lib/bindings.ts", "scripts/test.sh"])
        .current_dir(here(".."))
        .output()
    {
        let said = String::from_utf8_lossy(&out.stdout);
        assert_eq!(said.matches(": eol: lf").count(), 2, "{said}");
    }
}
