//! Profile reader: arbitrary text never panics; a profile that parses serializes to TOML that
//! parses again to the same TOML (a fixpoint; compared as text so NaN fields compare equal).
//! The text is also tried as a `field=value` override of the built-in profile.
#![no_main]
use libfuzzer_sys::fuzz_target;
use unpinned_core::profile::Profile;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(p) = Profile::from_toml(text) {
        let once = p.to_toml();
        let again = Profile::from_toml(&once).expect("a serialized profile parses");
        assert_eq!(again.to_toml(), once);
    }
    if let Ok(p) = Profile::forth_arm().with_override(text) {
        let once = p.to_toml();
        let again = Profile::from_toml(&once).expect("an overridden profile parses");
        assert_eq!(again.to_toml(), once);
    }
});
