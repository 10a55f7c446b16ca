//! The simulation thread: owns the [`Session`], takes commands, streams updates.
//!
//! The UI thread never touches the simulation. It sends [`Cmd`]s and drains [`Update`]s
//! each frame, so it never blocks on a run, however fast or slow.
//!
//! Key design decision: while running, the worker stops at every sampling-bucket boundary
//! and reads the run's summary there (cumulative counts → per-bucket deltas: throughput,
//! goodput, 429s, retries, degraded). Where it stops depends only on simulated time, never
//! on wall-clock pacing, so the plotted series are the same whatever the speed; and
//! stopping, reading and resuming never changes a run (the loop is resumable).
//!
//! A panic inside the model is caught and shown as the session's error; the UI lives on.

use crate::session::{RecordedChange, Selection, Session};
use models::params::ParamValue;
use models::summary::{Summary, Value};
use models::world::ModelEvent;
use sim_core::metrics::SeriesRow;
use sim_core::{SimDuration, SimTime};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc::{Receiver, Sender, TryRecvError, channel};
use std::time::{Duration, Instant};

/// Run speed: a multiple of real time, or as fast as possible.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Speed {
    Times(f64),
    Max,
}

/// What the UI asks of the worker.
#[derive(Clone, Debug)]
pub enum Cmd {
    /// Replace the session (open, reset with the same or a new seed, new overrides).
    Open(Selection),
    Run,
    Pause,
    Step,
    NextInstant,
    RunUntil(SimTime),
    SetSpeed(Speed),
    Apply(String, ParamValue),
    Rewind(SimTime),
    Quit,
}

/// Live figures of the session.
#[derive(Clone, Debug, Default)]
pub struct Status {
    pub now: SimTime,
    pub end: SimTime,
    pub events: u64,
    pub running: bool,
    pub finished: bool,
    /// Events processed per wall-clock second, over the last publishing interval.
    pub events_per_s: f64,
    /// Simulated seconds per wall-clock second, over the last publishing interval.
    pub sim_to_real: f64,
    /// Every gauge's current value (`gate.llm.in_use` …).
    pub gauges: Vec<(String, i64)>,
    /// Every counter's run-wide total.
    pub counters: Vec<(String, u64)>,
    pub fingerprint: Option<String>,
    pub error: Option<String>,
}

/// What the worker tells the UI.
#[derive(Debug)]
pub enum Update {
    /// A new session (opened, reset or rewound): the UI clears what it holds of the old.
    Session {
        generation: u64,
        seed: u64,
        end: SimTime,
        sample_every: Option<SimDuration>,
    },
    Status(Box<Status>),
    /// Closed buckets of the engine's time series, in order.
    Rows(Vec<SeriesRow>),
    /// Per-bucket deltas of the summary's counts (`summary.<name>` at the bucket's end).
    Derived(Vec<SeriesRow>),
    /// New model events (breaker transitions, configuration changes…), in time order.
    Events(Vec<ModelEvent>),
    /// The recorded changes, whole.
    Changes(Vec<RecordedChange>),
    /// The latest summary (final once finished).
    Summary(Box<Summary>),
    /// A refused command (a bad change, an open that failed): shown, nothing changed.
    Refused(String),
    /// The exported text of the session (answer to [`Cmd`]-less `export` requests).
    Exported(Result<String, String>),
}

/// The UI's handle on the worker thread.
pub struct Worker {
    tx: Sender<Msg>,
    pub rx: Receiver<Update>,
    thread: Option<std::thread::JoinHandle<()>>,
}

enum Msg {
    Cmd(Cmd),
    Export(String),
}

impl Worker {
    /// Starts the thread. `wake` is called after each batch of updates (the UI's repaint).
    pub fn spawn(wake: impl Fn() + Send + 'static) -> Worker {
        let (tx, crx) = channel::<Msg>();
        let (utx, rx) = channel::<Update>();
        let thread = std::thread::Builder::new()
            .name("stormglass-sim".into())
            .spawn(move || Loop::new(crx, utx, Box::new(wake)).run())
            .expect("the simulation thread starts");
        Worker { tx, rx, thread: Some(thread) }
    }
    pub fn send(&self, c: Cmd) {
        // The worker lives as long as this handle; a send fails only after a panic there.
        let _ = self.tx.send(Msg::Cmd(c));
    }
    /// Asks for the session's experiment text; the answer comes as [`Update::Exported`].
    pub fn export(&self, name: &str) {
        let _ = self.tx.send(Msg::Export(name.to_string()));
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.tx.send(Msg::Cmd(Cmd::Quit));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Most events per chunk between two looks at the command queue.
const CHUNK_EVENTS: u64 = 20_000;
/// Least wall time between two status updates.
const PUBLISH_EVERY: Duration = Duration::from_millis(30);

struct Loop {
    rx: Receiver<Msg>,
    tx: Sender<Update>,
    wake: Box<dyn Fn() + Send>,
    session: Option<Session>,
    generation: u64,
    running: bool,
    speed: Speed,
    /// Pacing anchor: (wall instant, simulated time) when the speed or run state changed.
    anchor: (Instant, SimTime),
    until: Option<SimTime>,
    rows_sent: usize,
    events_sent: usize,
    last_summary: Vec<(String, f64)>,
    last_publish: (Instant, u64, SimTime),
    error: Option<String>,
}

fn panic_text(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "a panic with a non-string payload".into())
}

impl Loop {
    fn new(rx: Receiver<Msg>, tx: Sender<Update>, wake: Box<dyn Fn() + Send>) -> Loop {
        Loop {
            rx,
            tx,
            wake,
            session: None,
            generation: 0,
            running: false,
            speed: Speed::Times(10.0),
            anchor: (Instant::now(), SimTime::ZERO),
            until: None,
            rows_sent: 0,
            events_sent: 0,
            last_summary: Vec::new(),
            last_publish: (Instant::now(), 0, SimTime::ZERO),
            error: None,
        }
    }

    fn send(&self, u: Update) {
        let _ = self.tx.send(u);
    }

    fn run(mut self) {
        loop {
            let msg = if self.running {
                match self.rx.try_recv() {
                    Ok(m) => Some(m),
                    Err(TryRecvError::Empty) => None,
                    Err(TryRecvError::Disconnected) => return,
                }
            } else {
                match self.rx.recv() {
                    Ok(m) => Some(m),
                    Err(_) => return,
                }
            };
            match msg {
                Some(Msg::Cmd(Cmd::Quit)) => return,
                Some(Msg::Cmd(c)) => self.command(c),
                Some(Msg::Export(name)) => {
                    let r = match &self.session {
                        Some(s) => crate::export::session_text(s, &name),
                        None => Err("no session is open".into()),
                    };
                    self.send(Update::Exported(r));
                    (self.wake)();
                }
                None => {}
            }
            if self.running {
                self.advance();
            }
        }
    }

    fn guarded(&mut self, force: bool, f: impl FnOnce(&mut Session) -> Result<(), String>) {
        let Some(s) = self.session.as_mut() else { return };
        match catch_unwind(AssertUnwindSafe(|| f(s))) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                self.running = false;
                self.error = Some(e);
            }
            Err(p) => {
                self.running = false;
                self.error = Some(format!("the simulation panicked: {}", panic_text(p)));
                self.session = None;
            }
        }
        if self.session.as_ref().is_some_and(|s| s.is_finished()) {
            self.running = false;
        }
        self.publish(force || !self.running);
    }

    fn command(&mut self, c: Cmd) {
        match c {
            Cmd::Open(sel) => match catch_unwind(AssertUnwindSafe(|| Session::open(sel))) {
                Ok(Ok(s)) => self.install(s),
                Ok(Err(e)) => self.refuse(e),
                Err(p) => self.refuse(format!("opening panicked: {}", panic_text(p))),
            },
            Cmd::Run => {
                self.running = self.session.as_ref().is_some_and(|s| !s.is_finished());
                self.until = None;
                self.reanchor();
                self.publish(true);
            }
            Cmd::Pause => {
                self.running = false;
                self.publish(true);
            }
            Cmd::Step => {
                self.running = false;
                self.guarded(true, |s| s.step().map(|_| ()));
            }
            Cmd::NextInstant => {
                self.running = false;
                self.guarded(true, |s| s.next_instant().map(|_| ()));
            }
            Cmd::RunUntil(t) => {
                self.until = Some(t);
                self.running = self.session.as_ref().is_some_and(|s| !s.is_finished());
                self.reanchor();
            }
            Cmd::SetSpeed(sp) => {
                self.speed = sp;
                self.reanchor();
            }
            Cmd::Apply(path, value) => {
                let Some(s) = self.session.as_mut() else { return };
                let gen_before = s.changes().iter().filter(|c| c.at > s.now()).count();
                match catch_unwind(AssertUnwindSafe(|| s.apply(&path, value))) {
                    Ok(Ok(_)) => {
                        if gen_before > 0 {
                            // A branch rebuilt the session: resend everything.
                            let s = self.session.take().expect("open");
                            self.install(s);
                        }
                        let changes = self.session.as_ref().map(|s| s.changes().to_vec());
                        self.send(Update::Changes(changes.unwrap_or_default()));
                        self.publish(true);
                    }
                    Ok(Err(e)) => self.refuse(e),
                    Err(p) => self.refuse(format!("the change panicked: {}", panic_text(p))),
                }
            }
            Cmd::Rewind(t) => {
                let Some(mut s) = self.session.take() else { return };
                self.running = false;
                match catch_unwind(AssertUnwindSafe(|| s.rewind(t).map(|_| s))) {
                    Ok(Ok(s)) => self.install(s),
                    Ok(Err(e)) => self.refuse(e),
                    Err(p) => self.refuse(format!("the rewind panicked: {}", panic_text(p))),
                }
            }
            Cmd::Quit => {}
        }
    }

    fn refuse(&mut self, e: String) {
        self.send(Update::Refused(e));
        (self.wake)();
    }

    /// Makes `s` the session and sends the UI everything it has so far.
    fn install(&mut self, s: Session) {
        self.generation += 1;
        self.error = None;
        self.rows_sent = 0;
        self.events_sent = 0;
        self.last_summary.clear();
        self.send(Update::Session {
            generation: self.generation,
            seed: s.seed(),
            end: s.end(),
            sample_every: s.sample_every(),
        });
        self.send(Update::Changes(s.changes().to_vec()));
        self.session = Some(s);
        self.reanchor();
        self.publish(true);
    }

    fn reanchor(&mut self) {
        let now = self.session.as_ref().map(|s| s.now()).unwrap_or(SimTime::ZERO);
        self.anchor = (Instant::now(), now);
    }

    /// One chunk of a running session: to the pacing target, the next bucket boundary or
    /// `CHUNK_EVENTS` events, whichever comes first.
    fn advance(&mut self) {
        let Some(s) = self.session.as_ref() else {
            self.running = false;
            return;
        };
        if s.is_finished() {
            self.running = false;
            self.publish(true);
            return;
        }
        let now = s.now();
        let mut target = match self.speed {
            Speed::Max => s.end(),
            Speed::Times(k) => {
                let wall = self.anchor.0.elapsed().as_secs_f64();
                self.anchor.1 + SimDuration::from_ns_f64(wall * k * 1e9)
            }
        };
        if let Some(u) = self.until {
            target = target.min(u);
        }
        if let Some(every) = s.sample_every() {
            let next_boundary = SimTime((now.0 / every.0 + 1) * every.0);
            target = target.min(next_boundary);
        }
        let target = target.min(s.end());
        if target <= now {
            if self.until.is_some_and(|u| now >= u) {
                self.running = false;
                self.until = None;
                self.publish(true);
                return;
            }
            // Ahead of the wall clock: wait a little (commands still arrive).
            std::thread::sleep(Duration::from_millis(4));
            self.publish(false);
            return;
        }
        self.guarded(false, |s| s.advance(target, CHUNK_EVENTS).map(|_| ()));
    }

    /// Sends what is new (rows, events, derived series, status); a status at most every
    /// `PUBLISH_EVERY` unless `force`.
    fn publish(&mut self, force: bool) {
        let Some(s) = self.session.as_ref() else {
            if force {
                let st = Status { error: self.error.clone(), ..Status::default() };
                self.send(Update::Status(Box::new(st)));
                (self.wake)();
            }
            return;
        };
        // Series rows and the derived per-bucket summary deltas: sent as they close, so the
        // plots are the same whatever the publishing rate.
        if let Some(sim) = s.sim() {
            let rows = sim.series();
            if rows.len() > self.rows_sent {
                let new = rows[self.rows_sent..].to_vec();
                self.rows_sent = rows.len();
                let at = new.last().map(|r| r.bucket_start_ns).unwrap_or(0);
                self.send(Update::Rows(new));
                let sum = sim.world().summary(s.now());
                let derived = deltas(&mut self.last_summary, &sum, at);
                self.send(Update::Derived(derived));
            }
            let ev = sim.world().events();
            if ev.len() > self.events_sent {
                self.send(Update::Events(ev[self.events_sent..].to_vec()));
                self.events_sent = ev.len();
            }
        }
        let (t0, e0, s0) = self.last_publish;
        let dt = t0.elapsed();
        if !force && dt < PUBLISH_EVERY {
            return;
        }
        let events = s.events_processed();
        let now = s.now();
        let secs = dt.as_secs_f64().max(1e-9);
        let mut st = Status {
            now,
            end: s.end(),
            events,
            running: self.running,
            finished: s.is_finished(),
            events_per_s: events.saturating_sub(e0) as f64 / secs,
            sim_to_real: (now.0.saturating_sub(s0.0)) as f64 / 1e9 / secs,
            fingerprint: s.fingerprint(),
            error: self.error.clone(),
            ..Status::default()
        };
        if let Some(sim) = s.sim() {
            st.gauges = sim.metrics().gauge_readings().map(|(p, v)| (p.to_string(), v)).collect();
            st.counters =
                sim.metrics().counter_readings().map(|(p, v)| (p.to_string(), v)).collect();
            self.send(Update::Summary(Box::new(sim.world().summary(now))));
        } else if let Some(o) = s.output() {
            self.send(Update::Summary(Box::new(o.summary.clone())));
            // The last rows: the run's end closed the final (possibly partial) bucket.
            if o.series.len() > self.rows_sent {
                self.send(Update::Rows(o.series[self.rows_sent..].to_vec()));
                self.rows_sent = o.series.len();
            }
            if o.state_events.len() > self.events_sent {
                self.send(Update::Events(o.state_events[self.events_sent..].to_vec()));
                self.events_sent = o.state_events.len();
            }
        }
        self.send(Update::Status(Box::new(st)));
        self.last_publish = (Instant::now(), events, now);
        (self.wake)();
    }
}

/// Summary counts worth a per-bucket rate (suffixes of `source.*` / `class.*` / governor
/// columns).
const RATE_SUFFIXES: &[&str] = &[
    "offered",
    "completed",
    "success",
    "degraded",
    "failed",
    "rejected",
    "retries",
    "not_permitted",
    "rejected_429",
];

fn is_rate(name: &str) -> bool {
    let leaf = name.rsplit('.').next().unwrap_or("");
    RATE_SUFFIXES.contains(&leaf)
        || leaf.ends_with("_upstream_429")
        || (leaf.starts_with("degraded_") && !leaf.contains("ms"))
}

/// Per-bucket deltas of the summary's counts since the previous call, as rows
/// `summary.<name>` stamped with the bucket start `at_ns`.
fn deltas(prev: &mut Vec<(String, f64)>, sum: &Summary, at_ns: u64) -> Vec<SeriesRow> {
    let now: Vec<(String, f64)> = sum
        .values
        .iter()
        .filter(|(n, _)| is_rate(n))
        .map(|(n, v)| {
            let x = match v {
                Value::U64(x) => *x as f64,
                Value::F64(x) => *x,
            };
            (n.clone(), x)
        })
        .collect();
    let mut out = Vec::with_capacity(now.len());
    for (name, x) in &now {
        let before = prev.iter().find(|(n, _)| n == name).map(|p| p.1).unwrap_or(0.0);
        out.push(SeriesRow {
            bucket_start_ns: at_ns,
            metric: format!("summary.{name}"),
            value: x - before,
        });
    }
    *prev = now;
    out
}
