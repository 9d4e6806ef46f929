//! The router's rules. [`RouterRule::Keywords`], kept simple enough to
//! explain in one sentence: a message goes to the document path when it
//! mentions a document-ish word or phrase (whole words, any case), and to the
//! fast chat path otherwise. Most questions about the documents name no such
//! word ("What is Harbor's overdraft fee?"), so it sends most of them to chat
//! (the known-bad router). [`RouterRule::Corpus`] also asks the document
//! index: a message that names a company or fund of the corpus, or whose best
//! passage scores at least [`CORPUS_MIN_SCORE`] under BM25, goes to docs.

use crate::retrieve::DocIndex;

/// How `POST /api/message` picks a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RouterRule {
    /// Document keywords only ([`DOC_KEYWORDS`]): the known-bad router.
    #[default]
    Keywords,
    /// Keywords, names from the corpus ([`CORPUS_NAMES`]) or a strong
    /// retrieval hit: the fixed router.
    Corpus,
}

/// Names of the companies and funds in the bundled corpus (whole words, any
/// case).
pub const CORPUS_NAMES: &[&str] = &[
    "northwind",
    "meridian",
    "harbor",
    "harbor street",
    "fairway",
    "cedar",
    "ledgerline",
];

/// The BM25 score of the best passage at and above which the corpus rule
/// sends a message to docs (calibrated on [`DOC_QUESTIONS`] and
/// [`CHAT_QUESTIONS`]; see the tests).
pub const CORPUS_MIN_SCORE: f32 = 9.0;

/// Questions about the bundled documents, as users ask them: most name no
/// document keyword. For demos of the router funnel.
pub const DOC_QUESTIONS: &[&str] = &[
    "What is the overdraft fee per paid item at Harbor Street Bank?",
    "How much did Northwind's revenue grow last year?",
    "What are the ongoing charges of the Meridian Income Fund?",
    "Does Fairway reimburse business class flights?",
    "What is the cash advance APR on the rewards credit card?",
    "How long is the grace period on card purchases?",
    "What does LedgerLine charge per card transaction?",
    "What is the 30-year fixed mortgage rate today?",
    "According to the annual report, what was Northwind's operating margin?",
    "What does the Cedar retirement plan match?",
];

/// General questions with no document behind them. For demos.
pub const CHAT_QUESTIONS: &[&str] = &[
    "What drives the time to first token of a streamed answer?",
    "Explain keep-alive connections to a new engineer.",
    "Give me three tips for faster onboarding.",
    "Write a haiku about interest rates",
    "Hello! How are you?",
];

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

/// Apply a rule to a message; the corpus rule searches `index`.
pub fn decide_with(text: &str, rule: RouterRule, index: &DocIndex) -> Decision {
    let by_keyword = decide(text);
    if rule == RouterRule::Keywords || by_keyword.route == Route::Docs {
        return by_keyword;
    }
    let norm = normalize(text);
    if let Some(name) = CORPUS_NAMES
        .iter()
        .find(|n| norm.contains(&format!(" {n} ")))
    {
        return Decision {
            route: Route::Docs,
            reason: format!("names \"{name}\""),
        };
    }
    match index.search(text, 1).first() {
        Some((p, score)) if *score >= CORPUS_MIN_SCORE => Decision {
            route: Route::Docs,
            reason: format!("matches {} (score {score:.1})", p.id),
        },
        _ => by_keyword,
    }
}

/// Apply the keyword rule to a message.
pub fn decide(text: &str) -> Decision {
    let norm = normalize(text);
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

fn normalize(text: &str) -> String {
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
    norm
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
    fn keyword_router_sends_most_document_questions_to_chat() {
        let index = DocIndex::bundled();
        let to_chat = DOC_QUESTIONS
            .iter()
            .filter(|q| decide_with(q, RouterRule::Keywords, &index).route == Route::Chat)
            .count();
        assert!(to_chat * 3 >= DOC_QUESTIONS.len() * 2, "{to_chat}");
    }

    #[test]
    fn corpus_router_sends_every_document_question_to_docs() {
        let index = DocIndex::bundled();
        for q in DOC_QUESTIONS {
            let d = decide_with(q, RouterRule::Corpus, &index);
            assert_eq!(d.route, Route::Docs, "{q}");
        }
        for q in CHAT_QUESTIONS {
            let d = decide_with(q, RouterRule::Corpus, &index);
            assert_eq!(d.route, Route::Chat, "{q}: {}", d.reason);
        }
        // The threshold sits in a wide gap: document questions that name no
        // company score 10.7 or more, general ones 5.0 or less.
        let best = |q: &str| index.search(q, 1).first().map_or(0.0, |h| h.1);
        for q in CHAT_QUESTIONS {
            assert!(best(q) <= CORPUS_MIN_SCORE - 3.0, "{q}");
        }
        let d = decide_with(
            "How long is the grace period on card purchases?",
            RouterRule::Corpus,
            &index,
        );
        assert!(d.reason.starts_with("matches harbor-bank-"), "{}", d.reason);
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
