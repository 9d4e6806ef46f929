//! The trace ids a session sent: the receiver keeps a span only when its
//! trace is one of them, so spans of other traffic to the same app (or of
//! another tool's requests) are counted, not stored.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// The most trace ids one registry holds: 16 bytes each, about 64 MB of
/// memory at most. A session sends far fewer requests than this.
pub const MAX_TRACKED_TRACES: usize = 2_000_000;

/// A set of trace ids shared by the sender (who adds each id before its
/// request goes out) and the receiver (who asks). Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct TraceRegistry {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    ids: Mutex<HashSet<u128>>,
    /// Ids not added because the registry was full.
    overflow: AtomicU64,
}

fn parse_hex(id: &str) -> Option<u128> {
    (id.len() == 32)
        .then(|| u128::from_str_radix(id, 16).ok())
        .flatten()
}

impl TraceRegistry {
    /// An empty registry.
    pub fn new() -> TraceRegistry {
        TraceRegistry::default()
    }

    /// Adds a trace id given as 32 hex digits. Returns false (and adds
    /// nothing) for text that is no trace id, or once the registry holds
    /// [`MAX_TRACKED_TRACES`] ids (counted in [`TraceRegistry::overflow`]).
    pub fn insert_hex(&self, trace_id: &str) -> bool {
        let Some(id) = parse_hex(trace_id) else {
            return false;
        };
        let mut ids = self
            .inner
            .ids
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if ids.len() >= MAX_TRACKED_TRACES && !ids.contains(&id) {
            self.inner.overflow.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        ids.insert(id);
        true
    }

    /// True when `trace_id` (32 hex digits, any case) was added.
    pub fn contains_hex(&self, trace_id: &str) -> bool {
        parse_hex(trace_id).is_some_and(|id| {
            self.inner
                .ids
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .contains(&id)
        })
    }

    /// How many ids it holds.
    pub fn len(&self) -> usize {
        self.inner
            .ids
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// True when it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Ids refused because the registry was full.
    pub fn overflow(&self) -> u64 {
        self.inner.overflow.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_found_whatever_their_case_and_junk_is_refused() {
        let r = TraceRegistry::new();
        assert!(r.insert_hex("4bf92f3577b34da6a3ce929d0e0e4736"));
        assert!(r.clone().contains_hex("4BF92F3577B34DA6A3CE929D0E0E4736"));
        assert!(!r.contains_hex("5bf92f3577b34da6a3ce929d0e0e4736"));
        assert!(!r.insert_hex("xyz"));
        assert!(!r.insert_hex("4bf92f3577b34da6"));
        assert_eq!(r.len(), 1);
        assert_eq!(r.overflow(), 0);
    }
}
