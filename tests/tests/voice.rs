//! The voice turn loop against loopback providers: a streamed reply is cut into sentences,
//! spoken through a real-time clock output, and barge-in records what was heard — also
//! while a tool runs.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use hark_core::audio::playback::ClockOut;
use hark_core::conversation::{HistorySettings, MessageKind};
use hark_core::provider::{ProviderConfig, ProviderKind};
use hark_core::session::voice::{respond, Utterance, Voice, VoiceEvent};
use hark_core::session::ChatSession;
use hark_core::store::Store;
use hark_core::stt::deepgram::{DeepgramConfig, DeepgramStt};
use hark_core::tts::remote::DeepgramTts;
use hark_e2e::speech::FakeSpeech;
use hark_e2e::{Behaviour, FakeLlm};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

const KEY: &str = "k-voice-test";
const STORY: &str =
    "Once upon a time there was a fox. It lived in a deep green wood. Every morning it went to the river. The end.";

struct Rig {
    llm: FakeLlm,
    speech: FakeSpeech,
    chat: ChatSession,
    voice: Voice,
}

fn rig() -> Rig {
    let llm = FakeLlm::anthropic(KEY);
    let speech = FakeSpeech::deepgram(KEY);
    let mut c = ProviderConfig::new(ProviderKind::Anthropic);
    c.base_url = llm.base_url();
    c.api_key = Some(KEY.into());
    let store = Arc::new(Store::open_in_memory().unwrap());
    let chat = ChatSession::create(store, c.build().unwrap(), "Be brief.", HistorySettings::default()).unwrap();
    let mut dg = DeepgramConfig::new(Some(KEY.into()));
    dg.base_url = speech.base_url();
    let voice = Voice {
        stt: Arc::new(DeepgramStt::new(dg.clone(), false).unwrap()),
        tts: Arc::new(DeepgramTts::new(dg, "aura-2-thalia-en").unwrap()),
        out: Arc::new(ClockOut::new()),
    };
    Rig {
        llm,
        speech,
        chat,
        voice,
    }
}

fn utterance(text: &str) -> Utterance {
    let now = Instant::now();
    Utterance {
        transcript: text.into(),
        released_at: now - Duration::from_millis(120),
        transcript_at: now,
        pipeline: Default::default(),
    }
}

#[tokio::test]
async fn a_spoken_turn_plays_every_sentence_and_records_its_metrics() {
    let mut r = rig();
    r.speech.set_ms_per_char(2);
    r.llm.push(Behaviour::Text(STORY.into()));
    let (tx, mut rx) = mpsc::unbounded_channel();
    let spoken = respond(
        &mut r.chat,
        &r.voice,
        &utterance("Tell me a story"),
        &CancellationToken::new(),
        None,
        &tx,
    )
    .await
    .unwrap();
    assert!(!spoken.interrupted);
    assert_eq!(spoken.generated, STORY);
    assert_eq!(spoken.heard.text, STORY, "everything was played");
    assert!(spoken.heard.complete);
    let spoken_texts: Vec<String> = r
        .speech
        .requests()
        .iter()
        .map(|q| q.body["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        spoken_texts,
        vec![
            "Once upon a time",
            "there was a fox.",
            "It lived in a deep green wood.",
            "Every morning it went to the river.",
            "The end."
        ],
        "a short first piece (four words), then one synthesis per sentence, in order"
    );
    let m = spoken.metrics;
    assert_eq!(m.transcript_ms, Some(120));
    assert!(m.first_token_ms.is_some() && m.first_audio_byte_ms.is_some());
    // In order, not within a time: the first sample goes out after the transcript and the
    // first token (each figure is whole milliseconds, so 1 ms of rounding is allowed).
    let out_ms = m.first_audio_out_ms.unwrap();
    assert!(out_ms + 1 >= 120 + m.first_token_ms.unwrap(), "{m:?}");
    // Stored with the turn (and so exported).
    let MessageKind::Assistant(a) = &r.chat.conversation().record()[1].kind else {
        panic!()
    };
    let l = a.latency.unwrap();
    assert_eq!(
        (l.transcript_ms, l.first_audio_out_ms),
        (m.transcript_ms, m.first_audio_out_ms)
    );
    let mut kinds = Vec::new();
    while let Ok(e) = rx.try_recv() {
        kinds.push(match e {
            VoiceEvent::ThinkingStarted => "thinking",
            VoiceEvent::ReplyDelta { .. } => "delta",
            VoiceEvent::SpeakingStarted => "speaking",
            VoiceEvent::TurnFinished { .. } => "finished",
            _ => "other",
        });
    }
    kinds.dedup();
    assert_eq!(kinds.first(), Some(&"thinking"));
    assert!(kinds.contains(&"speaking"));
    assert_eq!(kinds.last(), Some(&"finished"));
}

#[tokio::test]
async fn barge_in_mid_reply_records_heard_less_than_generated_and_the_next_request_is_valid() {
    let mut r = rig();
    r.speech.set_ms_per_char(40); // the first sentence plays for 1.3 s
    r.llm.push(Behaviour::Text(STORY.into()));
    let (tx, mut rx) = mpsc::unbounded_channel();
    let barge_in = CancellationToken::new();
    // The barge-in comes once 600 ms of the reply have been played (the speaker's own
    // count, not a sleep: a sleep on a busy machine overshot into the next sentence),
    // mid first sentence (its first piece plays 640 ms, the sentence 1.3 s).
    let (b, out) = (barge_in.clone(), r.voice.out.clone());
    tokio::spawn(async move {
        // A deadline that only catches a hang: the reply starts playing within a second.
        let deadline = Instant::now() + Duration::from_secs(30);
        while out.heard().ms < 600 {
            assert!(Instant::now() < deadline, "nothing played in 30 s");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        b.cancel();
    });
    let watcher = tokio::spawn(async move {
        while let Some(e) = rx.recv().await {
            if matches!(e, VoiceEvent::ReplyInterrupted { .. }) {
                return Some(e);
            }
        }
        None
    });
    let spoken = respond(
        &mut r.chat,
        &r.voice,
        &utterance("Tell me a story"),
        &barge_in,
        None,
        &tx,
    )
    .await
    .unwrap();
    drop(tx);
    assert!(r.voice.out.is_idle(), "playback stopped at the barge-in");
    assert!(spoken.interrupted);
    assert!(!spoken.heard.text.is_empty(), "part of the first sentence was heard");
    assert!(STORY.starts_with(&spoken.heard.text), "{:?}", spoken.heard.text);
    assert!(
        spoken.heard.text.len() < "Once upon a time there was a fox.".len(),
        "{:?}",
        spoken.heard.text
    );
    assert!(
        spoken.heard.ms >= 600,
        "what was played counts as heard: {:?}",
        spoken.heard
    );
    let event = watcher.await.unwrap().expect("an interrupted event");
    assert!(matches!(event, VoiceEvent::ReplyInterrupted { ref generated, .. } if generated == STORY));

    let MessageKind::Assistant(a) = &r.chat.conversation().record()[1].kind else {
        panic!()
    };
    assert!(a.interrupted);
    assert_eq!(a.generated, STORY);
    assert_eq!(a.heard.as_deref(), Some(spoken.heard.text.as_str()));
    // Synthesis stays about a second ahead of playback: the sentences after the cut were
    // never synthesised (nobody pays for audio nobody hears). At 40 ms a character the
    // first piece plays 640 ms, the rest of its sentence 640 ms more, and the next
    // sentence is synthesised when less than a second is queued.
    let synthesised: Vec<String> = r
        .speech
        .requests()
        .iter()
        .map(|q| q.body["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        synthesised,
        ["Once upon a time", "there was a fox.", "It lived in a deep green wood."]
    );

    // The next request carries only what was heard, and the Anthropic loopback accepts it.
    r.chat
        .send("Why did you stop?", &CancellationToken::new(), |_| {})
        .await
        .unwrap();
    let sent = r.llm.last().messages();
    assert_eq!(sent[1], ("assistant".to_string(), spoken.heard.text.clone()));
}

#[tokio::test]
async fn barge_in_before_anything_was_heard_leaves_the_reply_out_and_merges_the_questions() {
    let mut r = rig();
    r.llm.push(Behaviour::StallAfter(1, Duration::from_secs(20)));
    let (tx, _rx) = mpsc::unbounded_channel();
    let barge_in = CancellationToken::new();
    let b = barge_in.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        b.cancel();
    });
    let spoken = respond(
        &mut r.chat,
        &r.voice,
        &utterance("Tell me a story"),
        &barge_in,
        None,
        &tx,
    )
    .await
    .unwrap();
    assert!(spoken.interrupted);
    assert_eq!(spoken.heard.text, "");
    assert!(
        r.speech.requests().is_empty(),
        "no sentence was complete, nothing was spoken"
    );
    let MessageKind::Assistant(a) = &r.chat.conversation().record()[1].kind else {
        panic!()
    };
    assert_eq!(a.generated, "You ");
    assert_eq!(a.heard.as_deref(), Some(""));
    r.chat
        .send("Never mind. What's my name?", &CancellationToken::new(), |_| {})
        .await
        .unwrap();
    let sent = r.llm.last().messages();
    assert_eq!(
        sent,
        vec![(
            "user".to_string(),
            "Tell me a story\n\nNever mind. What's my name?".to_string()
        )]
    );
}

#[tokio::test]
async fn a_tool_turn_is_spoken_after_the_tool_and_a_barge_in_while_the_tool_runs_cancels_it() {
    use hark_core::conversation::ToolState;
    use hark_core::tools::Toolbox;

    let mut r = rig();
    let tool = common::GatedTool::new();
    r.chat.set_tools(Toolbox::builtin().with(tool.clone()));
    // A whole tool turn, spoken: the tool's events, then the answer built on its result.
    let (tx, mut rx) = mpsc::unbounded_channel();
    let spoken = respond(
        &mut r.chat,
        &r.voice,
        &utterance("What time is it?"),
        &CancellationToken::new(),
        None,
        &tx,
    )
    .await
    .unwrap();
    assert!(spoken.generated.starts_with("Done: "), "{}", spoken.generated);
    assert_eq!(spoken.heard.text, spoken.generated);
    let mut tool_events = Vec::new();
    while let Ok(e) = rx.try_recv() {
        match e {
            VoiceEvent::ToolStarted { name, .. } => tool_events.push(format!("started {name}")),
            VoiceEvent::ToolFinished { name, state, .. } => tool_events.push(format!("{name} {state}")),
            _ => {}
        }
    }
    assert_eq!(tool_events, ["started get_current_time", "get_current_time done"]);

    // The user presses again while the slow tool runs.
    r.llm.push(Behaviour::CallTool {
        name: "slow_lookup".into(),
        arguments: "{}".into(),
    });
    let (tx, mut rx) = mpsc::unbounded_channel();
    let barge_in = CancellationToken::new();
    let b = barge_in.clone();
    tokio::spawn(async move {
        while let Some(e) = rx.recv().await {
            // The tool's gate is shut: it is still running when the user presses.
            if matches!(e, VoiceEvent::ToolStarted { .. }) {
                b.cancel();
            }
        }
    });
    let spoken = respond(&mut r.chat, &r.voice, &utterance("Look it up"), &barge_in, None, &tx)
        .await
        .unwrap();
    assert!(spoken.interrupted);
    assert_eq!(spoken.heard.text, "");
    let record = r.chat.conversation().record();
    let MessageKind::ToolResult(t) = &record.last().unwrap().kind else {
        panic!("{record:?}")
    };
    assert_eq!(t.state, ToolState::Cancelled);
    // The late result becomes a note; the conversation goes on and every request stays
    // valid for the provider.
    tool.open();
    common::settle_background(&mut r.chat).await;
    r.chat
        .send("Thanks anyway.", &CancellationToken::new(), |_| {})
        .await
        .unwrap();
    let sent = r.llm.last().raw_text();
    assert!(
        sent.contains("the slow answer is 42") && sent.contains("cancelled"),
        "{sent}"
    );
}
