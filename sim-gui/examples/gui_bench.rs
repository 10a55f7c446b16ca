//! The workbench benchmark (a measurement, not a timed test):
//! 1. the app's own CPU time per frame (UI, plots, diagram, tessellation) while the
//!    simulation runs, with the six plots full (3,600 one-second buckets: the showcase
//!    stretched to two simulated hours, filled to 3,590 s, then running at
//!    ×1 while measured) and the request-path diagram drawn in the same frame;
//! 2. the background run's speed against headless (same scenario, same seed);
//! 3. a rewind over 10 simulated minutes of the quickstart.
//!
//! `cargo run --release -p sim-gui --example gui_bench [rewind] [speed] [frames]`

use sim_core::{SimDuration, SimTime};
use sim_gui::SHOWCASE;
use sim_gui::session::{Run, Selection, load_bundled};
use sim_gui::worker::{Cmd, Speed, Update, Worker};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// CPU time of the calling thread.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid pointer to a timespec; CLOCK_THREAD_CPUTIME_ID exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

fn quantile(v: &[f64], q: f64) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    v[((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1]
}

fn selection(name: &str, duration: Option<SimDuration>) -> Selection {
    let mut exp = load_bundled(name).expect("bundled");
    if let Some(d) = duration {
        exp.duration = d;
    }
    Selection::first(Arc::new(exp))
}

fn frames() {
    let ctx = egui::Context::default();
    let mut app = Workbench::new(&ctx);
    // Two hours: at ×1 the run goes on through the measurement (it starts at 3,590 s).
    let long = selection(SHOWCASE, Some(SimDuration::from_secs(7200)));
    app.open_selection(long);
    app.controls.speed = Speed::Times(1000.0);
    app.worker.send(Cmd::SetSpeed(app.controls.speed));
    let input = || egui::RawInput {
        screen_rect: Some(egui::Rect::from_min_size(egui::Pos2::ZERO, egui::vec2(1600.0, 1000.0))),
        ..Default::default()
    };
    // Fill to ~3,590 buckets as fast as possible, then run at ×1 while measuring.
    app.worker.send(Cmd::RunUntil(SimTime::ZERO + SimDuration::from_secs(3590)));
    app.worker.send(Cmd::SetSpeed(Speed::Max));
    let t0 = Instant::now();
    loop {
        app.pump();
        if app.store.status.now.0 >= 3_590_000_000_000 && !app.store.status.running {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
        assert!(t0.elapsed() < Duration::from_secs(600), "fill took too long");
    }
    app.worker.send(Cmd::SetSpeed(Speed::Times(1.0)));
    app.worker.send(Cmd::Run);
    let mut cpu = Vec::new();
    let mut wall = Vec::new();
    // Interleaved with the measured frames (so machine load weighs on both alike): the same
    // view without decimation — free zoom keeps the bounds the previous frame set, and
    // hands egui_plot every point.
    let mut undecimated = Vec::new();
    for i in 0..600 {
        let whole = i % 2 == 0;
        app.plots.span =
            if whole { sim_gui::ui::plots::Span::Whole } else { sim_gui::ui::plots::Span::Free };
        let (c0, w0) = (thread_cpu(), Instant::now());
        let out = ctx.run_ui(input(), |ui| {
            app.frame(ui);
            egui::Window::new("request path").default_size([900.0, 500.0]).show(ui.ctx(), |ui| {
                let mut out = Vec::new();
                sim_gui::ui::diagram::view(
                    ui,
                    &mut app.diagram,
                    &mut app.knobs,
                    app.opened.as_ref(),
                    &app.store,
                    &mut out,
                );
                app.act(out);
            });
        });
        let mut out = out;
        out.textures_delta.clear(); // no renderer here (a debug build asserts it is handled)
        let prims = ctx.tessellate(out.shapes, out.pixels_per_point);
        std::hint::black_box(prims);
        if i >= 40 && whole {
            cpu.push((thread_cpu() - c0).as_secs_f64() * 1e3);
            wall.push(w0.elapsed().as_secs_f64() * 1e3);
        } else if i >= 40 {
            undecimated.push((thread_cpu() - c0).as_secs_f64() * 1e3);
        }
        std::thread::sleep(Duration::from_millis(16));
    }
    let longest = app.store.series.values().map(|v| v.len()).max().unwrap_or(0);
    let shown = app.plots.shown.len();
    println!(
        "frame CPU (UI + plots + diagram + tessellation), {shown} plots, longest series {longest} points, {} points held, running at ×1: median {:.2} ms, p95 {:.2} ms (wall median {:.2} ms, p95 {:.2} ms; {} frames)",
        app.store.point_count(),
        quantile(&cpu, 0.5),
        quantile(&cpu, 0.95),
        quantile(&wall, 0.5),
        quantile(&wall, 0.95),
        cpu.len()
    );
    println!(
        "the same frames without decimation (interleaved): median {:.2} ms, p95 {:.2} ms; decimated / undecimated median {:.2}",
        quantile(&undecimated, 0.5),
        quantile(&undecimated, 0.95),
        quantile(&cpu, 0.5) / quantile(&undecimated, 0.5)
    );
    app.worker.send(Cmd::Pause);
}

/// Headless and background runs of the same scenario and seed, alternated `PAIRS` times so
/// that the machine's load weighs on both alike; the ratio is taken per pair.
fn run_speed() {
    const PAIRS: usize = 5;
    let sel = selection(SHOWCASE, Some(SimDuration::from_secs(1800)));
    let sc = sel.scenario().unwrap();
    let (mut headless, mut background, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    let mut events = 0;
    for _ in 0..PAIRS {
        let t = Instant::now();
        let out = models::run(&sc, &sel.run_config());
        let h = t.elapsed().as_secs_f64();
        events = out.events;
        let w = Worker::spawn(|| {});
        w.send(Cmd::Open(sel.clone()));
        w.send(Cmd::SetSpeed(Speed::Max));
        let t = Instant::now();
        w.send(Cmd::Run);
        let fp = loop {
            // Drain like the UI would (the updates are part of the cost).
            if let Ok(Update::Status(s)) = w.rx.recv()
                && s.finished
            {
                break s.fingerprint.unwrap();
            }
        };
        let b = t.elapsed().as_secs_f64();
        assert_eq!(fp, out.fingerprint.hex(), "the background run is the headless run");
        headless.push(h);
        background.push(b);
        ratios.push(100.0 * h / b);
    }
    let list = |v: &[f64]| v.iter().map(|x| format!("{x:.0}")).collect::<Vec<_>>().join(", ");
    println!(
        "run speed, showcase 30 simulated min, {events} events, {PAIRS} interleaved pairs: headless median {:.3} s ({:.0} ev/s), background worker median {:.3} s ({:.0} ev/s); background / headless per pair: median {:.0}% (min {:.0}%; {}%)",
        quantile(&headless, 0.5),
        events as f64 / quantile(&headless, 0.5),
        quantile(&background, 0.5),
        events as f64 / quantile(&background, 0.5),
        quantile(&ratios, 0.5),
        quantile(&ratios, 0.0),
        list(&ratios)
    );
}

fn rewind() {
    let mut s = Run::open(selection("quickstart", None)).unwrap();
    s.run_until(s.session().end()).unwrap();
    let mut times = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        s.rewind(SimTime::ZERO + SimDuration::from_secs(600)).unwrap();
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    println!(
        "rewind over 10 simulated minutes of the quickstart ({} events): median {:.0} ms, max {:.0} ms (5 rewinds)",
        s.events(),
        quantile(&times, 0.5),
        quantile(&times, 1.0)
    );
}

use sim_gui::Workbench;

/// `gui_bench [rewind] [speed] [frames]`: the parts named (all three by default; `frames`
/// alone is what a profiler should look at).
fn main() {
    let parts: Vec<String> = std::env::args().skip(1).collect();
    let want = |p: &str| parts.is_empty() || parts.iter().any(|a| a == p);
    if want("rewind") {
        rewind();
    }
    if want("speed") {
        run_speed();
    }
    if want("frames") {
        frames();
    }
}
