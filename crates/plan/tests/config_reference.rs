//! docs/CONFIG.md is the reference of every config key, generated from
//! the config types (`firsttoken_plan::config::reference`). This test
//! fails when the checked-in file differs from what the types say; with
//! `FIRSTTOKEN_REGENERATE=1` it rewrites the file instead (the command is
//! `firsttoken_plan::config::reference::REGENERATE`).

use firsttoken_plan::config::reference::{REGENERATE, markdown};

const PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/CONFIG.md");

#[test]
fn the_checked_in_reference_matches_the_config_types() {
    let generated = markdown();
    if std::env::var_os("FIRSTTOKEN_REGENERATE").is_some() {
        std::fs::write(PATH, &generated).expect("write docs/CONFIG.md");
        return;
    }
    let checked_in = std::fs::read_to_string(PATH).unwrap_or_default();
    if checked_in != generated {
        let line = checked_in
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .map_or(
                checked_in.lines().count().min(generated.lines().count()),
                |i| i,
            )
            + 1;
        panic!(
            "docs/CONFIG.md differs from the config types (first at line {line}); regenerate it with\n  {REGENERATE}\nand commit it"
        );
    }
}

/// Every key the example config sets is in the reference, and so is
/// every credential a request carries.
#[test]
fn the_reference_names_every_key_of_the_example_and_each_credential() {
    let doc = markdown();
    let example: toml::Table = toml::from_str(firsttoken_plan::config::DEFAULT_CONFIG).unwrap();
    fn keys(prefix: &str, t: &toml::Table, out: &mut Vec<(String, String)>) {
        for (k, v) in t {
            out.push((prefix.to_string(), k.clone()));
            match v {
                toml::Value::Table(sub) if prefix != "prices" => {
                    keys(&format!("{prefix}.{k}"), sub, out)
                }
                toml::Value::Array(items) => {
                    for i in items {
                        if let toml::Value::Table(sub) = i {
                            keys(&format!("{prefix}.{k}"), sub, out);
                        }
                    }
                }
                _ => {}
            }
        }
    }
    let mut found = Vec::new();
    keys("", &example, &mut found);
    for (table, key) in found {
        if table.is_empty() || table == ".prices" || table.contains(".extra") {
            continue;
        }
        assert!(
            doc.contains(&format!("| `{key}` |")),
            "{table}.{key} is not in the reference"
        );
    }
    for key in [
        "signin_path",
        "accounts_env",
        "admin_token_env",
        "timing_headers",
        "http_method",
    ] {
        assert!(doc.contains(&format!("| `{key}` |")), "{key}");
    }
    for credential in [
        "admin_token_env",
        "database_url_env",
        "api_key_env",
        "anonymous",
    ] {
        assert!(doc.contains(credential), "{credential}");
    }
}
