//! `Site`: the preamble every store-backed macro entry (`#[idempotent]`, its
//! `tx = …` form, `#[distributed_lock]`) runs before the technique: pick the
//! handle (the one given, else the installed global), register the function's
//! scene under the function's own identity, resolve the call's policy, and
//! render the key under the handle's namespace. Written once so the three
//! entries cannot drift (issue 30: it was written three times).
//!
//! `#[state_transition]` and `#[consume_once]` do not open a site: they need no
//! store, no scene and no policy, and count under whichever handle there is
//! (`recorder_for`), so they run without one installed.

use super::KeyBuf;
use crate::error::Error;
use crate::handle::{Idem, global};
use crate::key::Key;
use crate::scene::Owner;
use crate::settings::Settings;

/// The static description of a macro function, as the preamble needs it.
pub(super) trait SiteSpec: Sync + 'static {
    /// What the technique runs under (`Policy`, `LockPolicy`).
    type Policy;
    /// `module_path!()::name`, for diagnostics and the scene's owner.
    fn function(&self) -> &'static str;
    /// The literal scene prefix of the key template.
    fn scene(&self) -> &'static str;
    /// The handle's settings for the scene, under the literals written, under
    /// the expressions evaluated for this call; `Error::Config` naming the
    /// function.
    fn policy(&self, idem: &Idem, dynamic: &Settings) -> Result<Self::Policy, Error>;
}

/// Where one macro call runs: its handle, its key and its policy.
#[derive(Debug)]
pub(super) struct Site<'h, P> {
    pub(super) idem: &'h Idem,
    pub(super) key: Key,
    pub(super) policy: P,
}

impl<'h, P> Site<'h, P> {
    /// The preamble: the handle (`Error::NotInstalled` without one), the scene
    /// registered for this function (`Error::SceneConflict`), the policy, the key.
    pub(super) fn open<S: SiteSpec<Policy = P>>(
        spec: &'static S,
        handle: Option<&'h Idem>,
        key: KeyBuf,
        dynamic: &Settings,
    ) -> Result<Self, Error> {
        let idem = match handle {
            Some(h) => h,
            None => global()?,
        };
        let owner = Owner::of(spec, spec.function());
        idem.scenes().register(spec.scene(), owner)?;
        let policy = spec.policy(idem, dynamic)?;
        Ok(Site {
            idem,
            key: key.into_key(idem.key_namespace()),
            policy,
        })
    }
}
