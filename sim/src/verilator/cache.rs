//! Where built models live, how they are keyed, and how concurrent builders are kept apart.
//!
//! Layout of the cache folder:
//! ```text
//! runtime-<hash>/        Verilator runtime objects (verilated.o, ...), one per toolchain+flags
//! model-<key>/           one finished model: libsystole-<key>.so, build.log, src/, obj/
//! failed/<label>-<key>/  the last failed build of a spec, with its build.log
//! locks/<name>.lock      file locks, one per entry being built
//! tmp/                   builds in progress; renamed into place when complete
//! ```
//! A finished entry appears by a single `rename`, so its existence means it is complete and
//! readers never need the lock.

use super::SimError;
use sha2::{Digest, Sha256};
use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Cache folder: `$SYSTOLE_CACHE_DIR`, else `$CARGO_TARGET_DIR/systole-models`, else
/// `<workspace>/target/systole-models`.
pub fn cache_dir() -> PathBuf {
    match std::env::var_os("SYSTOLE_CACHE_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => target_dir().join("systole-models"),
    }
}

/// Cargo's target folder as seen at run time: `$CARGO_TARGET_DIR`, else `<workspace>/target`
/// with the workspace fixed when this crate was compiled.
pub fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => {
            let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
            manifest.parent().unwrap_or(manifest).join("target")
        }
    }
}

/// Incremental SHA-256 over length-prefixed fields, so field boundaries cannot blur.
pub(crate) struct KeyHasher(Sha256);

impl KeyHasher {
    pub fn new(domain: &str) -> Self {
        let mut h = KeyHasher(Sha256::new());
        h.field(domain.as_bytes());
        h
    }

    pub fn field(&mut self, bytes: impl AsRef<[u8]>) -> &mut Self {
        let bytes = bytes.as_ref();
        self.0.update((bytes.len() as u64).to_le_bytes());
        self.0.update(bytes);
        self
    }

    /// Lower-case hex of the digest (64 characters).
    pub fn finish(self) -> String {
        self.0
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

/// An exclusive lock on `<cache>/locks/<name>.lock`, held until dropped. Works across
/// threads (each holder opens its own file description) and across processes.
pub(crate) struct BuildLock {
    file: File,
}

impl BuildLock {
    pub fn acquire(cache: &Path, name: &str) -> Result<BuildLock, SimError> {
        let dir = cache.join("locks");
        fs::create_dir_all(&dir)
            .map_err(|e| SimError::io(format!("create {}", dir.display()), e))?;
        let path = dir.join(format!("{name}.lock"));
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| SimError::io(format!("open {}", path.display()), e))?;
        file.lock()
            .map_err(|e| SimError::io(format!("lock {}", path.display()), e))?;
        Ok(BuildLock { file })
    }
}

impl Drop for BuildLock {
    fn drop(&mut self) {
        let _ = self.file.unlock();
    }
}

/// A fresh, empty folder `<cache>/tmp/<prefix>-<pid>-<n>`. Leftovers of earlier crashed
/// builds with the same prefix are removed first; the caller holds the prefix's lock.
pub(crate) fn fresh_build_dir(cache: &Path, prefix: &str) -> Result<PathBuf, SimError> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let tmp = cache.join("tmp");
    fs::create_dir_all(&tmp).map_err(|e| SimError::io(format!("create {}", tmp.display()), e))?;
    if let Ok(entries) = fs::read_dir(&tmp) {
        for entry in entries.flatten() {
            if entry
                .file_name()
                .to_string_lossy()
                .starts_with(&format!("{prefix}-"))
            {
                let _ = fs::remove_dir_all(entry.path());
            }
        }
    }
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let dir = tmp.join(format!("{prefix}-{}-{n}", std::process::id()));
    fs::create_dir(&dir).map_err(|e| SimError::io(format!("create {}", dir.display()), e))?;
    Ok(dir)
}

/// Moves a completed build folder to its final name. The caller holds the entry's lock, so an
/// existing destination can only be debris (e.g. a copy made by hand) and is replaced.
pub(crate) fn publish(built: &Path, dest: &Path) -> Result<(), SimError> {
    if dest.exists() {
        fs::remove_dir_all(dest)
            .map_err(|e| SimError::io(format!("remove stale {}", dest.display()), e))?;
    }
    fs::rename(built, dest).map_err(|e| {
        SimError::io(
            format!("rename {} to {}", built.display(), dest.display()),
            e,
        )
    })
}

/// Keeps a failed build folder (with its log) as `<cache>/failed/<name>` for inspection.
/// Returns the kept folder, or the original one if it could not be moved.
pub(crate) fn keep_failed(cache: &Path, built: &Path, name: &str) -> PathBuf {
    let failed = cache.join("failed");
    let dest = failed.join(name);
    let moved = fs::create_dir_all(&failed).is_ok()
        && (!dest.exists() || fs::remove_dir_all(&dest).is_ok())
        && fs::rename(built, &dest).is_ok();
    if moved {
        dest
    } else {
        built.to_path_buf()
    }
}

/// A label made safe for file names.
pub(crate) fn sanitize_label(label: &str) -> String {
    let clean: String = label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean.is_empty() || clean.starts_with('.') {
        format!("model{clean}")
    } else {
        clean
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_fields_are_delimited() {
        let mut a = KeyHasher::new("t");
        a.field("ab").field("c");
        let mut b = KeyHasher::new("t");
        b.field("a").field("bc");
        assert_ne!(a.finish(), b.finish());
    }

    #[test]
    fn labels_become_file_names() {
        assert_eq!(sanitize_label("mxu 4x4/int8"), "mxu_4x4_int8");
        assert_eq!(sanitize_label(""), "model");
        assert_eq!(sanitize_label(".."), "model..");
    }

    #[test]
    fn locks_exclude_each_other_within_a_process() {
        let dir = std::env::temp_dir().join(format!("systole-lock-test-{}", std::process::id()));
        let first = BuildLock::acquire(&dir, "x").unwrap();
        let path = dir.join("locks/x.lock");
        let other = File::options().write(true).open(&path).unwrap();
        assert!(matches!(
            other.try_lock(),
            Err(std::fs::TryLockError::WouldBlock)
        ));
        drop(first);
        other.try_lock().unwrap();
        drop(other);
        let _ = fs::remove_dir_all(dir);
    }
}
