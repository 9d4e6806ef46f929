#![no_main]
//! Fuzz target `decode`: see `firsttoken_fuzz::drive::decode` for its properties.
libfuzzer_sys::fuzz_target!(|data: &[u8]| firsttoken_fuzz::drive::decode(data));
