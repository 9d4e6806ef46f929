#![no_main]
//! Fuzz target `server_timing`: see `firsttoken_fuzz::drive::server_timing` for its properties.
libfuzzer_sys::fuzz_target!(|data: &[u8]| firsttoken_fuzz::drive::server_timing(data));
