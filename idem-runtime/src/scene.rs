//! Which function owns which scene, per handle.
//!
//! Keys are `namespace:scene:parts`. Escaping keeps one function's argument
//! tuples apart; this registry keeps functions apart. Two owners may not use
//! scenes where one equals the other or is a `:`-segment prefix of it: a template
//! `order:<a>:<b>` (scene `order`) renders `order:create:5` for `("create", 5)`,
//! exactly what `order:create:<id>` renders for `5`. The second owner to use an
//! overlapping scene gets `Error::SceneConflict` before any store traffic.
//!
//! Owners are identified by address (`&'static Spec` of a macro function), not
//! by name: same-named methods of two `impl`s share a module path. Every
//! non-macro call (`Idem::guard`, `Idem::guard_key`) is one owner, whose scenes
//! are escaped (a single segment), so they never overlap each other.
//!
//! A known scene costs one read-locked hash lookup per call, a non-macro
//! scene its thread registered last only a string comparison, and the macro
//! function its thread registered last two integer comparisons. The registry keeps
//! every scene seen for the handle's life: scenes are meant to be a fixed set
//! (put request data in the parts).

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::sync::RwLock;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::Error;
use crate::key::{Key, Namespace};

/// Who renders keys under a scene.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Owner {
    /// Address of the owner's static description; 0 for the non-macro API.
    id: usize,
    /// The function's path, for messages.
    function: &'static str,
}

impl Owner {
    /// Every non-macro call: scenes given at run time.
    pub(crate) const PLAIN: Owner = Owner {
        id: 0,
        function: "Idem::guard",
    };

    /// A macro function, identified by its static description.
    pub(crate) fn of<T>(identity: &'static T, function: &'static str) -> Owner {
        Owner {
            id: std::ptr::from_ref(identity) as usize,
            function,
        }
    }
}

/// Scene → owner, for one handle.
#[derive(Debug)]
pub(crate) struct SceneRegistry {
    /// Unique per registry for the process's life (not an address, which a
    /// later handle may reuse): what [`LAST_PLAIN`] entries are tagged with.
    id: u64,
    scenes: RwLock<HashMap<Box<str>, Owner>>,
}

impl Default for SceneRegistry {
    fn default() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        SceneRegistry {
            id: NEXT.fetch_add(1, Ordering::Relaxed),
            scenes: RwLock::default(),
        }
    }
}

thread_local! {
    /// The last scene this thread registered as a non-macro one, with its
    /// registry's id. Registrations are never undone, so a match needs neither
    /// the lock nor a hash: a service calling `guard` in one scene over and
    /// over (the usual case) pays a string comparison.
    static LAST_PLAIN: RefCell<(u64, String)> = const { RefCell::new((0, String::new())) };
    /// The last macro function (owner id) this thread registered, with its
    /// registry's id. A function's scene is fixed by its static description,
    /// so a match needs no comparison of text either.
    static LAST_MACRO: Cell<(u64, usize)> = const { Cell::new((0, 0)) };
}

impl SceneRegistry {
    /// Records that `owner` renders keys under `scene` (as it appears in keys),
    /// or says which other owner's scene overlaps it.
    pub(crate) fn register(&self, scene: &str, owner: Owner) -> Result<(), Error> {
        if owner.id != Owner::PLAIN.id {
            if LAST_MACRO.get() == (self.id, owner.id) {
                return Ok(());
            }
            self.register_in_map(scene, owner)?;
            LAST_MACRO.set((self.id, owner.id));
            return Ok(());
        }
        let seen = LAST_PLAIN.with(|last| {
            let last = last.borrow();
            last.0 == self.id && last.1 == scene
        });
        if seen {
            return Ok(());
        }
        self.register_in_map(scene, owner)?;
        LAST_PLAIN.with(|last| {
            let mut last = last.borrow_mut();
            last.0 = self.id;
            last.1.clear();
            last.1.push_str(scene);
        });
        Ok(())
    }

    fn register_in_map(&self, scene: &str, owner: Owner) -> Result<(), Error> {
        let known = self
            .scenes
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(scene)
            .copied();
        if let Some(first) = known {
            return check(scene, scene, first, owner);
        }
        let mut scenes = self.scenes.write().unwrap_or_else(|p| p.into_inner());
        for (other, first) in scenes.iter() {
            if overlaps(other, scene) {
                check(scene, other, *first, owner)?;
            }
        }
        scenes.insert(scene.into(), owner);
        Ok(())
    }

    /// Registers the scene of a key given to the non-macro API. A key rendered
    /// under another namespace could equal any key of this handle's (its
    /// namespace may look like a scene of ours), so it is refused.
    pub(crate) fn register_key(&self, key: &Key, namespace: &Namespace) -> Result<(), Error> {
        if !key.in_escaped_namespace(namespace.escaped()) {
            let namespace = namespace.raw();
            return Err(Error::Config(format!(
                "key `{key}` was not rendered under this handle's namespace `{namespace}`; \
                 build it with `Idem::key`"
            )));
        }
        self.register(key.scene(), Owner::PLAIN)
    }
}

/// Equal, or one is a `:`-segment prefix of the other.
fn overlaps(a: &str, b: &str) -> bool {
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    long.strip_prefix(short)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(':'))
}

fn check(scene: &str, theirs: &str, first: Owner, second: Owner) -> Result<(), Error> {
    if first.id == second.id {
        return Ok(());
    }
    let mut first_name = first.function.to_owned();
    if theirs != scene {
        first_name = format!("{first_name} (scene {theirs})");
    }
    let mut second_name = second.function.to_owned();
    if first.function == second.function {
        // Same path, different function: same-named methods of two impls.
        second_name.push_str(" (another function with this path)");
    }
    Err(Error::SceneConflict {
        scene: scene.to_owned(),
        first: first_name,
        second: second_name,
    })
}

#[cfg(test)]
mod tests;
