//! A private PostgreSQL cluster started from the local PostgreSQL binaries.
//!
//! Used when no `DATABASE_URL` is given (the service's embedded default) and by
//! the test harness (a throwaway cluster). The cluster listens on 127.0.0.1
//! only, with a generated password. PostgreSQL refuses to run as root, so when
//! we are root the server runs as the `postgres` user (or `nobody`) and its
//! directory is handed to that user.
//!
//! The server runs under a tiny shell wrapper whose standard input is a pipe
//! from this process: when this process exits, for any reason, the pipe closes
//! and the wrapper stops the server (fast shutdown). The wrapper has its own
//! process group, so a Ctrl-C in the terminal reaches only the coordinator,
//! which then shuts down gracefully and stops the server last.

use std::{
    fs,
    io::Write,
    net::{Ipv4Addr, SocketAddrV4, TcpListener},
    os::unix::{
        fs::{OpenOptionsExt, PermissionsExt},
        process::CommandExt,
    },
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{Context, anyhow, bail};
use serde::{Deserialize, Serialize};
use sqlx::{Connection, Executor, PgConnection};

mod standby;

/// The database the coordinator uses inside its private cluster.
const DATABASE: &str = "coordinator";
/// The cluster's superuser.
const SUPERUSER: &str = "coordinator";
/// How long the server may take to accept connections.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// Wrapper: start postgres, stop it when our stdin closes, optionally remove
/// the data directory afterwards (throwaway clusters).
const WRAPPER: &str = r#"
pgbin="$1"; datadir="$2"; cleanup="$3"; shift 3
# Asynchronous lists get /dev/null as stdin, so keep our pipe on fd 3.
exec 3<&0
"$pgbin" -D "$datadir" "$@" 3<&- </dev/null &
pid=$!
( cat <&3 >/dev/null; kill -INT "$pid" 2>/dev/null ) &
exec 3<&-
wait "$pid"
status=$?
if [ "$cleanup" = "1" ]; then rm -rf "$(dirname "$datadir")"; fi
exit $status
"#;

/// A running private cluster; stopping it (or dropping it) shuts the server down
/// if this process started it.
#[derive(Debug)]
pub struct LocalPostgres {
    url: String,
    data_dir: PathBuf,
    server: Option<Child>,
}

/// How a cluster is started.
#[derive(Debug, Clone, Copy)]
struct Flavour {
    /// Remove the directory when the server stops.
    throwaway: bool,
    /// No fsync (tests only).
    fast: bool,
    /// Stock `max_connections` and `pg_stat_statements` (`coordinator bench`).
    bench: bool,
}

impl Flavour {
    /// A temporary cluster with default durability, removed when it stops.
    fn temporary(bench: bool) -> Flavour {
        Flavour {
            throwaway: true,
            fast: false,
            bench,
        }
    }
}

/// What we remember about a cluster between starts.
#[derive(Debug, Serialize, Deserialize)]
struct ClusterState {
    port: u16,
    password: String,
}

/// A user the server can run as when we are root.
#[derive(Debug, Clone, Copy)]
struct RunAs {
    uid: u32,
    gid: u32,
}

impl LocalPostgres {
    /// Starts (or attaches to an already running) cluster kept in `data_dir`,
    /// creating it on first use.
    pub async fn start(data_dir: &Path) -> anyhow::Result<LocalPostgres> {
        Self::start_with(data_dir, false).await
    }

    /// Whether `data_dir` holds a private cluster already (one `serve` made).
    pub fn exists(data_dir: &Path) -> bool {
        data_dir.join("pg").join("PG_VERSION").is_file()
    }

    /// Starts a fresh cluster in a new temporary directory, tuned for tests
    /// (no fsync); the directory is removed when the server stops.
    pub async fn start_throwaway() -> anyhow::Result<LocalPostgres> {
        let dir = std::env::temp_dir().join(format!(
            "coordinator-test-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        ));
        Self::start_with(&dir, true).await
    }

    /// Starts a fresh cluster in a new temporary directory with PostgreSQL's
    /// default durability (fsync on), for benchmarks; removed when it stops.
    pub async fn start_temporary() -> anyhow::Result<LocalPostgres> {
        let dir = std::env::temp_dir().join(format!(
            "coordinator-bench-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        ));
        Self::start_inner(&dir, Flavour::temporary(false)).await
    }

    /// Like [`Self::start_temporary`], but configured as `coordinator bench`
    /// needs it: a stock `max_connections` (100, so every phase proves it fits
    /// on a default server) and `pg_stat_statements` loaded (tracking
    /// top-level statements), so the bench can count statements per task.
    pub async fn start_temporary_for_bench() -> anyhow::Result<LocalPostgres> {
        let dir = std::env::temp_dir().join(format!(
            "coordinator-bench-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        ));
        Self::start_inner(&dir, Flavour::temporary(true)).await
    }

    /// The connection URL of the coordinator database.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The directory holding the cluster.
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// True if this process started the server (and will stop it).
    pub fn owns_server(&self) -> bool {
        self.server.is_some()
    }

    /// Stops the server if this process started it, waiting for it to exit.
    pub async fn stop(mut self) -> anyhow::Result<()> {
        if let Some(mut child) = self.server.take() {
            // Closing the pipe tells the wrapper to stop the server.
            drop(child.stdin.take());
            tokio::task::spawn_blocking(move || child.wait())
                .await
                .context("waiting for PostgreSQL to stop")?
                .context("waiting for PostgreSQL to stop")?;
        }
        Ok(())
    }

    async fn start_with(data_dir: &Path, throwaway: bool) -> anyhow::Result<LocalPostgres> {
        let flavour = Flavour {
            throwaway,
            fast: throwaway,
            bench: false,
        };
        Self::start_inner(data_dir, flavour).await
    }

    /// Starts the server in `data_dir` configured as `flavour` says.
    async fn start_inner(data_dir: &Path, flavour: Flavour) -> anyhow::Result<LocalPostgres> {
        let throwaway = flavour.throwaway;
        let bin = find_binaries()?;
        fs::create_dir_all(data_dir)
            .with_context(|| format!("creating data directory {}", data_dir.display()))?;
        let data_dir = data_dir
            .canonicalize()
            .with_context(|| format!("resolving {}", data_dir.display()))?;
        let cluster_dir = data_dir.join("pg");
        let state_file = data_dir.join("postgres.json");
        let log_file = data_dir.join("postgres.log");
        let run_as = run_as_user()?;
        if let Some(user) = run_as {
            // The server's user must reach its directory through every parent.
            fs::set_permissions(&data_dir, fs::Permissions::from_mode(0o711))?;
            check_reachable(&data_dir)?;
            fs::create_dir_all(&cluster_dir)?;
            chown_recursive(&cluster_dir, user)?;
            if throwaway {
                // The wrapper removes the directory as that user when the server stops.
                std::os::unix::fs::chown(&data_dir, Some(user.uid), Some(user.gid))?;
            }
        }

        let mut state = match fs::read(&state_file) {
            Ok(bytes) => Some(
                serde_json::from_slice::<ClusterState>(&bytes)
                    .with_context(|| format!("reading {}", state_file.display()))?,
            ),
            Err(_) => None,
        };

        // Another coordinator process (e.g. `serve` while we run `token
        // create`) may already run this cluster: use it, don't own it.
        if let Some(s) = &state
            && cluster_dir.join("postmaster.pid").exists()
            && let Ok(url) = try_connect(s, Duration::from_secs(2)).await
        {
            tracing::info!(data_dir = %data_dir.display(), "using the PostgreSQL server already running in the data directory");
            return Ok(LocalPostgres {
                url,
                data_dir,
                server: None,
            });
        }

        if !cluster_dir.join("PG_VERSION").exists() {
            let password = random_secret();
            initdb(&bin, &cluster_dir, &password, run_as).with_context(|| {
                format!("creating a PostgreSQL cluster in {}", cluster_dir.display())
            })?;
            state = Some(ClusterState { port: 0, password });
        }
        let mut state = state.ok_or_else(|| {
            anyhow!(
                "{} has a PostgreSQL cluster but no {}; remove the directory to start over",
                data_dir.display(),
                state_file.display()
            )
        })?;
        if state.port == 0 || !port_is_free(state.port) {
            state.port = free_port()?;
        }
        write_private(&state_file, &serde_json::to_vec_pretty(&state)?)?;

        let log = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_file)
            .with_context(|| format!("opening {}", log_file.display()))?;
        if let Some(user) = run_as {
            std::os::unix::fs::chown(&log_file, Some(user.uid), Some(user.gid))?;
        }
        let port = state.port.to_string();
        let mut args: Vec<&str> = vec!["-p", &port];
        args.extend(server_settings(flavour));
        let mut cmd = Command::new("/bin/sh");
        cmd.arg("-c")
            .arg(WRAPPER)
            .arg("coordinator-postgres")
            .arg(bin.join("postgres"))
            .arg(&cluster_dir)
            .arg(if throwaway { "1" } else { "0" })
            .args(&args)
            .stdin(Stdio::piped())
            .stdout(log.try_clone()?)
            .stderr(log)
            .process_group(0);
        if let Some(user) = run_as {
            cmd.uid(user.uid).gid(user.gid);
        }
        let mut child = cmd.spawn().context("starting postgres")?;

        let deadline = Instant::now() + START_TIMEOUT;
        let url = loop {
            if let Ok(url) = try_connect(&state, Duration::from_secs(1)).await {
                break url;
            }
            if let Some(status) = child.try_wait()? {
                bail!(
                    "PostgreSQL exited during start ({status}); its log {} ends with:\n{}",
                    log_file.display(),
                    tail(&log_file, 15)
                );
            }
            if Instant::now() > deadline {
                bail!(
                    "PostgreSQL did not accept connections within {:?}; see {}",
                    START_TIMEOUT,
                    log_file.display()
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        tracing::info!(port = state.port, data_dir = %data_dir.display(), "started a private PostgreSQL server");
        Ok(LocalPostgres {
            url,
            data_dir,
            server: Some(child),
        })
    }
}

/// Connects to the cluster, creating the coordinator database if it is missing.
async fn try_connect(state: &ClusterState, timeout: Duration) -> anyhow::Result<String> {
    let base = format!(
        "postgres://{SUPERUSER}:{}@127.0.0.1:{}",
        state.password, state.port
    );
    let admin = format!("{base}/postgres");
    let mut conn = tokio::time::timeout(timeout, PgConnection::connect(&admin))
        .await
        .context("timed out")??;
    let exists: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)")
            .bind(DATABASE)
            .fetch_one(&mut conn)
            .await?;
    if !exists {
        // Two processes may race here; the loser's error is harmless.
        let _ = conn.execute("CREATE DATABASE coordinator").await;
    }
    conn.close().await?;
    Ok(format!("{base}/{DATABASE}"))
}

/// The `-c` settings of a private server of this flavour.
fn server_settings(flavour: Flavour) -> Vec<&'static str> {
    let mut args = vec![
        "-c",
        "listen_addresses=127.0.0.1",
        "-c",
        "unix_socket_directories=",
        "-c",
        // The bench runs on PostgreSQL's stock limit: what it needs must
        // fit on a default server.
        if flavour.bench {
            "max_connections=100"
        } else {
            "max_connections=300"
        },
        // The hot tables (queue, tasks, attempts, agents) churn fast;
        // a minute between autovacuum checks lets dead index entries
        // pile up and every claim and lease scan step over them.
        "-c",
        "autovacuum_naptime=5s",
    ];
    if flavour.bench {
        args.extend([
            "-c",
            "shared_preload_libraries=pg_stat_statements",
            "-c",
            "pg_stat_statements.track=top",
        ]);
    }
    if flavour.fast {
        args.extend([
            "-c",
            "fsync=off",
            "-c",
            "synchronous_commit=off",
            "-c",
            "full_page_writes=off",
        ]);
    }
    args
}

/// Finds a directory holding `initdb` and `postgres`: PATH first, then the
/// newest `/usr/lib/postgresql/*/bin`.
pub fn find_binaries() -> anyhow::Result<PathBuf> {
    let has_both = |dir: &Path| dir.join("initdb").is_file() && dir.join("postgres").is_file();
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            if has_both(&dir) {
                // PATH entries are often symlinks into the real bin directory.
                let real = fs::canonicalize(dir.join("postgres"))
                    .ok()
                    .and_then(|p| p.parent().map(Path::to_path_buf));
                return Ok(real.filter(|d| has_both(d)).unwrap_or(dir));
            }
        }
    }
    let mut versions: Vec<(u32, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            has_both(&bin).then_some((version, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin).ok_or_else(|| {
        anyhow!(
            "no PostgreSQL server binaries found (looked for initdb and postgres on PATH and in \
             /usr/lib/postgresql/*/bin). Install PostgreSQL (e.g. `apt-get install postgresql`) \
             or set DATABASE_URL to use an existing server"
        )
    })
}

fn initdb(
    bin: &Path,
    cluster_dir: &Path,
    password: &str,
    run_as: Option<RunAs>,
) -> anyhow::Result<()> {
    fs::create_dir_all(cluster_dir)?;
    let pwfile = cluster_dir
        .parent()
        .unwrap_or(cluster_dir)
        .join(".initdb-password");
    write_private(&pwfile, password.as_bytes())?;
    if let Some(user) = run_as {
        std::os::unix::fs::chown(&pwfile, Some(user.uid), Some(user.gid))?;
    }
    let mut cmd = Command::new(bin.join("initdb"));
    cmd.arg("-D")
        .arg(cluster_dir)
        .args([
            "-U",
            SUPERUSER,
            "--auth=scram-sha-256",
            "-E",
            "UTF8",
            "--locale=C",
        ])
        .arg(format!("--pwfile={}", pwfile.display()))
        .stdin(Stdio::null());
    if let Some(user) = run_as {
        cmd.uid(user.uid).gid(user.gid);
    }
    let out = cmd.output().context("running initdb");
    let _ = fs::remove_file(&pwfile);
    let out = out?;
    if !out.status.success() {
        bail!(
            "initdb failed ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

/// The user to run the server as: `None` when we are not root.
fn run_as_user() -> anyhow::Result<Option<RunAs>> {
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    let euid = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|rest| rest.split_whitespace().nth(1))
        .and_then(|s| s.parse::<u32>().ok());
    if euid != Some(0) {
        return Ok(None);
    }
    let passwd = fs::read_to_string("/etc/passwd").unwrap_or_default();
    let lookup = |name: &str| {
        passwd.lines().find_map(|line| {
            let f: Vec<&str> = line.split(':').collect();
            (f.len() > 3 && f[0] == name).then(|| RunAs {
                uid: f[2].parse().unwrap_or(0),
                gid: f[3].parse().unwrap_or(0),
            })
        })
    };
    lookup("postgres")
        .or_else(|| lookup("nobody"))
        .filter(|u| u.uid != 0)
        .map(Some)
        .ok_or_else(|| {
            anyhow!(
                "PostgreSQL refuses to run as root and there is no 'postgres' or 'nobody' user \
                 to run it as; create one (e.g. `useradd postgres`) or set DATABASE_URL"
            )
        })
}

/// Every ancestor of `dir` must be searchable by others, or the server's user
/// cannot reach its data directory.
fn check_reachable(dir: &Path) -> anyhow::Result<()> {
    for ancestor in dir.ancestors().skip(1) {
        let mode = fs::metadata(ancestor)?.permissions().mode();
        if mode & 0o001 == 0 {
            bail!(
                "PostgreSQL refuses to run as root, so it runs as an unprivileged user, which \
                 cannot reach {} because {} is not searchable by others (mode {:o}). Use a data \
                 directory elsewhere (e.g. --data-dir /var/tmp/coordinator) or set DATABASE_URL",
                dir.display(),
                ancestor.display(),
                mode & 0o777
            );
        }
    }
    Ok(())
}

fn chown_recursive(path: &Path, user: RunAs) -> anyhow::Result<()> {
    std::os::unix::fs::chown(path, Some(user.uid), Some(user.gid))
        .with_context(|| format!("handing {} to the PostgreSQL user", path.display()))?;
    if path.is_dir() && !path.is_symlink() {
        for entry in fs::read_dir(path)? {
            chown_recursive(&entry?.path(), user)?;
        }
    }
    Ok(())
}

fn write_private(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let mut f = fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("writing {}", path.display()))?;
    f.write_all(bytes)?;
    Ok(())
}

fn port_is_free(port: u16) -> bool {
    TcpListener::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port)).is_ok()
}

fn free_port() -> anyhow::Result<u16> {
    Ok(
        TcpListener::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0))?
            .local_addr()?
            .port(),
    )
}

fn random_secret() -> String {
    format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

fn tail(path: &Path, lines: usize) -> String {
    let text = fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
