//! The process an owner id names ([`Holder`]): its layout in the id's 128
//! bits, and what this process writes there.
//!
//! ```text
//! bits 127..96  the process's start, Unix seconds
//! bits  95..80  host name hash, bits 23..8
//! bits  79..76  8: an id that names its process (random ids have 4 here)
//! bits  75..68  host name hash, bits 7..0
//! bits  67..46  process id
//! bits  45..0   random, XOR the process's counter
//! ```

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The version nibble of an id that names its process.
const DESCRIBED: u128 = 8;
const PID_BITS: u32 = 22;
/// The counter's and random bits' mask of such an id.
const LOW: u64 = (1 << 46) - 1;

/// The process an owner id names: which host, which process, since when.
/// An operator judges from it whether a claim's process is gone (`idem
/// inspect` says so when it runs on that host).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Holder {
    /// A 24-bit hash of the host's name ([`Holder::host_hash`]).
    pub host: u32,
    /// The process id.
    pub pid: u32,
    /// When the process started (whole seconds).
    pub started: SystemTime,
}

impl Holder {
    /// The 24-bit hash (FNV-1a, folded) of a host name, as ids carry it:
    /// compare it with `idem inspect`'s `host #…` to find the host.
    pub fn host_hash(name: &str) -> u32 {
        let h = name.bytes().fold(0x811c_9dc5_u32, |h, b| {
            (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
        });
        (h >> 24) ^ (h & 0x00ff_ffff)
    }

    /// This host's name, as the ids of its processes hash it.
    pub fn this_host_name() -> String {
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .or_else(|| std::env::var("HOSTNAME").ok())
            .or_else(|| std::env::var("COMPUTERNAME").ok())
            .map(|s| s.trim().to_owned())
            .unwrap_or_default()
    }

    /// Whether this holder is a process running on this host: `Some(true)`
    /// when a process with its id runs here and started when it did,
    /// `Some(false)` when none does (it is gone), `None` when it is another
    /// host's, or this system does not tell (only Linux's `/proc` does).
    pub fn running_here(&self) -> Option<bool> {
        if self.host != Self::host_hash(&Self::this_host_name()) {
            return None;
        }
        if !std::path::Path::new("/proc/self/stat").exists() {
            return None;
        }
        let Some(started) = started(&format!("/proc/{}/stat", self.pid)) else {
            return Some(false);
        };
        let apart = started
            .duration_since(self.started)
            .unwrap_or_else(|e| e.duration());
        Some(apart < Duration::from_secs(2))
    }
}

/// The start of the process whose `/proc/<pid>/stat` is at `path`: its
/// 22nd field (clock ticks after boot, 100 a second on Linux) after the
/// boot time of `/proc/stat`.
fn started(path: &str) -> Option<SystemTime> {
    let stat = std::fs::read_to_string(path).ok()?;
    let ticks: u64 = stat
        .rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(19)?
        .parse()
        .ok()?;
    let boot: u64 = std::fs::read_to_string("/proc/stat")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("btime ")?.trim().parse().ok())?;
    Some(UNIX_EPOCH + Duration::from_secs(boot + ticks / 100))
}

/// This process's base and counter mask: an id naming it, or a random one
/// when its process id does not fit.
pub(super) fn base() -> (u128, u64) {
    let random = uuid::Uuid::new_v4().as_u128();
    let pid = std::process::id();
    if pid >= 1 << PID_BITS {
        return (random, u64::MAX);
    }
    let start = started("/proc/self/stat").unwrap_or_else(SystemTime::now);
    let secs = start.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let host = u128::from(Holder::host_hash(&Holder::this_host_name()));
    let id = (u128::from(secs as u32) << 96)
        | ((host >> 8) << 80)
        | (DESCRIBED << 76)
        | ((host & 0xff) << 68)
        | (u128::from(pid) << 46)
        | (random & u128::from(LOW));
    (id, LOW)
}

/// The holder an id names, if it names one.
pub(super) fn decode(id: u128) -> Option<Holder> {
    if (id >> 76) & 0xf != DESCRIBED {
        return None;
    }
    let host = (((id >> 80) & 0xffff) << 8 | ((id >> 68) & 0xff)) as u32;
    Some(Holder {
        host,
        pid: ((id >> 46) & ((1 << PID_BITS) - 1)) as u32,
        started: UNIX_EPOCH + Duration::from_secs((id >> 96) as u64),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Owner;

    #[test]
    fn ids_name_this_process_and_old_ids_name_none() {
        let me = Owner::fresh().holder().expect("this process fits");
        assert_eq!(me.pid, std::process::id());
        assert_eq!(me.host, Holder::host_hash(&Holder::this_host_name()));
        assert_eq!(me.running_here(), Some(true));
        let age = SystemTime::now().duration_since(me.started).unwrap();
        assert!(age < Duration::from_secs(86_400 * 365), "{age:?}");
        // A random id (a UUID v4 XOR a counter), as other versions wrote.
        let old = Owner(uuid::Uuid::new_v4().as_u128() ^ 77);
        assert_eq!(old.holder(), None);
        assert_eq!(Owner(42).holder(), None);
        let gone = Holder {
            pid: (1 << PID_BITS) - 1,
            ..me
        };
        assert_eq!(gone.running_here(), Some(false));
    }
}
