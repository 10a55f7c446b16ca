//! One process per shard of a results folder. Two processes running the same shard into
//! one folder would each delete the other's parts as they start (a run about to run loses
//! its old parts first) and write the same runs twice; the second is refused instead.
//!
//! ```text
//! results/<experiment>/.shard=<i>.lock   held (exclusive file lock) while shard i runs; holds its pid
//! ```
//!
//! The operating system releases the lock when its owner ends in any way (SIGKILL
//! included), so a lock that can be taken is proof that no live process runs the shard.
//! The owner removes the file as it ends; a process that opened it just before then holds
//! a lock on a removed file, which it notices (the path names another file, or none) and
//! starts again.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The lock of one shard (released and removed on drop).
pub struct ShardLock {
    path: PathBuf,
    _file: File,
}

/// Why a shard's lock was not taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another live process runs this shard into the folder (exit 2).
    #[error("{0}")]
    Busy(String),
    #[error("{0}")]
    Io(#[from] io::Error),
}

impl ShardLock {
    /// Takes the lock of shard `shard` in the experiment folder `root` (created if need be).
    pub fn take(root: &Path, shard: u32) -> Result<ShardLock, LockError> {
        std::fs::create_dir_all(root)?;
        let path = root.join(format!(".shard={shard}.lock"));
        // A few rounds: each lost round means an owner ended between our open and lock.
        for _ in 0..8 {
            let mut file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)?;
            match file.try_lock() {
                Ok(()) => {}
                Err(TryLockError::WouldBlock) => {
                    return Err(LockError::Busy(busy(root, &path, shard)));
                }
                Err(TryLockError::Error(e)) => return Err(e.into()),
            }
            if !names_this_file(&path, &file)? {
                continue;
            }
            file.set_len(0)?;
            writeln!(file, "{}", std::process::id())?;
            return Ok(ShardLock { path, _file: file });
        }
        Err(LockError::Busy(busy(root, &path, shard)))
    }
}

/// The refusal, naming the folder and the owner's pid when it could be read.
fn busy(root: &Path, path: &Path, shard: u32) -> String {
    let pid = std::fs::read_to_string(path).ok().and_then(|t| t.trim().parse::<u32>().ok());
    let who = pid.map_or("another process".to_string(), |p| format!("another process (pid {p})"));
    format!(
        "{}: shard {shard} of this results folder is being run by {who} (lock {}); two processes running one shard into one folder would delete each other's results: wait for it to end, or choose another --out",
        root.display(),
        path.display()
    )
}

/// Whether `path` still names the file `file` has open (an owner ending removes it).
#[cfg(unix)]
fn names_this_file(path: &Path, file: &File) -> io::Result<bool> {
    use std::os::unix::fs::MetadataExt;
    let open = file.metadata()?;
    Ok(match std::fs::metadata(path) {
        Ok(m) => m.dev() == open.dev() && m.ino() == open.ino(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => false,
        Err(e) => return Err(e),
    })
}

#[cfg(not(unix))]
fn names_this_file(path: &Path, _file: &File) -> io::Result<bool> {
    Ok(path.exists())
}

impl Drop for ShardLock {
    fn drop(&mut self) {
        // Removed while still held: nobody can take it between the removal and the release.
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shard_is_locked_once_and_released_on_drop() {
        let root =
            std::env::temp_dir().join(format!("stormglass-shardlock-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let a = ShardLock::take(&root, 0).unwrap();
        // Another shard of the same folder runs beside it.
        let other = ShardLock::take(&root, 1).unwrap();
        let err = ShardLock::take(&root, 0).err().expect("the same shard is refused");
        let text = err.to_string();
        assert!(matches!(err, LockError::Busy(_)), "{text}");
        assert!(text.contains(&format!("pid {}", std::process::id())), "{text}");
        assert!(text.contains(&root.display().to_string()), "{text}");
        drop(a);
        assert!(!root.join(".shard=0.lock").exists(), "removed by its owner");
        let again = ShardLock::take(&root, 0).expect("free again after its owner ended");
        drop((again, other));
        // A lock file left by a killed owner (nobody holds it) is taken over.
        std::fs::write(root.join(".shard=2.lock"), "99999999\n").unwrap();
        drop(ShardLock::take(&root, 2).expect("a dead owner's file does not block"));
        assert_eq!(std::fs::read_dir(&root).unwrap().count(), 0, "nothing left");
        std::fs::remove_dir_all(&root).unwrap();
    }
}
