//! Choosing whether a model writes a waveform, and where.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Whether a model records a VCD waveform. Tracing models are separate cache entries (built
/// with `--trace`) and run several times slower.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Trace {
    /// Follow the `SYSTOLE_TRACE` environment variable: unset, empty or `0` is off; `1` or
    /// `vcd` writes `<target>/systole-traces/<label>-<n>.vcd`; any other value is a path, as
    /// for [`Trace::Vcd`].
    #[default]
    FromEnv,
    Off,
    /// Write to this path: an existing folder (or a path ending in `/`) receives
    /// `<label>-<n>.vcd`; anything else is the file itself, with `-<n>` added before the
    /// extension for the second and later models traced to it by this process.
    Vcd(PathBuf),
}

/// What `Trace::FromEnv` means for a given value of `SYSTOLE_TRACE`.
pub(crate) fn from_env_value(value: Option<&str>) -> Trace {
    match value.map(str::trim) {
        None | Some("") | Some("0") => Trace::Off,
        Some("1") | Some("vcd") => Trace::Vcd(super::cache::target_dir().join("systole-traces")),
        Some(path) => Trace::Vcd(PathBuf::from(path)),
    }
}

/// The concrete trace request of a model about to be built: `None` for no tracing.
pub(crate) fn resolve(trace: &Trace) -> Option<PathBuf> {
    let trace = match trace {
        Trace::FromEnv => from_env_value(std::env::var("SYSTOLE_TRACE").ok().as_deref()),
        other => other.clone(),
    };
    match trace {
        Trace::Vcd(path) => Some(path),
        _ => None,
    }
}

/// The file for the `n`-th model of this process traced to `request` (0-based). The default
/// folder, existing folders and paths ending in `/` get `<label>-<n>.vcd`; a file name is used
/// as is for the first model and gets `-<n>` before its extension for later ones, so models
/// never share a file.
pub(crate) fn file_for(request: &Path, label: &str, n: u64) -> PathBuf {
    let default_dir = super::cache::target_dir().join("systole-traces");
    let names_a_folder = request.as_os_str().as_encoded_bytes().ends_with(b"/");
    if names_a_folder || request.is_dir() || request == default_dir {
        return request.join(format!("{label}-{n}.vcd"));
    }
    if n == 0 {
        return request.to_path_buf();
    }
    let stem = request
        .file_stem()
        .map_or_else(|| "trace".into(), |s| s.to_string_lossy().into_owned());
    let name = match request.extension() {
        Some(ext) => format!("{stem}-{n}.{}", ext.to_string_lossy()),
        None => format!("{stem}-{n}"),
    };
    request.with_file_name(name)
}

/// Numbers the models of this process traced to the same request (folder or file).
pub(crate) fn next_index(request: &Path) -> u64 {
    static COUNTS: Mutex<BTreeMap<PathBuf, u64>> = Mutex::new(BTreeMap::new());
    let mut counts = COUNTS.lock().unwrap_or_else(|e| e.into_inner());
    let count = counts.entry(request.to_path_buf()).or_insert(0);
    *count += 1;
    *count - 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_values() {
        assert_eq!(from_env_value(None), Trace::Off);
        assert_eq!(from_env_value(Some("")), Trace::Off);
        assert_eq!(from_env_value(Some("0")), Trace::Off);
        let default = super::super::cache::target_dir().join("systole-traces");
        assert_eq!(from_env_value(Some("1")), Trace::Vcd(default.clone()));
        assert_eq!(from_env_value(Some("vcd")), Trace::Vcd(default));
        assert_eq!(
            from_env_value(Some("/tmp/w.vcd")),
            Trace::Vcd("/tmp/w.vcd".into())
        );
    }

    #[test]
    fn file_names() {
        let default = super::super::cache::target_dir().join("systole-traces");
        assert_eq!(file_for(&default, "mxu", 3), default.join("mxu-3.vcd"));
        let dir = std::env::temp_dir();
        assert_eq!(file_for(&dir, "mxu", 0), dir.join("mxu-0.vcd"));
        assert_eq!(
            file_for(Path::new("/nonexistent/new/"), "mxu", 1),
            Path::new("/nonexistent/new/mxu-1.vcd")
        );
        let file = Path::new("/nonexistent/run/wave.vcd");
        assert_eq!(file_for(file, "mxu", 0), file);
        assert_eq!(
            file_for(file, "mxu", 2),
            Path::new("/nonexistent/run/wave-2.vcd")
        );
        assert_eq!(
            file_for(Path::new("/nonexistent/wave"), "x", 1),
            Path::new("/nonexistent/wave-1")
        );
    }
}
