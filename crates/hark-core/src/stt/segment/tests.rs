//! The segmenting rules with a fake decoder: "speech" is a run of words, each a square
//! wave whose level names it, and the fake engine reads back each whole word it hears
//! ("w3") and marks a word it hears only part of ("w3~").

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::*;

const WORD_MS: usize = 260;
const GAP_MS: usize = 40;
/// The level of the short gaps between words: quiet, but above the silence level, as
/// the breath between words in running speech is.
const QUIET: f32 = 0.01;

fn ms(n: usize) -> usize {
    samples(n)
}

fn level(ms_long: usize, level: f32) -> Vec<f32> {
    (0..ms(ms_long))
        .map(|i| if i % 2 == 1 { -level } else { level })
        .collect()
}

fn silence(ms_long: usize) -> Vec<f32> {
    vec![0.0; ms(ms_long)]
}

/// Word `k` (its level is 0.1 + 0.01 k).
fn word(k: usize) -> Vec<f32> {
    level(WORD_MS, 0.1 + 0.01 * k as f32)
}

/// Words `ks`, each followed by a gap at `gap` level.
fn speech(ks: std::ops::Range<usize>, gap: f32) -> Vec<f32> {
    ks.flat_map(|k| [word(k), level(GAP_MS, gap)]).flatten().collect()
}

fn cat(parts: &[Vec<f32>]) -> Vec<f32> {
    parts.concat()
}

/// The fake engine: each run of samples at one word's level is that word, whole or not.
fn fake_decode(audio: &[f32]) -> String {
    let mut words = Vec::new();
    let mut i = 0;
    while i < audio.len() {
        let a = audio[i].abs();
        if a < 0.05 {
            i += 1;
            continue;
        }
        let start = i;
        while i < audio.len() && (audio[i].abs() - a).abs() < 1e-6 {
            i += 1;
        }
        let k = ((a - 0.1) / 0.01).round() as usize;
        let whole = i - start >= ms(WORD_MS);
        words.push(format!("w{k}{}", if whole { "" } else { "~" }));
    }
    words.join(" ")
}

fn words(range: std::ops::Range<usize>) -> String {
    range.map(|k| format!("w{k}")).collect::<Vec<_>>().join(" ")
}

/// One decode as the driver ran it.
#[derive(Debug, Clone)]
struct Decoded {
    purpose: Purpose,
    /// Samples decoded, the added silence included.
    len: usize,
    /// Samples of the segment in it.
    heard: usize,
    text: String,
}

/// What a live transcription did with a clip.
#[derive(Debug, Default)]
struct Outcome {
    /// Interim texts with the samples pushed when each was sent.
    interims: Vec<(usize, String)>,
    /// Decodes while the key was held.
    held: Vec<Decoded>,
    /// Decodes after the release.
    released: Vec<Decoded>,
    text: String,
}

/// Drives a segmenter as the live thread does, with an instant decoder: the clip in
/// `chunk`-sample pieces, every due decode run at once, then the release.
fn live(audio: &[f32], chunk: usize) -> Outcome {
    let mut s = Segmenter::new();
    let mut out = Outcome::default();
    let mut pushed = 0;
    for piece in audio.chunks(chunk) {
        s.push(piece);
        pushed += piece.len();
        while let Some(job) = s.next_job() {
            let text = fake_decode(&job.audio);
            out.held.push(Decoded {
                purpose: job.purpose,
                len: job.audio.len(),
                heard: job.heard,
                text: text.clone(),
            });
            if let Some(i) = s.complete(job, &text) {
                out.interims.push((pushed, i));
            }
        }
    }
    s.release();
    while let Some(job) = s.next_job() {
        let text = fake_decode(&job.audio);
        out.released.push(Decoded {
            purpose: job.purpose,
            len: job.audio.len(),
            heard: job.heard,
            text: text.clone(),
        });
        assert_eq!(s.complete(job, &text), None, "no interim text after the release");
    }
    out.text = s.text();
    out
}

/// The whole words of a text, fragments left out.
fn whole_words(text: &str) -> Vec<&str> {
    text.split_whitespace().filter(|w| !w.ends_with('~')).collect()
}

#[test]
fn interim_words_come_while_speaking_in_order_and_the_transcript_has_them_all() {
    let onset = ms(500);
    let audio = cat(&[silence(500), speech(0..6, QUIET), silence(100)]);
    let out = live(&audio, FRAME);
    assert_eq!(out.text, words(0..6));
    let first_at = out.interims[0].0;
    assert!(
        first_at - onset <= ms(TICK_MS + 20),
        "the first words {} ms after speech began",
        (first_at - onset) / 16
    );
    let finals: Vec<&str> = whole_words(&out.text);
    let mut before = 0;
    let mut last_at = first_at;
    for (at, text) in &out.interims {
        let w = whole_words(text);
        assert!(w.len() >= before, "words were taken back: {:?}", out.interims);
        assert_eq!(w[..], finals[..w.len()], "{text:?} is not how the transcript starts");
        before = w.len();
        if *at <= onset + ms(6 * (WORD_MS + GAP_MS)) {
            assert!(at - last_at <= ms(500), "no new words for {} ms", (at - last_at) / 16);
        }
        last_at = *at;
    }
    assert_eq!(out.interims.last().map(|(_, t)| t.as_str()), Some(out.text.as_str()));
    // The leading half second of silence was not decoded each time.
    assert!(out
        .held
        .iter()
        .all(|d| d.len <= ms(LEAD_IN_MS + 6 * 300 + COMMIT_PAUSE_MS)));
}

#[test]
fn a_pause_commits_the_segment_which_is_never_decoded_again_and_never_changes() {
    let audio = cat(&[speech(0..3, QUIET), silence(400), speech(3..6, QUIET), silence(100)]);
    let out = live(&audio, FRAME);
    assert_eq!(out.text, words(0..6));
    // The decode at the pause heard the whole phrase and is its final text: no decode of
    // it after that, and the phrase is in every later interim text, unchanged.
    // (The last decode with the phrase's words: a tick may have heard them all just before
    // the pause, and the decode at the pause is still made, to hear the pause too.)
    let pause = out
        .held
        .iter()
        .rposition(|d| d.text == words(0..3))
        .expect("a decode at the pause");
    assert!(out.held[pause + 1..].iter().all(|d| !d.text.contains("w0")));
    assert!(
        out.held[pause + 1..].iter().all(|d| d.purpose == Purpose::Interim),
        "the commit needed no decode of its own: {:?}",
        out.held
    );
    assert!(out.held[pause + 1..]
        .iter()
        .all(|d| d.len <= ms(LEAD_IN_MS + 3 * 300 + COMMIT_PAUSE_MS)));
    let committed = out.interims.iter().position(|(_, t)| t == &words(0..3)).unwrap();
    for (_, t) in &out.interims[committed..] {
        assert!(t.starts_with(&words(0..3)), "{t:?}");
    }
    assert!(out.released.is_empty(), "the release found it all decoded");
}

/// A clip of 30 words with no pause: the segment is cut before 8 s, in a gap between words.
fn long_clip(silent_gap_after: Option<usize>) -> Vec<f32> {
    let mut audio = silence(100);
    for k in 0..30 {
        audio.extend(word(k));
        let gap = if Some(k) == silent_gap_after { 0.0 } else { QUIET };
        audio.extend(level(GAP_MS, gap));
    }
    audio.extend(silence(100));
    audio
}

#[test]
fn a_long_segment_is_cut_at_its_quietest_frame_and_no_word_is_lost() {
    // A silent gap after word 22 (6,960-7,000 ms): the quietest frames of the last 2 s.
    let out = live(&long_clip(Some(22)), FRAME);
    let cut = out.held.iter().find(|d| d.purpose == Purpose::Final).unwrap();
    assert_eq!(cut.heard, ms(6_990), "cut in the middle of the gap's last frame");
    assert_eq!(cut.len, ms(6_960 + COMMIT_PAUSE_MS), "its speech, then a commit pause");
    assert_eq!(cut.text, words(0..23));
    assert_eq!(out.text, words(0..30), "every word once, none cut in two");
    // No silent gap at all: the last of the quiet gaps before 8 s (after word 25).
    let out = live(&long_clip(None), FRAME);
    let cut = out.held.iter().find(|d| d.purpose == Purpose::Final).unwrap();
    assert_eq!(cut.heard, ms(7_890));
    assert_eq!(cut.text, words(0..26));
    assert_eq!(out.text, words(0..30));
    // After the cut the open segment's decodes hear only what followed it.
    let after = out.held.iter().skip_while(|d| d.purpose != Purpose::Final).skip(1);
    for d in after {
        assert!(!d.text.contains("w25") && d.len < ms(FORCE_MS), "{d:?}");
    }
}

#[test]
fn cuts_depend_on_the_audio_alone() {
    let audio = long_clip(Some(22));
    let cuts = |chunk| {
        live(&audio, chunk)
            .held
            .into_iter()
            .filter(|d| d.purpose == Purpose::Final)
            .map(|d| (d.heard, d.len))
            .collect::<Vec<_>>()
    };
    assert_eq!(cuts(FRAME), vec![(ms(6_990), ms(7_160))]);
    assert_eq!(cuts(1_000), cuts(FRAME));
    assert_eq!(cuts(4_410), cuts(FRAME));
    // Transcribed whole, the clip is decoded once per segment, cut at the same place.
    let mut decoded = Vec::new();
    let text = transcribe_whole(&audio, |clip| {
        decoded.push(clip.len());
        Ok::<_, ()>(fake_decode(clip))
    })
    .unwrap();
    assert_eq!(text, words(0..30));
    assert_eq!(decoded.len(), 2);
    assert_eq!(decoded[0], ms(7_160), "the same clip as the live cut's");
}

#[test]
fn the_release_decodes_only_the_open_segment() {
    // Speech up to the release: the open phrase is decoded, never the committed one.
    let audio = cat(&[speech(0..3, QUIET), silence(400), speech(3..5, QUIET)]);
    let out = live(&audio, FRAME);
    assert_eq!(out.text, words(0..5));
    assert!(out.released.len() <= 1, "{:?}", out.released);
    for d in &out.released {
        assert_eq!(d.purpose, Purpose::Final);
        assert_eq!(d.text, words(3..5));
        assert!(d.heard <= ms(LEAD_IN_MS + 2 * 300), "{d:?}");
    }
    // A release after a pause: the decode at the pause is the transcript, nothing is left.
    let out = live(&cat(&[speech(0..3, QUIET), silence(100)]), FRAME);
    assert!(out.released.is_empty(), "{:?}", out.released);
    assert_eq!(out.text, words(0..3));
}

#[test]
fn a_tick_during_a_decode_is_skipped_not_queued() {
    let mut s = Segmenter::new();
    s.push(&cat(&[silence(100), speech(0..2, QUIET)]));
    let first = s.next_job().expect("due: 300 ms of speech");
    // 1.2 s more while it runs: no second decode beside it, however many ticks passed.
    s.push(&speech(2..6, QUIET));
    assert!(s.next_job().is_none());
    s.complete(first, "w0 w1");
    let next = s.next_job().expect("the speech since");
    assert_eq!(fake_decode(&next.audio), words(0..6), "one decode hears it all");
    assert!(s.next_job().is_none());
}

/// Speech (words `from..`) pushed 20 ms at a time until a decode is due: how much it took.
fn new_speech_until_due(s: &mut Segmenter, from: usize) -> usize {
    let mut pushed = 0;
    while !s.has_job() {
        s.push(&speech(from..from + 6, QUIET)[pushed..pushed + ms(20)]);
        pushed += ms(20);
    }
    pushed
}

/// The recogniser's pace (issue 20): a decode is due [`TICK_MS`] after new speech begins
/// while decodes are quick, and twice the last interim decode's time after it when they
/// are slow (a long phrase, a busy machine), so decoding never takes the whole core; the
/// next phrase starts at the quick pace again.
#[test]
fn slow_decodes_space_the_next_ones_out_until_the_next_phrase() {
    let mut s = Segmenter::new();
    s.push(&cat(&[silence(100), speech(0..1, QUIET)]));
    let first = s.next_job().expect("due a tick after the speech began");
    // A quick decode: the next is due a tick after new speech.
    s.paced_by(&first, std::time::Duration::from_millis(40));
    s.complete(first, "w0");
    s.push(&speech(1..2, QUIET));
    let due = s.next_job().expect("a tick of new speech");
    // A 300 ms decode: 200 ms of new speech is not enough, 600 ms is.
    s.paced_by(&due, std::time::Duration::from_millis(300));
    s.complete(due, "w0 w1");
    let pushed = new_speech_until_due(&mut s, 2);
    assert!(
        (ms(580)..=ms(620)).contains(&pushed),
        "due after {} ms of new speech",
        pushed / 16
    );
    // A pause commits the phrase; the next one is decoded at the quick pace.
    let job = s.next_job().unwrap();
    s.complete(job, "w0 w1 w2 w3");
    s.push(&silence(400));
    while let Some(job) = s.next_job() {
        let text = fake_decode(&job.audio);
        s.complete(job, &text);
    }
    let pushed = new_speech_until_due(&mut s, 8);
    assert!(pushed <= ms(240), "due after {} ms of new speech", pushed / 16);
}

/// A decode that brought no new words (Moonshine on a phrase's first 200 ms, the start of
/// a word; or the same text again in the middle of a long word) is followed half a tick
/// of new speech later, not a whole tick, so new words are not a tick late; after one
/// that brought words the pace is a tick again; and a slow decode still spaces them out.
#[test]
fn a_decode_that_brought_no_new_words_is_followed_sooner() {
    let mut s = Segmenter::new();
    let decode = |s: &mut Segmenter, took_ms: u64, text: &str| {
        let job = s.next_job().expect("a decode is due");
        s.paced_by(&job, Duration::from_millis(took_ms));
        s.complete(job, text)
    };
    s.push(&cat(&[silence(100), speech(0..1, QUIET)]));
    assert_eq!(decode(&mut s, 40, " . "), None, "punctuation alone is nothing to show");
    let pushed = new_speech_until_due(&mut s, 1);
    assert!(
        pushed <= ms(RETRY_TICK_MS + 20),
        "due after {} ms of new speech",
        pushed / 16
    );
    assert_eq!(decode(&mut s, 40, "w0").as_deref(), Some("w0"));
    let pushed = new_speech_until_due(&mut s, 2);
    assert!(pushed >= ms(TICK_MS), "due after {} ms of new speech", pushed / 16);
    // The same words again.
    assert_eq!(decode(&mut s, 40, "w0"), None);
    let pushed = new_speech_until_due(&mut s, 3);
    assert!(
        pushed <= ms(RETRY_TICK_MS + 20),
        "due after {} ms of new speech",
        pushed / 16
    );
    // A slow decode with nothing new: twice its time, more than half a tick.
    assert_eq!(decode(&mut s, 150, "w0"), None);
    let pushed = new_speech_until_due(&mut s, 4);
    assert!(
        (ms(280)..=ms(320)).contains(&pushed),
        "due after {} ms of new speech",
        pushed / 16
    );
}

/// A rough decode (an interim one that heard no pause: Moonshine's draft) is shown but
/// never final: released with no pause after the speech, where that decode heard all
/// there is, the phrase is decoded again, exactly; the decode at a pause is exact, and
/// it is the transcript with nothing left for the release.
#[test]
fn a_rough_decode_is_shown_but_never_final() {
    let mut s = Segmenter::new();
    s.push(&cat(&[silence(100), speech(0..2, QUIET)]));
    let job = s.next_job().expect("a tick of speech");
    assert!(job.may_be_rough(), "mid-speech");
    let text = fake_decode(&job.audio);
    assert_eq!(s.complete(job, &text), Some(text.clone()), "shown");
    s.release();
    let again = s.next_job().expect("decoded again at the release");
    assert_eq!(again.purpose, Purpose::Final);
    assert!(!again.may_be_rough());
    s.complete(again, &text);
    assert!(s.next_job().is_none());
    assert_eq!(s.text(), text);

    let mut s = Segmenter::new();
    s.push(&cat(&[
        silence(100),
        speech(0..1, QUIET),
        silence(crate::audio::silence::PAUSE_MS + 20),
    ]));
    let mut last = None;
    while let Some(job) = s.next_job() {
        let text = fake_decode(&job.audio);
        last = Some(job.may_be_rough());
        s.complete(job, &text);
    }
    assert_eq!(last, Some(false), "the decode at the pause is exact");
    s.release();
    assert!(s.next_job().is_none(), "its text is final");
    assert_eq!(s.text(), words(0..1));
}

#[test]
fn silence_and_bad_samples_decode_nothing() {
    let mut s = Segmenter::new();
    s.push(&[f32::NAN; 16_000]);
    s.push(&[f32::INFINITY, f32::NEG_INFINITY]);
    s.push(&silence(3_000));
    assert!(s.next_job().is_none());
    s.release();
    assert!(s.next_job().is_none());
    assert_eq!(s.text(), "");
    let mut calls = 0;
    let text = transcribe_whole(&[], |_| {
        calls += 1;
        Ok::<_, ()>(String::new())
    });
    assert_eq!((text, calls), (Ok(String::new()), 0));
}

/// A decoder for the threaded tests: the fake engine, holding `alive` while it exists.
fn decoder(alive: Arc<()>) -> Decoder {
    Box::new(move |job, stop| {
        let _held = &alive;
        if stop.is_cancelled() {
            return Err(ProviderError::new("test", ErrorKind::Cancelled, "stopped"));
        }
        Ok(fake_decode(&job.audio))
    })
}

#[tokio::test]
async fn the_live_thread_sends_interim_text_and_returns_the_transcript_at_release() {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut live = start("test", decoder(Arc::new(())), tx).unwrap();
    let audio = long_clip(None);
    for piece in audio.chunks(FRAME) {
        live.send(piece).await.unwrap();
    }
    assert_eq!(live.finish().await.unwrap(), words(0..30));
    let mut interims = Vec::new();
    while let Ok(t) = rx.try_recv() {
        interims.push(t);
    }
    // However the thread batched the audio, what it showed is how the transcript starts.
    for t in &interims {
        let w = whole_words(t);
        assert_eq!(w.join(" "), words(0..w.len()), "{t:?}");
    }
}

#[tokio::test]
async fn a_live_transcription_dropped_without_a_release_ends_its_thread() {
    let alive = Arc::new(());
    let (tx, _rx) = mpsc::unbounded_channel();
    let mut live = start("test", decoder(alive.clone()), tx).unwrap();
    live.send(&speech(0..3, QUIET)).await.unwrap();
    drop(live);
    // The thread drops its decoder as it ends; the deadline catches a thread that never
    // ends, not a slow one.
    let deadline = Instant::now() + Duration::from_secs(20);
    while Arc::strong_count(&alive) > 1 {
        assert!(Instant::now() < deadline, "the thread still runs 20 s after the drop");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The settled transcript after each `chunk` of `audio` (driven as [`live`] drives it),
/// with the samples pushed at each change.
fn settled_while(audio: &[f32], chunk: usize) -> Vec<(usize, Option<String>)> {
    let mut s = Segmenter::new();
    let mut changes: Vec<(usize, Option<String>)> = Vec::new();
    let mut pushed = 0;
    let mut note = |s: &Segmenter, pushed: usize| {
        let now = s.settled();
        if changes.last().map_or(now.is_some(), |(_, was)| *was != now) {
            changes.push((pushed, now));
        }
    };
    for piece in audio.chunks(chunk) {
        s.push(piece);
        pushed += piece.len();
        note(&s, pushed);
        while let Some(job) = s.next_job() {
            let text = fake_decode(&job.audio);
            s.complete(job, &text);
            note(&s, pushed);
        }
    }
    changes
}

#[test]
fn the_settled_transcript_is_set_in_pauses_and_is_what_the_release_gives() {
    let first = speech(0..3, QUIET).len();
    let audio = cat(&[
        speech(0..3, QUIET),
        silence(100),
        speech(3..5, QUIET),
        silence(400),
        speech(5..7, QUIET),
    ]);
    let changes = settled_while(&audio, FRAME);
    let texts: Vec<Option<&str>> = changes.iter().map(|(_, t)| t.as_deref()).collect();
    // Settled in each pause (the first one shorter than a commit pause), unsettled by the
    // next word, and not settled while the last phrase is still being spoken.
    assert_eq!(
        texts,
        vec![Some(words(0..3).as_str()), None, Some(words(0..5).as_str()), None],
        "{changes:?}"
    );
    // Each was settled only once a pause had begun after the last word…
    assert!(changes[0].0 >= first + PAUSE, "{changes:?}");
    // …and unsettled by the first frame of the next word.
    assert!(changes[1].0 <= first + ms(100) + FRAME, "{changes:?}");
    // Whenever it was settled, a release then gives that text, with no decode.
    for (at, text) in &changes {
        if let Some(text) = text {
            let released = live(&audio[..*at], FRAME);
            assert_eq!(&released.text, text, "released after {} ms", at / 16);
            assert!(released.released.is_empty(), "{:?}", released.released);
        }
    }
    // A release in the middle of a word does need a decode: never settled there.
    assert!(!live(&audio[..first + ms(100) + ms(150)], FRAME).released.is_empty());
}

#[tokio::test]
async fn the_live_thread_publishes_the_settled_transcript() {
    let (tx, _rx) = mpsc::unbounded_channel();
    let mut live = start("test", decoder(Arc::new(())), tx).unwrap();
    let mut settled = live.settled().expect("an offline engine can tell");
    assert_eq!(*settled.borrow(), None);
    live.send(&cat(&[speech(0..3, QUIET), silence(100)])).await.unwrap();
    // The deadlines catch a thread that never publishes, not a slow one.
    let wait = Duration::from_secs(20);
    let want = words(0..3);
    tokio::time::timeout(wait, settled.wait_for(|t| t.as_deref() == Some(want.as_str())))
        .await
        .expect("settled in the pause")
        .unwrap();
    live.send(&word(3)).await.unwrap();
    tokio::time::timeout(wait, settled.wait_for(Option::is_none))
        .await
        .expect("unsettled by the next word")
        .unwrap();
    live.send(&silence(100)).await.unwrap();
    assert_eq!(live.finish().await.unwrap(), words(0..4));
}
