//! Push-to-talk, the conversation's context, and the introduction's checks (microphone
//! level, a spoken sample, practice).

use std::sync::Arc;
use std::time::Duration;

use hark_core::assembly::Profile;
use hark_core::audio::input::{AudioInput, Microphone};
use hark_core::audio::playback::{AudioOut, Speaker};
use hark_core::conversation::HistorySettings;
use hark_core::error::ErrorKind;
use hark_core::session::ptt::Key;
use hark_core::session::voice::VoiceHandle;
use hark_core::session::ChatSession;
use hark_core::session::TurnError;
use hark_core::tts::{AudioChunk, TtsKind};
use tauri::State;
use tokio_util::sync::CancellationToken;

use crate::commands::view::{snapshot, Snapshot};
use crate::error::{CmdResult, CommandError};
use crate::events::AppEvent;
use crate::state::{lock, AppState};

fn handle(state: &AppState) -> CmdResult<VoiceHandle> {
    lock(&state.voice).clone().ok_or_else(|| {
        CommandError::new(ErrorKind::NotReady, "no conversation is open yet")
            .with_next_step("wait a moment: the status line says when Hark is ready")
    })
}

/// Runs an edit of the conversation in the voice session (after the turn in flight).
async fn edit(
    state: &AppState,
    f: impl FnOnce(&mut ChatSession) -> Result<(), TurnError> + Send + 'static,
) -> CmdResult<()> {
    Ok(handle(state)?.edit(f).await?)
}

/// The push-to-talk button went down (`pressed`) or up.
#[tauri::command]
#[specta::specta]
pub fn ptt(state: State<'_, AppState>, pressed: bool) -> CmdResult<()> {
    state.key(if pressed { Key::Press } else { Key::Release })
}

/// One toggle of push-to-talk, whatever the mode (the toggle-mode button).
#[tauri::command]
#[specta::specta]
pub fn ptt_toggle(state: State<'_, AppState>) -> CmdResult<()> {
    state.key(Key::Toggle)
}

/// Turns conversation mode (hands-free, issue 23) on or off on the open conversation, and
/// saves it. Where it cannot start (no microphone, its model missing), a banner says why
/// and Hark stays on the key.
#[tauri::command]
#[specta::specta]
pub async fn set_hands_free(app: tauri::AppHandle, state: State<'_, AppState>, on: bool) -> CmdResult<Snapshot> {
    crate::runtime::set_hands_free(&app, on).await?;
    Ok(snapshot(&state).await)
}

/// Pauses hands-free listening (`muted`) or resumes it.
#[tauri::command]
#[specta::specta]
pub fn set_muted(app: tauri::AppHandle, state: State<'_, AppState>, muted: bool) -> CmdResult<()> {
    state.set_muted(muted)?;
    crate::tray::show_switches(&app);
    Ok(())
}

/// Asks for a fresh history panel.
#[tauri::command(async)]
#[specta::specta]
pub fn refresh(state: State<'_, AppState>) -> CmdResult<()> {
    handle(&state)?
        .refresh()
        .map_err(|e| CommandError::new(ErrorKind::NotReady, e.to_string()))
}

#[tauri::command]
#[specta::specta]
pub async fn reset_context(state: State<'_, AppState>) -> CmdResult<()> {
    edit(&state, |chat| Ok(chat.clear()?)).await
}

/// Reshapes the context live (0 = unlimited).
#[tauri::command]
#[specta::specta]
pub async fn set_max_turns(state: State<'_, AppState>, max_turns: u32) -> CmdResult<()> {
    edit(&state, move |chat| {
        let s = HistorySettings {
            max_turns,
            ..chat.conversation().settings()
        };
        Ok(chat.set_settings(s)?)
    })
    .await
}

/// Changes the system prompt of this conversation and of new ones.
#[tauri::command]
#[specta::specta]
pub async fn set_system_prompt(state: State<'_, AppState>, text: String) -> CmdResult<()> {
    {
        let mut s = lock(&state.settings);
        s.profile.system_prompt = text.clone();
        crate::settings::save(&s).map_err(|e| CommandError::new(ErrorKind::Settings, e.to_string()))?;
    }
    edit(&state, move |chat| Ok(chat.set_system_prompt(&text)?)).await
}

/// The user edited (or cleared) the running summary in the history panel.
#[tauri::command]
#[specta::specta]
pub async fn set_summary(state: State<'_, AppState>, text: String) -> CmdResult<()> {
    edit(&state, move |chat| Ok(chat.edit_summary(Some(text))?)).await
}

/// Practice (the introduction's "hold the shortcut and say hello"): utterances are
/// transcribed and shown, not answered or recorded. Turning it off with no conversation
/// open is done already (a session starts with practice off): the introduction turns it
/// off as the user clicks through it, while the models may still be downloading, and
/// that is no error to show them (issue 20).
#[tauri::command(async)]
#[specta::specta]
pub fn practice(state: State<'_, AppState>, on: bool) -> CmdResult<()> {
    if !on && lock(&state.voice).is_none() {
        return Ok(());
    }
    handle(&state)?
        .practice(on)
        .map_err(|e| CommandError::new(ErrorKind::NotReady, e.to_string()))
}

/// The microphone check: while on, the chosen microphone's level and name stream to the
/// window (`mic_level` events). A microphone that cannot be opened is an error naming it.
#[tauri::command]
#[specta::specta]
pub async fn mic_check(app: tauri::AppHandle, state: State<'_, AppState>, on: bool) -> CmdResult<String> {
    if let Some(old) = lock(&state.mic_check).take() {
        old.cancel();
    }
    if !on {
        return Ok(String::new());
    }
    let device = state.settings().input_device;
    let mut input = Microphone.open(device.as_deref())?;
    let name = input.device();
    let stop = CancellationToken::new();
    *lock(&state.mic_check) = Some(stop.clone());
    let device_name = name.clone();
    tauri::async_runtime::spawn(async move {
        use tauri::Manager;
        // Ends by itself after a minute, so a closed window never keeps the microphone.
        let deadline = tokio::time::sleep(Duration::from_secs(60));
        tokio::pin!(deadline);
        let mut last = std::time::Instant::now();
        loop {
            tokio::select! {
                _ = stop.cancelled() => break,
                _ = &mut deadline => break,
                chunk = input.next_chunk() => {
                    if chunk.is_none() { break }
                    if last.elapsed() >= Duration::from_millis(50) {
                        last = std::time::Instant::now();
                        app.state::<AppState>().emit(AppEvent::MicLevel { rms: input.level(), device: device_name.clone() });
                    }
                }
            }
        }
        let _ = input.stop();
    });
    Ok(name)
}

/// The speaker check: says a short sentence with the chosen voice on the chosen speaker.
#[tauri::command]
#[specta::specta]
pub async fn play_sample(state: State<'_, AppState>) -> CmdResult<()> {
    let settings = state.settings();
    say_sample(&state, &settings.profile, settings.output_device.as_deref()).await
}

/// Settings' voice preview: says the sample with a voice engine and voice not saved yet
/// (`voice: None`: the engine's default for the conversation language).
#[tauri::command]
#[specta::specta]
pub async fn preview_voice(state: State<'_, AppState>, tts: TtsKind, voice: Option<String>) -> CmdResult<()> {
    let settings = state.settings();
    let profile = Profile {
        tts,
        voice,
        ..settings.profile.clone()
    };
    say_sample(&state, &profile, settings.output_device.as_deref()).await
}

async fn say_sample(state: &AppState, profile: &Profile, output: Option<&str>) -> CmdResult<()> {
    let tts = profile.synthesizer(&state.keychain)?;
    let out: Arc<dyn AudioOut> = Arc::new(Speaker::open(output)?);
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<AudioChunk>();
    tts.synthesize("Hello! This is how Hark sounds.", &tx).await?;
    drop(tx);
    out.start_reply();
    let i = out.begin_sentence("sample");
    while let Some(c) = rx.recv().await {
        out.push(i, c.samples, c.rate);
    }
    out.end_sentence(i);
    // Played to the end (at most ten seconds).
    for _ in 0..200 {
        if out.is_idle() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(out.queued_ms().clamp(10, 500))).await;
    }
    Ok(())
}
