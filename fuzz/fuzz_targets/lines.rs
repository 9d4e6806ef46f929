#![no_main]
//! Fuzz target `lines`: see `firsttoken_fuzz::drive::lines` for its properties.
libfuzzer_sys::fuzz_target!(|data: &[u8]| firsttoken_fuzz::drive::lines(data));
