//! What a session tells its caller while it runs (progress bars, logs). The
//! observer sees each sample after it is stored; it never sits in the
//! measuring path.

use firsttoken_record::session::{SampleRow, SessionMeta};

/// Callbacks from a running session; every method has a do-nothing default.
pub trait Observer: Send {
    /// The session row exists; `announced` requests are planned: the
    /// measured ones and a warm-up per warm connection
    /// ([`firsttoken_plan::protocol::Protocol::planned`]; an app closing idle
    /// connections may cost a few more).
    fn started(&mut self, meta: &SessionMeta, announced: u64) {
        let _ = (meta, announced);
    }
    /// A sample was stored; `spent_usd` is the budget's total so far.
    fn recorded(&mut self, row: &SampleRow, spent_usd: f64) {
        let _ = (row, spent_usd);
    }
    /// The measured part is over (cleanup and the session's end follow).
    fn measured(&mut self) {}
}

/// An observer that shows nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct Quiet;

impl Observer for Quiet {}
