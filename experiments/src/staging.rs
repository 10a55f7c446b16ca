//! Where a `run` writes its files before they become results: a private folder per
//! process, outside every table folder, so a reader of a table (`pl.scan_parquet(
//! "results/x/runs/")`, which does not skip hidden files) never meets a half-written part,
//! and a process cleans only what is its own or provably dead.
//!
//! ```text
//! results/<experiment>/.staging/<id>.lock   held (exclusive file lock) while <id> lives
//! results/<experiment>/.staging/<id>/       its temporaries, renamed into the tables
//! ```
//!
//! The lock is taken before the folder exists and the operating system releases it when
//! the process ends in any way (SIGKILL included), so a lock that can be taken is proof
//! that its owner is gone: [`Staging::remove_dead`] removes that owner's folder, and never
//! touches the temporaries of another shard still writing into the same results folder.

use std::fs::{File, OpenOptions, TryLockError};
use std::io;
use std::path::{Path, PathBuf};

/// The staging folder of this process (released and removed on drop).
pub struct Staging {
    dir: PathBuf,
    lock_path: PathBuf,
    _lock: File,
}

const FOLDER: &str = ".staging";

impl Staging {
    /// Creates this process's staging folder under the experiment folder `root`.
    pub fn create(root: &Path) -> io::Result<Staging> {
        // Another process ending may remove the (then empty) `.staging` folder between our
        // creating it and using it: try again.
        let mut tries = 0;
        // A cleaner may also take (and delete) our fresh lock file before we lock it
        // (`remove_dead` removes a `.lock.new` nobody holds): we then find it locked or gone,
        // and start again under a new id.
        loop {
            match Self::try_create(root) {
                Err(e)
                    if matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::WouldBlock)
                        && tries < 8 =>
                {
                    tries += 1
                }
                other => return other,
            }
        }
    }

    fn try_create(root: &Path) -> io::Result<Staging> {
        let base = root.join(FOLDER);
        std::fs::create_dir_all(&base)?;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let id = format!("{}-{nanos}", std::process::id());
        // Locked under a name the cleaner ignores, then renamed: a cleaner can never take
        // the lock of a live owner between its creation and its locking.
        let fresh = base.join(format!("{id}.lock.new"));
        let lock = OpenOptions::new().write(true).create_new(true).open(&fresh)?;
        lock.try_lock().map_err(|e| match e {
            TryLockError::Error(e) => e,
            TryLockError::WouldBlock => {
                let _ = std::fs::remove_file(&fresh);
                io::Error::new(io::ErrorKind::WouldBlock, "a cleaner holds the fresh lock file")
            }
        })?;
        let lock_path = base.join(format!("{id}.lock"));
        std::fs::rename(&fresh, &lock_path)?;
        let dir = base.join(&id);
        std::fs::create_dir(&dir)?;
        Ok(Staging { dir, lock_path, _lock: lock })
    }

    /// The folder to write temporaries into (same file system as the tables: a rename
    /// from here is atomic).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Removes the staging folders of processes that have ended (their lock can be taken).
    /// Live ones, this process's own included, are left alone. Returns how many it removed.
    /// A `<id>.lock.new` nobody holds is removed too: a process killed between creating its
    /// lock file and renaming it leaves one (`.staging` then never emptied); a live creator
    /// that has not locked it yet finds it locked or gone and starts again ([`Staging::create`]).
    pub fn remove_dead(root: &Path) -> io::Result<usize> {
        let base = root.join(FOLDER);
        if !base.is_dir() {
            return Ok(0);
        }
        let mut removed = 0;
        for e in std::fs::read_dir(&base)? {
            let path = e?.path();
            let Some(name) = path.file_name().and_then(|n| n.to_str()) else { continue };
            if name.ends_with(".lock.new") {
                if let Ok(f) = OpenOptions::new().write(true).open(&path)
                    && f.try_lock().is_ok()
                {
                    gone(std::fs::remove_file(&path))?;
                    removed += 1;
                }
                continue;
            }
            let Some(id) = name.strip_suffix(".lock") else { continue };
            let Ok(f) = OpenOptions::new().write(true).open(&path) else { continue };
            match f.try_lock() {
                Ok(()) => {
                    let dir = base.join(id);
                    if dir.is_dir() {
                        gone(std::fs::remove_dir_all(&dir))?;
                    }
                    gone(std::fs::remove_file(&path))?;
                    removed += 1;
                }
                Err(TryLockError::WouldBlock) => {}
                Err(TryLockError::Error(e)) => return Err(e),
            }
        }
        Ok(removed)
    }
}

/// A removal that found nothing is done: another cleaner (a concurrent shard) or the file's
/// creator (which lost its fresh lock to us) removed it first.
fn gone(r: io::Result<()>) -> io::Result<()> {
    match r {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
        let _ = std::fs::remove_file(&self.lock_path);
        if let Some(base) = self.dir.parent() {
            let _ = std::fs::remove_dir(base); // only if empty (no other live process)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_live_staging_survives_cleaning_and_a_dead_one_does_not() {
        let root = std::env::temp_dir().join(format!("stormglass-staging-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let live = Staging::create(&root).unwrap();
        std::fs::write(live.dir().join("part.parquet"), b"x").unwrap();
        // A dead owner: its lock file exists but nobody holds it.
        let dead = root.join(FOLDER).join("1-1");
        std::fs::create_dir_all(&dead).unwrap();
        std::fs::write(dead.join("part.parquet"), b"x").unwrap();
        std::fs::write(root.join(FOLDER).join("1-1.lock"), b"").unwrap();
        // An owner killed between creating its lock file and renaming it.
        let unrenamed = root.join(FOLDER).join("2-2.lock.new");
        std::fs::write(&unrenamed, b"").unwrap();
        assert_eq!(Staging::remove_dead(&root).unwrap(), 2);
        assert!(!unrenamed.exists(), "an unrenamed lock nobody holds is removed");
        assert!(!dead.exists(), "the dead owner's temporaries are removed");
        assert!(live.dir().join("part.parquet").exists(), "the live one's are kept");
        let dir = live.dir().to_path_buf();
        drop(live);
        assert!(!dir.exists() && !root.join(FOLDER).exists(), "dropped: nothing left");
        std::fs::remove_dir_all(&root).unwrap();
    }
}
