//! The simulation thread: owns the [`Run`] (the live session), takes commands, streams
//! updates.
//!
//! The UI thread never touches the simulation. It sends [`Cmd`]s and drains [`Update`]s
//! each frame, so it never blocks on a run, however fast or slow.
//!
//! Key design decision: the per-bucket rates (throughput, goodput, 429s, retries,
//! degraded) are derived by the session itself at every bucket boundary it crosses
//! ([`crate::derived`]), whatever drives it: a paced run, a step, a run until, a rewind's
//! re-simulation. They depend only on simulated time, never on wall-clock pacing or on
//! when the worker publishes; and stopping, reading and resuming never changes a run (the
//! loop is resumable).
//!
//! A panic inside the model is caught and shown as the session's error; the UI lives on.

use crate::session::{Observed, Run, Selection};
use models::params::ParamValue;
use models::scenario::SetParam;
use models::summary::Summary;
use models::world::ModelEvent;
use sim_core::metrics::SeriesRow;
use sim_core::{SimDuration, SimTime};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
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
    /// A change typed as RON text (`Exponential(mean: "1s")`), parsed with the
    /// parameter's type.
    ApplyText(String, String),
    Rewind(SimTime),
    /// Write the session as an experiment file (answered by [`Update::Exported`]).
    Export(PathBuf),
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
    /// Metrics, values in force and component states now.
    pub observed: Observed,
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
    /// The recorded changes, whole (each stamped with its instant `at`).
    Changes(Vec<SetParam<ParamValue>>),
    /// The latest summary (final once finished).
    Summary(Box<Summary>),
    /// The session's row of the `runs` table (column, value), from the same summary.
    RunsRow(Vec<(String, String)>),
    /// A refused command (a bad change, an open that failed): shown, nothing changed.
    Refused(String),
    /// The file a [`Cmd::Export`] wrote, or why it could not.
    Exported(Result<PathBuf, String>),
}

/// The UI's handle on the worker thread.
pub struct Worker {
    tx: Sender<Cmd>,
    pub rx: Receiver<Update>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Worker {
    /// Starts the thread. `wake` is called after each batch of updates (the UI's repaint).
    pub fn spawn(wake: impl Fn() + Send + 'static) -> Worker {
        let (tx, crx) = channel::<Cmd>();
        let (utx, rx) = channel::<Update>();
        let thread = std::thread::Builder::new()
            .name("stormglass-sim".into())
            .spawn(move || Loop::new(crx, utx, Box::new(wake)).run())
            .expect("the simulation thread starts");
        Worker { tx, rx, thread: Some(thread) }
    }
    pub fn send(&self, c: Cmd) {
        // The worker lives as long as this handle; a send fails only after a panic there.
        let _ = self.tx.send(c);
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.tx.send(Cmd::Quit);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Most events per chunk between two looks at the command queue.
const CHUNK_EVENTS: u64 = 20_000;
/// Least wall time between two status updates.
const PUBLISH_EVERY: Duration = Duration::from_millis(30);
/// The wall-time granularity of a paced run (a multiple of real time): it advances when at
/// least this much is due.
const PACE_STEP: Duration = Duration::from_millis(4);

struct Loop {
    rx: Receiver<Cmd>,
    tx: Sender<Update>,
    wake: Box<dyn Fn() + Send>,
    session: Option<Run>,
    generation: u64,
    running: bool,
    speed: Speed,
    /// Pacing anchor: (wall instant, simulated time) when the speed or run state changed.
    anchor: (Instant, SimTime),
    until: Option<SimTime>,
    rows_sent: usize,
    derived_sent: usize,
    events_sent: usize,
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
    fn new(rx: Receiver<Cmd>, tx: Sender<Update>, wake: Box<dyn Fn() + Send>) -> Loop {
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
            derived_sent: 0,
            events_sent: 0,
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
                Some(Cmd::Quit) => return,
                Some(c) => self.command(c),
                None => {}
            }
            if self.running {
                self.advance();
            }
        }
    }

    fn guarded(&mut self, force: bool, f: impl FnOnce(&mut Run) -> Result<(), String>) {
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
            Cmd::Open(sel) => match catch_unwind(AssertUnwindSafe(|| Run::open(sel))) {
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
                self.guarded(true, |s| s.step());
            }
            Cmd::NextInstant => {
                self.running = false;
                self.guarded(true, |s| s.next_instant());
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
            Cmd::Apply(path, value) => self.change(|s| s.apply(&path, value)),
            Cmd::ApplyText(path, text) => self.change(|s| s.apply_text(&path, &text)),
            Cmd::Rewind(t) => {
                let Some(mut s) = self.session.take() else { return };
                self.running = false;
                match catch_unwind(AssertUnwindSafe(|| s.rewind(t).map(|_| s))) {
                    Ok(Ok(s)) => self.install(s),
                    Ok(Err(e)) => self.refuse(e),
                    Err(p) => self.refuse(format!("the rewind panicked: {}", panic_text(p))),
                }
            }
            Cmd::Export(file) => {
                let r = match &self.session {
                    Some(s) => {
                        let dir = file.parent().unwrap_or(std::path::Path::new("."));
                        std::fs::write(&file, s.export(dir))
                            .map(|_| file.clone())
                            .map_err(|e| format!("cannot write {}: {e}", file.display()))
                    }
                    None => Err("no session is open".into()),
                };
                self.send(Update::Exported(r));
                (self.wake)();
            }
            Cmd::Quit => {}
        }
    }

    /// Applies a change through `f`; a refusal is shown, nothing changed.
    fn change(&mut self, f: impl FnOnce(&mut Run) -> Result<SimTime, String>) {
        let Some(s) = self.session.as_mut() else { return };
        match catch_unwind(AssertUnwindSafe(|| f(s))) {
            Ok(Ok(_)) => {
                let changes = s.changes().to_vec();
                self.send(Update::Changes(changes));
                self.publish(true);
            }
            Ok(Err(e)) => self.refuse(e),
            Err(p) => self.refuse(format!("the change panicked: {}", panic_text(p))),
        }
    }

    fn refuse(&mut self, e: String) {
        self.send(Update::Refused(e));
        (self.wake)();
    }

    /// Makes `s` the session and sends the UI everything it has so far.
    fn install(&mut self, s: Run) {
        self.generation += 1;
        self.error = None;
        self.rows_sent = 0;
        self.derived_sent = 0;
        self.events_sent = 0;
        let cfg = s.session().config();
        self.send(Update::Session {
            generation: self.generation,
            seed: cfg.seed,
            end: s.session().end(),
            sample_every: cfg.sample_every,
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
        if self.until.is_some_and(|u| now >= u) {
            self.running = false;
            self.until = None;
            self.publish(true);
            return;
        }
        let mut target = match self.speed {
            Speed::Max => s.session().end(),
            Speed::Times(k) => {
                let wall = self.anchor.0.elapsed().as_secs_f64();
                let pace = self.anchor.1 + SimDuration::from_ns_f64(wall * k * 1e9);
                // Caught up with the clock (less than `PACE_STEP` of wall time ahead): wait
                // instead of spinning on steps of a few microseconds, which kept this thread
                // busy at ×1 and starved the UI and the renderer. Where the run stops stays
                // a function of simulated time only.
                let step = SimDuration::from_ns_f64(PACE_STEP.as_secs_f64() * k * 1e9);
                if pace < now + step {
                    std::thread::sleep(PACE_STEP);
                    self.publish(false);
                    return;
                }
                pace
            }
        };
        if let Some(u) = self.until {
            target = target.min(u);
        }
        if let Some(every) = s.session().config().sample_every {
            let next_boundary = SimTime((now.0 / every.0 + 1) * every.0);
            target = target.min(next_boundary);
        }
        let target = target.min(s.session().end());
        if target <= now {
            // Nothing due (commands still arrive).
            std::thread::sleep(PACE_STEP);
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
        // Series rows and the derived per-bucket summary deltas: sent as they close (the
        // session closes both at the same boundaries), so the plots are the same whatever
        // the publishing rate.
        let live = s.session();
        let (rows, events): (&[SeriesRow], &[ModelEvent]) = match &s.output {
            Some(o) => (&o.series, &o.state_events),
            None => (live.series(), live.model_events()),
        };
        if rows.len() > self.rows_sent {
            let _ = self.tx.send(Update::Rows(rows[self.rows_sent..].to_vec()));
            self.rows_sent = rows.len();
        }
        let derived = s.derived();
        if derived.len() > self.derived_sent {
            let _ = self.tx.send(Update::Derived(derived[self.derived_sent..].to_vec()));
            self.derived_sent = derived.len();
        }
        if events.len() > self.events_sent {
            let _ = self.tx.send(Update::Events(events[self.events_sent..].to_vec()));
            self.events_sent = events.len();
        }
        let (t0, e0, s0) = self.last_publish;
        let dt = t0.elapsed();
        if !force && dt < PUBLISH_EVERY {
            return;
        }
        let events = s.events();
        let now = s.now();
        let secs = dt.as_secs_f64().max(1e-9);
        let mut st = Status {
            now,
            end: live.end(),
            events,
            running: self.running,
            finished: s.is_finished(),
            events_per_s: events.saturating_sub(e0) as f64 / secs,
            sim_to_real: (now.0.saturating_sub(s0.0)) as f64 / 1e9 / secs,
            fingerprint: s.fingerprint(),
            error: self.error.clone(),
            ..Status::default()
        };
        let summary = match &s.output {
            Some(o) => {
                if let Some(e) = &o.error {
                    st.error = Some(e.to_string());
                }
                o.summary.clone()
            }
            None => live.world().summary(now),
        };
        st.observed = s.observe();
        self.send(Update::RunsRow(s.runs_row(&summary)));
        self.send(Update::Summary(Box::new(summary)));
        self.send(Update::Status(Box::new(st)));
        self.last_publish = (Instant::now(), events, now);
        (self.wake)();
    }
}
