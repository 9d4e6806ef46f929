//! `kill -9` of a process in the middle of a session: every sample and
//! test account it reported committed is in the store, and the next open
//! marks the session `partial`.
//!
//! The writer is this test binary re-invoked with `FT_KILL9_STORE` set: it
//! runs only `kill9_writer_process`, which creates a session and appends
//! samples in a loop, printing `committed <seq>` after each returns.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{TestDb, full_row, full_session};
use firsttoken_record::session::SessionStatus;
use firsttoken_record::store::{ABANDONED_REASON, CLEANUP_NOT_RUN, Store};

const STORE_ENV: &str = "FT_KILL9_STORE";
const SESSION_ENV: &str = "FT_KILL9_SESSION";

/// The child: does nothing unless re-invoked by the kill tests.
#[tokio::test]
async fn kill9_writer_process() {
    let (Ok(url), Ok(session)) = (std::env::var(STORE_ENV), std::env::var(SESSION_ENV)) else {
        return;
    };
    let store = Store::open(&url).await.expect("child opens the store");
    store
        .create_session(&full_session(&session, "2026-11-30T01:00:00.000Z"))
        .await
        .expect("child creates the session");
    println!("session created");
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut seq = 0u64;
    // Bounded, in case the parent dies before killing us.
    while Instant::now() < deadline {
        // As `run` does right after each sign-up.
        let account = format!("acct-{seq}");
        store
            .add_test_account(&session, &account)
            .await
            .expect("child records a test account");
        println!("account {account}");
        store
            .append_sample(&full_row(&session, seq, seq as f64))
            .await
            .expect("child appends");
        println!("committed {seq}");
        seq += 1;
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

async fn kill9_mid_session(db: TestDb) {
    let session = format!("kill9-{}", common::random_hex());
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "kill9_writer_process",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(STORE_ENV, db.url())
        .env(SESSION_ENV, &session)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn the writer");
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });

    let mut committed = Vec::new();
    let mut accounts = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while committed.len() < 8 {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = match rx.recv_timeout(left) {
            Ok(line) => line,
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("writer reported only {committed:?} ({e:?})");
            }
        };
        if let Some(seq) = line.strip_prefix("committed ") {
            committed.push(seq.trim().parse::<u64>().unwrap());
        }
        if let Some(a) = line.strip_prefix("account ") {
            accounts.push(a.trim().to_owned());
        }
    }
    // std's Child::kill is SIGKILL on Unix: no destructor, no cleanup runs.
    child.kill().expect("kill -9 the writer");
    let status = child.wait().expect("reap the writer");
    assert!(
        !status.success(),
        "the writer was killed, not finished: {status:?}"
    );
    // Lines printed after the last one we read are committed too; collect them.
    while let Ok(line) = rx.recv_timeout(Duration::from_secs(5)) {
        if let Some(seq) = line.strip_prefix("committed ") {
            committed.push(seq.trim().parse::<u64>().unwrap());
        }
        if let Some(a) = line.strip_prefix("account ") {
            accounts.push(a.trim().to_owned());
        }
    }

    let store = db.open().await;
    let meta = store
        .session(&session)
        .await
        .unwrap()
        .expect("session survived");
    assert_eq!(
        meta.status,
        SessionStatus::Partial {
            reason: ABANDONED_REASON.into()
        }
    );
    // Defect 5: the accounts are known although the session never finished.
    let cleanup = meta.cleanup.as_ref().expect("recorded accounts read back");
    assert_eq!(cleanup.error.as_deref(), Some(CLEANUP_NOT_RUN));
    assert_eq!(
        cleanup.created_ids[..accounts.len()],
        accounts[..],
        "every reported account is listed, in order"
    );
    assert!(cleanup.created_ids.len() <= accounts.len() + 1);
    let stored: Vec<u64> = store
        .samples(&session)
        .await
        .unwrap()
        .iter()
        .map(|r| r.sample.seq)
        .collect();
    for seq in &committed {
        assert!(
            stored.contains(seq),
            "reported sample {seq} is missing from {stored:?}"
        );
    }
    // At most the one in flight when the kill landed is extra.
    assert!(
        stored.len() <= committed.len() + 1,
        "{} stored, {} reported",
        stored.len(),
        committed.len()
    );
    eprintln!(
        "kill -9 after {} reported commits: {} samples stored",
        committed.len(),
        stored.len()
    );
    let expected: Vec<u64> = (0..stored.len() as u64).collect();
    assert_eq!(stored, expected, "stored samples are whole and in order");
    // Every stored sample reads back whole.
    for r in store.samples(&session).await.unwrap() {
        assert_eq!(r, full_row(&session, r.sample.seq, r.sample.seq as f64));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill9_sqlite() {
    common::run(Some(TestDb::sqlite()), kill9_mid_session).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill9_postgres() {
    common::run(TestDb::postgres().await, kill9_mid_session).await;
}
