//! What `firsttoken plan` prints: the sample-size plan laid out once (a
//! title line, the power, width and claims tables with the sentences
//! around them, and how the numbers were found), rendered as Markdown (to
//! paste into an issue) and as JSON (`docs/schema/plan.v1.schema.json`),
//! which carries beside each row the same cells as the table. Every phrase
//! is [`crate::words::plan`]'s.
//!
//! ```
//! use firsttoken_analyze::Metric;
//! use firsttoken_report::plan::{PlanDoc, json, markdown};
//! let doc = PlanDoc {
//!     metric: Metric::Ttft,
//!     phase: None,
//!     sessions: vec!["s1".into()],
//!     target_power: 0.8,
//!     level: 0.95,
//!     alpha: 0.05,
//!     noise_threshold: 0.05,
//!     simulations: 400,
//!     power: vec![],
//!     width: vec![],
//!     claims: None,
//! };
//! assert!(markdown(&doc).starts_with("Sample-size plan: ttft, every phase"));
//! assert_eq!(json(&doc)["schema"], "firsttoken.plan.v1");
//! ```

use crate::format::Unit;
use crate::words::plan as words;

pub use firsttoken_analyze::power::{ClaimRow, Claims, PlanDoc, PowerRow, WidthRow};

/// A column of a plan table: its title, whether it holds figures
/// (right-aligned), and the key the JSON gives its cell beside the row
/// (`None`: the row's data already names it).
struct Col {
    title: String,
    right: bool,
    key: Option<&'static str>,
}

fn col(title: &str, right: bool, key: Option<&'static str>) -> Col {
    Col {
        title: title.to_string(),
        right,
        key,
    }
}

/// Which rows of the JSON a table's rows are.
#[derive(Clone, Copy)]
enum Rows {
    Power,
    Width,
    Claims,
}

/// One table with the sentence before it and those after it.
struct PlanTable {
    rows_of: Rows,
    intro: Option<String>,
    cols: Vec<Col>,
    rows: Vec<Vec<String>>,
    notes: Vec<String>,
}

/// The plan laid out once, for both formats.
struct Layout {
    heading: String,
    tables: Vec<PlanTable>,
    method: String,
}

fn layout(doc: &PlanDoc) -> Layout {
    let unit = Unit::of(doc.metric);
    let mut tables = Vec::new();
    if !doc.power.is_empty() {
        tables.push(PlanTable {
            rows_of: Rows::Power,
            intro: None,
            cols: vec![
                col("metric", false, None),
                col("groups", false, None),
                col("n now", true, Some("n_now")),
                col("power now", false, Some("power_now")),
                col("detectable now", false, Some("detectable_now")),
                col("n needed", false, Some("n_needed")),
                col("to go", false, Some("to_go")),
            ],
            rows: doc
                .power
                .iter()
                .map(|r| {
                    let [n_now, power, detectable, needed] = words::power_cells(unit, &r.plan);
                    vec![
                        format!(
                            "{} {}",
                            doc.metric.name(),
                            words::quantile_name(r.plan.quantile)
                        ),
                        r.groups.clone(),
                        n_now,
                        power,
                        detectable,
                        needed,
                        words::to_go(r.to_go.as_ref()),
                    ]
                })
                .collect(),
            notes: Vec::new(),
        });
    }
    if let Some(first) = doc.width.first() {
        let needed = format!(
            "n needed for ≤ {} of the value, {} of the time",
            words::pct(first.plan.target_width),
            words::pct(doc.target_power)
        );
        tables.push(PlanTable {
            rows_of: Rows::Width,
            intro: None,
            cols: vec![
                col("group", false, None),
                col("percentile", false, None),
                col("n now", true, Some("n_now")),
                col("interval width now", true, Some("width_now")),
                col(&needed, false, Some("n_needed")),
                col("to go", false, Some("to_go")),
            ],
            rows: doc
                .width
                .iter()
                .map(|r| {
                    let [n_now, now, needed] = words::width_cells(&r.plan);
                    vec![
                        r.group.clone(),
                        format!("p{}", r.plan.percentile.get()),
                        n_now,
                        now,
                        needed,
                        words::to_go(r.to_go.as_ref()),
                    ]
                })
                .collect(),
            notes: Vec::new(),
        });
    }
    if let Some(c) = &doc.claims {
        let detectable = format!("detectable {} difference", words::quantile_name(c.quantile));
        tables.push(PlanTable {
            rows_of: Rows::Claims,
            intro: Some(words::claims_intro(c)),
            cols: vec![
                col("phase", false, None),
                col("destination", false, None),
                col("requests", true, Some("requests")),
                col("percentiles shown", false, Some("percentiles_shown")),
                col("comparison", false, Some("comparison")),
                col(&detectable, false, Some("detectable")),
                col("time", false, Some("time")),
                col("cost", true, Some("cost")),
            ],
            rows: c
                .rows
                .iter()
                .map(|r| {
                    let mut row = vec![r.phase.as_str().to_string(), r.destination.clone()];
                    row.extend(words::claim_cells(unit, r));
                    row
                })
                .collect(),
            notes: words::claims_notes(c),
        });
    }
    Layout {
        heading: words::heading(doc),
        tables,
        method: words::method(doc),
    }
}

/// Escapes a table cell.
fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

fn row<'a>(cells: impl Iterator<Item = &'a str>) -> String {
    let cells: Vec<String> = cells.map(cell).collect();
    format!("| {} |\n", cells.join(" | "))
}

/// The plan as Markdown: a title line, the power table, the width table,
/// the claims table with its totals, and how the numbers were found.
pub fn markdown(doc: &PlanDoc) -> String {
    let l = layout(doc);
    let mut s = format!("{}\n\n", l.heading);
    for t in &l.tables {
        if let Some(intro) = &t.intro {
            s.push_str(&format!("{intro}\n\n"));
        }
        s.push_str(&row(t.cols.iter().map(|c| c.title.as_str())));
        s.push('|');
        for c in &t.cols {
            s.push_str(if c.right { "---:|" } else { "---|" });
        }
        s.push('\n');
        for r in &t.rows {
            s.push_str(&row(r.iter().map(String::as_str)));
        }
        for n in &t.notes {
            s.push_str(&format!("\n{n}\n"));
        }
        s.push('\n');
    }
    s.push_str(&l.method);
    s.push('\n');
    s
}

/// The `schema` value of the plan's JSON.
pub const PLAN_SCHEMA_ID: &str = "firsttoken.plan.v1";

/// The JSON Schema of [`json`]'s output (`docs/schema/plan.v1.schema.json`).
pub const PLAN_SCHEMA: &str = include_str!("../../../docs/schema/plan.v1.schema.json");

/// The plan as JSON (`docs/schema/plan.v1.schema.json`): the numbers as
/// analysis gave them and, beside each row, the same cells as the table
/// (`text`).
pub fn json(doc: &PlanDoc) -> serde_json::Value {
    let l = layout(doc);
    let mut v = serde_json::to_value(doc).unwrap_or(serde_json::Value::Null);
    v["schema"] = PLAN_SCHEMA_ID.into();
    v["unit"] = doc.metric.unit().into();
    for t in &l.tables {
        // `get_mut`, not indexing: indexing a null `claims` would turn it into an object.
        let rows = match t.rows_of {
            Rows::Power => v.get_mut("power"),
            Rows::Width => v.get_mut("width"),
            Rows::Claims => v.get_mut("claims").and_then(|c| c.get_mut("rows")),
        }
        .and_then(serde_json::Value::as_array_mut);
        let Some(rows) = rows else { continue };
        for (j, cells) in rows.iter_mut().zip(&t.rows) {
            let text: serde_json::Map<String, serde_json::Value> = t
                .cols
                .iter()
                .zip(cells)
                .filter_map(|(c, v)| c.key.map(|k| (k.to_string(), v.clone().into())))
                .collect();
            j["text"] = text.into();
        }
    }
    v["method"] = l.method.into();
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use firsttoken_analyze::power::{Detectable, PowerPlan};
    use firsttoken_analyze::power::{Effect, Needed, Pace, Rule};
    use firsttoken_analyze::{Metric, Percentile};

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
            metric: Metric::Ttft,
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

    /// Every cell the JSON gives beside a row is that row's cell in the
    /// Markdown table: both come from one layout.
    fn same_cells(md: &str, rows: &serde_json::Value) {
        let rows = rows.as_array().expect("rows");
        assert!(!rows.is_empty());
        let lines: Vec<&str> = md.lines().filter(|l| l.starts_with("| ")).collect();
        for r in rows {
            let text = r["text"].as_object().expect("text beside the row");
            let line = lines
                .iter()
                .find(|l| {
                    text.values()
                        .all(|v| l.contains(&format!("| {} |", v.as_str().unwrap())))
                })
                .unwrap_or_else(|| panic!("no Markdown row holds {text:?}\n{md}"));
            assert!(line.matches(" | ").count() + 1 > text.len(), "{line}");
        }
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
        same_cells(&md, &j["power"]);
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
        same_cells(&md, &j["claims"]["rows"]);
        assert_schema(&j);
        assert_eq!(j["claims"]["rows"][0]["support"]["rank_test"], true);
        assert_eq!(
            j["claims"]["rows"][1]["text"]["detectable"],
            "no pilot rows"
        );
    }
}
