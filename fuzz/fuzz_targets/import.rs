#![no_main]
//! Fuzz target `import`: see `firsttoken_fuzz::record::import` for its properties.
libfuzzer_sys::fuzz_target!(|data: &[u8]| firsttoken_fuzz::record::import(data));
