//! The router's rule, kept simple enough to explain in one sentence: a
//! message goes to the document path when it mentions a document-ish word or
//! phrase (whole words, any case), and to the fast chat path otherwise.

/// Words and phrases that send a message to the document path.
pub const DOC_KEYWORDS: &[&str] = &[
    "according to",
    "annual report",
    "report",
    "reports",
    "filing",
    "filings",
    "10-k",
    "10-q",
    "policy",
    "policies",
    "statement",
    "statements",
    "prospectus",
    "fact sheet",
    "factsheet",
    "rate sheet",
    "fee schedule",
    "memo",
    "document",
    "documents",
    "docs",
    "disclosure",
];

/// Which path answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Route {
    /// History + model, no retrieval.
    Chat,
    /// Retrieval of passages + model.
    Docs,
}

impl Route {
    /// `chat` or `docs`, as in the `X-Route` header.
    pub fn as_str(self) -> &'static str {
        match self {
            Route::Chat => "chat",
            Route::Docs => "docs",
        }
    }
}

/// A routing decision and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// The path taken.
    pub route: Route,
    /// A short human-readable reason.
    pub reason: String,
}

/// Apply the rule to a message.
pub fn decide(text: &str) -> Decision {
    // Lower-case, keep letters, digits and '-', pad with spaces so every
    // keyword can be looked up as " keyword ".
    let mut norm = String::with_capacity(text.len() + 2);
    norm.push(' ');
    let mut last_space = true;
    for c in text.chars().flat_map(char::to_lowercase) {
        if c.is_alphanumeric() || c == '-' {
            norm.push(c);
            last_space = false;
        } else if !last_space {
            norm.push(' ');
            last_space = true;
        }
    }
    if !last_space {
        norm.push(' ');
    }
    let hit = DOC_KEYWORDS
        .iter()
        .filter_map(|k| norm.find(&format!(" {k} ")).map(|at| (at, *k)))
        .min();
    match hit {
        Some((_, k)) => Decision {
            route: Route::Docs,
            reason: format!("mentions \"{k}\""),
        },
        None => Decision {
            route: Route::Chat,
            reason: "no document keyword".into(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docs_questions() {
        for (q, k) in [
            (
                "What does the annual report say about margins?",
                "annual report",
            ),
            (
                "According to the prospectus, what are the fees?",
                "according to",
            ),
            ("Summarise Northwind's 10-K risk factors", "10-k"),
            ("Is there an expense POLICY for flights?", "policy"),
        ] {
            let d = decide(q);
            assert_eq!(d.route, Route::Docs, "{q}");
            assert_eq!(d.reason, format!("mentions \"{k}\""), "{q}");
        }
    }

    #[test]
    fn chat_questions() {
        for q in [
            "Hello! How are you?",
            "Write a haiku about interest rates",
            "reporting lines in my team", // whole words only
            "",
        ] {
            assert_eq!(decide(q).route, Route::Chat, "{q}");
        }
    }
}
