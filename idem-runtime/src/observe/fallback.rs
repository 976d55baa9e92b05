//! The one fallback rule for calls made without a handle (the SQL helpers,
//! state transitions, the consume log): they count under the given handle's
//! recorder and namespace, else the installed global's, else a process-wide
//! recorder and no namespace. The `metrics` facade sees every call either way.
//! (two recorders said two different things, one skipping the
//! installed global.)

use std::sync::OnceLock;

use super::recorder::Recorder;

/// Counts calls made with no handle while no handle is installed.
static UNHANDLED: OnceLock<Recorder> = OnceLock::new();

/// The installed global handle's recorder and namespace (`idem::install`).
static INSTALLED: OnceLock<(&'static Recorder, &'static str)> = OnceLock::new();

/// Called once by `idem::install`: calls without a handle count under it.
pub(crate) fn install_fallback(recorder: &'static Recorder, namespace: &'static str) {
    let _ = INSTALLED.set((recorder, namespace));
}

/// The one fallback rule (see the module docs).
#[cfg_attr(not(feature = "sql"), allow(dead_code))]
pub(crate) fn counted_under<'h>(
    handle: Option<(&'h Recorder, &'h str)>,
) -> (&'h Recorder, &'h str) {
    handle
        .or_else(|| INSTALLED.get().copied())
        .unwrap_or_else(|| (UNHANDLED.get_or_init(Recorder::default), ""))
}
