//! Consent asked by voice (issue 25): the question is spoken aside, the next press answers
//! it without interrupting the turn, an answer without the words is asked again, and an
//! answer in the window withdraws the spoken question.

use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use serde_json::{json, Value};
use tokio::sync::oneshot;

use super::*;
use crate::conversation::{ToolSpec, ToolState};
use crate::session::voice::SpokenAsker;
use crate::testing::Reply;
use crate::tools::consent::{Answer, Asker, ConsentRequest};
use crate::tools::{Tool, ToolContext};

/// A tool that asks for consent as a tool server's does, and counts its runs.
struct Guarded {
    asker: Arc<dyn Asker>,
    runs: Arc<AtomicUsize>,
}

#[async_trait]
impl Tool for Guarded {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "calendar__create_event".into(),
            description: "Creates an event in the calendar.".into(),
            parameters: json!({"type": "object"}),
        }
    }

    async fn call(&self, arguments: &Value, _: &ToolContext) -> Result<String, String> {
        let request = ConsentRequest {
            id: "q1".into(),
            server: "calendar".into(),
            tool: "create_event".into(),
            arguments: arguments.to_string(),
        };
        match self.asker.ask(&request).await {
            Answer::No => Err("the user did not allow this call".into()),
            Answer::Yes | Answer::Always => {
                self.runs.fetch_add(1, Ordering::SeqCst);
                Ok("booked".into())
            }
        }
    }
}

/// The window, as the test drives it: answers when told, never by itself.
#[derive(Default)]
struct Window {
    pending: std::sync::Mutex<Option<oneshot::Sender<Answer>>>,
}

#[async_trait]
impl Asker for Window {
    async fn ask(&self, _: &ConsentRequest) -> Answer {
        let (tx, rx) = oneshot::channel();
        *self.pending.lock().unwrap() = Some(tx);
        rx.await.unwrap_or(Answer::No)
    }
}

struct Asking {
    r: Rig,
    runs: Arc<AtomicUsize>,
    window: Arc<Window>,
}

/// A session whose model calls the guarded tool on the first request, then says
/// `after`; consent is asked in the (test's) window and by voice.
fn asking(transcripts: &[&str], after: &str) -> Asking {
    let line = VoiceLine::new();
    let window = Arc::new(Window::default());
    let runs = Arc::new(AtomicUsize::new(0));
    let tool = Guarded {
        asker: Arc::new(SpokenAsker::new(Some(window.clone()), line.clone())),
        runs: runs.clone(),
    };
    let r = rig_with(transcripts, Toolbox::none().with(tool), Some(line));
    r.model.push(Reply::Call {
        name: "calendar__create_event".into(),
        arguments: r#"{"title": "lunch"}"#.into(),
    });
    r.model.push(Reply::text(after));
    Asking { r, runs, window }
}

/// Every event up to the first matching `want`, failing after 10 s.
async fn events_until(
    events: &mut mpsc::UnboundedReceiver<VoiceEvent>,
    what: &str,
    want: impl Fn(&VoiceEvent) -> bool,
) -> Vec<VoiceEvent> {
    let mut seen = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        match tokio::time::timeout_at(deadline, events.recv()).await {
            Ok(Some(e)) => {
                let done = want(&e);
                seen.push(e);
                if done {
                    return seen;
                }
            }
            Ok(None) => panic!("the actor ended while waiting for {what}"),
            Err(_) => panic!("timed out waiting for {what}; saw {seen:?}"),
        }
    }
}

/// Waits until the question has been said aside (the reply before it has played).
async fn spoken(out: &ClockOut, more_than: u64) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while out.aside_ms() <= more_than {
        assert!(tokio::time::Instant::now() < deadline, "nothing was said aside");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn tool_result(store: &Store, chat: &ChatSession) -> (ToolState, String) {
    store
        .load_session(chat.id())
        .unwrap()
        .messages
        .iter()
        .find_map(|m| match &m.kind {
            MessageKind::ToolResult(r) => Some((r.state, r.content.clone())),
            _ => None,
        })
        .expect("the call has its result")
}

#[tokio::test]
async fn a_consent_question_is_spoken_and_the_next_press_answers_it_without_interrupting() {
    let mut a = asking(&["Book lunch with Ana.", "Yes, go ahead."], "Lunch is booked.");
    say(&mut a.r, 300).await;
    let asked = wait_for(&mut a.r.events, "the question", |e| {
        matches!(e, VoiceEvent::ConsentAsked { .. })
    })
    .await;
    let VoiceEvent::ConsentAsked { id, question } = asked else {
        unreachable!()
    };
    assert_eq!(id, "q1");
    assert_eq!(question, "Hark wants to use calendar: create_event. Allow?");
    spoken(&a.r.out, 0).await;
    let hushes = a.r.out.hushes();

    say(&mut a.r, 300).await;
    let seen = events_until(&mut a.r.events, "the end of the turn", |e| {
        matches!(e, VoiceEvent::TurnFinished { .. })
    })
    .await;
    assert!(
        seen.contains(&VoiceEvent::ConsentHeard {
            id: "q1".into(),
            heard: "Yes, go ahead.".into(),
            answer: Some(Answer::Yes),
        }),
        "{seen:?}"
    );
    assert!(
        !seen.iter().any(|e| matches!(
            e,
            VoiceEvent::ReplyInterrupted { .. } | VoiceEvent::TranscriptFinal { .. }
        )),
        "the press answered the question: it neither interrupted nor started a turn: {seen:?}"
    );
    assert!(
        matches!(seen.last(), Some(VoiceEvent::TurnFinished { reply, .. }) if reply == "Lunch is booked."),
        "{seen:?}"
    );
    assert!(a.r.out.hushes() > hushes, "the press hushed the question");
    assert_eq!(a.runs.load(Ordering::SeqCst), 1, "the tool ran once");
    wait_for(&mut a.r.events, "idle", |e| matches!(e, VoiceEvent::Idle)).await;

    let chat = a.r.session.shutdown().await.unwrap();
    assert_eq!(tool_result(&a.r.store, &chat), (ToolState::Done, "booked".into()));
    let users = chat
        .conversation()
        .record()
        .iter()
        .filter(|m| m.kind_name() == "user")
        .count();
    assert_eq!(users, 1, "the answer is not a message to the model");
}

#[tokio::test]
async fn an_answer_without_the_words_is_asked_again_and_no_refuses() {
    let mut a = asking(&["Book lunch.", "What was that?", "No, don't."], "I did not book it.");
    say(&mut a.r, 300).await;
    wait_for(&mut a.r.events, "the question", |e| {
        matches!(e, VoiceEvent::ConsentAsked { .. })
    })
    .await;
    spoken(&a.r.out, 0).await;
    let question_ms = a.r.out.aside_ms();

    say(&mut a.r, 300).await;
    let unclear = wait_for(&mut a.r.events, "the unclear answer", |e| {
        matches!(e, VoiceEvent::ConsentHeard { .. })
    })
    .await;
    assert_eq!(
        unclear,
        VoiceEvent::ConsentHeard {
            id: "q1".into(),
            heard: "What was that?".into(),
            answer: None
        }
    );
    // "Please say yes, no, or always." is said aside.
    spoken(&a.r.out, question_ms).await;
    assert_eq!(a.runs.load(Ordering::SeqCst), 0);

    say(&mut a.r, 300).await;
    let seen = events_until(&mut a.r.events, "the end of the turn", |e| {
        matches!(e, VoiceEvent::TurnFinished { .. })
    })
    .await;
    assert!(
        seen.iter().any(|e| matches!(
            e,
            VoiceEvent::ConsentHeard {
                answer: Some(Answer::No),
                ..
            }
        )),
        "{seen:?}"
    );
    assert_eq!(a.runs.load(Ordering::SeqCst), 0, "a refused tool never runs");
    wait_for(&mut a.r.events, "idle", |e| matches!(e, VoiceEvent::Idle)).await;
    let chat = a.r.session.shutdown().await.unwrap();
    let (state, content) = tool_result(&a.r.store, &chat);
    assert_eq!(state, ToolState::Error);
    assert!(content.contains("did not allow"), "{content}");
}

#[tokio::test]
async fn an_answer_in_the_window_withdraws_the_spoken_question_and_the_next_press_is_a_turn() {
    let mut a = asking(&["Book lunch.", "What's on today?"], "Booked.");
    say(&mut a.r, 300).await;
    wait_for(&mut a.r.events, "the question", |e| {
        matches!(e, VoiceEvent::ConsentAsked { .. })
    })
    .await;
    let hushes = a.r.out.hushes();
    let answered = a.window.pending.lock().unwrap().take().expect("the window asks too");
    answered.send(Answer::Yes).unwrap();
    wait_for(
        &mut a.r.events,
        "the end of the turn",
        |e| matches!(e, VoiceEvent::TurnFinished { reply, .. } if reply == "Booked."),
    )
    .await;
    wait_for(&mut a.r.events, "idle", |e| matches!(e, VoiceEvent::Idle)).await;
    assert_eq!(a.runs.load(Ordering::SeqCst), 1);
    assert!(a.r.out.hushes() > hushes, "the spoken question was hushed");

    // Nothing waits any more: the next press is an ordinary turn.
    a.r.model.push(Reply::text("Nothing else today."));
    say(&mut a.r, 300).await;
    let seen = events_until(&mut a.r.events, "the next turn", |e| {
        matches!(e, VoiceEvent::TurnFinished { .. })
    })
    .await;
    assert!(
        seen.contains(&VoiceEvent::TranscriptFinal {
            text: "What's on today?".into()
        }),
        "{seen:?}"
    );
    assert!(
        !seen.iter().any(|e| matches!(e, VoiceEvent::ConsentHeard { .. })),
        "{seen:?}"
    );
    a.r.session.shutdown().await.unwrap();
}
