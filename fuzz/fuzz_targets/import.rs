//! Every import format (Hark export, Deepgram, OpenAI/Anthropic arrays and bodies, with or
//! without comments) on any text: a session or a named error, never a panic; and whatever
//! imports, exports and imports again to the same record.
#![no_main]

use hark_core::store::{export, import};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok((_, session)) = import::parse(&text) {
        let json = export::to_json(&session);
        let (_, again) = import::parse(&json).expect("an export always imports");
        assert_eq!(again.messages, session.messages);
    }
});
