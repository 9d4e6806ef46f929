//! The engine's metrics scraped before and after a session (schema
//! version 16), the same tests on SQLite and PostgreSQL.

mod common;

use std::io::Cursor;

use common::{TestDb, full_row, full_session, utc};
use firsttoken_record::export::{Format, SCRAPE_LINE_SCHEMA, write_session};
use firsttoken_record::import::{Import, ImportEvent};
use firsttoken_record::store::StoreError;
use firsttoken_record::{EngineScrape, ScrapeMoment};

both_backends!(
    scrapes_round_trip_replace_their_moment_and_go_with_their_session,
    an_export_carries_the_scrapes_and_an_import_stores_them,
);

fn scrape(session: &str, moment: ScrapeMoment, at: &str, body: Option<&str>) -> EngineScrape {
    EngineScrape {
        session_id: session.into(),
        moment,
        taken_at: utc(at),
        url: "http://scraper:s3cret@127.0.0.1:8000/metrics".into(),
        status: Some(if body.is_some() { 200 } else { 503 }),
        body: body.map(str::to_string),
        error: body
            .is_none()
            .then(|| "HTTP 503 from the metrics endpoint".into()),
    }
}

async fn scrapes_round_trip_replace_their_moment_and_go_with_their_session(db: TestDb) {
    let store = db.open().await;
    let meta = full_session("20261206T050000Z-scrape", "2026-12-06T05:00:00.000Z");
    store.create_session(&meta).await.unwrap();
    let end = scrape(
        &meta.id,
        ScrapeMoment::End,
        "2026-12-06T05:00:31.000Z",
        None,
    );
    let start = scrape(
        &meta.id,
        ScrapeMoment::Start,
        "2026-12-06T05:00:00.500Z",
        Some("# TYPE up gauge\nup 1\n"),
    );
    // Stored end first: read back in time order, the password masked.
    store.put_engine_scrape(&end).await.unwrap();
    store.put_engine_scrape(&start).await.unwrap();
    let got = store.engine_scrapes(&meta.id).await.unwrap();
    let masked = |mut s: EngineScrape| {
        s.url = "http://scraper:***@127.0.0.1:8000/metrics".into();
        s
    };
    assert_eq!(got, [masked(start.clone()), masked(end.clone())]);
    // The same moment again replaces it.
    let again = scrape(
        &meta.id,
        ScrapeMoment::End,
        "2026-12-06T05:00:32.000Z",
        Some("up 1\n"),
    );
    store.put_engine_scrape(&again).await.unwrap();
    let got = store.engine_scrapes(&meta.id).await.unwrap();
    assert_eq!(got.len(), 2);
    assert_eq!(got[1].body.as_deref(), Some("up 1\n"));
    assert_eq!(got[1].error, None);
    // An unknown session is refused by name.
    let e = store
        .put_engine_scrape(&scrape(
            "nope",
            ScrapeMoment::Start,
            "2026-12-06T05:00:00.000Z",
            None,
        ))
        .await
        .unwrap_err();
    assert!(matches!(e, StoreError::NoSession { .. }), "{e}");
    // Deleting the session deletes its scrapes.
    store.delete_session(&meta.id).await.unwrap();
    store.create_session(&meta).await.unwrap();
    assert!(store.engine_scrapes(&meta.id).await.unwrap().is_empty());
}

async fn an_export_carries_the_scrapes_and_an_import_stores_them(db: TestDb) {
    let store = db.open().await;
    let meta = full_session("20261206T051000Z-carry", "2026-12-06T05:10:00.000Z");
    store.create_session(&meta).await.unwrap();
    store
        .append_sample(&full_row(&meta.id, 0, 10.0))
        .await
        .unwrap();
    let body =
        "# TYPE llamacpp:tokens_predicted_total counter\nllamacpp:tokens_predicted_total 96\n";
    for (moment, at) in [
        (ScrapeMoment::Start, "2026-12-06T05:10:00.100Z"),
        (ScrapeMoment::End, "2026-12-06T05:10:09.000Z"),
    ] {
        store
            .put_engine_scrape(&scrape(&meta.id, moment, at, Some(body)))
            .await
            .unwrap();
    }
    let mut out = Vec::new();
    let written = write_session(&store, &meta, Format::Jsonl, &mut out)
        .await
        .unwrap();
    assert_eq!((written.samples, written.scrapes), (1, 2));
    let text = String::from_utf8(out.clone()).unwrap();
    assert_eq!(text.matches(SCRAPE_LINE_SCHEMA).count(), 2);
    assert!(!text.contains("s3cret"), "the password stays masked");
    // Imported as a new session, which keeps both scrapes.
    store.delete_session(&meta.id).await.unwrap();
    let import = Import::check(Cursor::new(out), &mut |_| {}).unwrap();
    let mut new_id = None;
    import
        .store(&store, &mut |e| {
            if let ImportEvent::Stored { stored_as, .. } = e {
                new_id = Some(stored_as.id.clone());
            }
        })
        .await
        .unwrap();
    let new_id = new_id.expect("the session was stored");
    let got = store.engine_scrapes(&new_id).await.unwrap();
    assert_eq!(got.len(), 2);
    assert!(
        got.iter()
            .all(|s| s.session_id == new_id && s.body.as_deref() == Some(body))
    );
    assert_eq!(got[0].moment, ScrapeMoment::Start);
}
