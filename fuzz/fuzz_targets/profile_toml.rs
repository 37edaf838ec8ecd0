//! Profile readers: arbitrary text never panics in the PART platform profile reader
//! (crates/core), the RC/ODP vendor profile reader (crates/ib) or the Active Access profile
//! reader (crates/aa). A profile that parses serializes to TOML that parses again to the same
//! TOML (a fixpoint; compared as text so NaN fields compare equal). The text is also tried as
//! a `field=value` override of the built-in PART profile.
#![no_main]
use libfuzzer_sys::fuzz_target;
use unpinned_aa::profile::AaProfile;
use unpinned_core::profile::Profile;
use unpinned_ib::VendorProfile;

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
    if let Ok(p) = VendorProfile::from_toml(text) {
        let once = toml::to_string(&p).expect("a vendor profile serializes");
        let again = VendorProfile::from_toml(&once).expect("a serialized vendor profile parses");
        assert_eq!(toml::to_string(&again).expect("serializes"), once);
    }
    if let Ok(p) = AaProfile::from_toml(text) {
        let once = toml::to_string(&p).expect("an AA profile serializes");
        let again = AaProfile::from_toml(&once).expect("a serialized AA profile parses");
        assert_eq!(toml::to_string(&again).expect("serializes"), once);
    }
});
