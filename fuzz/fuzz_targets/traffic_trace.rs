//! Traffic JSON-lines trace reader: arbitrary text never panics; programs that read write
//! back to a trace that reads to the same programs.
#![no_main]
use libfuzzer_sys::fuzz_target;
use unpinned_traffic::trace::{read_jsonl, to_jsonl_string};

fuzz_target!(|data: &[u8]| {
    if let Ok(programs) = read_jsonl(data) {
        let text = to_jsonl_string(&programs);
        let again = read_jsonl(text.as_bytes()).expect("a written trace reads");
        assert_eq!(again, programs);
    }
});
