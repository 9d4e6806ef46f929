//! `firsttoken emulate`: profile errors and the built-in profile.

use assert_cmd::cargo::cargo_bin_cmd;

#[test]
fn a_bad_profile_names_file_line_and_key_and_exits_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("bad.toml");
    std::fs::write(
        &path,
        "[[provider]]\nname = \"a\"\nttft_median_ms = 100\ntokens_per_s = 50\nttft_p99_ms = 3\n",
    )
    .expect("write");
    let out = cargo_bin_cmd!("firsttoken")
        .args(["emulate", "--listen", "127.0.0.1:0", "--profile"])
        .arg(&path)
        .timeout(std::time::Duration::from_secs(20))
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.toml"), "{err}");
    assert!(err.contains("line 5"), "{err}");
    assert!(err.contains("provider.ttft_p99_ms"), "{err}");
}

#[test]
fn the_printed_default_profile_is_the_built_in_one() {
    let out = cargo_bin_cmd!("firsttoken")
        .args(["emulate", "--print-profile"])
        .timeout(std::time::Duration::from_secs(20))
        .output()
        .expect("run");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let p = firsttoken_emulator::Profile::from_toml(&text, "printed").expect("parses");
    let names: Vec<&str> = p.providers.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["quickstart", "steady", "bulk"]);
}
