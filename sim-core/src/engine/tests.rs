use super::*;
use crate::dist::Dist;
use crate::metrics::{CounterId, GaugeId};
use crate::rng::Stream;

/// A toy M/M/1 world with a log, for engine-level tests.
struct Toy {
    arrivals: Stream,
    services: Stream,
    iat: Dist<SimDuration>,
    svc: Dist<SimDuration>,
    queue: u64,
    busy: bool,
    next_id: u64,
    log: Vec<(u64, &'static str)>,
    logging: bool,
    depth: GaugeId,
    done: CounterId,
    selfloop: bool,
    /// Entities it claims beyond its queue (the same-instant guard's count).
    claimed: u64,
    /// What it reports holding (the entity and memory bounds).
    held: u64,
    /// A timer a change may cancel (`Change::Replace`).
    timer: Option<crate::calendar::TimerHandle>,
}

#[derive(Clone, Copy, Debug)]
enum Ev {
    Arrive(u64),
    Depart(u64),
    Mark(&'static str),
    Loop,
}

impl Event for Ev {
    fn kind_id(&self) -> u16 {
        match self {
            Ev::Arrive(_) => 1,
            Ev::Depart(_) => 2,
            Ev::Mark(_) => 3,
            Ev::Loop => 4,
        }
    }
    fn entity_id(&self) -> u64 {
        match self {
            Ev::Arrive(i) | Ev::Depart(i) => *i,
            _ => 0,
        }
    }
    fn phase(&self) -> Phase {
        match self {
            Ev::Depart(_) => Phase::Completion,
            Ev::Arrive(_) => Phase::Arrival,
            Ev::Mark(_) | Ev::Loop => Phase::Dispatch,
        }
    }
}

enum Change {
    Log(&'static str),
    MarkNow(&'static str),
    /// Cancels `Toy::timer` and marks at the given instant instead.
    Replace(u64, &'static str),
}

impl World for Toy {
    type Event = Ev;
    type Change = Change;
    fn handle(&mut self, ev: Ev, ctx: &mut Ctx<'_, Ev>) {
        match ev {
            Ev::Arrive(i) => {
                self.next_id = i + 1;
                let d = self.iat.sample(&mut self.arrivals);
                ctx.schedule_in(d, Ev::Arrive(i + 1));
                if self.busy {
                    self.queue += 1;
                } else {
                    self.busy = true;
                    let s = self.svc.sample(&mut self.services);
                    ctx.schedule_in(s, Ev::Depart(i));
                }
                ctx.metrics.set(self.depth, ctx.now(), self.queue as i64);
            }
            Ev::Depart(i) => {
                ctx.metrics.incr(self.done);
                if self.queue > 0 {
                    self.queue -= 1;
                    let s = self.svc.sample(&mut self.services);
                    ctx.schedule_in(s, Ev::Depart(i + 1_000_000));
                } else {
                    self.busy = false;
                }
                ctx.metrics.set(self.depth, ctx.now(), self.queue as i64);
            }
            Ev::Mark(m) => {
                if self.logging {
                    self.log.push((ctx.now().0, m));
                }
            }
            Ev::Loop => {
                if self.selfloop {
                    // A loop that also creates an entity every turn: the same-instant limit
                    // must not grow with it (it is fixed at the start of the instant).
                    self.queue += 1;
                    ctx.schedule_in(SimDuration::ZERO, Ev::Loop);
                }
            }
        }
    }
    fn apply_change(&mut self, c: Change, ctx: &mut Ctx<'_, Ev>) {
        match c {
            Change::Log(m) => self.log.push((ctx.now().0, m)),
            Change::MarkNow(m) => {
                ctx.schedule_in(SimDuration::ZERO, Ev::Mark(m));
            }
            Change::Replace(t, m) => {
                ctx.cancel(self.timer.take().expect("a timer to replace"));
                ctx.schedule_at(SimTime(t), Ev::Mark(m));
            }
        }
    }
    fn live_entities(&self) -> u64 {
        (self.queue + 1).saturating_add(self.claimed)
    }
    fn holdings(&self) -> Holdings {
        Holdings { entities: self.held, bytes: self.held.saturating_mul(100) }
    }
    fn largest_holder(&self) -> String {
        format!("`toy.station` ({} held)", self.held)
    }
    fn component_of(&self, ev: &Ev) -> String {
        match ev {
            Ev::Loop => "toy.looper".into(),
            _ => "toy.station".into(),
        }
    }
}

impl Toy {
    /// An idle toy world with its metrics registered.
    fn new(seed: u64, ctx: &mut Ctx<'_, Ev>) -> Toy {
        Toy {
            arrivals: Stream::new(seed, "arrivals"),
            services: Stream::new(seed, "services"),
            iat: Dist::exponential(SimDuration::from_ms(10)),
            svc: Dist::exponential(SimDuration::from_ms(8)),
            queue: 0,
            busy: false,
            next_id: 0,
            log: vec![],
            logging: true,
            depth: ctx.metrics.gauge("toy.depth"),
            done: ctx.metrics.counter("toy.done"),
            selfloop: false,
            claimed: 0,
            held: 0,
            timer: None,
        }
    }
}

/// The toy as an M/M/1 queue (arrivals every 10 ms, service 8 ms on average).
fn toy(seed: u64, sample: Option<SimDuration>, limits: Limits) -> Simulation<Toy> {
    Simulation::new(limits, sample, |ctx| {
        ctx.schedule_at(SimTime(0), Ev::Arrive(0));
        Toy::new(seed, ctx)
    })
}

const END: SimTime = SimTime(60 * 1_000_000_000);

#[test]
fn chunked_equals_one_go() {
    let mut one = toy(1, Some(SimDuration::from_secs(1)), Limits::default());
    one.schedule_change(SimTime(5_000_000_000), Change::Log("c5")).unwrap();
    one.run_until(END).unwrap();
    let one = one.finish(END);

    let mut chunked = toy(1, Some(SimDuration::from_secs(1)), Limits::default());
    chunked.schedule_change(SimTime(5_000_000_000), Change::Log("c5")).unwrap();
    let mut t = 0u64;
    let mut k = 0u64;
    while chunked.now() < END {
        k += 1;
        if k.is_multiple_of(3) {
            chunked.run_for(k % 17 + 1).unwrap();
            if chunked.now() >= END {
                break;
            }
        } else {
            t = (t + 777_777_777 * (k % 5)).min(END.0);
            chunked.run_until(SimTime(t)).unwrap();
        }
        if chunked.calendar.peek_time().is_some_and(|t| t > END) && t >= END.0 {
            break;
        }
    }
    chunked.run_until(END).unwrap();
    let chunked = chunked.finish(END);
    assert!(one.events > 10_000);
    assert_eq!(one.events, chunked.events);
    assert_eq!(one.fingerprint, chunked.fingerprint);
    assert_eq!(one.series, chunked.series);
    assert_eq!(one.world.log, chunked.world.log);
}

#[test]
fn sampling_does_not_change_the_run() {
    let mut a = toy(2, None, Limits::default());
    a.run_until(END).unwrap();
    let mut b = toy(2, Some(SimDuration::from_ms(250)), Limits::default());
    b.run_until(END).unwrap();
    let (a, b) = (a.finish(END), b.finish(END));
    assert_eq!(a.fingerprint, b.fingerprint);
    assert!(a.series.is_empty());
    // 240 buckets × (1 counter + 2 gauge stats)
    assert_eq!(b.series.len(), 240 * 3);
    let done: f64 = b.series.iter().filter(|r| r.metric == "toy.done").map(|r| r.value).sum();
    assert_eq!(done as u64, b.metrics.counter_value(b.world.done));
}

#[test]
fn seeds_change_the_fingerprint() {
    let mut a = toy(3, None, Limits::default());
    let mut b = toy(4, None, Limits::default());
    a.run_until(END).unwrap();
    b.run_until(END).unwrap();
    assert_ne!(a.fingerprint(), b.fingerprint());
}

/// A change stamped t runs after every event at t, before any later event; events it
/// schedules at t run right after it.
#[test]
fn changes_apply_at_instant_boundaries() {
    let mut sim: Simulation<Toy> = Simulation::new(Limits::default(), None, |ctx| {
        for (t, m) in [(10, "e10a"), (10, "e10b"), (11, "e11"), (9, "e9")] {
            ctx.schedule_at(SimTime(t), Ev::Mark(m));
        }
        Toy::new(0, ctx)
    });
    sim.schedule_change(SimTime(10), Change::Log("change10")).unwrap();
    sim.schedule_change(SimTime(10), Change::MarkNow("mark-from-change10")).unwrap();
    sim.schedule_change(SimTime(0), Change::Log("change0")).unwrap();
    sim.run_until(SimTime(10)).unwrap();
    assert_eq!(
        sim.schedule_change(SimTime(5), Change::Log("x")),
        Err(SimError::ChangeInPast { at: SimTime(5), now: SimTime(10) })
    );
    sim.run_until(SimTime(20)).unwrap();
    let log: Vec<_> = sim.world().log.clone();
    assert_eq!(
        log,
        vec![
            (0, "change0"),
            (9, "e9"),
            (10, "e10a"),
            (10, "e10b"),
            (10, "change10"),
            (10, "mark-from-change10"),
            (11, "e11"),
        ]
    );
}

/// A change due before the next event may cancel it: `step_until(limit)` then processes
/// nothing past the limit (it returns false, the change applied), as `run_until(limit)`
/// would; checking `next_event_time()` and calling `step()` processed the event that
/// replaced it, past the limit (the fuzzer's I7 find: a batch flushed by a run-time change
/// cancels its window's timer).
#[test]
fn step_until_never_passes_its_limit_when_a_change_cancels_the_next_event() {
    let mut sim: Simulation<Toy> = Simulation::new(Limits::default(), None, |ctx| {
        let mut toy = Toy::new(0, ctx);
        toy.timer = Some(ctx.timer_at(SimTime(100), Ev::Mark("timer")));
        toy
    });
    sim.schedule_change(SimTime(50), Change::Replace(1000, "late")).unwrap();
    assert_eq!(sim.next_event_time(), Some(SimTime(100)), "the timer is next");
    assert!(!sim.step_until(SimTime(200)).unwrap(), "no event at or before 200");
    assert_eq!(sim.next_event_time(), Some(SimTime(1000)));
    assert!(sim.world().log.is_empty(), "{:?}", sim.world().log);
    assert!(sim.now() <= SimTime(200));
    // Unbounded, the next step processes the replacement.
    assert!(sim.step().unwrap());
    assert_eq!(sim.world().log, vec![(1000, "late")]);
}

#[test]
fn zero_time_loop_is_stopped_naming_the_component() {
    let mut sim = toy(
        1,
        None,
        Limits { same_instant_base: 1000, same_instant_per_entity: 10, ..Limits::default() },
    );
    sim.run_until(SimTime(1_000_000_000)).unwrap();
    // Arm a self-rescheduling event at the current instant.
    let now = sim.now();
    sim.world.selfloop = true;
    sim.calendar.schedule(now, Phase::Dispatch, Ev::Loop);
    let err = sim.run_until(SimTime(2_000_000_000)).unwrap_err();
    match &err {
        SimError::ZeroTimeLoop { component, limit, busiest, busiest_events, counted, .. } => {
            assert_eq!(component, "toy.looper");
            assert!(*limit >= 1010);
            // Every event past the base was the looper's: it is named as what spun.
            assert_eq!(busiest, "toy.looper");
            assert_eq!(busiest_events, counted);
            assert_eq!(*counted, limit + 1 - 1000, "counted from the first event past the base");
        }
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains("zero-time loop"));
    // The error is sticky.
    assert_eq!(sim.step().unwrap_err(), err);
}

#[test]
fn huge_entity_counts_cannot_lift_the_same_instant_limit() {
    // A world claiming ~2⁶⁴ entities (a batch flood's unsent requests): the same-instant
    // limit is 1,000 + 10 × min(2⁶⁴, same_instant_max_entities = 5,000) = 51,000, not 2⁶⁴.
    let mut sim = toy(
        1,
        None,
        Limits {
            same_instant_base: 1000,
            same_instant_per_entity: 10,
            same_instant_max_entities: 5000,
            ..Limits::default()
        },
    );
    sim.run_until(SimTime(1_000_000_000)).unwrap();
    sim.world.claimed = u64::MAX - 10;
    sim.world.selfloop = true;
    let now = sim.now();
    sim.calendar.schedule(now, Phase::Dispatch, Ev::Loop);
    let err = sim.run_until(SimTime(2_000_000_000)).unwrap_err();
    assert!(matches!(err, SimError::ZeroTimeLoop { limit: 51_000, .. }), "{err:?}");
}

#[test]
fn holdings_over_a_limit_end_the_run() {
    // Entities: checked every CHECK_EVERY events, so the run stops within 1,024 events of
    // the world reporting more than the limit, naming the limit and the largest holder.
    let mut sim = toy(1, None, Limits { max_entities: 5000, ..Limits::default() });
    sim.run_until(SimTime(1_000_000_000)).unwrap();
    let before = sim.events_processed();
    sim.world.held = 5001;
    let err = sim.run_until(END).unwrap_err();
    assert!(sim.events_processed() - before <= CHECK_EVERY, "stopped within one check interval");
    match &err {
        SimError::Overload {
            limit: 5000, limit_name: "MAX_ENTITIES", component, amount, ..
        } => {
            assert!(*amount >= 5001);
            assert_eq!(component, "`toy.station` (5001 held)");
        }
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains("exceed the limit of 5000 (`MAX_ENTITIES`)"), "{err}");
    assert_eq!(sim.step().unwrap_err(), err, "sticky");
    // Bytes: the world's estimate plus the calendar's.
    let mut sim = toy(1, None, Limits { max_bytes: 1 << 20, ..Limits::default() });
    sim.world.held = 20_000; // 2 MB
    let err = sim.run_until(END).unwrap_err();
    assert!(matches!(err, SimError::Overload { limit_name: "MAX_RUN_BYTES", .. }), "{err:?}");
    // Under the limits, the same run as without them (the checks only read).
    let mut b =
        toy(1, None, Limits { max_entities: 5000, max_bytes: 1 << 20, ..Limits::default() });
    b.run_until(END).unwrap();
    let mut c = toy(1, None, Limits::default());
    c.run_until(END).unwrap();
    assert_eq!(b.fingerprint(), c.fingerprint());
}

#[test]
fn an_interrupt_ends_a_run_spinning_at_one_instant() {
    // A loop at one instant with no same-instant limit to speak of spins until the flag is
    // raised from another thread (a second signal); the run then ends with an error.
    static FLAG: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let mut sim = toy(
        1,
        None,
        Limits {
            same_instant_base: u64::MAX,
            max_events: u64::MAX,
            interrupt: Some(&FLAG),
            ..Limits::default()
        },
    );
    sim.run_until(SimTime(1_000_000_000)).unwrap();
    sim.world.selfloop = true;
    let now = sim.now();
    sim.calendar.schedule(now, Phase::Dispatch, Ev::Loop);
    let raiser = std::thread::spawn(|| {
        std::thread::sleep(std::time::Duration::from_millis(50));
        FLAG.store(true, std::sync::atomic::Ordering::SeqCst);
    });
    let err = sim.run_until(SimTime(2_000_000_000)).unwrap_err();
    raiser.join().unwrap();
    assert!(matches!(err, SimError::Interrupted { .. }), "{err:?}");
    assert!(err.to_string().contains("the run did not finish"), "{err}");
}

#[test]
fn event_budget_is_enforced() {
    let mut sim = toy(1, None, Limits { max_events: 500, ..Limits::default() });
    let err = sim.run_until(END).unwrap_err();
    assert!(matches!(err, SimError::EventBudget { limit: 500, .. }), "{err:?}");
    assert!(err.to_string().contains("toy.station"));
}

#[test]
fn simulation_is_send() {
    fn is_send<T: Send>() {}
    is_send::<Simulation<Toy>>();
}
