//! Tests of the session config: parsing, ranges, keys named in errors.
use super::*;

#[test]
fn the_shipped_example_parses() {
    let c = Config::parse(DEFAULT_CONFIG, "firsttoken.toml").unwrap();
    assert_eq!(c.app.paths.len(), 2);
    assert_eq!(c.phases.warm, 120.into());
    assert!(c.direct.as_ref().unwrap().strategies.len() >= 3);
    // The commented per-path settings parse once uncommented.
    let aimed = DEFAULT_CONFIG
        .lines()
        .find_map(|l| l.strip_prefix("#   concurrency = "))
        .unwrap();
    let text: String = DEFAULT_CONFIG
        .lines()
        .map(|l| {
            for key in [
                "# prompts",
                "# prompts_file",
                "# expect_route",
                "# route_field",
            ] {
                if let Some(rest) = l.strip_prefix(key) {
                    return format!("{}{rest}\n", &key[2..]);
                }
            }
            if l.starts_with("concurrency = ") {
                format!("concurrency = {aimed}\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    let c = Config::parse(&text, "firsttoken.toml").unwrap();
    let docs = &c.app.paths[1];
    assert_eq!(docs.expected_route(), "docs");
    assert_eq!(docs.route_field.as_deref(), Some("/route"));
    assert!(docs.prompts.is_some() && docs.prompts_file.is_some());
    let cc = c.phases.concurrency.unwrap();
    assert_eq!(cc.paths, Some(vec!["chat".to_string()]));
}

#[test]
fn errors_name_file_line_and_key() {
    let text = DEFAULT_CONFIG.replace("warm = 120", "warm = \"many\"");
    let e = Config::parse(&text, "f.toml").unwrap_err().to_string();
    let line = DEFAULT_CONFIG
        .lines()
        .position(|l| l.starts_with("warm = 120"))
        .unwrap()
        + 1;
    assert!(e.starts_with(&format!("f.toml:{line}:")), "{e}");
    let text = DEFAULT_CONFIG.replace("warm = 120", "wram = 120");
    let e = Config::parse(&text, "f.toml").unwrap_err().to_string();
    assert!(e.contains("wram"), "{e}");
    let text = DEFAULT_CONFIG.replace("levels = [1, 3, 5]", "levels = [0]");
    let e = Config::parse(&text, "f.toml").unwrap_err().to_string();
    assert!(e.contains("phases.concurrency.levels"), "{e}");
}

/// Issue 16, defect 4: errors found before the session row exists, each
/// naming the key (and, for a wrong type, the line).
#[test]
fn late_errors_are_found_at_load_naming_their_key() {
    let bad = |from: &str, to: &str| {
        assert!(DEFAULT_CONFIG.contains(from), "the example has {from:?}");
        Config::parse(&DEFAULT_CONFIG.replacen(from, to, 1), "f.toml")
            .unwrap_err()
            .to_string()
    };
    // A wrong type names the key and says what is expected.
    let e = bad("warm = 120", "warm = \"many\"");
    assert!(
        e.contains("phases.warm") && e.contains("a count of requests"),
        "{e}"
    );
    // An unknown format names the path's key.
    let e = bad("format = \"openai-chat\"", "format = \"bogus\"");
    assert!(
        e.contains("app.paths[0].format") && e.contains("bogus"),
        "{e}"
    );
    // A token pointer that is not a JSON pointer.
    let e = bad("token_pointer = \"/token\"", "token_pointer = \"token\"");
    assert!(
        e.contains("app.auth.token_pointer") && e.contains("JSON pointer"),
        "{e}"
    );
    // A body template that is not JSON once filled (placeholder unquoted).
    let e = bad("\"message\": \"{prompt}\"", "\"message\": {prompt}");
    assert!(
        e.contains("app.paths[0].body") && e.contains("not valid JSON"),
        "{e}"
    );
    // A route field that is not a JSON pointer.
    let e = bad(
        "name = \"docs\"",
        "name = \"docs\"\nroute_field = \"route\"",
    );
    assert!(
        e.contains("app.paths[1].route_field") && e.contains("JSON pointer"),
        "{e}"
    );
    // A session timeout of zero.
    let e = bad("timeout = \"60s\"", "timeout = \"0s\"");
    assert!(e.contains("session.timeout"), "{e}");
}

/// Issue 10: phases aimed at named paths; per-path prompts and intent.
#[test]
fn phase_paths_name_app_paths() {
    let with = |warm: &str| {
        let text = DEFAULT_CONFIG.replace("warm = 120", warm);
        Config::parse(&text, "f.toml")
    };
    let c = with(r#"warm = { count = 6, paths = ["docs"] }"#).unwrap();
    assert_eq!(c.phases.warm.count, 6);
    assert_eq!(c.phases.warm.paths, Some(vec!["docs".to_string()]));
    let e = with(r#"warm = { count = 6, paths = ["nope"] }"#)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("phases.warm.paths") && e.contains("\"nope\""),
        "{e}"
    );
    assert!(with(r#"warm = { count = 6, paths = [] }"#).is_err());
    assert!(
        with(r#"warm = { count = 6, path = ["docs"] }"#).is_err(),
        "unknown key"
    );
    let text = DEFAULT_CONFIG.replace(
        "concurrency = { levels = [1, 3, 5], requests = 20 }",
        r#"concurrency = { levels = [1, 3, 5], requests = 20, paths = ["chat"], mixed = true }"#,
    );
    let c = Config::parse(&text, "f.toml").unwrap();
    let cc = c.phases.concurrency.unwrap();
    assert!(cc.mixed && cc.paths == Some(vec!["chat".to_string()]));
    let text = DEFAULT_CONFIG.replace(
        "name = \"docs\"",
        "name = \"docs\"\nexpect_route = \"retrieval\"\nprompts = [\"q1\", \"q2\"]",
    );
    let c = Config::parse(&text, "f.toml").unwrap();
    assert_eq!(c.app.paths[1].expected_route(), "retrieval");
    assert_eq!(c.app.paths[0].expected_route(), "chat");
    assert_eq!(c.app.paths[1].prompts.as_ref().unwrap().len(), 2);
    // A resolved config stores and reads back the same.
    let back: Config = serde_json::from_value(serde_json::to_value(&c).unwrap()).unwrap();
    assert_eq!(back.phases, c.phases);
}

/// Regression (issue 8, defect 4): `rate = { per_second = 1e-300 }` and a
/// timeout of u64::MAX seconds were accepted and panicked mid-session.
#[test]
fn out_of_range_spans_are_config_errors() {
    let with = |extra: &str| {
        let text = DEFAULT_CONFIG.replace("[phases]", &format!("[phases]\n{extra}"));
        Config::parse(&text, "f.toml")
    };
    let e = with("rate = { per_second = 1e-300, requests = 3 }")
        .unwrap_err()
        .to_string();
    assert!(e.contains("phases.rate.per_second"), "{e}");
    let e = with("rate = { per_second = 0.01, requests = 10000 }")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("phases.rate") && e.contains("at most 86400 s"),
        "{e}"
    );
    assert!(with("rate = { per_second = 5, requests = 10 }").is_ok());
    let text = DEFAULT_CONFIG.replace("timeout = \"60s\"", "timeout = \"100000s\"");
    let e = Config::parse(&text, "f.toml").unwrap_err().to_string();
    assert!(e.contains("session.timeout"), "{e}");
}

/// Issue 25: `[app.auth]` signs up test accounts or signs in to
/// pre-provisioned ones, never both; a sign-in's accounts come from one
/// place; accounts signed in to are never deleted, so a cleanup beside
/// them is refused; the cleanup's method and admin token apply to its
/// HTTP request.
#[test]
fn auth_signs_up_or_in_and_cleanup_keys_are_checked() {
    use super::{AccountSource, AuthMode};
    let auth = |keys: &str| {
        let text = DEFAULT_CONFIG.replacen(
            "[app.auth]\nsignup_path = \"/api/auth/signup\"\n",
            &format!("[app.auth]\n{keys}\n"),
            1,
        );
        assert_ne!(text, DEFAULT_CONFIG);
        Config::parse(&text, "f.toml").map_err(|e| e.to_string())
    };
    let signin = "signin_path = \"/api/auth/login\"";
    let c = auth(&format!("{signin}\naccounts_env = \"FT_ACCOUNTS\"")).unwrap_err();
    assert!(
        c.contains("app.auth.accounts"),
        "accounts = 1 is a sign-up key: {c}"
    );
    let without = |keys: &str| {
        let text = DEFAULT_CONFIG
            .replacen(
                "[app.auth]\nsignup_path = \"/api/auth/signup\"\n",
                &format!("[app.auth]\n{keys}\n"),
                1,
            )
            .replacen("id_pointer = \"/user_id\"\naccounts = 1\n", "", 1);
        Config::parse(&text, "f.toml").map_err(|e| e.to_string())
    };
    let c = without(&format!("{signin}\naccounts_env = \"FT_ACCOUNTS\"")).unwrap();
    assert_eq!(
        c.app.auth.as_ref().unwrap().mode(),
        Ok(AuthMode::SignIn {
            path: "/api/auth/login",
            accounts: AccountSource::Env("FT_ACCOUNTS")
        })
    );
    let c = without(&format!(
        "{signin}\nemail = \"a@x.invalid\"\npassword_env = \"PW\""
    ))
    .unwrap();
    assert!(matches!(
        c.app.auth.as_ref().unwrap().mode(),
        Ok(AuthMode::SignIn {
            accounts: AccountSource::One { .. },
            ..
        })
    ));
    for (keys, says) in [
        (signin.to_string(), "accounts_env, accounts_file, or email"),
        (
            format!("{signin}\naccounts_env = \"A\"\naccounts_file = \"f\""),
            "from one place",
        ),
        (
            format!("{signin}\nemail = \"a@x\""),
            "app.auth.password_env",
        ),
        (
            format!("{signin}\nsignup_path = \"/s\"\naccounts_env = \"A\""),
            "one of the two",
        ),
        (String::new(), "one of the two"),
    ] {
        let e = without(&keys).unwrap_err();
        assert!(e.contains(says), "{keys}: {e}");
    }
    // Sign-up keeps needing an id, and takes no sign-in keys.
    let e = without("signup_path = \"/s\"").unwrap_err();
    assert!(e.contains("app.auth.id_pointer"), "{e}");
    let e = auth("signup_path = \"/s\"\naccounts_env = \"A\"").unwrap_err();
    assert!(e.contains("use signin_path"), "{e}");
    // Pre-provisioned accounts are never deleted: a cleanup is refused.
    let text = DEFAULT_CONFIG
        .replacen(
            "signup_path = \"/api/auth/signup\"",
            "signin_path = \"/l\"\naccounts_env = \"A\"",
            1,
        )
        .replacen("id_pointer = \"/user_id\"\naccounts = 1\n", "", 1)
        .replacen(
            "# [app.cleanup]",
            "[app.cleanup]\nhttp_delete = \"/u/{id}\"",
            1,
        );
    let e = Config::parse(&text, "f.toml").unwrap_err().to_string();
    assert!(
        e.contains("app.cleanup") && e.contains("never deleted"),
        "{e}"
    );
    // The cleanup's method must be one, and applies to http_delete only.
    let cleanup = |keys: &str| {
        let text = DEFAULT_CONFIG.replacen("# [app.cleanup]", &format!("[app.cleanup]\n{keys}"), 1);
        Config::parse(&text, "f.toml").map_err(|e| e.to_string())
    };
    let c = cleanup("http_delete = \"/u/{id}\"\nadmin_token_env = \"ADMIN\"").unwrap();
    assert_eq!(c.app.cleanup.as_ref().unwrap().http_method(), "DELETE");
    let e = cleanup("http_delete = \"/u/{id}\"\nhttp_method = \"DE LETE\"").unwrap_err();
    assert!(e.contains("app.cleanup.http_method"), "{e}");
    let e = cleanup("admin_token_env = \"ADMIN\"").unwrap_err();
    assert!(e.contains("apply to http_delete"), "{e}");
}

/// Issue 25: conversations are checked at load, each error naming its key.
#[test]
fn conversation_settings_are_checked_naming_their_key() {
    let with = |path_extra: &str, phase: &str| {
        let text = DEFAULT_CONFIG
            .replacen(
                "format = \"openai-chat\"",
                &format!("format = \"openai-chat\"{path_extra}"),
                1,
            )
            .replace("warm = 120", &format!("warm = 120\n{phase}"));
        Config::parse(&text, "f.toml").map_err(|e| e.to_string())
    };
    let conv = "\n[app.paths.conversation]\nfile = \"c.jsonl\"";
    let c = with(conv, "conversations = { count = 4, turns = 3 }").unwrap();
    let p = c.phases.conversations.as_ref().unwrap();
    assert_eq!((p.count, p.turns, p.concurrency), (4, Some(3), 1));
    let conv_path = c.app.paths[0].conversation.as_ref().unwrap();
    assert_eq!(conv_path.history, HistoryMode::Messages);
    assert_eq!(conv_path.pointer(), "/messages");
    // The phase without a path that has conversations.
    let e = with("", "conversations = { count = 4 }").unwrap_err();
    assert!(e.contains("phases.conversations.count"), "{e}");
    let e = with(conv, "conversations = { count = 4, paths = [\"docs\"] }").unwrap_err();
    assert!(
        e.contains("phases.conversations.paths") && e.contains("\"docs\""),
        "{e}"
    );
    let e = with(conv, "conversations = { count = 4, turns = 0 }").unwrap_err();
    assert!(e.contains("phases.conversations.turns"), "{e}");
    // The app keeps the history only with a step that captures its id.
    let e = with(&format!("{conv}\nhistory = \"app\""), "").unwrap_err();
    assert!(e.contains("app.paths[0].conversation.history"), "{e}");
    let e = with(&format!("{conv}\nmessages_pointer = \"messages\""), "").unwrap_err();
    assert!(e.contains("messages_pointer"), "{e}");
    let e = with(&format!("{conv}\nfile = \"\""), "");
    assert!(e.is_err());
}

/// Issue 28: `[engine] metrics_url` is a URL without credentials.
#[test]
fn the_engines_metrics_url_is_checked() {
    let with = |url: &str| {
        let text = format!("{DEFAULT_CONFIG}\n[engine]\nmetrics_url = \"{url}\"\n");
        Config::parse(&text, "f.toml")
    };
    let ok = with("http://127.0.0.1:8000/metrics").unwrap();
    assert_eq!(
        ok.engine.map(|e| e.metrics_url).as_deref(),
        Some("http://127.0.0.1:8000/metrics")
    );
    let e = with("http://u:hunter2@127.0.0.1:8000/metrics")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("engine.metrics_url") && e.contains("credentials") && !e.contains("hunter2"),
        "{e}"
    );
    assert!(with("not a url").is_err());
}
