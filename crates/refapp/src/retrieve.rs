//! The document path's retrieval: BM25 (k1 = 1.2, b = 0.75; Robertson and
//! Zaragoza, "The Probabilistic Relevance Framework: BM25 and Beyond", 2009)
//! over the passages of a small bundled corpus of fictional finance
//! documents (`corpus/*.txt`), via the `bm25` crate with its English
//! tokenizer (lower-casing, stop words, Snowball stemming).
//!
//! Each file's first line is its title; blank lines separate passages. A
//! passage id is `<file stem>#<n>`, n counting from 1. The title is indexed
//! with every passage, so "the Northwind annual report" finds its passages.

use bm25::{Language, SearchEngine, SearchEngineBuilder};

macro_rules! corpus {
    ($($stem:literal),* $(,)?) => {
        &[$(($stem, include_str!(concat!("../corpus/", $stem, ".txt")))),*]
    };
}

/// The bundled documents: (file stem, text).
pub const CORPUS: &[(&str, &str)] = corpus!(
    "cedar-retirement-plan-summary",
    "cedar-treasury-memo-rates",
    "fairway-dividend-policy",
    "fairway-expense-reimbursement-policy",
    "fairway-investment-policy-statement",
    "harbor-bank-credit-card-terms",
    "harbor-bank-deposit-account-policy",
    "harbor-bank-mortgage-rate-sheet",
    "ledgerline-aml-kyc-policy",
    "ledgerline-merchant-fee-schedule",
    "meridian-growth-fund-factsheet",
    "meridian-income-fund-prospectus",
    "northwind-10k-risk-factors",
    "northwind-annual-report-2025",
    "northwind-q3-earnings-statement",
);

/// One retrievable passage.
#[derive(Debug, Clone, PartialEq)]
pub struct Passage {
    /// `<file stem>#<n>`.
    pub id: String,
    /// The document's title line.
    pub title: &'static str,
    /// The passage text (one paragraph).
    pub text: &'static str,
}

/// A BM25 index over the passages of a corpus, built once at start.
pub struct DocIndex {
    passages: Vec<Passage>,
    engine: SearchEngine<u32>,
}

impl std::fmt::Debug for DocIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DocIndex")
            .field("passages", &self.passages.len())
            .finish()
    }
}

/// Split documents into passages.
pub fn passages(corpus: &[(&str, &'static str)]) -> Vec<Passage> {
    let mut out = Vec::new();
    for (stem, text) in corpus {
        let (title, body) = text.split_once('\n').unwrap_or((text, ""));
        let title = title.trim();
        let paragraphs = body.split("\n\n").map(str::trim).filter(|p| !p.is_empty());
        for (n, p) in paragraphs.enumerate() {
            out.push(Passage {
                id: format!("{stem}#{}", n + 1),
                title,
                text: p,
            });
        }
    }
    out
}

impl DocIndex {
    /// The index of the bundled corpus.
    pub fn bundled() -> DocIndex {
        DocIndex::new(passages(CORPUS))
    }

    /// An index over the given passages.
    pub fn new(passages: Vec<Passage>) -> DocIndex {
        let texts: Vec<String> = passages
            .iter()
            .map(|p| format!("{}\n{}", p.title, p.text))
            .collect();
        let engine = SearchEngineBuilder::<u32>::with_corpus(Language::English, texts).build();
        DocIndex { passages, engine }
    }

    /// Number of passages.
    pub fn len(&self) -> usize {
        self.passages.len()
    }

    /// True when there is nothing to search.
    pub fn is_empty(&self) -> bool {
        self.passages.is_empty()
    }

    /// The `k` best passages for `query`, best first, with their scores.
    /// Ties go to the earlier passage, so results are deterministic.
    pub fn search(&self, query: &str, k: usize) -> Vec<(&Passage, f32)> {
        let mut hits: Vec<(u32, f32)> = self
            .engine
            .search(query, None)
            .into_iter()
            .map(|r| (r.document.id, r.score))
            .collect();
        hits.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        hits.into_iter()
            .filter_map(|(i, s)| self.passages.get(i as usize).map(|p| (p, s)))
            .take(k)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corpus_lists_every_file() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/corpus");
        let mut on_disk: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .filter_map(|e| {
                let name = e.ok()?.file_name().into_string().ok()?;
                name.strip_suffix(".txt").map(str::to_string)
            })
            .collect();
        on_disk.sort();
        let listed: Vec<String> = CORPUS.iter().map(|(s, _)| s.to_string()).collect();
        assert_eq!(listed, on_disk);
        assert!((12..=20).contains(&CORPUS.len()));
    }

    #[test]
    fn passages_are_split_and_numbered() {
        let p = passages(&[("doc", "Title line\n\nFirst one.\n\n\nSecond\ntwo lines.\n")]);
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].id, "doc#1");
        assert_eq!(p[0].title, "Title line");
        assert_eq!(p[1].text, "Second\ntwo lines.");
    }

    #[test]
    fn finds_the_relevant_passage() {
        let index = DocIndex::bundled();
        assert!(index.len() > 40);
        let hits = index.search("What is the overdraft fee per paid item?", 3);
        assert_eq!(
            hits.first().map(|h| h.0.id.as_str()),
            Some("harbor-bank-deposit-account-policy#3")
        );
        let hits = index.search(
            "Northwind diluted earnings per share in the annual report",
            3,
        );
        assert!(hits.iter().any(|h| h.0.id.starts_with("northwind-")));
        assert!(index.search("zzzz qqqq", 3).is_empty());
    }
}
