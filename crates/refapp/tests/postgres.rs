//! The app on PostgreSQL (`DATABASE_URL`), each test in its own schema
//! `refapp_test_<random>` (chosen through the URL's `options=-c search_path=…`),
//! dropped at the end. Without `DATABASE_URL` the tests say so loudly and pass.
//! The TLS tests also need the server's CA in `FIRSTTOKEN_TEST_PG_CA`
//! (`.ci/run` sets it); the others honour any `sslmode` in `DATABASE_URL`.
//!
//! "Database down" is simulated honestly: the app reaches PostgreSQL through
//! a TCP relay that the test cuts mid-run, so the pool's connections break
//! and new ones are refused. The app then answers 503; a PostgreSQL that is
//! unreachable at start is a startup error instead (migrations run at start).

mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::{App, Emulator, WAIT, closed_port, email};
use firsttoken_refapp::{AppState, Config, Options};
use reqwest::StatusCode;
use serde_json::json;
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

fn database_url() -> Option<String> {
    match std::env::var("DATABASE_URL") {
        Ok(u) if !u.trim().is_empty() => Some(u),
        _ => {
            eprintln!("SKIPPED: DATABASE_URL not set (PostgreSQL tests did not run)");
            None
        }
    }
}

/// The server's CA file, or `None` after saying the TLS test is skipped.
fn test_ca() -> Option<String> {
    match std::env::var("FIRSTTOKEN_TEST_PG_CA") {
        Ok(ca) if !ca.trim().is_empty() => Some(ca),
        _ => {
            eprintln!("SKIPPED: FIRSTTOKEN_TEST_PG_CA not set (PostgreSQL TLS test did not run)");
            None
        }
    }
}

/// One connection, with the URL's own TLS settings.
async fn pg_client(url: &str) -> Result<tokio_postgres::Client, tokio_postgres::Error> {
    let target = firsttoken_pgtls::PgTarget::parse(url).expect("a usable PostgreSQL URL");
    let (client, conn) = target.connect().await?;
    tokio::spawn(conn);
    Ok(client)
}

/// A throwaway schema, dropped on drop.
struct Schema {
    base_url: String,
    name: String,
}

impl Schema {
    async fn create(base_url: &str) -> Schema {
        let name = common::unique("refapp_test_");
        let client = pg_client(base_url).await.expect("connect to DATABASE_URL");
        client
            .batch_execute(&format!("CREATE SCHEMA {name}"))
            .await
            .expect("create schema");
        Schema {
            base_url: base_url.to_string(),
            name,
        }
    }

    /// The URL with this schema first on the search path, optionally via
    /// another host:port.
    fn url(&self, via: Option<SocketAddr>) -> String {
        let mut url = self.base_url.clone();
        if let Some(addr) = via {
            let (scheme, rest) = url.split_once("://").unwrap();
            let (userinfo, hostpath) = match rest.rsplit_once('@') {
                Some((u, h)) => (format!("{u}@"), h.to_string()),
                None => (String::new(), rest.to_string()),
            };
            let path = hostpath.find(['/', '?']).map_or("", |i| &hostpath[i..]);
            url = format!("{scheme}://{userinfo}{addr}{path}");
        }
        let sep = if url.contains('?') { '&' } else { '?' };
        format!("{url}{sep}options=-c%20search_path%3D{}", self.name)
    }

    async fn client(&self) -> tokio_postgres::Client {
        pg_client(&self.url(None)).await.expect("connect")
    }
}

impl Drop for Schema {
    fn drop(&mut self) {
        let (url, name) = (self.base_url.clone(), self.name.clone());
        // Drop runs inside the test's runtime: clean up from a thread of its own.
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async {
                if let Ok(c) = pg_client(&url).await {
                    let _ = c
                        .batch_execute(&format!("DROP SCHEMA IF EXISTS {name} CASCADE"))
                        .await;
                }
            });
        })
        .join();
    }
}

fn options(db: String, upstream: &Emulator) -> Options {
    Options {
        database_url: db,
        upstream_url: upstream.base_url(),
        db_timeout: Duration::from_secs(2),
        ..Options::default()
    }
}

#[tokio::test]
async fn postgres_accounts_chat_docs_and_cascading_delete() {
    let Some(url) = database_url() else { return };
    let schema = Schema::create(&url).await;
    let emu = Emulator::start(50, 5, 6).await;
    let app = App::start(options(schema.url(None), &emu)).await;

    let (s, v) = app.get_json("/health", None).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(v["database"], "postgres");

    let creds = json!({"email": email(), "password": "correct horse battery"});
    let (s, v, _) = app.post_json("/api/auth/signup", None, &creds).await;
    assert_eq!(s, StatusCode::CREATED, "{v}");
    let user_id = v["user_id"].as_i64().unwrap();
    let (s, _, _) = app.post_json("/api/auth/signup", None, &creds).await;
    assert_eq!(s, StatusCode::CONFLICT);
    let (s, v, _) = app.post_json("/api/auth/login", None, &creds).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let token = v["token"].as_str().unwrap().to_string();
    let (s, _, _) = app
        .post_json("/api/chat", Some("ftr_bogus"), &json!({"message": "hi"}))
        .await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);

    let r = app
        .ask("/api/chat", &token, json!({"message": "hello there"}))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let conversation = r.meta()["conversation_id"].as_i64().unwrap();
    let h = r.server_timing_header();
    assert!(
        ["auth", "db", "upstream_connect"]
            .iter()
            .all(|k| h.contains_key(*k))
    );
    let r2 = app
        .ask(
            "/api/message",
            &token,
            json!({"conversation_id": conversation, "message": "What does the mortgage rate sheet say about rate locks?"}),
        )
        .await;
    assert_eq!(r2.status, StatusCode::OK, "{}", r2.body);
    assert_eq!(r2.header("x-route"), Some("docs"));
    assert!(r2.server_timing_header().contains_key("retrieve"));
    let ids = r2.meta()["passage_ids"].clone();
    assert!(ids.as_array().is_some_and(|a| !a.is_empty()));

    let (s, v) = app
        .get_json(
            &format!("/api/conversations/{conversation}/messages"),
            Some(&token),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let msgs = v["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 4, "{v}");
    assert_eq!(msgs[1]["content"], r.content().as_str());
    assert_eq!(msgs[3]["passage_ids"], ids);
    assert!(msgs[3]["created_at"].as_str().unwrap().ends_with('Z'));

    // Roundtrips show in the db phase here too.
    app.stop().await;
    let busy = App::start(Options {
        db_roundtrips: 200,
        ..options(schema.url(None), &emu)
    })
    .await;
    let r3 = busy
        .ask(
            "/api/chat",
            &token,
            json!({"conversation_id": conversation, "message": "again"}),
        )
        .await;
    assert_eq!(r3.status, StatusCode::OK);
    assert!(r3.server_timing_header()["db"] > h["db"]);

    // Deleting the user empties its rows everywhere.
    assert!(busy.state.store().delete_user(user_id).await.unwrap());
    let c = schema.client().await;
    for table in ["users", "tokens", "conversations", "messages"] {
        let n: i64 = c
            .query_one(&format!("SELECT count(*) FROM {table}"), &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(n, 0, "{table}");
    }
    busy.stop().await;
}

#[tokio::test]
async fn postgres_migrations_are_idempotent() {
    let Some(url) = database_url() else { return };
    let schema = Schema::create(&url).await;
    let emu = Emulator::start(10, 1, 1).await;
    for _ in 0..2 {
        let config = Config::new(options(schema.url(None), &emu)).unwrap();
        let state = tokio::time::timeout(WAIT, AppState::new(config))
            .await
            .unwrap();
        assert!(state.is_ok(), "{:?}", state.err());
    }
    let c = schema.client().await;
    let versions: i64 = c
        .query_one("SELECT count(*) FROM schema_version", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(versions, 1);
}

#[tokio::test]
async fn postgres_unreachable_at_start_is_a_clear_startup_error() {
    if database_url().is_none() {
        return;
    }
    let closed = closed_port().await;
    let config = Config::new(Options {
        database_url: format!("postgres://postgres@{closed}/test"),
        db_timeout: Duration::from_secs(1),
        ..Options::default()
    })
    .unwrap();
    let t = Instant::now();
    let r = tokio::time::timeout(WAIT, AppState::new(config))
        .await
        .unwrap();
    let e = r.err().expect("startup error").to_string();
    assert!(
        e.contains("cannot open the database postgres://") && e.contains("unavailable"),
        "{e}"
    );
    assert!(t.elapsed() < Duration::from_secs(10));
}

#[tokio::test]
async fn postgres_going_down_mid_run_is_503() {
    let Some(url) = database_url() else { return };
    let schema = Schema::create(&url).await;
    let target = pg_addr(&url).await;
    let relay = Relay::start(target).await;
    let emu = Emulator::start(20, 1, 2).await;
    let app = App::start(Options {
        db_timeout: Duration::from_millis(500),
        ..options(schema.url(Some(relay.addr)), &emu)
    })
    .await;
    let (_, token) = app.user().await;
    let r = app.ask("/api/chat", &token, json!({"message": "hi"})).await;
    assert_eq!(r.status, StatusCode::OK);

    relay.cut().await;
    let t = Instant::now();
    let (s, v, _) = app
        .post_json("/api/chat", Some(&token), &json!({"message": "hi"}))
        .await;
    assert_eq!(s, StatusCode::SERVICE_UNAVAILABLE, "{v}");
    assert_eq!(v["error"]["type"], "database_unavailable");
    let (s, v) = app.get_json("/health", None).await;
    assert_eq!(s, StatusCode::SERVICE_UNAVAILABLE, "{v}");
    assert!(t.elapsed() < Duration::from_secs(10));
    app.stop().await;
}

#[tokio::test]
async fn postgres_over_verify_full_tls_serves_with_every_connection_encrypted() {
    let Some(url) = database_url() else { return };
    let Some(ca) = test_ca() else { return };
    let schema = Schema::create(&url).await;
    let emu = Emulator::start(10, 1, 2).await;
    let tag = common::unique("refapp_tls_");
    let tls_url = format!(
        "{}&sslmode=verify-full&sslrootcert={ca}&application_name={tag}",
        schema.url(None)
    );
    let app = App::start(options(tls_url, &emu)).await;
    let (s, v) = app.get_json("/health", None).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let (_, token) = app.user().await;
    let r = app.ask("/api/chat", &token, json!({"message": "hi"})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);

    let c = schema.client().await;
    let row = c
        .query_one(
            "SELECT count(*), count(*) FILTER (WHERE s.ssl) FROM pg_stat_activity a
             JOIN pg_stat_ssl s USING (pid) WHERE a.application_name = $1",
            &[&tag],
        )
        .await
        .unwrap();
    let (all, encrypted): (i64, i64) = (row.get(0), row.get(1));
    assert!(all > 0, "the app holds no connection");
    assert_eq!(encrypted, all, "an app connection is not encrypted");
    app.stop().await;
}

#[tokio::test]
async fn postgres_with_an_unreadable_ca_file_is_a_startup_error_naming_it() {
    let config = Config::new(Options {
        database_url: "postgres://postgres:hunter2@127.0.0.1:1/test?sslmode=verify-full&sslrootcert=/nonexistent/ca.crt".into(),
        db_timeout: Duration::from_secs(1),
        ..Options::default()
    })
    .unwrap();
    let r = tokio::time::timeout(WAIT, AppState::new(config))
        .await
        .unwrap();
    let e = r.err().expect("startup error").to_string();
    assert!(e.contains("/nonexistent/ca.crt"), "{e}");
    assert!(!e.contains("hunter2"), "{e}");
}

/// The host:port of a postgres:// URL.
async fn pg_addr(url: &str) -> SocketAddr {
    let rest = url.split_once("://").unwrap().1;
    let host_part = rest.rsplit_once('@').map_or(rest, |(_, h)| h);
    let end = host_part.find(['/', '?']).unwrap_or(host_part.len());
    let hostport = &host_part[..end];
    let hostport = if hostport.contains(':') {
        hostport.to_string()
    } else {
        format!("{hostport}:5432")
    };
    tokio::net::lookup_host(hostport)
        .await
        .unwrap()
        .next()
        .unwrap()
}

/// A TCP relay to PostgreSQL that can be cut: the listener closes and every
/// relayed connection is dropped.
struct Relay {
    addr: SocketAddr,
    cut: CancellationToken,
    /// The accept loop and every relayed connection.
    tasks: TaskTracker,
}

impl Relay {
    async fn start(target: SocketAddr) -> Relay {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let cut = CancellationToken::new();
        let tasks = TaskTracker::new();
        let (c, t) = (cut.clone(), tasks.clone());
        tasks.spawn(async move {
            loop {
                let (mut inbound, _) = tokio::select! {
                    _ = c.cancelled() => return,
                    r = l.accept() => match r { Ok(x) => x, Err(_) => return },
                };
                let c = c.clone();
                t.spawn(async move {
                    let Ok(mut outbound) = TcpStream::connect(target).await else {
                        return;
                    };
                    tokio::select! {
                        _ = c.cancelled() => {}
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                    }
                });
            }
        });
        Relay { addr, cut, tasks }
    }

    /// Cut, and return once the listener is closed and every relayed
    /// connection dropped: the app's next query finds the database gone.
    async fn cut(&self) {
        self.cut.cancel();
        self.tasks.close();
        self.tasks.wait().await;
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.cut.cancel();
    }
}
