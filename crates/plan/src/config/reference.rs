//! The reference of every config key (`docs/CONFIG.md`), generated from
//! the config types themselves: their JSON Schema (derived with
//! `schemars`, doc comments becoming descriptions) rendered as Markdown,
//! one section per table of the file, one row per key with its type,
//! whether it is required and what it does.
//!
//! `crates/plan/tests/config_reference.rs` fails when the checked-in file
//! differs from what the types say; [`REGENERATE`] rewrites it.

use serde_json::{Map, Value};

use super::Config;

/// The one command that rewrites `docs/CONFIG.md` from the config types.
pub const REGENERATE: &str =
    "FIRSTTOKEN_REGENERATE=1 cargo test -p firsttoken-plan --test config_reference";

/// Which credential each request of a session carries.
pub const CREDENTIALS: [(&str, &str); 5] = [
    (
        "sign-up (`app.auth.signup_path`), sign-in (`app.auth.signin_path`)",
        "none: the body carries the e-mail and password (`{email}`, `{password}`)",
    ),
    (
        "measured app requests (`app.paths`) and the earlier steps of a flow (`app.paths.steps`), the version and ping requests",
        "the test account's bearer token (`Authorization: Bearer …`, accounts rotated over requests), unless the path is `anonymous`; plus `app.headers` on app requests",
    ),
    (
        "cleanup over HTTP (`app.cleanup.http_delete`)",
        "the admin token from the env var `app.cleanup.admin_token_env`; without it, each account's own token (which admin-only routes refuse)",
    ),
    (
        "cleanup in SQL (`app.cleanup.delete_sql`, `count_sql`)",
        "the app database URL from the env var `app.cleanup.database_url_env` (or `database_url`)",
    ),
    (
        "direct requests (`[direct]`)",
        "the provider key from the env var `direct.api_key_env`",
    ),
];

/// The config's JSON Schema.
pub fn schema() -> Value {
    schemars::schema_for!(Config).to_value()
}

/// The Markdown reference of every key.
pub fn markdown() -> String {
    let root = schema();
    let r = Renderer {
        defs: root
            .get("$defs")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default(),
    };
    let mut out = String::from(
        "# Config reference\n\n\
         Every key of the session config (`firsttoken.toml`, `firsttoken run -c FILE`), \
         generated from the config types (`crates/plan/src/config`): their doc comments \
         are the descriptions. Do not edit by hand; after changing a config type, run\n\n",
    );
    out.push_str(&format!("```sh\n{REGENERATE}\n```\n\n"));
    out.push_str(
        "`firsttoken init` writes a commented example. Durations are written like \
         `\"30s\"`, `\"1m 30s\"`, `\"500ms\"`.\n\n\
         ## Which credential each request carries\n\n\
         Secrets are named by the env var that holds them, never written in the file, \
         and never reach the store, a report, a log or the terminal.\n\n\
         | request | credential |\n| --- | --- |\n",
    );
    for (request, credential) in CREDENTIALS {
        out.push_str(&format!("| {request} | {credential} |\n"));
    }
    let mut sections = Vec::new();
    r.table(&root, "", 0, &mut out, &mut sections);
    for (key, schema, array) in sections {
        r.section(&key, &schema, array, &mut out);
    }
    out
}

/// A doc comment as one line, its rustdoc links written as plain code.
fn clean(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace("[`", "`")
        .replace("`]", "`")
}

/// A doc comment that only names its table (`` `[app]`. ``), which the
/// heading already says.
fn bare_name(doc: &str) -> bool {
    let t = doc.trim().trim_end_matches('.');
    t.len() > 1 && t.starts_with('`') && t.ends_with('`') && !t.contains(' ')
}

struct Renderer {
    defs: Map<String, Value>,
}

/// A table of the file to render: its dotted key, schema, and whether it
/// is an array of tables (`[[app.paths]]`).
type Pending = (String, Value, bool);

impl Renderer {
    /// `schema` with a `$ref` followed (once, then recursively).
    fn resolve<'a>(&'a self, schema: &'a Value) -> &'a Value {
        match schema.get("$ref").and_then(Value::as_str) {
            Some(r) => match r.strip_prefix("#/$defs/").and_then(|n| self.defs.get(n)) {
                Some(d) => self.resolve(d),
                None => schema,
            },
            None => schema,
        }
    }

    /// The alternatives of an `anyOf`/`oneOf` other than `null`, or the
    /// schema itself.
    fn alternatives<'a>(&'a self, schema: &'a Value) -> Vec<&'a Value> {
        let s = self.resolve(schema);
        for k in ["anyOf", "oneOf"] {
            if let Some(alts) = s.get(k).and_then(Value::as_array) {
                return alts
                    .iter()
                    .flat_map(|a| self.alternatives(a))
                    .filter(|a| a.get("type").and_then(Value::as_str) != Some("null"))
                    .collect();
            }
        }
        vec![s]
    }

    /// The table-of-keys schema among `schema`'s forms, if one has keys.
    fn keyed<'a>(&'a self, schema: &'a Value) -> Option<&'a Value> {
        self.alternatives(schema)
            .into_iter()
            .find(|a| a.get("properties").is_some())
    }

    /// A short type: `string`, `integer`, `array of string`, `table`,
    /// `table of name → number`, `"s" | "ms"`, `integer or table`.
    fn ty(&self, schema: &Value) -> String {
        let alts = self.alternatives(schema);
        if alts.len() > 1 {
            if alts.iter().all(|a| a.get("const").is_some()) {
                return alts
                    .iter()
                    .map(|a| format!("`{}`", a["const"]))
                    .collect::<Vec<_>>()
                    .join(" \\| ");
            }
            let mut names: Vec<String> = alts.iter().map(|a| self.ty(a)).collect();
            names.dedup();
            return names.join(" or ");
        }
        let s = alts[0];
        if let Some(values) = s.get("enum").and_then(Value::as_array) {
            return values
                .iter()
                .filter(|v| !v.is_null())
                .map(|v| format!("`{v}`"))
                .collect::<Vec<_>>()
                .join(" \\| ");
        }
        if let Some(c) = s.get("const") {
            return format!("`{c}`");
        }
        let types: Vec<&str> = match s.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts
                .iter()
                .filter_map(Value::as_str)
                .filter(|t| *t != "null")
                .collect(),
            _ => vec![],
        };
        let one = |t: &str| match t {
            "array" => match s.get("items") {
                Some(items) => format!("array of {}", self.ty(items)),
                None => "array".into(),
            },
            "object" => match s.get("additionalProperties") {
                _ if s.get("properties").is_some() => "table".into(),
                Some(v @ Value::Object(_)) => format!("table of name → {}", self.ty(v)),
                _ => "table".into(),
            },
            other => other.to_string(),
        };
        match types.as_slice() {
            [] => "any".into(),
            ts => ts.iter().map(|t| one(t)).collect::<Vec<_>>().join(" or "),
        }
    }

    /// A description as one table cell: lines joined, pipes escaped, the
    /// values of a documented enum listed after it.
    fn describe(&self, property: &Value) -> String {
        let target = self.resolve(property);
        let mut text = property
            .get("description")
            .or_else(|| target.get("description"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let alts = self.alternatives(property);
        if alts.len() > 1 && alts.iter().all(|a| a.get("const").is_some()) {
            for a in alts {
                if let Some(d) = a.get("description").and_then(Value::as_str) {
                    text.push_str(&format!(" `{}`: {d}", a["const"]));
                }
            }
        }
        // A default worth reading: not "unset", not a whole table.
        match property.get("default").or_else(|| target.get("default")) {
            None | Some(Value::Null) => {}
            Some(Value::Object(m)) if !m.is_empty() => {}
            Some(d) => text.push_str(&format!(" Default: `{d}`.")),
        }
        clean(&text).replace('|', "\\|")
    }

    /// One table of keys: a row per key; each key that is itself a table
    /// (or an array of tables, or a map of tables) is queued as a section.
    fn table(
        &self,
        schema: &Value,
        prefix: &str,
        depth: usize,
        out: &mut String,
        sections: &mut Vec<Pending>,
    ) {
        let Some(obj) = self.keyed(schema) else {
            return;
        };
        let required: Vec<&str> = obj
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let Some(props) = obj.get("properties").and_then(Value::as_object) else {
            return;
        };
        if depth > 0 {
            out.push_str("\n| key | type | required | description |\n| --- | --- | --- | --- |\n");
        }
        for (name, p) in props {
            let key = if prefix.is_empty() {
                name.clone()
            } else {
                format!("{prefix}.{name}")
            };
            if depth > 0 {
                out.push_str(&format!(
                    "| `{name}` | {} | {} | {} |\n",
                    self.ty(p),
                    if required.contains(&name.as_str()) {
                        "yes"
                    } else {
                        "no"
                    },
                    self.describe(p)
                ));
            }
            if self.keyed(p).is_some() {
                sections.push((key, p.clone(), false));
            } else if let Some(items) = self.alternatives(p)[0].get("items")
                && self.keyed(items).is_some()
            {
                let mut item = items.clone();
                if let (Some(d), Value::Object(m)) = (p.get("description"), &mut item) {
                    m.insert("description".into(), d.clone());
                }
                sections.push((key, item, true));
            } else if let Some(v) = self.alternatives(p)[0].get("additionalProperties")
                && self.keyed(v).is_some()
            {
                let mut value = v.clone();
                if let (Some(d), Value::Object(m)) = (p.get("description"), &mut value) {
                    m.insert("description".into(), d.clone());
                }
                sections.push((format!("{key}.<name>"), value, false));
            }
        }
    }

    /// A section for the table at `key`, then its own tables.
    fn section(&self, key: &str, schema: &Value, array: bool, out: &mut String) {
        let depth = key.matches('.').count();
        let hashes = "#".repeat((depth + 2).min(6));
        let heading = if array {
            format!("[[{key}]]")
        } else {
            format!("[{key}]")
        };
        out.push_str(&format!("\n{hashes} `{heading}`\n\n"));
        let d = self.describe(schema);
        if !d.is_empty() {
            out.push_str(&format!("{}\n", d.replace("\\|", "|")));
        }
        if let (Some(own), Some(def)) = (
            schema.get("description").and_then(Value::as_str),
            self.keyed(schema)
                .and_then(|k| k.get("description"))
                .and_then(Value::as_str),
        ) && own != def
            && !bare_name(def)
        {
            out.push_str(&format!("\n{}\n", clean(def)));
        }
        let mut sections = Vec::new();
        self.table(schema, key, depth + 1, out, &mut sections);
        for (k, s, a) in sections {
            self.section(&k, &s, a, out);
        }
    }
}
