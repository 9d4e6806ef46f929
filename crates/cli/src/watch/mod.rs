//! `firsttoken run --watch` and `probe --watch`: a live terminal view of a
//! running session or probe.
//!
//! [`Watch`] is the session's [`Observer`]: the recorder hands it every
//! stored sample (the same stream the store gets; the probe hands it each
//! sample as it prints it otherwise), it folds them into analyze's
//! [`LiveState`], and a thread of its own draws that state four
//! times a second with ratatui and reads the keys: `q` (or Esc, Ctrl-C)
//! stops the session as Ctrl-C does (samples kept, cleanup runs), `p`
//! holds a session between steps ([`Pause`]; a probe is one step, so there
//! `p` is not offered). The drawing thread never touches
//! the measuring tasks: it copies the state under a short lock and draws
//! from the copy.

pub mod view;

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use firsttoken_analyze::Settings;
use firsttoken_analyze::live::{LiveKey, LiveState};
use firsttoken_plan::protocol::Protocol;
use firsttoken_record::session::{SampleRow, SessionMeta};
use firsttoken_record::{Destination, PhaseKind};
use firsttoken_session::{Observer, Pause};
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use tokio_util::sync::CancellationToken;

use view::Status;

/// How often the view is redrawn (and the keys read).
const FRAME: Duration = Duration::from_millis(250);

/// The live view of one session.
pub struct Watch {
    state: Arc<Mutex<LiveState>>,
    /// The phase of a probe's samples (its protocol's one step).
    probe_phase: PhaseKind,
    done: Arc<AtomicBool>,
    ui: Option<JoinHandle<io::Result<()>>>,
}

impl Watch {
    /// Take over the terminal and start drawing a run of `protocol`; `q`
    /// cancels `cancel`, `p` flips `pause` when `can_pause`. `pause`'s gate
    /// counts the requests started (see [`Pause::gate`]).
    pub fn start(
        protocol: &Protocol,
        budget_usd: Option<f64>,
        pause: Pause,
        can_pause: bool,
        cancel: CancellationToken,
    ) -> io::Result<Watch> {
        let state = live_state(protocol, budget_usd);
        let probe_phase = state.planned.first().map_or(PhaseKind::Warm, |(k, _)| *k);
        let state = Arc::new(Mutex::new(state));
        let done = Arc::new(AtomicBool::new(false));
        let terminal = ratatui::try_init()?;
        let ui = {
            let (state, done) = (state.clone(), done.clone());
            std::thread::Builder::new()
                .name("watch".into())
                .spawn(move || {
                    let r = ui_loop(terminal, &state, &done, &pause, can_pause, &cancel);
                    ratatui::restore();
                    r
                })?
        };
        Ok(Watch {
            state,
            probe_phase,
            done,
            ui: Some(ui),
        })
    }

    /// Stop drawing and give the terminal back (also on drop).
    pub fn finish(&mut self) -> io::Result<()> {
        self.done.store(true, Ordering::SeqCst);
        match self.ui.take() {
            Some(h) => h
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("the live view's thread panicked"))),
            None => Ok(()),
        }
    }

    /// A probe's sample, of its protocol's phase at the app path shown as
    /// `name`.
    pub fn sample(&self, name: &str, sample: &firsttoken_record::Sample) {
        let key = LiveKey {
            phase: self.probe_phase,
            dest: Destination::App {
                path: Some(name.to_string()),
            },
        };
        self.with(|s| s.sample(key, sample, None, 0.0));
    }

    fn with<R>(&self, f: impl FnOnce(&mut LiveState) -> R) -> R {
        f(&mut self.state.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

impl Observer for Watch {
    fn started(&mut self, meta: &SessionMeta, announced: u64) {
        self.with(|s| {
            s.session = Some(meta.id.clone());
            s.seed = meta.seed;
            s.announced = announced;
        });
    }

    fn recorded(&mut self, row: &SampleRow, spent_usd: f64) {
        self.with(|s| s.record(row, spent_usd));
    }

    fn measured(&mut self) {
        self.with(|s| s.measured = true);
    }
}

/// An empty live state of a session running `protocol` under `budget_usd`.
fn live_state(protocol: &Protocol, budget_usd: Option<f64>) -> LiveState {
    let planned = protocol
        .counts()
        .into_iter()
        .map(|(k, n)| (k, n as u64))
        .collect();
    LiveState::new(protocol.planned() as u64, planned, budget_usd)
}

fn ui_loop(
    mut terminal: ratatui::DefaultTerminal,
    state: &Mutex<LiveState>,
    done: &AtomicBool,
    pause: &Pause,
    can_pause: bool,
    cancel: &CancellationToken,
) -> io::Result<()> {
    let since = Instant::now();
    let mut stopping = false;
    while !done.load(Ordering::SeqCst) {
        // Copy under the lock, draw from the copy: the recorder never
        // waits for a frame.
        let snapshot = state.lock().unwrap_or_else(PoisonError::into_inner).clone();
        // The session's seed: its intervals are the report's.
        let settings = Settings::new(snapshot.seed);
        let status = Status {
            paused: pause.is_paused(),
            started: pause.started(),
            stopping,
            can_pause,
            elapsed: since.elapsed(),
        };
        terminal.draw(|f| view::draw(f, &snapshot, status, &settings))?;
        if !event::poll(FRAME)? {
            continue;
        }
        let Event::Key(k) = event::read()? else {
            continue;
        };
        if k.kind != KeyEventKind::Press {
            continue;
        }
        let ctrl_c = k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL);
        match k.code {
            _ if ctrl_c => stop(pause, cancel, &mut stopping),
            KeyCode::Char('q') | KeyCode::Esc => stop(pause, cancel, &mut stopping),
            KeyCode::Char('p') if can_pause && !stopping => {
                pause.toggle();
            }
            _ => {}
        }
    }
    Ok(())
}

/// The same stop as Ctrl-C: cancel the session; a paused one is released
/// so that it sees the cancellation at once.
fn stop(pause: &Pause, cancel: &CancellationToken, stopping: &mut bool) {
    *stopping = true;
    cancel.cancel();
    pause.set(false);
}
