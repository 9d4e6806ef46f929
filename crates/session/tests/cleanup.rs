//! Test accounts whose rows live in several tables: cleanup runs each
//! delete in order and the residual is the sum of every count query
//! (issue 10, also seen: "cleanup may check more than one table").

use firsttoken_plan::config::{CleanupSection, SqlList};
use firsttoken_plan::{ProbeSpec, RequestTemplate, Target};
use firsttoken_session::{check_cleanup, clean_up};

fn app_db(path: &std::path::Path) {
    let c = rusqlite::Connection::open(path).unwrap();
    c.execute_batch(
        "CREATE TABLE users (id TEXT PRIMARY KEY);
         CREATE TABLE messages (id INTEGER PRIMARY KEY, user_id TEXT);
         INSERT INTO users VALUES ('a'), ('b'), ('keep');
         INSERT INTO messages (user_id) VALUES ('a'), ('a'), ('b'), ('keep');",
    )
    .unwrap();
}

fn spec() -> ProbeSpec {
    let t = Target::parse("http://127.0.0.1:9/").unwrap();
    ProbeSpec::new(RequestTemplate::new(t, None, None).unwrap())
}

#[tokio::test]
async fn residual_rows_are_counted_in_every_table_named() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("app.db");
    app_db(&db);
    let ids = vec!["a".to_string(), "b".to_string()];
    let counts = SqlList::Many(vec![
        "SELECT count(*) FROM users WHERE id IN ({ids})".into(),
        "SELECT count(*) FROM messages WHERE user_id IN ({ids})".into(),
    ]);
    // Deleting only the users leaves their messages: the residual says so.
    let cfg = CleanupSection {
        database_url_env: None,
        database_url: Some(db.display().to_string()),
        delete_sql: Some("DELETE FROM users WHERE id IN ({ids})".into()),
        count_sql: Some(counts.clone()),
        ..CleanupSection::default()
    };
    let out = clean_up(&cfg, "http://127.0.0.1:9", &spec(), &ids, &[]).await;
    assert_eq!(out.error, None);
    assert_eq!(out.deleted, 2);
    assert_eq!(out.residual, Some(3), "the accounts' 3 messages remain");
    // Both deletes, children first: nothing of theirs is left, 'keep' stays.
    let cfg = CleanupSection {
        delete_sql: Some(SqlList::Many(vec![
            "DELETE FROM messages WHERE user_id IN ({ids})".into(),
            "DELETE FROM users WHERE id IN ({ids})".into(),
        ])),
        ..cfg
    };
    let out = clean_up(&cfg, "http://127.0.0.1:9", &spec(), &ids, &[]).await;
    assert_eq!(out.error, None);
    assert_eq!(out.residual, Some(0));
    let c = rusqlite::Connection::open(&db).unwrap();
    let left: i64 = c
        .query_row("SELECT count(*) FROM messages", [], |r| r.get(0))
        .unwrap();
    assert_eq!(left, 1);
}

#[test]
fn one_statement_or_a_list_both_parse() {
    use firsttoken_plan::config::{Config, DEFAULT_CONFIG};
    let text = DEFAULT_CONFIG
        .replacen("# [app.cleanup]", "[app.cleanup]", 1)
        .replacen(
            "# count_sql = \"SELECT count(*) FROM users WHERE id IN ({ids})\"",
            "count_sql = [\"SELECT 1\", \"SELECT 2\"]",
            1,
        );
    let cfg = Config::parse(&text, "f.toml").unwrap();
    let c = cfg.app.cleanup.expect("[app.cleanup]");
    assert_eq!(c.count_sql.unwrap().statements(), ["SELECT 1", "SELECT 2"]);
}

/// Issue 29, item 6: the check before a run tries the statements on no id
/// inside a transaction it rolls back, on SQLite and (with `DATABASE_URL`)
/// PostgreSQL: a statement that would delete rows whatever the ids deletes
/// nothing, and bad SQL is named.
#[tokio::test]
async fn the_check_before_a_run_rolls_back_and_names_bad_sql() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("app.db");
    app_db(&db);
    let table = format!("ft_check_{}", std::process::id());
    let mut urls = vec![(db.display().to_string(), "users".to_string())];
    match std::env::var("DATABASE_URL") {
        Ok(url) if !url.trim().is_empty() => {
            let (c, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                .await
                .unwrap();
            tokio::spawn(conn);
            c.batch_execute(&format!(
                "DROP TABLE IF EXISTS {table}; CREATE TABLE {table} (id TEXT); INSERT INTO {table} VALUES ('a'), ('keep')"
            ))
            .await
            .unwrap();
            urls.push((url, table.clone()));
        }
        _ => eprintln!("SKIPPED (PostgreSQL part): DATABASE_URL not set"),
    }
    for (url, t) in &urls {
        let cfg = CleanupSection {
            database_url_env: None,
            database_url: Some(url.clone()),
            delete_sql: Some(
                format!("DELETE FROM {t} WHERE {{ids}} IS NULL OR id IN ({{ids}})")
                    .as_str()
                    .into(),
            ),
            count_sql: Some(
                format!("SELECT count(*) FROM {t} WHERE id IN ({{ids}})")
                    .as_str()
                    .into(),
            ),
            ..CleanupSection::default()
        };
        check_cleanup(&cfg, "http://127.0.0.1:9").await.unwrap();
        let bad = CleanupSection {
            delete_sql: Some("DELETE FROM no_such_table WHERE id IN ({ids})".into()),
            ..cfg.clone()
        };
        let err = check_cleanup(&bad, "http://127.0.0.1:9")
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("no_such_table") && err.contains("rolled back"),
            "{url}: {err}"
        );
    }
    // Nothing was deleted: the transactions were rolled back.
    let c = rusqlite::Connection::open(&db).unwrap();
    let left: i64 = c
        .query_row("SELECT count(*) FROM users", [], |r| r.get(0))
        .unwrap();
    assert_eq!(left, 3);
    if let Some((url, t)) = urls.get(1) {
        let (c, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(conn);
        let n: i64 = c
            .query_one(&format!("SELECT count(*) FROM {t}"), &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(n, 2);
        c.batch_execute(&format!("DROP TABLE {t}")).await.unwrap();
    }
}
