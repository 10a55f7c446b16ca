//! The results folder before a batch starts: which of this shard's runs to run, and what
//! may stay. The plan (`manifest.ron`) is the source of truth: no part of a run the plan
//! does not list may sit in a table of the folder, since readers (`pl.scan_parquet`, the
//! summary) would mix it in.
//!
//! * Parts of runs not in the plan (an earlier batch of an edited experiment, or another
//!   experiment of the same name) refuse the batch; `--overwrite` deletes them.
//! * `--overwrite` also deletes every part of this shard's runs, and `summary.parquet`.
//!   It leaves the parts of other shards' planned runs, which a concurrent shard may be
//!   writing at this moment.
//! * `--resume` skips a run only when its `runs` part says `ok` and carries the labels the
//!   current plan gives it (`run_index`, `point`, swept columns; see [`results::reusable`]):
//!   a run that ended in an error, or was interrupted (status `interrupted`: runs still
//!   going when the grace period after a signal ran out, or at a second signal), is run
//!   again, and so is a run that survived an edit of the sweep under its old labels.

use crate::experiment::Experiment;
use crate::results;
use std::collections::HashSet;
use std::path::Path;

/// What this shard does.
#[derive(Debug, PartialEq, Eq)]
pub struct Prepared {
    /// Plan indices of this shard's runs.
    pub mine: Vec<usize>,
    /// The ones to run now.
    pub todo: Vec<usize>,
}

/// Why a batch does not start.
#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    /// The folder holds results the command would mix with or replace (exit 2).
    #[error("{0}")]
    Refused(String),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Checks (and with `overwrite`, clears) the experiment folder `root` for shard `shard`
/// of `shards`. Temporaries of ended processes must have been removed before.
pub fn prepare(
    root: &Path,
    exp: &Experiment,
    (shard, shards): (u32, u32),
    resume: bool,
    overwrite: bool,
) -> Result<Prepared, PrepareError> {
    let mine: Vec<usize> =
        (0..exp.runs.len()).filter(|&i| results::shard_of(i, shards) == shard).collect();
    let planned: HashSet<&str> = exp.runs.iter().map(|r| r.run_id.as_str()).collect();
    let foreign = results::foreign_parts(root, &planned)?;
    if !foreign.is_empty() && !overwrite {
        return Err(PrepareError::Refused(format!(
            "{}: {} result files belong to runs this plan does not list (an earlier batch of an edited experiment, or another experiment named \"{}\"), e.g. {}; add --overwrite to replace that batch, or choose another --out",
            root.display(),
            foreign.len(),
            exp.name,
            foreign[0].strip_prefix(root).unwrap_or(&foreign[0]).display()
        )));
    }
    if overwrite {
        for f in &foreign {
            std::fs::remove_file(f)?;
        }
    }
    let done: std::collections::HashMap<String, std::path::PathBuf> =
        results::parts(root, "runs")?.into_iter().collect();
    let existing: Vec<usize> =
        mine.iter().copied().filter(|&i| done.contains_key(&exp.runs[i].run_id)).collect();
    if !existing.is_empty() && !resume && !overwrite {
        return Err(PrepareError::Refused(format!(
            "{}: results of {} of this shard's {} runs exist already; add --resume to run only the missing, failed and interrupted ones, or --overwrite to run them all again",
            root.display(),
            existing.len(),
            mine.len()
        )));
    }
    let valid: HashSet<usize> = if overwrite {
        HashSet::new()
    } else {
        existing
            .iter()
            .copied()
            .filter(|&i| results::reusable(&done[&exp.runs[i].run_id], exp, i))
            .collect()
    };
    let todo: Vec<usize> = mine.iter().copied().filter(|i| !valid.contains(i)).collect();
    // Every part of a run about to run goes first (in any shard folder: the shard count
    // may have changed), so no stale table of it outlives the new ones.
    let ids: HashSet<&str> = todo.iter().map(|&i| exp.runs[i].run_id.as_str()).collect();
    for t in results::TABLES {
        for (id, path) in results::parts(root, t)? {
            if ids.contains(id.as_str()) {
                std::fs::remove_file(path)?;
            }
        }
    }
    if !todo.is_empty() {
        // Whatever it said is about to change.
        match std::fs::remove_file(root.join("summary.parquet")) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e.into()),
            _ => {}
        }
    }
    Ok(Prepared { mine, todo })
}
