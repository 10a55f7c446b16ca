//! Every file-level integration test of `experiments`, as modules of one test binary: one
//! link against polars instead of seventeen (each ~1.2 GB with debug info, ~1 min to link
//! on two cores). `cargo test -p experiments --test suite`, one module with
//! `cargo test -p experiments --test suite -- golden::`. The fuzzer stays its own binary
//! (`--test fuzz`, `scripts/fuzz`). Test data stays beside it in `experiments/tests/`
//! (`bad_input/`, `variants/`, `report/`, `fuzz_regressions/`), read from
//! `CARGO_MANIFEST_DIR`.

mod incident_support;

mod bad_input;
mod calibrate;
mod cli;
mod cli_edges;
mod determinism;
mod golden;
mod gpu_model_cli;
mod import;
mod incidents_beyond;
mod incidents_breakers;
mod incidents_catalogue;
mod incidents_entry;
mod incidents_limits;
mod no_nan;
mod report;
mod results_folder;
mod schema;
mod search;
mod session;
mod signals;
mod studies;
mod sweep;
mod timeseries_table;
mod variants;
