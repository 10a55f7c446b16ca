//! Reading input files with a bound: a scenario, experiment, trace or imported
//! configuration file is read only when it is a regular file under a size limit (shared by
//! the scenario loader and the import reader, which sit on either side of it).

use std::path::Path;

/// `prefix.path`, or `path` when the prefix is empty.
pub(crate) fn join(prefix: &str, path: &str) -> String {
    if prefix.is_empty() { path.to_string() } else { format!("{prefix}.{path}") }
}

/// Most bytes of a scenario or experiment file.
pub const MAX_INPUT_BYTES: u64 = 64 << 20;

/// Reads a regular file of at most `max` bytes: a device (`/dev/zero`), a FIFO, a file
/// larger than the bound (from its size, before reading) or one growing past it is refused
/// instead of being read until memory runs out. The bytes
/// are returned as read: [`crate::ronfile::utf8`] turns them into text with a positioned
/// error.
pub fn read_bounded(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    use std::io::{Error, ErrorKind, Read};
    // Looked at before opening: opening a FIFO blocks until something writes to it.
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            "not a regular file (a device, a pipe or a directory is never read)",
        ));
    }
    // A file too large is refused before a byte is read (reading a gigabyte takes seconds);
    // one growing past the bound while it is read is refused by the bounded read below.
    if meta.len() > max {
        return Err(too_large(max, Some(meta.len())));
    }
    let file = std::fs::File::open(path)?;
    let mut bytes = Vec::new();
    file.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(too_large(max, None));
    }
    Ok(bytes)
}

/// The refusal of a file over `max` bytes (`size`: as its metadata gives it).
fn too_large(max: u64, size: Option<u64>) -> std::io::Error {
    let size = size.map_or(String::new(), |s| format!(" ({s} bytes)"));
    std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("larger than {max} bytes{size}"))
}
