//! Accounts as real apps have them (issue 25), against the reference app:
//! sign-in to pre-provisioned accounts when sign-up is closed (never
//! deleted, passwords never stored or printed), and a cleanup that
//! carries an admin token of its own: the test account's own token on an
//! admin-only endpoint is reported as residue with what to do.

mod common;

use std::io::{Read, Write};

use common::{EmulatorProcess, assert_code, firsttoken, session_ids, text};

const ADMIN: &str = "admin-token-3f9a-never-printed";
const PASSWORDS: [&str; 2] = ["Pw-one-never-printed", "Pw-two-never-printed"];

/// One HTTP/1.1 request to the app (set-up calls, outside any
/// measurement): its status and body.
fn http(base: &str, method: &str, path: &str, token: Option<&str>, body: &str) -> (u16, String) {
    let addr = base.strip_prefix("http://").expect("an http:// base");
    let mut s = std::net::TcpStream::connect(addr).expect("connect to the app");
    s.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n{auth}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).expect("the answer");
    let status = out
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {out}"));
    let body = out
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    (status, body)
}

struct World {
    _emu: EmulatorProcess,
    app: EmulatorProcess,
    dir: tempfile::TempDir,
    app_db: String,
}

fn world(extra: &[&str]) -> World {
    let emu = EmulatorProcess::start();
    let dir = tempfile::tempdir().unwrap();
    let app_db = dir.path().join("app.db").display().to_string();
    let upstream = format!("{}/v1", emu.base);
    let mut args = vec![
        "refapp",
        "--listen",
        "127.0.0.1:0",
        "--database-url",
        &app_db,
        "--upstream-url",
        &upstream,
        "--admin-token-env",
        "FT_TEST_REFAPP_ADMIN",
    ];
    args.extend_from_slice(extra);
    let app = EmulatorProcess::start_with_env(&args, &[("FT_TEST_REFAPP_ADMIN", ADMIN)]);
    World {
        _emu: emu,
        app,
        dir,
        app_db,
    }
}

fn config(w: &World, auth: &str, cleanup: &str) -> String {
    let path = w.dir.path().join("ft.toml");
    std::fs::write(
        &path,
        format!(
            r#"
[session]
emulated = true

[app]
base_url = "{app}"

[[app.paths]]
name = "chat"
path = "/api/chat"
body = '{{"message": "{{prompt}}"}}'

[app.auth]
body = '{{"email": "{{email}}", "password": "{{password}}"}}'
token_pointer = "/token"
{auth}

{cleanup}

[prompts]
list = ["hello", "what is the operating margin?"]

[phases]
warm = 4
"#,
            app = w.app.base
        ),
    )
    .unwrap();
    path.display().to_string()
}

fn query(app_db: &str, sql: &str) -> i64 {
    let c = rusqlite::Connection::open(app_db).unwrap();
    c.query_row(sql, [], |r| r.get(0)).unwrap()
}

fn export(store: &str) -> (serde_json::Value, String) {
    let id = session_ids(store).into_iter().next().expect("a session");
    let out = firsttoken(&["export", "--store", store, "--session", &id], &[]);
    assert_code(&out, 0);
    let all = text(&out.stdout);
    let first = serde_json::from_str(all.lines().next().unwrap()).unwrap();
    (first, all)
}

/// Nothing a secret could reach holds it: the command's output, the
/// store's bytes, the export.
fn assert_secret_free(secrets: &[&str], outputs: &[&std::process::Output], store: &str) {
    let store_bytes = String::from_utf8_lossy(&std::fs::read(store).unwrap()).into_owned();
    let (_, exported) = export(store);
    for secret in secrets {
        for o in outputs {
            assert!(!text(&o.stdout).contains(secret), "stdout has {secret}");
            assert!(!text(&o.stderr).contains(secret), "stderr has {secret}");
        }
        assert!(!store_bytes.contains(secret), "the store has {secret}");
        assert!(!exported.contains(secret), "the export has {secret}");
    }
}

#[test]
fn sign_in_to_pre_provisioned_accounts_when_sign_up_is_closed() {
    let w = world(&["--signup-limit", "2"]);
    // The accounts exist before the session; then sign-up closes.
    for (who, pw) in ["a", "b"].iter().zip(PASSWORDS) {
        let body = format!(r#"{{"email": "{who}@bench.invalid", "password": "{pw}"}}"#);
        let (status, said) = http(&w.app.base, "POST", "/api/auth/signup", None, &body);
        assert_eq!(status, 201, "{said}");
    }
    let closed = config(
        &w,
        "signup_path = \"/api/auth/signup\"\nid_pointer = \"/user_id\"",
        "",
    );
    let store = w.dir.path().join("closed.db").display().to_string();
    let out = firsttoken(&["run", "-c", &closed, "--store", &store], &[]);
    assert_code(&out, 1);
    assert!(
        text(&out.stderr).contains("HTTP 403") || text(&out.stdout).contains("HTTP 403"),
        "sign-up is closed: {}{}",
        text(&out.stdout),
        text(&out.stderr)
    );

    // Both accounts from an env var: requests rotate over them.
    let listed = format!(
        "a@bench.invalid:{}, b@bench.invalid:{}",
        PASSWORDS[0], PASSWORDS[1]
    );
    let cfg = config(
        &w,
        "signin_path = \"/api/auth/login\"\naccounts_env = \"FT_TEST_ACCOUNTS\"",
        "",
    );
    let store = w.dir.path().join("s.db").display().to_string();
    let out = firsttoken(
        &["run", "-c", &cfg, "--store", &store],
        &[("FT_TEST_ACCOUNTS", &listed)],
    );
    assert_code(&out, 0);
    let (session, _) = export(&store);
    assert_eq!(session["cleanup"], serde_json::Value::Null, "{session}");
    let users = "SELECT count(*) FROM users WHERE email LIKE '%@bench.invalid'";
    assert_eq!(query(&w.app_db, users), 2, "never deleted");
    let talked = "SELECT count(DISTINCT user_id) FROM conversations";
    assert_eq!(query(&w.app_db, talked), 2, "both accounts were used");
    assert_secret_free(&PASSWORDS, &[&out], &store);

    // One account, its password in a variable of its own, reused by
    // every request.
    let one = config(
        &w,
        "signin_path = \"/api/auth/login\"\nemail = \"b@bench.invalid\"\npassword_env = \"FT_TEST_PASSWORD\"",
        "",
    );
    let store = w.dir.path().join("one.db").display().to_string();
    let of = |who: &str| {
        query(
            &w.app_db,
            &format!(
                "SELECT count(*) FROM conversations c JOIN users u ON u.id = c.user_id WHERE u.email = '{who}@bench.invalid'"
            ),
        )
    };
    let (a, b) = (of("a"), of("b"));
    let out = firsttoken(
        &["run", "-c", &one, "--store", &store],
        &[("FT_TEST_PASSWORD", PASSWORDS[1])],
    );
    assert_code(&out, 0);
    assert_eq!(of("a"), a, "a was not used");
    assert!(
        of("b") >= b + 4,
        "every request went as b: {b} → {}",
        of("b")
    );
    assert_secret_free(&PASSWORDS, &[&out], &store);

    // A wrong password fails the session naming the account, not the password.
    let store = w.dir.path().join("wrong.db").display().to_string();
    let out = firsttoken(
        &["run", "-c", &one, "--store", &store],
        &[("FT_TEST_PASSWORD", "Wrong-pw-never-printed")],
    );
    assert_code(&out, 1);
    let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(
        said.contains("sign-in of b@bench.invalid answered HTTP 401"),
        "{said}"
    );
    assert_secret_free(&["Wrong-pw-never-printed"], &[&out], &store);
    // An unset variable stops the run before anything is sent.
    let out = firsttoken(&["run", "-c", &one, "--store", &store], &[]);
    assert_code(&out, 2);
    assert!(
        text(&out.stderr).contains("FT_TEST_PASSWORD, which is not set"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(query(&w.app_db, users), 2);
}

#[test]
fn cleanup_carries_the_admin_token_and_the_own_token_is_residue() {
    let w = world(&[]);
    let signup = "signup_path = \"/api/auth/signup\"\nid_pointer = \"/user_id\"\naccounts = 2";
    let users = "SELECT count(*) FROM users WHERE email LIKE '%@bench.invalid'";
    // The old way: each account's own token on an admin-only endpoint.
    let own = config(
        &w,
        signup,
        "[app.cleanup]\nhttp_delete = \"/api/admin/users/{id}\"",
    );
    let store = w.dir.path().join("s.db").display().to_string();
    let out = firsttoken(&["run", "-c", &own, "--store", &store], &[]);
    assert_code(&out, 1);
    let said = text(&out.stdout);
    assert!(said.contains("cleanup FAILED"), "{said}");
    assert!(
        said.contains("answered HTTP 403 with the test account's own token")
            && said.contains("admin_token_env"),
        "says which credential was refused and what to do: {said}"
    );
    let (session, _) = export(&store);
    assert_eq!(session["cleanup"]["residual"], 2, "{session}");
    assert_eq!(query(&w.app_db, users), 2);

    // With the admin token, the retry deletes both.
    let admin = config(
        &w,
        signup,
        "[app.cleanup]\nhttp_delete = \"/api/admin/users/{id}\"\nadmin_token_env = \"FT_TEST_ADMIN\"",
    );
    let id = session["id"].as_str().unwrap().to_string();
    let env = [("FT_TEST_ADMIN", ADMIN)];
    let retry = firsttoken(
        &["cleanup", "--store", &store, "--session", &id, "-c", &admin],
        &env,
    );
    assert_code(&retry, 0);
    assert_eq!(query(&w.app_db, users), 0);
    let (session, _) = export(&store);
    assert_eq!(session["cleanup"]["residual"], 0, "{session}");
    assert_eq!(session["cleanup"]["deleted"], 2, "{session}");

    // A whole run with it: clean.
    let store2 = w.dir.path().join("s2.db").display().to_string();
    let out = firsttoken(&["run", "-c", &admin, "--store", &store2], &env);
    assert_code(&out, 0);
    assert!(
        text(&out.stdout).contains("0 residual"),
        "{}",
        text(&out.stdout)
    );
    assert_eq!(query(&w.app_db, users), 0);
    assert_secret_free(&[ADMIN], &[&out, &retry], &store2);
    assert_secret_free(&[ADMIN], &[], &store);

    // A token that is not the admin's is refused as such.
    let store3 = w.dir.path().join("s3.db").display().to_string();
    let out = firsttoken(
        &["run", "-c", &admin, "--store", &store3],
        &[("FT_TEST_ADMIN", "not-the-admin-token")],
    );
    assert_code(&out, 1);
    assert!(
        text(&out.stdout).contains("refused the admin token"),
        "{}",
        text(&out.stdout)
    );
    // Unset, the run stops before an account is created.
    let out = firsttoken(&["run", "-c", &admin, "--store", &store3], &[]);
    assert_code(&out, 2);
    assert!(
        text(&out.stderr).contains("admin_token_env names FT_TEST_ADMIN"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(query(&w.app_db, users), 2, "two left by the refused run");
}
