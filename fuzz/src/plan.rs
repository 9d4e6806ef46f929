//! Property checks for the config loader (`Config::parse`, which
//! `Config::load` calls on a file's text), shared by the `config` fuzz
//! target and `crates/plan/tests/fuzz_corpus.rs`.
//!
//! Beyond "no panic": a parse error names a line and column inside the
//! text, and an accepted config passes validation again (parse is
//! deterministic and validation has no hidden state).

use firsttoken_plan::config::{Config, ConfigError};

/// Parse the bytes (as UTF-8, lossily, as a file read would refuse
/// otherwise) as a config file.
pub fn config(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    match Config::parse(&text, "fuzz.toml") {
        Ok(cfg) => {
            cfg.validate("fuzz.toml")
                .expect("an accepted config validates again");
        }
        Err(e) => {
            let shown = e.to_string();
            assert!(shown.starts_with("fuzz.toml"), "{shown}");
            if let ConfigError::Parse { line, column, .. } = e {
                let lines = text.matches('\n').count() + 1;
                assert!(
                    (1..=lines).contains(&line),
                    "line {line} of {lines}: {shown}"
                );
                assert!(column >= 1, "column {column}: {shown}");
            }
        }
    }
}
