//! The reading side at 10,000, 100,000 and 1,000,000 samples: for each
//! size, one session is generated as a JSONL export (deterministic, a
//! demo-like mix: pings, cold probes, warm and fresh requests on two paths,
//! direct requests over three strategies, bursts of 3 and 5, Server-Timing
//! on app requests, TLS on fresh connections, a trace id on every request
//! and server spans for the first 200 app requests), then the release
//! binary runs, each as its own process:
//! `import`, `report` twice (the first right after the import, which
//! stored the session's frame as it wrote the rows; both read that
//! frame), `report --format json` and `export`, on SQLite and,
//! with `DATABASE_URL` set, on PostgreSQL (a schema of its own, dropped
//! after). Wall time, CPU time (user + system, the command's own: a
//! figure that compares machines better than wall time) and peak RSS of
//! each command are printed as a Markdown table, with the targets
//! at 1M.
//!
//! `cargo bench -p firsttoken --bench read_store`
//! (`FT_BENCH_SIZES=10000,100000` for other sizes). To time commands by
//! hand, `read_store generate N PATH` (the bench binary under
//! `target/release/deps/`) writes the export of size N to PATH and exits.
//!
//! Peak RSS is the command's own: each runs under a fresh copy of this
//! bench (`child` mode) whose only child it is, so `getrusage(RUSAGE_CHILDREN)`
//! there reads exactly its `ru_maxrss`. Before each command the disk is
//! synced (`sync`), so none is timed while the kernel writes back the
//! previous one's files, and a store's files are deleted before the next
//! store's turn.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

#[path = "../tests/common/demo_like.rs"]
mod demo_like;

use demo_like::{generate, meta};

const EXE: &str = env!("CARGO_BIN_EXE_firsttoken");

/// Child mode: run `args` (the binary, then its arguments), print `wall_s
/// peak_rss_kb exit_code cpu_s` of it.
fn child(args: &[String]) {
    let t = Instant::now();
    let status = Command::new(&args[0])
        .args(&args[1..])
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .status()
        .expect("run the command");
    let wall = t.elapsed().as_secs_f64();
    let usage = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN);
    let (rss, cpu) = usage.map_or((-1, -1.0), |u| {
        let secs = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
        (u.max_rss(), secs(u.user_time()) + secs(u.system_time()))
    });
    println!("{wall} {rss} {} {cpu}", status.code().unwrap_or(-1));
}

/// A command's figures.
#[derive(Clone, Copy)]
struct Figures {
    wall_s: f64,
    cpu_s: f64,
    rss_mb: f64,
}

/// `firsttoken ARGS` under a child copy of this bench.
fn measure(args: &[&str]) -> Figures {
    // The previous command's writes (a 1.4 GB export, a store) flushed
    // first: no command is timed while the kernel writes another's back.
    let _ = Command::new("sync").status();
    let me = std::env::current_exe().expect("this bench's path");
    let out = Command::new(me)
        .arg("child")
        .arg(EXE)
        .args(args)
        .output()
        .expect("run the child");
    let text = String::from_utf8_lossy(&out.stdout);
    let v: Vec<f64> = text
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    assert!(
        v.len() == 4 && v[2] == 0.0,
        "firsttoken {args:?} failed: {text} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Figures {
        wall_s: v[0],
        rss_mb: v[1] / 1024.0,
        cpu_s: v[3],
    }
}

/// A PostgreSQL schema of its own for `tag`, dropped on drop.
struct PgSchema {
    admin: String,
    name: String,
    url: String,
}

fn pg(admin: &str, sql: &str) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    rt.block_on(async {
        let (c, conn) = tokio_postgres::connect(admin, tokio_postgres::NoTls)
            .await
            .expect("connect to DATABASE_URL");
        tokio::spawn(conn);
        c.batch_execute(sql).await.expect("run SQL");
    });
}

impl PgSchema {
    fn new(admin: &str, tag: &str) -> PgSchema {
        let name = format!("ft_bench_{tag}_{}", std::process::id());
        pg(
            admin,
            &format!("DROP SCHEMA IF EXISTS {name} CASCADE; CREATE SCHEMA {name}"),
        );
        let sep = if admin.contains('?') { '&' } else { '?' };
        PgSchema {
            url: format!("{admin}{sep}options=-c%20search_path%3D{name}"),
            admin: admin.to_string(),
            name,
        }
    }
}

impl Drop for PgSchema {
    fn drop(&mut self) {
        pg(
            &self.admin,
            &format!("DROP SCHEMA IF EXISTS {} CASCADE", self.name),
        );
    }
}

/// One store's figures at one size.
struct Row {
    store: &'static str,
    n: usize,
    cells: Vec<Figures>,
}

fn run_store(store: &'static str, url: &str, n: usize, export: &Path, out: &Path) -> Row {
    let e = export.to_str().expect("a UTF-8 path");
    let o = out.to_str().expect("a UTF-8 path");
    let import = measure(&["import", "--store", url, e]);
    // The import stored the session's frame (from `STORED_FRAME_MIN_ROWS`
    // samples): the first report reads it, as the next ones do. Timed
    // apart all the same, as the first report after an import is what a
    // user waits for first.
    let first = measure(&["report", "--store", url]);
    let report = measure(&["report", "--store", url]);
    let json = measure(&["report", "--store", url, "--format", "json"]);
    // The imported session has a new id: export the only one there is.
    let session = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(async {
            let store = firsttoken_record::Store::open_existing(url).await?;
            store.sessions().await
        })
        .expect("list the imported session")
        .first()
        .map(|m| m.id.clone())
        .expect("one session");
    assert_ne!(
        session,
        meta(n).id,
        "import keeps the original id in a tag only"
    );
    let exported = measure(&["export", "--store", url, "--session", &session, "--out", o]);
    Row {
        store,
        n,
        cells: vec![import, first, report, json, exported],
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("child") {
        return child(&args[1..]);
    }
    if let [mode, n, path] = args.as_slice()
        && mode == "generate"
    {
        return generate(n.parse().expect("a sample count"), Path::new(path), false);
    }
    let sizes: Vec<usize> = std::env::var("FT_BENCH_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![10_000, 100_000, 1_000_000]);
    let dir = tempfile::tempdir().expect("a temp dir");
    let pg_admin = std::env::var("DATABASE_URL").ok();
    if pg_admin.is_none() {
        eprintln!("DATABASE_URL not set: SQLite only");
    }
    let mut rows = Vec::new();
    for &n in &sizes {
        let export: PathBuf = dir.path().join(format!("s{n}.jsonl"));
        let t = Instant::now();
        generate(n, &export, false);
        eprintln!(
            "{n} samples: export of {:.0} MB generated in {:.1} s",
            std::fs::metadata(&export).map_or(0.0, |m| m.len() as f64 / 1e6),
            t.elapsed().as_secs_f64()
        );
        let db = dir.path().join(format!("s{n}.db"));
        let out = dir.path().join(format!("out{n}.jsonl"));
        rows.push(run_store(
            "SQLite",
            db.to_str().expect("UTF-8"),
            n,
            &export,
            &out,
        ));
        // Gone before PostgreSQL's turn, their pages with them.
        for f in [&db, &out] {
            let _ = std::fs::remove_file(f);
        }
        if let Some(admin) = &pg_admin {
            let schema = PgSchema::new(admin, &n.to_string());
            rows.push(run_store("PostgreSQL", &schema.url, n, &export, &out));
        }
        for f in [&db, &out, &export] {
            let _ = std::fs::remove_file(f);
        }
    }
    println!(
        "| store | samples | import | first report after the import | report | report --format json | export |"
    );
    println!("|---|---|---|---|---|---|---|");
    for r in &rows {
        let cells: Vec<String> = r
            .cells
            .iter()
            .map(|f| {
                format!(
                    "{:.2} s ({:.1} s CPU), {:.0} MB",
                    f.wall_s, f.cpu_s, f.rss_mb
                )
            })
            .collect();
        println!("| {} | {} | {} |", r.store, r.n, cells.join(" | "));
    }
    println!(
        "targets at 1,000,000: import ≤ 15 s and ≤ 200 MB; report (terminal, JSON) ≤ 2 s and ≤ 300 MB on SQLite, ≤ 4 s on PostgreSQL; export ≤ 10 s and ≤ 100 MB"
    );
}
