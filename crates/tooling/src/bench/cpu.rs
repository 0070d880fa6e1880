//! CPU time spent per phase, read from `/proc`: this process's (the
//! replicas, the simulated workers and the clients all run in it) and the
//! database server's (the postmaster, its live children, and the children
//! it has reaped). On a machine where every process shares the same cores,
//! these are what a replica added costs; counts of statements and commits
//! only say where.
//!
//! Without `/proc` (another OS), or with the server on another machine (its
//! backend's pid is not ours to read), the figures are left out.

use std::{fs, path::Path};

/// CPU ticks read at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Sample {
    /// This process: user + system.
    pub(crate) bench: u64,
    /// The database server, if its processes can be read.
    pub(crate) server: Option<u64>,
}

/// CPU milliseconds between two samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Spent {
    /// This process.
    pub(crate) bench_ms: f64,
    /// The database server.
    pub(crate) server_ms: Option<f64>,
}

/// Reads the CPU clocks; `server` is the postmaster's pid.
pub(crate) fn sample(server: Option<u32>) -> Option<Sample> {
    let own = fs::read_to_string("/proc/self/stat").ok()?;
    let (user, system, _, _) = times(&own)?;
    Some(Sample {
        bench: user + system,
        server: server.and_then(server_ticks),
    })
}

/// The milliseconds spent from `start` to `end`.
pub(crate) fn spent(start: Sample, end: Sample, ticks_per_sec: u64) -> Spent {
    let ms = |ticks: u64| ticks as f64 * 1000.0 / ticks_per_sec.max(1) as f64;
    Spent {
        bench_ms: ms(end.bench.saturating_sub(start.bench)),
        server_ms: match (start.server, end.server) {
            (Some(a), Some(b)) => Some(ms(b.saturating_sub(a))),
            _ => None,
        },
    }
}

/// The postmaster of the backend `backend` (its parent), if it is a
/// process of this machine we may read.
pub(crate) fn postmaster_of(backend: u32) -> Option<u32> {
    parent(&fs::read_to_string(format!("/proc/{backend}/stat")).ok()?)
}

/// Clock ticks per second (`getconf CLK_TCK`; 100 on Linux if that fails).
pub(crate) fn ticks_per_sec() -> u64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100)
}

/// The postmaster's own and reaped children's ticks plus its live
/// children's: every process of the server.
fn server_ticks(postmaster: u32) -> Option<u64> {
    let own = fs::read_to_string(format!("/proc/{postmaster}/stat")).ok()?;
    let (user, system, cuser, csystem) = times(&own)?;
    let mut total = user + system + cuser + csystem;
    for entry in fs::read_dir(Path::new("/proc")).ok()?.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        if parent(&stat) == Some(postmaster)
            && let Some((u, s, _, _)) = times(&stat)
        {
            total += u + s;
        }
    }
    Some(total)
}

/// A `/proc/<pid>/stat` line's parent pid.
fn parent(stat: &str) -> Option<u32> {
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// A `/proc/<pid>/stat` line's utime, stime, cutime and cstime (fields 14
/// to 17). The command name (field 2) may hold spaces and parentheses, so
/// fields are counted after its last `)`.
fn times(stat: &str) -> Option<(u64, u64, u64, u64)> {
    let (_, rest) = stat.rsplit_once(')')?;
    // After the name: state is field 3, so utime (14) is the 12th here.
    let f: Vec<&str> = rest.split_whitespace().collect();
    let at = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok());
    Some((at(11)?, at(12)?, at(13)?, at(14)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &str = "4242 (post gres: a) b) S 4100 4242 4242 0 -1 4194560 1000 0 0 0 \
                        250 75 30 5 20 0 1 0 12345 1000000 500 18446744073709551615";

    #[test]
    fn times_are_read_after_the_last_parenthesis() {
        assert_eq!(times(LINE), Some((250, 75, 30, 5)));
        assert_eq!(parent(LINE), Some(4100));
        assert_eq!(times("garbage"), None);
    }

    #[test]
    fn spent_is_in_milliseconds_and_needs_both_server_readings() {
        let a = Sample {
            bench: 100,
            server: Some(50),
        };
        let b = Sample {
            bench: 350,
            server: Some(80),
        };
        let s = spent(a, b, 100);
        assert_eq!(s.bench_ms, 2500.0);
        assert_eq!(s.server_ms, Some(300.0));
        let c = Sample {
            bench: 350,
            server: None,
        };
        assert_eq!(spent(a, c, 100).server_ms, None);
    }

    #[test]
    fn this_process_can_be_read() {
        let s = sample(None).expect("/proc/self/stat");
        assert_eq!(s.server, None);
        // Its parent is a process of this machine.
        assert!(postmaster_of(std::process::id()).is_some());
    }
}
