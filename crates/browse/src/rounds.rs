//! One browser phase as rounds: `contexts` users, each in its own browser
//! context, send their messages at the same moment, round after round,
//! until `count` messages are measured; a first visit opens new contexts
//! (and loads the page) for every round, a returning visit keeps the same
//! pages. Used by `firsttoken browse` and by a session's browser phases.

use std::time::Instant;

use firsttoken_drive::trace::TraceContext;

use crate::{BrowseError, BrowseSpec, Browser, Measured, Page};

/// One measured message of a round.
pub struct Sent {
    /// Its number in the phase, from 0.
    pub index: u32,
    /// The context (user) that sent it, from 0.
    pub context: u32,
    /// The measurement.
    pub measured: Measured,
    /// When its round began (the moment the users were told to send).
    pub began: Instant,
}

/// A phase being measured round by round.
pub struct Rounds<'b> {
    browser: &'b Browser,
    /// One spec per context (its sign-in differs); cycled when shorter.
    specs: Vec<BrowseSpec>,
    fresh: bool,
    contexts: u32,
    count: u32,
    next: u32,
    pages: Vec<Page>,
}

impl<'b> Rounds<'b> {
    /// `count` messages by `contexts` users at once (at least one), each
    /// context opened with `specs[k % specs.len()]`; `fresh`: new contexts
    /// for every round.
    pub fn new(
        browser: &'b Browser,
        specs: Vec<BrowseSpec>,
        fresh: bool,
        contexts: u32,
        count: u32,
    ) -> Result<Rounds<'b>, BrowseError> {
        if specs.is_empty() {
            return Err(BrowseError::Spec("no page to open".into()));
        }
        Ok(Rounds {
            browser,
            specs,
            fresh,
            contexts: contexts.max(1),
            count,
            next: 0,
            pages: Vec::new(),
        })
    }

    fn spec(&self, k: u32) -> &BrowseSpec {
        &self.specs[k as usize % self.specs.len()]
    }

    /// Measure the next round; `message(index)` gives each message's text
    /// and trace context (registered with a span receiver before it is
    /// returned). `None` once `count` messages are measured.
    pub async fn next(
        &mut self,
        mut message: impl FnMut(u32) -> (String, Option<TraceContext>),
    ) -> Result<Option<Vec<Sent>>, BrowseError> {
        if self.next >= self.count {
            return Ok(None);
        }
        let round = self.contexts.min(self.count - self.next);
        if self.fresh || self.pages.is_empty() {
            // The previous contexts' tabs go first.
            self.pages.clear();
            for k in 0..self.contexts {
                let page = self.browser.open(self.spec(k)).await?;
                self.pages.push(page);
            }
        }
        let began = Instant::now();
        let sends: Vec<_> = (0..round).map(|k| (k, message(self.next + k))).collect();
        let measured =
            futures_util::future::join_all(sends.into_iter().map(|(k, (text, trace))| {
                let spec = self.spec(k);
                let page = &self.pages[k as usize];
                async move { page.measure_traced(&text, spec, trace).await }
            }))
            .await;
        let mut out = Vec::with_capacity(measured.len());
        for (k, m) in (0u32..).zip(measured) {
            out.push(Sent {
                index: self.next + k,
                context: k,
                measured: m?,
                began,
            });
        }
        self.next += round;
        Ok(Some(out))
    }
}
