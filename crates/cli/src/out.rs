//! Standard output that a closed pipe cannot crash: `firsttoken … | head`
//! stops printing quietly and the command ends with its normal exit code
//! (`println!` would panic with exit 101).

use std::fmt::Arguments;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once stdout is gone; nothing more is written.
static CLOSED: AtomicBool = AtomicBool::new(false);

/// Set when a write failed for another reason than a closed pipe (a full
/// disk): the command then exits 1 ([`failed`]).
static FAILED: AtomicBool = AtomicBool::new(false);

/// A write to stdout failed for another reason than a closed reader.
pub fn failed() -> bool {
    FAILED.load(Ordering::Relaxed)
}

/// Write `args` to stdout as is.
pub fn text(args: Arguments<'_>) {
    if CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(args).and_then(|()| out.flush()) {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            eprintln!("error: cannot write to standard output: {e}");
            FAILED.store(true, Ordering::Relaxed);
        }
        CLOSED.store(true, Ordering::Relaxed);
    }
}

/// Write `args` and a newline to stdout.
pub fn line(args: Arguments<'_>) {
    text(format_args!("{args}\n"));
}
