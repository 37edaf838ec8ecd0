//! GOAL schedule reader: arbitrary text never panics; programs that read write to a
//! JSON-lines trace that reads back to the same programs.
#![no_main]
use libfuzzer_sys::fuzz_target;
use unpinned_traffic::goal::read_goal;
use unpinned_traffic::trace::{read_jsonl, to_jsonl_string};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(programs) = read_goal(text) {
        let jsonl = to_jsonl_string(&programs);
        let again = read_jsonl(jsonl.as_bytes()).expect("a GOAL schedule's trace reads");
        assert_eq!(again, programs);
    }
});
