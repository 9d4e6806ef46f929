//! The demo's own sentences: what it starts, and where the full report is.

/// What the demo runs, printed before it starts: `measuring "before" and
/// "after" at once, each behind its own emulated cable network (RTT +25
/// ms) …`.
pub fn started(network: &str, added_rtt_ms: u128, full: bool) -> String {
    format!(
        "measuring \"before\" (blocking database calls, the keyword router, a cold start) and \"after\" (pooled async access, the corpus router) at once, each app with its own emulated provider, every request across an emulated {network} network (RTT +{added_rtt_ms} ms); {}",
        if full {
            "the article's full protocol: many minutes"
        } else {
            "about two minutes"
        }
    )
}

/// Where the rest is: the full report as a command that works as printed,
/// and the page.
pub fn pointers(store: &str, after: &str, before: &str, html: &str) -> String {
    let w = crate::run::shell_word;
    format!(
        "The full report (every section; after against before in every phase, level and path):\n  firsttoken compare --store {} {} {} --phase all\nThe same as a page, with plots: {html}",
        w(store),
        w(after),
        w(before)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pointers_name_a_command_and_the_page() {
        let p = pointers("demo.db", "A", "B", "demo.html");
        assert!(p.contains("firsttoken compare --store demo.db A B --phase all"));
        assert!(p.ends_with("demo.html"));
    }
}
