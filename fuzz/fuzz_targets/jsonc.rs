//! The JSON-with-comments reader on any text: no panic; comments become whitespace, so
//! lines stay where they were; plain JSON passes through unchanged.
#![no_main]

use hark_core::store::import::strip_json_comments;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let out = strip_json_comments(text);
    assert_eq!(out.lines().count(), text.lines().count());
    if serde_json::from_str::<serde_json::Value>(text).is_ok() && !text.contains("//") && !text.contains("/*") {
        assert_eq!(out, text);
    }
});
