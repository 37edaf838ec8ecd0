//! DSM fault-trace reader: arbitrary text never panics; a trace that parses writes back to
//! JSON lines that parse to the same trace.
#![no_main]
use libfuzzer_sys::fuzz_target;
use unpinned_dsm::trace::Trace;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(trace) = Trace::parse(text) {
        let again = Trace::parse(&trace.to_json_lines()).expect("a written trace parses");
        assert_eq!(again, trace);
    }
});
