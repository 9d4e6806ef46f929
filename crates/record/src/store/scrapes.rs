//! The engine's metrics scraped before and after a session (schema
//! version 16): the `engine_scrapes` table, one row per session and
//! moment, and gone with its session.

use super::error::mask_url;
use super::schema::{Cell, RowGet};
use super::sessions::SESSION_FOUND_SQL;
use super::sql::{insert_rows_sql, retry_once};
use super::{Store, StoreError};
use crate::scrape::{EngineScrape, MAX_SCRAPE_BYTES, ScrapeMoment};

/// The `engine_scrapes` columns, in storage order.
const SCRAPE_COLUMNS: [&str; 7] = [
    "session_id",
    "moment",
    "taken_at",
    "url",
    "status",
    "body",
    "error",
];

/// A scrape as cells in [`SCRAPE_COLUMNS`] order, the URL's password
/// masked; refuses a body over [`MAX_SCRAPE_BYTES`].
pub(crate) fn scrape_cells(s: &EngineScrape) -> Result<Vec<Cell>, String> {
    if let Some(b) = s.body.as_ref().filter(|b| b.len() > MAX_SCRAPE_BYTES) {
        return Err(format!(
            "the scrape body is {} bytes, over the {MAX_SCRAPE_BYTES} kept",
            b.len()
        ));
    }
    let text = |v: &Option<String>| v.as_ref().map_or(Cell::Null, |t| Cell::Text(t.clone()));
    Ok(vec![
        Cell::Text(s.session_id.clone()),
        Cell::Text(s.moment.as_str().into()),
        Cell::Text(s.taken_at.to_string()),
        Cell::Text(mask_url(&s.url)),
        s.status.map_or(Cell::Null, |v| Cell::Int(i64::from(v))),
        text(&s.body),
        text(&s.error),
    ])
}

fn scrape_from(r: &impl RowGet) -> Result<EngineScrape, String> {
    let moment = r.text("moment")?;
    Ok(EngineScrape {
        session_id: r.text("session_id")?,
        moment: ScrapeMoment::parse(&moment)
            .ok_or_else(|| format!("moment: unknown value {moment:?}"))?,
        taken_at: r.utc("taken_at")?,
        url: r.text("url")?,
        status: r
            .opt_u64("status")?
            .map(|v| u16::try_from(v).map_err(|_| format!("status = {v} is out of range")))
            .transpose()?,
        body: r.opt_text("body")?,
        error: r.opt_text("error")?,
    })
}

impl Store {
    /// Stores a scrape of the engine's metrics for its session, replacing
    /// one of the same moment. [`StoreError::NoSession`] when the session
    /// is unknown; a body over [`MAX_SCRAPE_BYTES`] is refused.
    pub async fn put_engine_scrape(&self, scrape: &EngineScrape) -> Result<(), StoreError> {
        let op = "store an engine scrape";
        let cells = scrape_cells(scrape).map_err(|m| self.invalid(op, m))?;
        retry_once!(self, |_retry| self.put_scrape_once(scrape, &cells).await)
    }

    async fn put_scrape_once(&self, s: &EngineScrape, cells: &[Cell]) -> Result<(), StoreError> {
        let op = "store an engine scrape";
        let id = || vec![Cell::Text(s.session_id.clone())];
        let mut tx = self.begin(op).await?;
        if tx
            .query(SESSION_FOUND_SQL, id(), |_| Ok(()))
            .await?
            .is_empty()
        {
            return self.no_session_if_zero(0, op, &s.session_id);
        }
        let update: Vec<String> = SCRAPE_COLUMNS[2..]
            .iter()
            .map(|c| format!("{c} = excluded.{c}"))
            .collect();
        let sql = insert_rows_sql(
            "engine_scrapes",
            &SCRAPE_COLUMNS,
            1,
            &format!(
                "ON CONFLICT (session_id, moment) DO UPDATE SET {}",
                update.join(", ")
            ),
        );
        tx.exec(&sql, cells.to_vec()).await?;
        tx.commit().await
    }

    /// A session's scrapes, start before end.
    pub async fn engine_scrapes(&self, session_id: &str) -> Result<Vec<EngineScrape>, StoreError> {
        let sql = format!(
            "SELECT {} FROM engine_scrapes WHERE session_id = $1 ORDER BY taken_at, moment DESC",
            SCRAPE_COLUMNS.join(", ")
        );
        self.query(
            "read engine scrapes",
            &sql,
            vec![Cell::Text(session_id.to_owned())],
            |r| scrape_from(&r),
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::UtcTime;

    #[test]
    fn a_password_in_the_url_is_masked_and_a_huge_body_refused() {
        let mut s = EngineScrape {
            session_id: "s".into(),
            moment: ScrapeMoment::Start,
            taken_at: UtcTime::from_unix_ms(0),
            url: "http://metrics:hunter2@127.0.0.1:9/metrics".into(),
            status: Some(200),
            body: Some("up 1\n".into()),
            error: None,
        };
        let cells = scrape_cells(&s).unwrap();
        assert!(!format!("{cells:?}").contains("hunter2"));
        s.body = Some("x".repeat(MAX_SCRAPE_BYTES + 1));
        assert!(scrape_cells(&s).unwrap_err().contains("over the"));
    }
}
