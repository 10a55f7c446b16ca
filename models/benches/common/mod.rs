//! Helpers shared by the benchmark binaries (`engine`, `surge`, `gpu`).
// Each bench binary compiles this module on its own and uses only some of it.
#![allow(dead_code)]

/// An integer from the environment (`None` when unset; a clear panic when not an integer).
pub fn env_u64(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok()?;
    Some(v.parse().unwrap_or_else(|_| panic!("{name} must be an integer, found {v:?}")))
}

/// The fastest of `repeats` measurements (`wall` reads a measurement's wall seconds).
pub fn fastest<T>(repeats: u64, wall: impl Fn(&T) -> f64, mut f: impl FnMut() -> T) -> T {
    (0..repeats)
        .map(|_| f())
        .min_by(|a, b| wall(a).total_cmp(&wall(b)))
        .expect("at least one repetition")
}
