//! Replays the committed fuzz corpus (fuzz/corpus/<target>/) and the
//! inputs of fixed crashes (fuzz/regressions/<target>/) through the fuzz
//! targets' own property checks, so `cargo test` checks them with no
//! fuzzing tool and no extra build (see docs/FUZZING.md).

#[path = "../../../fuzz/src/plan.rs"]
#[allow(dead_code)]
mod checks;

#[path = "../../../fuzz/src/replay.rs"]
mod replay;

#[test]
fn config_corpus_holds_its_properties() {
    replay::replay("config", checks::config);
}

/// The example config (`firsttoken init` writes it) holds the config
/// properties, and is accepted: the check sees the success path too.
#[test]
fn the_example_config_holds_the_config_properties() {
    use firsttoken_plan::config::{Config, DEFAULT_CONFIG};
    checks::config(DEFAULT_CONFIG.as_bytes());
    assert!(Config::parse(DEFAULT_CONFIG, "firsttoken.toml").is_ok());
}
