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
    // The tray's state icons.
    for state in ["idle", "listening", "thinking", "speaking", "error"] {
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

/// Installers run on other computers than the one that built them: every x86-64 build in
/// the release workflow turns off ggml's build-machine CPU targeting (whisper.cpp's build
/// uses it by default), and so does `scripts/bundle.sh`.
#[test]
fn x86_64_installers_are_built_for_a_portable_cpu_baseline() {
    let workflow = std::fs::read_to_string(here("../.github/workflows/release.yml")).unwrap();
    assert!(
        workflow.contains("GGML_NATIVE: ${{ matrix.ggml_native }}"),
        "the bundle job passes the matrix's choice to the build"
    );
    let (_, matrix) = workflow.split_once("include:").expect("a matrix");
    let (matrix, _) = matrix.split_once("runs-on:").unwrap();
    let entries: Vec<&str> = matrix.split("- os:").skip(1).collect();
    assert_eq!(entries.len(), 4, "{matrix}");
    for entry in entries {
        let x86 = entry.contains("target: x86_64-");
        let native = if x86 {
            "ggml_native: \"OFF\""
        } else {
            "ggml_native: \"ON\""
        };
        assert!(entry.contains(native), "{entry}");
    }
    let bundle = std::fs::read_to_string(here("../scripts/bundle.sh")).unwrap();
    assert!(bundle.contains("x86_64-*) export GGML_NATIVE=OFF"), "scripts/bundle.sh");
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
