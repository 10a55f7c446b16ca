//! The limits table of `docs/limits.md` against the constants it states: changing a limit
//! without its row (or a row without the limit) fails here.

use sim_core::Limits;

/// The limit cell of the row of the limits table whose first cell starts with `what`.
fn limit_cell(what: &str) -> String {
    let text = include_str!("../../../docs/limits.md");
    let table = text.split("# Limits").nth(1).expect("a Limits section");
    let row = table
        .lines()
        .find(|l| l.strip_prefix("| ").is_some_and(|r| r.starts_with(what)))
        .unwrap_or_else(|| panic!("no row `{what}` in the limits table"));
    row.split(" | ").nth(1).expect("a limit cell").to_string()
}

#[test]
fn the_limits_table_states_the_constants() {
    let l = Limits::default();
    let rows: &[(&str, &str, bool)] = &[
        ("events per run", "2·10¹⁰", l.max_events == 20_000_000_000),
        (
            "events at one instant",
            "100,000 + 64 × live entities",
            l.same_instant_base == 100_000 && l.same_instant_per_entity == 64,
        ),
        (
            "events at one instant",
            "capped at 40,000 (`SAME_INSTANT_MAX_ENTITIES`)",
            l.same_instant_max_entities == 40_000,
        ),
        (
            "arrival rate of a renewal source",
            "10⁶ a simulated second (`MAX_ARRIVAL_RATE`)",
            models::source::MAX_ARRIVAL_RATE == 1e6,
        ),
        (
            "trace file / scenario or experiment file",
            "checked against the file's size before a byte is read",
            models::trace::MAX_FILE_BYTES == 1 << 30,
        ),
        (
            "bytes of a trace cell quoted in an error",
            "100 (`MAX_QUOTED_BYTES`)",
            models::trace::MAX_QUOTED_BYTES == 100,
        ),
        (
            "pipeline stages",
            "64 / 16 / 256",
            models::pipeline::MAX_STAGES == 64
                && models::pipeline::MAX_PARALLEL_STEPS == 16
                && models::pipeline::MAX_CALLS_PER_STEP == 256,
        ),
        ("calls tracked by a breaker", "2²⁴", models::breaker::MAX_IN_FLIGHT == 1 << 24),
        ("cache keys (Zipf table)", "10⁷", models::attributes::MAX_KEYS == 10_000_000),
        (
            "users / segments / closed-loop users",
            "10⁹ / 64 / 10⁶",
            models::users::MAX_USERS == 1_000_000_000
                && models::users::MAX_SEGMENTS == 64
                && models::closed_loop::MAX_CLIENTS == 1_000_000,
        ),
        (
            "request budget / queue-wait limit",
            "24 h each",
            models::timeouts::MAX_BUDGET == sim_core::SimDuration::from_secs(24 * 3600),
        ),
        ("degradation chain", "4 hops", models::fallback::MAX_HOPS == 4),
        (
            "GPU server KV blocks (prefix caching)",
            "2²⁴ (`MAX_KV_BLOCKS`",
            models::gpu::MAX_KV_BLOCKS == 1 << 24
                && models::gpu::MAX_BLOCK_SIZE == 1024
                && models::gpu::MAX_PREFIX_SEGMENTS == 8,
        ),
        (
            "stalled hosts",
            "4096 per scenario",
            models::stall::MAX_HOSTS == 4096
                && models::stall::MAX_PAUSE == sim_core::SimDuration::from_secs(3600),
        ),
        (
            "autoscaler replicas",
            "100,000 per autoscaler",
            models::autoscaler::MAX_REPLICAS == 100_000
                && models::autoscaler::MAX_POLICIES == 10
                && models::autoscaler::MAX_WINDOW == sim_core::SimDuration::from_secs(3600),
        ),
        (
            "scripted calls per source",
            "1,000,000 each",
            models::scripted::MAX_CALLS == 1_000_000 && models::scripted::MAX_ANSWERS == 1_000_000,
        ),
    ];
    for (what, stated, holds) in rows {
        let cell = limit_cell(what);
        assert!(cell.contains(stated), "`{what}`: the table says {cell:?}, expected {stated:?}");
        assert!(holds, "`{what}`: the constant is no longer {stated}; update the table");
    }
}
