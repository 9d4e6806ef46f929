//! The session's progress bar: every stored request counted (warm-ups
//! too), a time-left estimate that counts down between samples, and an
//! explicit countdown while the protocol waits out an idle gap before a
//! cold probe.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

use firsttoken_plan::protocol::{Protocol, Step};
use firsttoken_record::PhaseKind;
use firsttoken_record::session::{SampleRow, SessionMeta};
use firsttoken_session::Observer;

/// An idle gap ahead: it starts once `after` counted (non-warm-up)
/// requests are stored, since steps run one after the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Gap {
    after: u64,
    length: Duration,
}

/// The gaps of `protocol`, in order.
fn gaps(protocol: &Protocol) -> VecDeque<Gap> {
    let mut counted = 0u64;
    let mut out = VecDeque::new();
    for s in &protocol.steps {
        if let Step::AfterIdle(length, _) = s {
            out.push_back(Gap {
                after: counted,
                length: *length,
            });
        }
        counted = counted.saturating_add(u64::try_from(s.len()).unwrap_or(u64::MAX));
    }
    out
}

/// What the bar's ticking keys read: the estimate made at the last stored
/// request, and the idle gap under way, if any.
#[derive(Debug, Clone, Copy)]
struct Clock {
    /// Time left as estimated when `at` was stamped.
    left: Duration,
    at: Instant,
    /// The idle gap under way: when it began and how long it lasts.
    idle: Option<(Instant, Duration)>,
}

impl Clock {
    /// `~1m 20s left`, counting down from the last estimate; during an idle
    /// gap, `idle before a cold probe: 12s · ` first.
    fn render(&self, now: Instant) -> String {
        let since = now.saturating_duration_since(self.at);
        let left = self.left.saturating_sub(since);
        let mut s = String::new();
        if let Some((began, length)) = self.idle {
            let wait = length.saturating_sub(now.saturating_duration_since(began));
            let _ = write!(s, "idle before a cold probe: {} · ", whole_seconds(wait));
        }
        let _ = write!(s, "~{} left", whole_seconds(left));
        s
    }
}

/// A duration as humantime writes it, in whole seconds (rounded up, so a
/// countdown shows `1s` until it is over).
fn whole_seconds(d: Duration) -> String {
    let secs = d.as_secs() + u64::from(d.subsec_nanos() > 0);
    humantime::format_duration(Duration::from_secs(secs)).to_string()
}

/// A progress bar on stderr that counts every stored request, warm-ups too.
/// Its estimate of the time left is the protocol's remaining idle gaps
/// (known in advance) plus the remaining requests at the median duration
/// of those done, counting down between samples; while an idle gap runs,
/// the bar counts it down; the message names the last request's TTFT.
pub struct Progress {
    bar: ProgressBar,
    quiet: bool,
    /// Several sessions at once (the demo): their bars in one group, each
    /// led by its name.
    group: Option<(MultiProgress, String)>,
    failed: u64,
    announced: u64,
    done: u64,
    /// Counted (non-warm-up) requests stored.
    counted: u64,
    /// Idle gaps before cold probes not yet over, in order.
    gaps: VecDeque<Gap>,
    /// End-to-end durations of the requests done, ms (a bounded window).
    recent_ms: VecDeque<f64>,
    clock: Arc<Mutex<Clock>>,
}

impl Progress {
    /// A bar, hidden when `quiet`, for a session running `protocol`.
    pub fn new(quiet: bool, protocol: &Protocol) -> Progress {
        Progress {
            bar: ProgressBar::hidden(),
            quiet,
            group: None,
            failed: 0,
            announced: 0,
            done: 0,
            counted: 0,
            gaps: gaps(protocol),
            recent_ms: VecDeque::new(),
            clock: Arc::new(Mutex::new(Clock {
                left: Duration::ZERO,
                at: Instant::now(),
                idle: None,
            })),
        }
    }

    /// A bar among others in `multi`, led by `name`, for one of several
    /// sessions that run at once.
    pub fn in_group(multi: &MultiProgress, name: &str, protocol: &Protocol) -> Progress {
        Progress {
            group: Some((multi.clone(), name.to_string())),
            ..Progress::new(false, protocol)
        }
    }

    /// Time left: the idle gaps still ahead plus the requests left at the
    /// median duration of the last ones done.
    fn eta(&self) -> Duration {
        let mut v: Vec<f64> = self.recent_ms.iter().copied().collect();
        v.sort_by(f64::total_cmp);
        let median = v.get(v.len() / 2).copied().unwrap_or(0.0);
        let left = self.announced.saturating_sub(self.done) as f64;
        let gaps: Duration = self.gaps.iter().map(|g| g.length).sum();
        gaps + Duration::from_secs_f64((left * median / 1000.0).max(0.0))
    }

    /// Note a stored request: counts, the gap under way, the new estimate.
    fn note(
        &mut self,
        phase: PhaseKind,
        warmup: bool,
        ok: bool,
        e2e_ms: Option<f64>,
        now: Instant,
    ) {
        self.failed += u64::from(!warmup && !ok);
        self.done += 1;
        self.counted += u64::from(!warmup);
        if phase == PhaseKind::Cold && !warmup {
            self.gaps.pop_front();
        }
        if let Some(e) = e2e_ms {
            if self.recent_ms.len() == 64 {
                self.recent_ms.pop_front();
            }
            self.recent_ms.push_back(e);
        }
        self.tick(now);
    }

    /// A new estimate at `now`; an idle gap starts once every counted
    /// request before it is stored (steps run one after the other).
    fn tick(&mut self, now: Instant) {
        let idle = self
            .gaps
            .front()
            .filter(|g| g.after == self.counted)
            .map(|g| (now, g.length));
        let left = self.eta();
        if let Ok(mut c) = self.clock.lock() {
            *c = Clock {
                left,
                at: now,
                idle,
            };
        }
    }
}

impl Observer for Progress {
    fn started(&mut self, meta: &SessionMeta, announced: u64) {
        if self.quiet {
            return;
        }
        let line = format!(
            "session {} ({announced} requests planned with their warm-ups, seed {}, {})",
            meta.id,
            meta.seed,
            meta.provenance.as_str()
        );
        self.announced = announced;
        self.tick(Instant::now());
        let mut template = "{bar:30} {pos}/{len} [{elapsed_precise}] {left}{msg}";
        match &self.group {
            Some((multi, name)) => {
                let _ = multi.println(format!("{name}: {line}"));
                self.bar = multi.add(ProgressBar::new(announced));
                self.bar.set_prefix(name.clone());
                template = "{prefix:7} {bar:30} {pos}/{len} [{elapsed_precise}] {left}{msg}";
            }
            None => {
                eprintln!("{line}");
                self.bar = ProgressBar::with_draw_target(
                    Some(announced),
                    ProgressDrawTarget::stderr_with_hz(4),
                );
            }
        }
        let clock = Arc::clone(&self.clock);
        let left = move |_: &ProgressState, w: &mut dyn std::fmt::Write| {
            if let Ok(c) = clock.lock() {
                let _ = w.write_str(&c.render(Instant::now()));
            }
        };
        self.bar.set_style(
            ProgressStyle::with_template(template)
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .with_key("left", left),
        );
        // Redraw every second, so the countdowns move between samples.
        self.bar.enable_steady_tick(Duration::from_secs(1));
    }

    fn recorded(&mut self, row: &SampleRow, spent_usd: f64) {
        self.note(
            row.phase,
            row.sample.warmup,
            row.sample.is_ok(),
            row.sample.e2e_ms,
            Instant::now(),
        );
        self.bar.inc(1);
        // A connection the app closed costs a warm-up more than planned.
        if self.bar.length().is_some_and(|l| self.bar.position() > l) {
            self.bar.set_length(self.bar.position());
        }
        let ttft = row
            .sample
            .ttft_ms
            .map(|t| format!(" · TTFT {}", firsttoken_report::format::ms(t)))
            .unwrap_or_default();
        self.bar.set_message(format!(
            " · {}{}{ttft} · {} failed · ${spent_usd:.4}",
            row.phase,
            if row.sample.warmup { " warm-up" } else { "" },
            self.failed
        ));
    }

    fn measured(&mut self) {
        self.bar.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_countdowns_move_between_samples() {
        let t0 = Instant::now();
        let c = Clock {
            left: Duration::from_secs(90),
            at: t0,
            idle: Some((t0, Duration::from_secs(30))),
        };
        assert_eq!(
            c.render(t0 + Duration::from_millis(10_500)),
            "idle before a cold probe: 20s · ~1m 20s left"
        );
        // Past the gap and the estimate, both stop at zero.
        let late = c.render(t0 + Duration::from_secs(200));
        assert_eq!(late, "idle before a cold probe: 0s · ~0s left");
        let busy = Clock { idle: None, ..c };
        assert_eq!(busy.render(t0 + Duration::from_secs(30)), "~1m left");
    }

    #[test]
    fn an_idle_gap_is_under_way_once_the_step_before_it_is_stored() {
        use firsttoken_plan::protocol::{Dest, Planned};
        let p = |phase| Planned {
            phase,
            dest: Dest::App(0),
            fresh: false,
            concurrency: None,
            prompt: 0,
            turn: None,
        };
        let gap = Duration::from_secs(30);
        let protocol = Protocol {
            steps: vec![
                Step::One(p(PhaseKind::Warm)),
                Step::One(p(PhaseKind::Warm)),
                Step::AfterIdle(gap, p(PhaseKind::Cold)),
                Step::AfterIdle(gap, p(PhaseKind::Cold)),
            ],
        };
        let mut pr = Progress::new(true, &protocol);
        pr.announced = 5;
        let t0 = Instant::now();
        let idle = |pr: &Progress| pr.clock.lock().unwrap().idle;
        // A warm-up and the first counted request: the second is still ahead.
        pr.note(PhaseKind::Warm, true, true, Some(100.0), t0);
        pr.note(PhaseKind::Warm, false, true, Some(100.0), t0);
        assert_eq!(idle(&pr), None);
        // Both gaps are ahead in the estimate: 60 s plus 3 requests.
        assert_eq!(pr.eta(), Duration::from_millis(60_300));
        let t1 = t0 + Duration::from_secs(1);
        pr.note(PhaseKind::Warm, false, true, Some(100.0), t1);
        assert_eq!(idle(&pr), Some((t1, gap)));
        let t2 = t1 + gap;
        pr.note(PhaseKind::Cold, false, false, Some(100.0), t2);
        assert_eq!(idle(&pr), Some((t2, gap)), "the second gap follows");
        assert_eq!(pr.failed, 1);
        pr.note(PhaseKind::Cold, false, true, Some(100.0), t2 + gap);
        assert_eq!(idle(&pr), None);
        assert!(pr.gaps.is_empty());
    }
}
