//! The step executor against loopback servers: bursts start together,
//! arrivals start at their intended instants (both under tokio's paused
//! clock), cancellation accounts for every request, the gate stops a run,
//! a panic is an error, and warm-ups never exceed the announced work.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use common::*;
use firsttoken_drive::{
    DriveError, Finished, Gate, GateAnswer, RequestSource, SessionSample, StepWait, Stop,
    Unlimited, run_session,
};
use firsttoken_plan::protocol::{Dest, PhaseKind, Planned, Protocol, Step};
use firsttoken_plan::{ConnectionMode, ProbeSpec, RequestTemplate};
use firsttoken_record::Connection;

/// `App(i)` goes to `specs[i]`; counts every request it builds (= started);
/// panics when asked for prompt `panic_on`.
struct Source {
    specs: Vec<ProbeSpec>,
    built: AtomicUsize,
    panic_on: Option<usize>,
}

impl Source {
    fn new(urls: &[String]) -> Arc<Source> {
        Arc::new(Source {
            specs: urls
                .iter()
                .map(|u| {
                    let mut s = spec(u);
                    // Long enough that a request left running would outlive every bound below.
                    s.timeouts.request = Duration::from_secs(60);
                    s
                })
                .collect(),
            built: AtomicUsize::new(0),
            panic_on: None,
        })
    }

    fn built(&self) -> usize {
        self.built.load(Ordering::SeqCst)
    }
}

impl RequestSource for Source {
    fn spec(&self, dest: Dest) -> &ProbeSpec {
        match dest {
            Dest::App(i) => &self.specs[i],
            _ => &self.specs[0],
        }
    }
    fn request(&self, planned: &Planned) -> RequestTemplate {
        if self.panic_on == Some(planned.prompt) {
            panic!("no request for prompt {}", planned.prompt);
        }
        self.built.fetch_add(1, Ordering::SeqCst);
        self.spec(planned.dest).request.clone()
    }
}

/// Says yes to `n` more requests while at most `left` remain.
struct UpTo(Mutex<usize>);

impl Gate for UpTo {
    fn allows<'a>(&'a self, requests: &'a [Dest]) -> GateAnswer<'a> {
        let mut left = self.0.lock().unwrap();
        let ok = *left >= requests.len();
        if ok {
            *left -= requests.len();
        }
        Box::pin(std::future::ready(ok))
    }
}

fn planned(dest: usize, fresh: bool, prompt: usize) -> Planned {
    Planned {
        phase: PhaseKind::Concurrency,
        dest: Dest::App(dest),
        fresh,
        concurrency: None,
        prompt,
        turn: None,
    }
}

/// A stream of ~21 ms on tokio's clock (the emulator schedules on the
/// monotonic clock, which a paused tokio clock does not move).
async fn paced_server() -> ScriptServer {
    let chunks = vec![
        (Duration::from_millis(20), oa_role()),
        (Duration::from_millis(1), oa_content("A")),
        (Duration::ZERO, oa_done()),
    ];
    script_server(Reply::ok(SSE, chunks)).await
}

fn fast_emulator_settings() -> firsttoken_emulator::Settings {
    firsttoken_emulator::Settings {
        ttft: Duration::from_millis(20),
        itl: Duration::from_millis(1),
        tokens: 2,
        ..Default::default()
    }
}

/// Run `protocol`, cancelling after `cancel_after` (if given); the samples
/// and the result, failing when the channel stays open 30 s.
async fn run(
    protocol: Protocol,
    source: Arc<Source>,
    gate: Arc<dyn Gate>,
    cancel_after: Option<Duration>,
) -> (Vec<SessionSample>, Result<Finished, DriveError>) {
    let (tx, mut rx) = mpsc::channel(1024);
    let cancel = CancellationToken::new();
    if let Some(after) = cancel_after {
        let c = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            c.cancel();
        });
    }
    let handle =
        tokio::spawn(async move { run_session(&protocol, source, gate, tx, cancel).await });
    let collect = async {
        let mut out = Vec::new();
        while let Some(s) = rx.recv().await {
            out.push(s);
        }
        out
    };
    let samples = tokio::time::timeout(Duration::from_secs(30), collect)
        .await
        .expect("the sample channel closes");
    let result = tokio::time::timeout(Duration::from_secs(5), handle)
        .await
        .expect("run_session returns once its channel closed")
        .expect("run_session itself never panics");
    (samples, result)
}

#[tokio::test(start_paused = true)]
async fn a_burst_starts_together_after_its_warmups() {
    let server = paced_server().await;
    let source = Source::new(&[server.url()]);
    let k = 8;
    let protocol = Protocol {
        steps: vec![Step::Burst((0..k).map(|i| planned(0, false, i)).collect())],
    };
    let (samples, result) = run(protocol.clone(), source.clone(), Arc::new(Unlimited), None).await;
    assert_eq!(result.unwrap().stop, Stop::Complete);
    // Every slot was cold: k warm-ups, then k measured requests; nothing beyond the announced work.
    assert_eq!(samples.len(), protocol.announced(), "{samples:#?}");
    assert_eq!(source.built(), 2 * k);
    let (warmups, measured): (Vec<_>, Vec<_>) = samples.iter().partition(|s| s.sample.warmup);
    assert_eq!((warmups.len(), measured.len()), (k, k));
    let last_warmup = warmups.iter().map(|s| s.actual_start).max().unwrap();
    let first = measured.iter().map(|s| s.actual_start).min().unwrap();
    let last = measured.iter().map(|s| s.actual_start).max().unwrap();
    assert!(
        first > last_warmup,
        "measured requests wait for every warm-up"
    );
    assert!(
        last - first <= Duration::from_millis(1),
        "a burst's requests start within 1 ms: {first:?}..{last:?}"
    );
    let mut workers: Vec<u32> = measured.iter().map(|s| s.sample.worker).collect();
    workers.sort_unstable();
    assert_eq!(workers, (0..k as u32).collect::<Vec<_>>());
    for s in &measured {
        assert_ok(&s.sample);
        assert_eq!(s.sample.connection, Connection::Reused, "warmed up: {s:#?}");
    }
}

#[tokio::test(start_paused = true)]
async fn arrivals_start_at_their_intended_instants() {
    let server = paced_server().await;
    let source = Source::new(&[server.url()]);
    // Every 10 ms while each takes ~20 ms: the open loop overlaps requests.
    let offsets: Vec<Duration> = (0..10).map(|i| Duration::from_millis(10 * i)).collect();
    let protocol = Protocol {
        steps: vec![
            Step::One(planned(0, false, 0)),
            Step::Arrivals(
                offsets
                    .iter()
                    .enumerate()
                    .map(|(i, o)| (*o, planned(0, false, i)))
                    .collect(),
            ),
        ],
    };
    let (samples, result) = run(protocol.clone(), source, Arc::new(Unlimited), None).await;
    assert_eq!(result.unwrap().stop, Stop::Complete);
    assert_eq!(
        samples.len(),
        1 + 1 + offsets.len(),
        "one warm-up, no warm-up for arrivals"
    );
    let mut arrivals: Vec<&SessionSample> = samples
        .iter()
        .filter(|s| s.intended_start.is_some())
        .collect();
    arrivals.sort_by_key(|s| s.intended_start);
    assert_eq!(arrivals.len(), offsets.len());
    let step_start = arrivals[0].intended_start.unwrap();
    for (s, offset) in arrivals.iter().zip(&offsets) {
        let intended = s.intended_start.unwrap();
        assert_eq!(intended - step_start, *offset);
        let lag = s.actual_start.checked_sub(intended).expect("never early");
        assert!(lag <= Duration::from_millis(1), "late by {lag:?}: {s:#?}");
        assert_ok(&s.sample);
    }
    // Overlapping arrivals need more than one connection from the pool.
    let mut workers: Vec<u32> = arrivals.iter().map(|s| s.sample.worker).collect();
    workers.sort_unstable();
    workers.dedup();
    assert!(workers.len() > 1, "{workers:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_burst_accounts_for_every_request_within_a_second() {
    // Regression (issue 8, defect 2): bursts were detached tasks, so after
    // cancel the channel stayed open until the request timeout (60 s here)
    // and a burst's finished results were thrown away.
    let emu = emulator(fast_emulator_settings(), None).await;
    let silent = silent_server().await;
    let source = Source::new(&[
        format!("http://{}/v1/chat/completions", emu.addr),
        format!("http://{}/v1/chat/completions", silent.addr),
    ]);
    let burst = (0..6).map(|i| planned(i % 2, true, i)).collect();
    let protocol = Protocol {
        steps: vec![Step::Burst(burst), Step::One(planned(0, true, 9))],
    };
    let started = std::time::Instant::now();
    let (samples, result) = run(
        protocol,
        source.clone(),
        Arc::new(Unlimited),
        Some(Duration::from_millis(500)),
    )
    .await;
    let took = started.elapsed();
    assert!(
        took < Duration::from_millis(1500),
        "the run ends within 1 s of the cancel: {took:?}"
    );
    let f = result.unwrap();
    assert_eq!(f.stop, Stop::Cancelled);
    // The 3 emulator requests finished and were emitted; the 3 silent ones were abandoned.
    assert_eq!(samples.len(), 3, "{samples:#?}");
    assert!(samples.iter().all(|s| s.sample.is_ok()));
    assert_eq!(f.cancelled_in_flight, 3);
    assert_eq!(
        samples.len() as u64 + f.cancelled_in_flight,
        source.built() as u64
    );
}

#[tokio::test(start_paused = true)]
async fn cancelling_arrivals_emits_the_finished_and_counts_the_abandoned() {
    // Regression (issue 8, defect 2): arrivals were detached tasks holding
    // the sender, so after cancel the channel stayed open until the request
    // timeout (60 s; the collector gives up after 30 s).
    let server = paced_server().await;
    let silent = silent_server().await;
    let source = Source::new(&[
        server.url(),
        format!("http://{}/v1/chat/completions", silent.addr),
    ]);
    // Every 10 ms, alternately to the paced server (~21 ms) and the silent one.
    let arrivals = (0..20)
        .map(|i| {
            (
                Duration::from_millis(10 * i as u64),
                planned(i % 2, true, i),
            )
        })
        .collect();
    let protocol = Protocol {
        steps: vec![Step::Arrivals(arrivals)],
    };
    let t0 = tokio::time::Instant::now();
    let (samples, result) = run(
        protocol,
        source.clone(),
        Arc::new(Unlimited),
        Some(Duration::from_millis(55)),
    )
    .await;
    assert!(
        t0.elapsed() < Duration::from_millis(1055),
        "{:?}",
        t0.elapsed()
    );
    let f = result.unwrap();
    assert_eq!(f.stop, Stop::Cancelled);
    // Arrivals at 0..=50 ms started: those at 0 and 20 ms finished and were
    // emitted; the one at 40 ms and the silent ones were abandoned.
    assert_eq!(source.built(), 6);
    assert_eq!(
        (samples.len(), f.cancelled_in_flight),
        (2, 4),
        "{f:?} {samples:#?}"
    );
    assert!(samples.iter().all(|s| s.sample.is_ok()), "{samples:#?}");
}

#[tokio::test(start_paused = true)]
async fn the_gate_stops_every_kind_of_step() {
    let server = paced_server().await;
    let url = server.url();
    let cases = [
        // 5 warm single requests: the first with its warm-up (2), then 1 each.
        (Step::One(planned(0, false, 0)), 5, 3, "single requests"),
        // Closed loop, 2 workers: 2 warm-ups + 2 first requests, then one at a time.
        (
            Step::closed(2, 20, planned(0, false, 0)),
            1,
            5,
            "closed loop",
        ),
        // Open-loop arrivals (regression: they ran past the budget and reported Complete).
        (
            Step::Arrivals(
                (0..10)
                    .map(|i| (Duration::from_millis(5 * i), planned(0, true, 0)))
                    .collect(),
            ),
            1,
            3,
            "arrivals",
        ),
    ];
    for (step, repeat, allowed, what) in cases {
        let source = Source::new(std::slice::from_ref(&url));
        let protocol = Protocol {
            steps: vec![step; repeat],
        };
        let gate = Arc::new(UpTo(Mutex::new(allowed)));
        let (samples, result) = run(protocol, source.clone(), gate, None).await;
        assert_eq!(result.unwrap().stop, Stop::Budget, "{what}");
        assert_eq!(samples.len(), allowed, "{what}: {samples:#?}");
        assert_eq!(source.built(), allowed, "{what}");
    }
}

/// Holds the run before every step after the first `free` ones until
/// `release` is notified; counts the steps it was asked about.
struct HoldAfter {
    free: usize,
    asked: AtomicUsize,
    release: tokio::sync::Notify,
}

impl Gate for HoldAfter {
    fn allows<'a>(&'a self, _requests: &'a [Dest]) -> GateAnswer<'a> {
        Box::pin(std::future::ready(true))
    }
    fn between_steps(&self) -> StepWait<'_> {
        let k = self.asked.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            if k >= self.free {
                self.release.notified().await;
            }
        })
    }
}

#[tokio::test(start_paused = true)]
async fn a_paused_gate_holds_the_run_between_steps_and_cancel_still_ends_it() {
    let server = paced_server().await;
    let source = Source::new(&[server.url()]);
    // Three single requests and a burst of three; the gate lets the first
    // two steps through, then holds.
    let mut steps = vec![Step::One(planned(0, false, 0)); 2];
    steps.push(Step::Burst(vec![planned(0, true, 0); 3]));
    let protocol = Protocol { steps };
    let gate = Arc::new(HoldAfter {
        free: 2,
        asked: AtomicUsize::new(0),
        release: tokio::sync::Notify::new(),
    });
    // Held: after 10 s (paused clock) the two first steps are done, the
    // burst has not started, and cancelling ends the run cleanly.
    let (samples, result) = run(
        protocol.clone(),
        source.clone(),
        gate.clone(),
        Some(Duration::from_secs(10)),
    )
    .await;
    assert_eq!(result.unwrap().stop, Stop::Cancelled);
    let counted = samples.iter().filter(|s| !s.sample.warmup).count();
    assert_eq!(counted, 2, "{samples:#?}");
    assert_eq!(gate.asked.load(Ordering::SeqCst), 3);
    // Released after a second: everything runs, the burst still together.
    let source = Source::new(&[server.url()]);
    let gate = Arc::new(HoldAfter {
        free: 2,
        asked: AtomicUsize::new(0),
        release: tokio::sync::Notify::new(),
    });
    let g = gate.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(1)).await;
        g.release.notify_one();
    });
    let (samples, result) = run(protocol, source, gate, None).await;
    assert_eq!(result.unwrap().stop, Stop::Complete);
    assert_eq!(samples.iter().filter(|s| !s.sample.warmup).count(), 5);
}

#[tokio::test(start_paused = true)]
async fn a_panicking_lane_is_an_error_not_silence() {
    // Regression (issue 8, defect 4): a burst task's panic was dropped
    // (`if let Ok(..) = handle.await`) and the run read as complete.
    let server = paced_server().await;
    let silent = silent_server().await;
    let mut source = Source::new(&[
        server.url(),
        format!("http://{}/v1/chat/completions", silent.addr),
    ]);
    Arc::get_mut(&mut source).unwrap().panic_on = Some(3);
    let protocol = Protocol {
        steps: vec![
            Step::Burst(
                (0..4)
                    .map(|i| planned(usize::from(i == 1), true, i))
                    .collect(),
            ),
            Step::One(planned(0, true, 0)),
        ],
    };
    let (samples, result) = run(protocol, source, Arc::new(Unlimited), None).await;
    match result {
        Err(DriveError::Panicked(m)) => assert!(m.contains("prompt 3"), "{m}"),
        other => panic!("expected a panic error, got {other:?}"),
    }
    assert!(
        samples.len() <= 2,
        "the step after the panic never ran: {samples:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_probe_never_has_more_workers_than_requests() {
    // Regression (issue 8, defect 3): `-c 50 -n 1` warmed up 50 workers and sent 51 requests.
    let reply = Reply::ok(SSE, at_once([oa_role(), oa_content("A"), oa_done()]));
    let server = script_server(reply).await;
    let mut s = spec(&server.url());
    s.mode = ConnectionMode::Warm;
    s.concurrency = 50;
    s.requests = 1;
    let announced = Protocol::probe(&s).announced();
    let samples = probe(s).await;
    assert_eq!(
        samples.len(),
        2,
        "one warm-up and one request: {samples:#?}"
    );
    assert_eq!(server.requests(), 2);
    assert_eq!(announced, 2);
    assert!(samples[0].warmup && !samples[1].warmup);
}

const SSE: &str = "text/event-stream";
