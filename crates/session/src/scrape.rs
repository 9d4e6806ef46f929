//! The engine's own metrics read before and after the session (`[engine]
//! metrics_url`): one GET of its Prometheus text endpoint at each end,
//! stored as [`EngineScrape`] rows whatever came back. A failed read is
//! stored with its reason and stops nothing: the report says what is
//! missing.

use std::time::Duration;

use firsttoken_record::{EngineScrape, ScrapeMoment, Store, StoreError, UtcTime};

use crate::Source;

/// How long one scrape may take.
pub const SCRAPE_TIMEOUT: Duration = Duration::from_secs(10);

/// Read `url` now and store what came back as session `session_id`'s
/// `moment` scrape; returns the stored row without its body. Only a store
/// that cannot be written is an error.
pub(crate) async fn scrape(
    source: &Source,
    url: &str,
    (store, session_id): (&Store, &str),
    moment: ScrapeMoment,
) -> Result<EngineScrape, StoreError> {
    let got = crate::run::get(source, url, SCRAPE_TIMEOUT).await;
    let mut row = EngineScrape {
        session_id: session_id.to_owned(),
        moment,
        taken_at: UtcTime::now(),
        url: url.to_owned(),
        status: None,
        body: None,
        error: None,
    };
    match got {
        Err(e) => row.error = Some(source.scrub(&e)),
        Ok((status, body)) => {
            row.status = Some(status);
            if !(200..300).contains(&status) {
                row.error = Some(format!("HTTP {status} from the metrics endpoint"));
            } else {
                match String::from_utf8(body.to_vec()) {
                    // An engine may echo what a request carried in a
                    // label: the session's secrets never reach the store.
                    Ok(text) => row.body = Some(source.scrub(&text)),
                    Err(_) => row.error = Some("the metrics body is not UTF-8 text".into()),
                }
            }
        }
    }
    store.put_engine_scrape(&row).await?;
    row.body = None;
    Ok(row)
}
