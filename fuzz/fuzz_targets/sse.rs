//! The SSE parser on any bytes, pushed in pieces the first byte chooses: it never panics,
//! and the events do not depend on where the stream was cut.
#![no_main]

use hark_core::provider::sse::SseParser;
use libfuzzer_sys::fuzz_target;

fn events(chunks: &[&[u8]]) -> Vec<String> {
    let mut p = SseParser::new();
    let mut out = Vec::new();
    for c in chunks {
        p.push(c);
        loop {
            match p.next_event() {
                Ok(Some(e)) => out.push(format!("{e:?}")),
                Ok(None) => break,
                Err(e) => {
                    out.push(format!("error {e}"));
                    return out;
                }
            }
        }
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let Some((&step, body)) = data.split_first() else { return };
    let step = (step as usize % 17) + 1;
    let whole = events(&[body]);
    let pieces: Vec<&[u8]> = body.chunks(step).collect();
    assert_eq!(events(&pieces), whole, "cut every {step} bytes");
});
