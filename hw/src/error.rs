//! Elaboration errors.
//!
//! A width or signedness mistake in a generator is a bug in the generator, found
//! while the design is being built. It stops elaboration with a panic whose
//! message names the generator's source line (every builder entry point is
//! `#[track_caller]`), so it reads like a compiler error and works with
//! `#[should_panic(expected = ...)]`. Tools that elaborate user-chosen
//! configurations wrap the build in [`catch_elab`] to get an ordinary error value.

use std::panic::{self, Location};

/// Every elaboration error message starts with this, then `file:line:col: `.
pub const ELAB_ERROR_PREFIX: &str = "elaboration error at ";

/// An elaboration error: what went wrong and the generator source line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElabError {
    /// The whole one-line message, location included.
    pub message: String,
}

impl std::fmt::Display for ElabError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ElabError {}

/// Formats a source location as `file:line:column`.
pub(crate) fn loc_string(loc: &Location<'_>) -> String {
    format!("{}:{}:{}", loc.file(), loc.line(), loc.column())
}

/// Stops elaboration, naming the caller's source line.
#[track_caller]
pub(crate) fn elab_error(message: String) -> ! {
    elab_error_at(Location::caller(), message)
}

/// Stops elaboration, naming a recorded source line (for checks made after the
/// offending call returned, such as an undriven wire found at `finish`).
pub(crate) fn elab_error_at(loc: &Location<'_>, message: String) -> ! {
    panic::panic_any(format!("{ELAB_ERROR_PREFIX}{}: {message}", loc_string(loc)))
}

/// Runs `f`, turning an elaboration error into `Err`. Other panics propagate.
///
/// The panic hook still runs; call [`quiet_elab_errors`] first in tools that
/// print the error themselves.
pub fn catch_elab<T>(f: impl FnOnce() -> T) -> Result<T, ElabError> {
    match panic::catch_unwind(panic::AssertUnwindSafe(f)) {
        Ok(v) => Ok(v),
        Err(payload) => match payload.downcast::<String>() {
            Ok(msg) if msg.starts_with(ELAB_ERROR_PREFIX) => Err(ElabError { message: *msg }),
            Ok(msg) => panic::resume_unwind(msg),
            Err(other) => panic::resume_unwind(other),
        },
    }
}

/// Installs (once per process) a panic hook that stays silent for elaboration
/// errors (the caller of [`catch_elab`] reports them) and defers to the previous
/// hook for every other panic.
pub fn quiet_elab_errors() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            let is_elab = info
                .payload()
                .downcast_ref::<String>()
                .is_some_and(|m| m.starts_with(ELAB_ERROR_PREFIX));
            if !is_elab {
                previous(info);
            }
        }));
    });
}
