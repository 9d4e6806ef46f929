#![no_main]
//! Fuzz target `inflate`: see `firsttoken_fuzz::drive::inflate` for its properties.
libfuzzer_sys::fuzz_target!(|data: &[u8]| firsttoken_fuzz::drive::inflate(data));
