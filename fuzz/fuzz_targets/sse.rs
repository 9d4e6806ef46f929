#![no_main]
//! Fuzz target `sse`: see `firsttoken_fuzz::drive::sse` for its properties.
libfuzzer_sys::fuzz_target!(|data: &[u8]| firsttoken_fuzz::drive::sse(data));
