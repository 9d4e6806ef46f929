//! Shared test harness: one test body runs against SQLite and PostgreSQL.
//!
//! PostgreSQL tests read `DATABASE_URL`; each test gets a schema of its own
//! (`ft_test_<random>`, selected with `options=-c search_path=…`) that is
//! dropped afterwards, so tests and parallel runs never see each other.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use firsttoken_record::session::{
    Cleanup, Labels, Provenance, SampleRow, SessionMeta, SessionStatus,
};
use firsttoken_record::store::{Store, host_name};
use firsttoken_record::vocab::{Destination, PhaseKind, UtcTime};
use firsttoken_record::{
    Clock, Connection, ErrorKind, HandshakeKind, PromptRef, Sample, SampleError, TlsInfo,
};

/// A time from its RFC 3339 text.
pub fn utc(text: &str) -> UtcTime {
    text.parse().expect("a valid test timestamp")
}

/// Upper bound on any single test body.
pub const TEST_TIMEOUT: Duration = Duration::from_secs(120);

/// A fresh, private database for one test.
#[derive(Clone)]
pub enum TestDb {
    /// A SQLite file in a temporary directory.
    Sqlite {
        dir: Arc<tempfile::TempDir>,
        path: String,
    },
    /// A schema of its own in the `DATABASE_URL` database.
    Postgres {
        admin_url: String,
        schema: String,
        url: String,
    },
}

/// A random lowercase hex string (no RNG dependency: the std hasher is
/// randomly keyed per process; time and a counter separate calls).
pub fn random_hex() -> String {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos(),
    );
    h.write_u32(std::process::id());
    format!("{:016x}", h.finish())
}

/// One connection, honouring the URL's `sslmode` and `sslrootcert` (CI runs
/// these tests again with `sslmode=verify-full`).
pub async fn pg_connect(url: &str) -> tokio_postgres::Client {
    let target = firsttoken_pgtls::PgTarget::parse(url).expect("a usable DATABASE_URL");
    let (client, conn) = tokio::time::timeout(Duration::from_secs(15), target.connect())
        .await
        .expect("connect to PostgreSQL in time")
        .expect("connect to PostgreSQL");
    tokio::spawn(async move {
        let _ = conn.await;
    });
    client
}

/// `url` with a query parameter appended.
pub fn with_param(url: &str, kv: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}{kv}")
}

impl TestDb {
    pub fn sqlite() -> TestDb {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("firsttoken.db").display().to_string();
        TestDb::Sqlite {
            dir: Arc::new(dir),
            path,
        }
    }

    /// `None` (after saying so on stderr) when `DATABASE_URL` is not set.
    pub async fn postgres() -> Option<TestDb> {
        let Ok(admin_url) = std::env::var("DATABASE_URL") else {
            eprintln!("SKIPPED: DATABASE_URL not set (PostgreSQL tests)");
            return None;
        };
        let schema = format!("ft_test_{}", random_hex());
        let admin = pg_connect(&admin_url).await;
        admin
            .batch_execute(&format!("CREATE SCHEMA {schema}"))
            .await
            .expect("create test schema");
        let url = with_param(
            &with_param(&admin_url, &format!("options=-c%20search_path%3D{schema}")),
            &format!("application_name={schema}"),
        );
        Some(TestDb::Postgres {
            admin_url,
            schema,
            url,
        })
    }

    pub fn url(&self) -> &str {
        match self {
            TestDb::Sqlite { path, .. } => path,
            TestDb::Postgres { url, .. } => url,
        }
    }

    pub fn is_postgres(&self) -> bool {
        matches!(self, TestDb::Postgres { .. })
    }

    pub async fn open(&self) -> Store {
        tokio::time::timeout(Duration::from_secs(30), Store::open(self.url()))
            .await
            .expect("store opens in time")
            .expect("store opens")
    }

    /// Runs SQL outside the store, on a connection of its own.
    pub async fn raw_exec(&self, sql: &str) -> Result<(), String> {
        match self {
            TestDb::Sqlite { path, .. } => {
                let c = rusqlite::Connection::open(path).map_err(|e| e.to_string())?;
                c.busy_timeout(Duration::from_secs(10))
                    .map_err(|e| e.to_string())?;
                c.execute_batch(sql).map_err(|e| e.to_string())
            }
            TestDb::Postgres { url, .. } => {
                let c = pg_connect(url).await;
                c.batch_execute(sql).await.map_err(|e| {
                    e.as_db_error()
                        .map_or_else(|| e.to_string(), |d| d.message().to_owned())
                })
            }
        }
    }

    /// The first column of a query, as text.
    pub async fn raw_texts(&self, sql: &str) -> Vec<String> {
        match self {
            TestDb::Sqlite { path, .. } => {
                let c = rusqlite::Connection::open(path).unwrap();
                let mut st = c.prepare(sql).unwrap();
                st.query_map([], |r| r.get::<_, String>(0))
                    .unwrap()
                    .collect::<Result<_, _>>()
                    .unwrap()
            }
            TestDb::Postgres { url, .. } => {
                let c = pg_connect(url).await;
                c.query(sql, &[])
                    .await
                    .unwrap()
                    .iter()
                    .map(|r| r.get::<_, String>(0))
                    .collect()
            }
        }
    }

    pub async fn cleanup(&self) {
        if let TestDb::Postgres {
            admin_url, schema, ..
        } = self
        {
            let admin = pg_connect(admin_url).await;
            // End the test's pooled connections first so DROP does not wait on them.
            let _ = admin
                .execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1",
                    &[schema],
                )
                .await;
            admin
                .batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
                .await
                .expect("drop test schema");
        }
    }
}

/// Runs `body` against `db` (when there is one) with a time limit, then
/// drops the test schema whether the body passed or panicked.
pub async fn run<F, Fut>(db: Option<TestDb>, body: F)
where
    F: FnOnce(TestDb) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let Some(db) = db else { return };
    let handle = tokio::spawn(body(db.clone()));
    let result = tokio::time::timeout(TEST_TIMEOUT, handle).await;
    db.cleanup().await;
    match result {
        Err(_) => panic!("test body did not finish within {TEST_TIMEOUT:?}"),
        Ok(Err(join)) if join.is_panic() => std::panic::resume_unwind(join.into_panic()),
        Ok(Err(join)) => panic!("test task failed: {join}"),
        Ok(Ok(())) => {}
    }
}

/// Generates `<name>::sqlite` and `<name>::postgres` tests from `async fn <name>(TestDb)`.
#[macro_export]
macro_rules! both_backends {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                $crate::common::run(Some($crate::common::TestDb::sqlite()), super::$name).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                $crate::common::run($crate::common::TestDb::postgres().await, super::$name).await
            }
        }
    )*};
}

/// A session with every field set (the spec carries a secret the store must redact).
pub fn full_session(id: &str, started_at: &str) -> SessionMeta {
    SessionMeta {
        id: id.to_owned(),
        started_at: utc(started_at),
        ended_at: None,
        status: SessionStatus::Running,
        spec: serde_json::json!({
            "protocol": "article-323",
            "phases": [{"name": "cold", "requests": 20}, {"name": "warm", "requests": 100}],
            "target": {"url": "https://app.example/chat", "headers": {"Authorization": "Bearer sk-live-1"}},
            "max_tokens": 256,
            "temperature": 0.7,
            "big": 18_446_744_073_709_551_615u64,
        }),
        seed: u64::MAX - 7,
        tool_version: "firsttoken 0.1.0 (abc123)".into(),
        host: host_name(),
        pid: None,
        labels: Labels {
            network: "office-fibre".into(),
            code_version: "v2.3.1".into(),
            vantage: "eu-west".into(),
            tags: BTreeMap::from([
                ("team".to_owned(), "search".to_owned()),
                ("note".to_owned(), "a, \"quoted\" tag".to_owned()),
            ]),
        },
        provenance: Provenance::Measured,
        cleanup: None,
        client_lag_p99_ms: None,
    }
}

/// A sample row with every field set, including an error message that
/// needs CSV quoting.
pub fn full_row(session_id: &str, seq: u64, actual_start_ms: f64) -> SampleRow {
    let mut s = Sample::empty(seq, 3, Connection::Fresh);
    s.warmup = true;
    s.http_version = Some("HTTP/2".into());
    s.dns_ms = Some(0.125);
    s.connect_ms = Some(1.0 / 3.0);
    s.tls_ms = Some(std::f64::consts::E);
    s.sent_ms = Some(3.000001);
    s.ttfb_ms = Some(40.5);
    s.headers_ms = Some(40.75);
    s.ttfe_ms = Some(41.0);
    s.ttfr_ms = Some(90.1);
    s.ttft_ms = Some(210.333);
    s.last_token_ms = Some(900.0);
    s.e2e_ms = Some(901.5);
    s.content_chunks = 42;
    s.output_tokens = Some(128);
    s.input_tokens = Some(1_000_000_000_000);
    s.tokens_per_s = Some(184.2);
    s.itl_p50_ms = Some(15.5);
    s.itl_p99_ms = Some(61.25);
    s.status = Some(200);
    s.request_id = Some("req_01H,\"x\"".into());
    s.provider = Some("emulated-openai".into());
    s.cost_usd = Some(0.000123);
    s.tls = Some(TlsInfo {
        version: "TLSv1_3".into(),
        cipher: "TLS13_AES_128_GCM_SHA256".into(),
        kx_group: Some("X25519MLKEM768".into()),
        handshake: Some(HandshakeKind::Resumed),
    });
    s.proxy_ms = Some(0.875);
    s.content_encoding = Some("gzip".into());
    s.retried_stale = true;
    s.trace_id = Some("4bf92f3577b34da6a3ce929d0e0e4736".into());
    s.clock = Some(Clock::Kernel);
    s.ttft_user_ms = Some(210.875);
    s.client_lag_ms = Some(0.542);
    s.ttft_read_events = Some(3);
    s.ttftc_ms = Some(150.25);
    s.first_output_ms = Some(150.25);
    s.first_output = Some(firsttoken_record::FirstOutput::ToolCall);
    s.incomplete_reason = Some("max_output_tokens".into());
    s.flow_wait_ms = Some(12.625);
    s.turn = Some(3);
    s.history_messages = Some(4);
    s.request_bytes = Some(1234);
    s.painted = Some(firsttoken_record::Painted {
        input_lead_ms: Some(1.375),
        first_dom_ms: Some(230.5),
        painted_ttft_ms: Some(233.25),
        painted_last_ms: None,
        chunks_before_first_paint: Some(1),
    });
    s.flow_steps = Some(vec![
        firsttoken_record::FlowStepTime {
            name: "create \"chat\"".into(),
            ms: 11.5,
            status: Some(201),
        },
        firsttoken_record::FlowStepTime {
            name: "ñ".into(),
            ms: 1e-7,
            status: None,
        },
    ]);
    s.engine = Some(firsttoken_record::EngineTiming {
        source: firsttoken_record::EngineSource::LlamaCpp,
        prompt_n: Some(26),
        prompt_ms: Some(246.205),
        predicted_n: Some(8),
        predicted_ms: None,
        cache_n: Some(0),
    });
    s.route = Some("rag/v2".into());
    s.server_timing = Some(BTreeMap::from([
        ("db".to_owned(), 12.5),
        ("llm".to_owned(), 180.0),
        ("retrieval".to_owned(), 1e-7),
    ]));
    s.error = Some(SampleError {
        kind: ErrorKind::StreamError,
        message: "upstream said: \"overloaded\", retry later\nsecond line, too".into(),
    });
    SampleRow {
        session_id: session_id.to_owned(),
        phase: PhaseKind::Direct,
        dest: Destination::Direct {
            strategy: Some("fallback".into()),
        },
        concurrency: Some(8),
        intended_start_ms: Some(actual_start_ms - 0.5),
        actual_start_ms,
        started_at: utc("2026-11-30T02:30:01.250Z"),
        provenance: Provenance::Measured,
        prompt: Some(PromptRef {
            index: 17,
            hash: "0123456789ab".into(),
        }),
        sample: s,
    }
}

/// A sample row with every optional field null.
pub fn null_row(session_id: &str, seq: u64, actual_start_ms: f64) -> SampleRow {
    SampleRow {
        session_id: session_id.to_owned(),
        phase: PhaseKind::Warm,
        dest: Destination::App { path: None },
        concurrency: None,
        intended_start_ms: None,
        actual_start_ms,
        started_at: utc("2026-11-30T02:30:02.000Z"),
        provenance: Provenance::Emulated,
        prompt: None,
        sample: Sample::empty(seq, 0, Connection::Reused),
    }
}

/// A cleanup result with every field set.
pub fn cleanup() -> Cleanup {
    Cleanup {
        created_ids: vec!["acct-1".into(), "acct-2".into()],
        deleted: 2,
        residual: Some(0),
        error: None,
    }
}
