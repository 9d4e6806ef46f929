//! The words and numbers of `firsttoken plan`: how many requests a
//! comparison needs to detect a difference, what the current counts detect,
//! what is left to send, and how many values make each percentile appear
//! with a narrow interval. One Markdown table (to paste into an issue) and
//! a JSON document with the same text beside the numbers.
//!
//! A planned difference is hypothetical: it is printed as a size (`+100
//! ms`), never as "faster" or "slower".

use firsttoken_analyze::Percentile;
use firsttoken_analyze::power::{Detectable, Needed, PowerPlan, Rule, ToGo, WidthPlan};

use crate::format::{self, DASH, Unit, value};

pub use firsttoken_analyze::power::{ClaimRow, Claims, PlanDoc, PowerRow, WidthRow};

/// A share as a whole percentage: `80 %`.
fn pct(x: f64) -> String {
    format!("{:.0} %", 100.0 * x)
}

/// A long time in the largest sensible unit: `about 40 s`, `about 6 min`,
/// `about 2.5 h`.
fn span(ms: f64) -> String {
    let s = ms / 1000.0;
    if s < 90.0 {
        format!("about {s:.0} s")
    } else if s < 90.0 * 60.0 {
        format!("about {:.0} min", s / 60.0)
    } else {
        format!("about {:.1} h", s / 3600.0)
    }
}

/// `p50` → `median`, else `p95`.
fn quantile_name(q: Percentile) -> String {
    if q == Percentile::P50 {
        "median".to_string()
    } else {
        format!("p{}", q.get())
    }
}

/// A difference to detect: `+100 ms (+12 %)`.
fn difference(unit: Unit, d: f64, relative: Option<f64>) -> String {
    match relative {
        Some(r) => format!("+{} ({})", value(unit, d), format::relative(Some(r))),
        None => format!("+{}", value(unit, d)),
    }
}

/// What is left: `232 requests, about 6 min`, or `none`.
fn to_go(t: Option<&ToGo>) -> String {
    match t {
        None => DASH.to_string(),
        Some(t) if t.requests == 0 => "none".to_string(),
        Some(t) => match t.time_ms {
            Some(ms) => format!("{} requests, {}", t.requests, span(ms)),
            None => format!("{} requests", t.requests),
        },
    }
}

/// The cells of one power row (after the metric and groups).
fn power_cells(unit: Unit, p: &PowerPlan) -> [String; 4] {
    let rel = |d: f64| (p.baseline_quantile != 0.0).then(|| d / p.baseline_quantile.abs());
    let asked = difference(unit, p.difference, rel(p.difference));
    let n_now = if p.n_a == p.n_b {
        format!("{} per group", p.n_a)
    } else {
        format!("{} and {}", p.n_a, p.n_b)
    };
    let detectable = match p.detectable_now {
        Detectable::Found {
            difference: d,
            relative,
        } => difference(unit, d, relative),
        Detectable::TooFewSamples => "nothing: too few samples".to_string(),
        Detectable::Beyond { difference: d } => {
            format!("more than {}", difference(unit, d, rel(d)))
        }
    };
    let needed = match p.needed {
        Needed::Reached { n, .. } => format!("{n} per group"),
        Needed::Beyond { max_n, power } => {
            format!("more than {max_n} per group ({} power there)", pct(power))
        }
        Needed::BelowNoise {
            relative,
            threshold,
        } => format!(
            "never: {} is within the {} noise threshold",
            format::relative(Some(relative)),
            pct(threshold)
        ),
    };
    [
        n_now,
        format!("{} for {asked}", pct(p.power_now)),
        detectable,
        needed,
    ]
}

/// The cells of one width row (after the group and percentile).
fn width_cells(w: &WidthPlan) -> [String; 3] {
    let now = match w.width_now {
        Some(x) => pct(x),
        None if w.n_now < w.shown_from => format::too_few(w.n_now, w.shown_from),
        None => DASH.to_string(),
    };
    let mut needed = match w.needed {
        Needed::Reached { n, .. } => n.to_string(),
        Needed::Beyond { max_n, power } => {
            format!("more than {max_n} ({} of the time there)", pct(power))
        }
        // Not produced for widths; kept total.
        Needed::BelowNoise { .. } => DASH.to_string(),
    };
    if !w.pilot_shows {
        needed.push_str(" (pilot has not seen this tail)");
    }
    [w.n_now.to_string(), now, needed]
}

/// The cells of one claims row (after phase and destination).
fn claim_cells(unit: Unit, r: &ClaimRow) -> [String; 6] {
    let sup = &r.support;
    let mut shown: String = sup
        .shown
        .iter()
        .map(|p| format!("p{}", p.get()))
        .collect::<Vec<_>>()
        .join(", ");
    if shown.is_empty() {
        shown = "none".to_string();
    }
    for (p, needed) in &sup.withheld {
        shown.push_str(&format!("; p{} needs {needed}", p.get()));
    }
    let compare = if sup.rank_test {
        "possible".to_string()
    } else {
        format::too_few_for_test(sup.n, sup.n)
    };
    let detectable = match r.detectable {
        None if r.pilot_values == 0 => "no pilot rows".to_string(),
        None => format!(
            "pilot too small {}",
            format::too_few_counts(r.pilot_values, r.pilot_needed)
        ),
        Some(Detectable::Found {
            difference: d,
            relative,
        }) => difference(unit, d, relative),
        Some(Detectable::TooFewSamples) => "nothing: too few samples".to_string(),
        Some(Detectable::Beyond { difference: d }) => format!("more than {}", value(unit, d)),
    };
    [
        sup.n.to_string(),
        shown,
        compare,
        detectable,
        r.time_ms.map_or_else(|| DASH.to_string(), span),
        r.cost_usd
            .map_or_else(|| DASH.to_string(), crate::format::usd),
    ]
}

/// The claims section: one table and the total time.
fn claims_markdown(unit: Unit, c: &Claims) -> String {
    let mut s = format!(
        "What the counts of {} support (each phase and destination against another group of the same count):\n\n",
        c.config
    );
    s.push_str(&row(&[
        "phase".into(),
        "destination".into(),
        "requests".into(),
        "percentiles shown".into(),
        "comparison".into(),
        format!("detectable {} difference", quantile_name(c.quantile)),
        "time".into(),
        "cost".into(),
    ]));
    s.push_str("|---|---|---:|---|---|---|---|---:|\n");
    for r in &c.rows {
        let [n, shown, compare, detectable, time, cost] = claim_cells(unit, r);
        s.push_str(&row(&[
            r.phase.as_str().to_string(),
            r.destination.clone(),
            n,
            shown,
            compare,
            detectable,
            time,
            cost,
        ]));
    }
    let costed: Vec<f64> = c.rows.iter().filter_map(|r| r.cost_usd).collect();
    if !costed.is_empty() {
        let missing = c.rows.len() - costed.len();
        s.push_str(&format!(
            "\nEstimated cost: {}, at the pilot's mean cost per request{}.\n",
            crate::format::usd(costed.iter().sum()),
            if missing > 0 {
                format!(" (not counting {missing} without a cost in the pilot)")
            } else {
                String::new()
            }
        ));
    }
    let timed: Vec<f64> = c.rows.iter().filter_map(|r| r.time_ms).collect();
    if !timed.is_empty() {
        let total = timed.iter().sum::<f64>() + c.fixed_wait_ms;
        let missing = c.rows.len() - timed.len();
        s.push_str(&format!(
            "\nEstimated duration: {}, one request at a time at the pilot's mean durations{}{}.\n",
            span(total),
            if c.fixed_wait_ms > 0.0 {
                format!(
                    ", with {} of idle gaps and open-loop schedules",
                    span(c.fixed_wait_ms)
                )
            } else {
                String::new()
            },
            if missing > 0 {
                format!(" (not counting {missing} without pilot rows)")
            } else {
                String::new()
            }
        ));
    }
    s.push('\n');
    s
}

/// Escapes a table cell.
fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

fn row(cells: &[String]) -> String {
    let cells: Vec<String> = cells.iter().map(|c| cell(c)).collect();
    format!("| {} |\n", cells.join(" | "))
}

/// The plan as Markdown: a title line, the power table, the width table,
/// and how the numbers were found.
pub fn markdown(doc: &PlanDoc) -> String {
    let unit = Unit::of(doc.metric);
    let mut s = String::new();
    let phase = doc.phase.map_or_else(
        || "every phase".to_string(),
        |p| format!("{} phase", p.as_str()),
    );
    s.push_str(&format!(
        "Sample-size plan: {}, {phase}, {} power at {} confidence, from {}\n\n",
        doc.metric.name(),
        pct(doc.target_power),
        pct(doc.level),
        sessions(&doc.sessions),
    ));
    if !doc.power.is_empty() {
        s.push_str(&row(&[
            "metric".into(),
            "groups".into(),
            "n now".into(),
            "power now".into(),
            "detectable now".into(),
            "n needed".into(),
            "to go".into(),
        ]));
        s.push_str("|---|---|---:|---|---|---|---|\n");
        for r in &doc.power {
            let [n_now, power, detectable, needed] = power_cells(unit, &r.plan);
            s.push_str(&row(&[
                format!("{} {}", doc.metric.name(), quantile_name(r.plan.quantile)),
                r.groups.clone(),
                n_now,
                power,
                detectable,
                needed,
                to_go(r.to_go.as_ref()),
            ]));
        }
        s.push('\n');
    }
    if let Some(first) = doc.width.first() {
        s.push_str(&row(&[
            "group".into(),
            "percentile".into(),
            "n now".into(),
            "interval width now".into(),
            format!(
                "n needed for ≤ {} of the value, {} of the time",
                pct(first.plan.target_width),
                pct(doc.target_power)
            ),
            "to go".into(),
        ]));
        s.push_str("|---|---|---:|---:|---|---|\n");
        for r in &doc.width {
            let [n_now, now, needed] = width_cells(&r.plan);
            s.push_str(&row(&[
                r.group.clone(),
                format!("p{}", r.plan.percentile.get()),
                n_now,
                now,
                needed,
                to_go(r.to_go.as_ref()),
            ]));
        }
        s.push('\n');
    }
    if let Some(c) = &doc.claims {
        s.push_str(&claims_markdown(unit, c));
    }
    s.push_str(&method(doc));
    s
}

/// `a1b2c3` or `3 sessions`.
fn sessions(ids: &[String]) -> String {
    match ids {
        [one] => format!("session {one}"),
        _ => format!("{} sessions", ids.len()),
    }
}

/// How the numbers were found, in two sentences.
fn method(doc: &PlanDoc) -> String {
    let mut rules = Vec::new();
    if doc
        .power
        .iter()
        .any(|r| r.plan.rule == Rule::MedianComparison)
    {
        rules.push(format!(
            "a median difference counts when the report would state it (rank test p < {}, \
             the {} interval of the difference excluding 0, a change beyond the {} noise threshold)",
            doc.alpha,
            pct(doc.level),
            pct(doc.noise_threshold)
        ));
    }
    if doc
        .power
        .iter()
        .any(|r| r.plan.rule == Rule::QuantileInterval)
    {
        rules.push(format!(
            "a percentile difference counts when its {} interval excludes 0",
            pct(doc.level)
        ));
    }
    let mut s = format!(
        "Estimated from {} simulated experiments per figure, drawn from the pilot's own \
         distribution (docs/METHODOLOGY.md, \"Planning sample sizes\")",
        doc.simulations
    );
    if !rules.is_empty() {
        s.push_str(&format!("; {}", rules.join("; ")));
    }
    if doc.power.is_empty() && doc.width.is_empty() {
        s.push_str(".\n");
    } else {
        s.push_str(
            ". To go: requests still to send, one at a time at the pilot's mean request duration.\n",
        );
    }
    s
}

/// The `schema` value of the plan's JSON.
pub const PLAN_SCHEMA_ID: &str = "firsttoken.plan.v1";

/// The JSON Schema of [`json`]'s output (`docs/schema/plan.v1.schema.json`).
pub const PLAN_SCHEMA: &str = include_str!("../../../../docs/schema/plan.v1.schema.json");

/// The plan as JSON (`docs/schema/plan.v1.schema.json`): the numbers as
/// analysis gave them and, beside each row, the same cells as the table
/// (`text`).
pub fn json(doc: &PlanDoc) -> serde_json::Value {
    let unit = Unit::of(doc.metric);
    let mut v = serde_json::to_value(doc).unwrap_or(serde_json::Value::Null);
    v["schema"] = PLAN_SCHEMA_ID.into();
    v["unit"] = doc.metric.unit().into();
    if let Some(rows) = v["power"].as_array_mut() {
        for (j, r) in rows.iter_mut().zip(&doc.power) {
            let [n_now, power_now, detectable_now, n_needed] = power_cells(unit, &r.plan);
            j["text"] = serde_json::json!({
                "n_now": n_now,
                "power_now": power_now,
                "detectable_now": detectable_now,
                "n_needed": n_needed,
                "to_go": to_go(r.to_go.as_ref()),
            });
        }
    }
    if let Some(rows) = v["width"].as_array_mut() {
        for (j, r) in rows.iter_mut().zip(&doc.width) {
            let [n_now, width_now, n_needed] = width_cells(&r.plan);
            j["text"] = serde_json::json!({
                "n_now": n_now,
                "width_now": width_now,
                "n_needed": n_needed,
                "to_go": to_go(r.to_go.as_ref()),
            });
        }
    }
    // `get_mut`, not indexing: indexing a null `claims` would turn it into an object.
    let claim_rows = v
        .get_mut("claims")
        .and_then(|c| c.get_mut("rows"))
        .and_then(serde_json::Value::as_array_mut);
    if let (Some(rows), Some(c)) = (claim_rows, &doc.claims) {
        for (j, r) in rows.iter_mut().zip(&c.rows) {
            let [requests, shown, comparison, detectable, time, cost] = claim_cells(unit, r);
            j["text"] = serde_json::json!({
                "requests": requests,
                "percentiles_shown": shown,
                "comparison": comparison,
                "detectable": detectable,
                "time": time,
                "cost": cost,
            });
        }
    }
    v["method"] = method(doc).trim_end().into();
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use firsttoken_analyze::power::{Effect, Pace};

    fn plan(needed: Needed, detectable: Detectable) -> PowerPlan {
        PowerPlan {
            quantile: Percentile::P50,
            rule: Rule::MedianComparison,
            effect: Effect::Absolute(100.0),
            difference: 100.0,
            baseline_quantile: 800.0,
            n_a: 40,
            n_b: 40,
            power_now: 0.31,
            detectable_now: detectable,
            needed,
            target_power: 0.8,
            simulations: 400,
            replicates: 2000,
            level: 0.95,
        }
    }

    fn doc(power: Vec<PowerRow>, width: Vec<WidthRow>) -> PlanDoc {
        PlanDoc {
            metric: firsttoken_analyze::Metric::Ttft,
            phase: Some(firsttoken_analyze::PhaseKind::Warm),
            sessions: vec!["abc123".into()],
            target_power: 0.8,
            level: 0.95,
            alpha: 0.05,
            noise_threshold: 0.05,
            simulations: 400,
            power,
            width,
            claims: None,
        }
    }

    fn assert_schema(v: &serde_json::Value) {
        let schema: serde_json::Value = serde_json::from_str(PLAN_SCHEMA).unwrap();
        let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
        let errors: Vec<String> = validator.iter_errors(v).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{errors:?}\n{v:#}");
    }

    #[test]
    fn the_power_table_reads_as_a_plan() {
        let go = firsttoken_analyze::power::to_go(
            156,
            &[(
                40,
                Pace {
                    requests: 40,
                    values: 40,
                    mean_request_ms: Some(1500.0),
                },
            )],
        );
        let d = doc(
            vec![
                PowerRow {
                    groups: "v2 vs v1".into(),
                    plan: plan(
                        Needed::Reached { n: 156, power: 0.8 },
                        Detectable::Found {
                            difference: 182.0,
                            relative: Some(0.2275),
                        },
                    ),
                    to_go: Some(go),
                },
                PowerRow {
                    groups: "path=chat".into(),
                    plan: plan(
                        Needed::BelowNoise {
                            relative: 0.04,
                            threshold: 0.05,
                        },
                        Detectable::TooFewSamples,
                    ),
                    to_go: None,
                },
            ],
            vec![],
        );
        let md = markdown(&d);
        assert!(md.starts_with("Sample-size plan: ttft, warm phase, 80 % power at 95 % confidence, from session abc123\n"), "{md}");
        assert!(md.contains("| ttft median | v2 vs v1 | 40 per group | 31 % for +100 ms (+12 %) | +182 ms (+23 %) | 156 per group | 116 requests, about 3 min |"), "{md}");
        assert!(
            md.contains("| never: +4 % is within the 5 % noise threshold | – |"),
            "{md}"
        );
        assert!(md.contains("nothing: too few samples"));
        assert!(md.contains("rank test p < 0.05"));
        assert!(!md.contains("faster") && !md.contains("slower"));
        let j = json(&d);
        assert_eq!(j["unit"], "ms");
        assert_eq!(j["claims"], serde_json::Value::Null);
        assert_schema(&j);
        assert_eq!(j["power"][0]["plan"]["needed"]["n"], 156);
        assert_eq!(j["power"][0]["to_go"]["requests"], 116);
        assert_eq!(j["power"][0]["text"]["n_needed"], "156 per group");
        assert_eq!(j["power"][1]["plan"]["needed"]["status"], "below_noise");
    }

    #[test]
    fn the_claims_table_says_what_counts_support() {
        let s = firsttoken_analyze::Settings::new(1);
        let mut d = doc(vec![], vec![]);
        d.claims = Some(Claims {
            config: "ft.toml".into(),
            quantile: Percentile::P50,
            fixed_wait_ms: 60_000.0,
            rows: vec![
                ClaimRow {
                    phase: firsttoken_analyze::PhaseKind::Warm,
                    destination: "chat".into(),
                    support: firsttoken_analyze::power::support(24, &s),
                    pilot_values: 30,
                    pilot_needed: 10,
                    detectable: Some(Detectable::Found {
                        difference: 47.0,
                        relative: Some(0.12),
                    }),
                    time_ms: Some(24.0 * 500.0),
                    cost_usd: Some(0.012),
                },
                ClaimRow {
                    phase: firsttoken_analyze::PhaseKind::Cold,
                    destination: "chat".into(),
                    support: firsttoken_analyze::power::support(3, &s),
                    pilot_values: 0,
                    pilot_needed: 10,
                    detectable: None,
                    time_ms: None,
                    cost_usd: None,
                },
            ],
        });
        let md = markdown(&d);
        assert!(md.contains("| warm | chat | 24 | p50, p90, p95; p99 needs 100 | possible | +47 ms (+12 %) | about 12 s |"), "{md}");
        assert!(md.contains("| cold | chat | 3 | p50; p90 needs 10; p95 needs 20; p99 needs 100 | too few samples for a rank test (n = 3 and 3) | no pilot rows | – |"), "{md}");
        assert!(md.contains("Estimated duration: about 72 s, one request at a time at the pilot's mean durations, with about 60 s of idle gaps and open-loop schedules (not counting 1 without pilot rows)."), "{md}");
        let j = json(&d);
        assert_schema(&j);
        assert_eq!(j["claims"]["rows"][0]["support"]["rank_test"], true);
        assert_eq!(
            j["claims"]["rows"][1]["text"]["detectable"],
            "no pilot rows"
        );
    }

    #[test]
    fn long_times_read_in_their_unit() {
        assert_eq!(span(40_000.0), "about 40 s");
        assert_eq!(span(6.0 * 60_000.0), "about 6 min");
        assert_eq!(span(2.5 * 3_600_000.0), "about 2.5 h");
    }
}
