#![no_main]
//! Fuzz target `config`: see `firsttoken_fuzz::plan::config` for its properties.
libfuzzer_sys::fuzz_target!(|data: &[u8]| firsttoken_fuzz::plan::config(data));
