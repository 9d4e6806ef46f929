//! A database password in `--store postgres://user:PASSWORD@…` never reaches
//! the terminal: listing, export and cleanup errors name the store with the
//! password masked.

mod common;

use common::{firsttoken, text};

const PASSWORD: &str = "s3cretPW-for-test";

/// The test database's URL with a password in it (the local cluster trusts
/// loopback, so any password connects).
fn url_with_password() -> Option<String> {
    let Ok(url) = std::env::var("DATABASE_URL") else {
        eprintln!("SKIPPED: DATABASE_URL not set (store password masking test)");
        return None;
    };
    let (scheme, rest) = url.split_once("://")?;
    let rest = rest.split_once('@').map_or(rest, |(_, host)| host);
    Some(format!("{scheme}://postgres:{PASSWORD}@{rest}"))
}

#[test]
fn a_store_password_is_masked_in_every_message() {
    let Some(store) = url_with_password() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let cfg = common::write_config(dir.path(), "http://127.0.0.1:9", 1);
    for args in [
        vec!["export", "--store", &store, "--session", "no-such-session"],
        vec![
            "cleanup",
            "--store",
            &store,
            "--session",
            "no-such-session",
            "-c",
            &cfg,
        ],
        vec!["report", "--store", &store, "--session", "no-such-session"],
    ] {
        let out = firsttoken(&args, &[]);
        let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
        assert_ne!(out.status.code(), Some(0), "{args:?}: {all}");
        assert!(
            !all.contains(PASSWORD),
            "{args:?} printed the password: {all}"
        );
        assert!(
            all.contains("***") || all.contains("no-such-session"),
            "{all}"
        );
    }
}

/// Issue 29, item 10: literal values of headers named `x-auth`, `x-jwt`,
/// `x-bearer`, `x-credential`, `x-user-pass`, `x-session`,
/// `x-signature`, `x-hmac` were stored and exported as written.
#[test]
fn secret_looking_header_names_are_not_stored_or_exported() {
    let emu = common::EmulatorProcess::start();
    let dir = tempfile::tempdir().unwrap();
    let names = [
        "x-auth",
        "x-jwt",
        "x-bearer",
        "x-credential",
        "x-user-pass",
        "x-session",
        "x-signature",
        "x-hmac",
    ];
    let headers: Vec<String> = names
        .iter()
        .enumerate()
        .map(|(i, n)| format!("\"{n}\" = \"literal-secret-{i}\""))
        .collect();
    let config = common::config(&emu.base, 2).replace(
        "[app]\n",
        &format!("[app]\nheaders = {{ {} }}\n", headers.join(", ")),
    );
    let cfg = dir.path().join("ft.toml");
    std::fs::write(&cfg, config).unwrap();
    let store = dir.path().join("s.db").display().to_string();
    let out = firsttoken(
        &["run", "-c", cfg.to_str().unwrap(), "--store", &store, "-q"],
        &[],
    );
    common::assert_code(&out, 0);
    let id = common::session_ids(&store).remove(0);
    let export = firsttoken(&["export", "--store", &store, "--session", &id], &[]);
    common::assert_code(&export, 0);
    let all = format!(
        "{}{}{}",
        text(&out.stdout),
        text(&out.stderr),
        text(&export.stdout)
    );
    assert!(
        !all.contains("literal-secret"),
        "a header value leaked:\n{all}"
    );
    let raw = std::fs::read(&store).unwrap();
    assert!(
        !String::from_utf8_lossy(&raw).contains("literal-secret"),
        "a header value is in the store file"
    );
}
