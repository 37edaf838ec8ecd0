//! RC wire parser: arbitrary bytes never panic; a packet that parses emits back to the same
//! bytes and re-parses to the same value. The first input byte chooses whether the trailing
//! ICRC is first recomputed, so the fuzzer reaches the field checks behind it.
#![no_main]
use libfuzzer_sys::fuzz_target;
use unpinned_fuzz::seal_rc;
use unpinned_wire::rc::RcRepr;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let mut bytes = rest.to_vec();
    if mode & 1 == 1 {
        seal_rc(&mut bytes);
    }
    if let Ok(repr) = RcRepr::parse(&bytes) {
        assert_eq!(repr.buffer_len(), bytes.len());
        let mut out = vec![0u8; repr.buffer_len()];
        let n = repr.emit(&mut out).expect("a parsed packet emits");
        assert_eq!(n, bytes.len());
        assert_eq!(RcRepr::parse(&out[..n]), Ok(repr));
        assert_eq!(&out[..n], &bytes[..], "emit differs from the parsed bytes");
    }
});
