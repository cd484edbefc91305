//! What the suite measures: the groups of figures (what `--only` selects
//! and what each system's program is asked to run), and the rows of the
//! table, each pairing a Ridgeback figure with its Linux peer and, where
//! the seed documents one, the historical figure (`docs/benchmarks.md`).
//!
//! Figure names are the programs' own (`bench/src/main.rs` for Linux,
//! `bench/ridgeback/src/main.rs` for Ridgeback). Placement suffixes:
//! `_1cpu` means both ends on one CPU (Linux: both pinned to CPU 0;
//! Ridgeback: booted with `cpus=1`); a multi-CPU figure is `_2cpu` on
//! Linux (client pinned to CPU 0, peer to CPU 1) and `_<N>cpu` on
//! Ridgeback (all N CPUs online, the kernel places the two ends).
//!
//! The R2 rows (seed 001's Table 2, `bench/src/r2.rs`) have the same
//! names on both systems (`r2_...`) and run unpinned with every CPU
//! online; on Ridgeback they come from `r2bench`, a UNIX process, not
//! from `ridgebench` (see [`Group::is_unix`]).
//!
//! The D rows (seed 000, the VMS RAMDRIVER note, `bench/src/d.rs`) pair
//! each of Ridgeback's devices with its Linux peer: the RAM disk in both
//! modes against `brd` with `O_DIRECT`, virtio-blk against virtio-blk, and
//! the RAM disk against a tmpfs file. Their figures are `d_<device>_1job`,
//! `d_<device>_5jobs` (ms per job) and the same with `_cpu`; on Ridgeback
//! they come from `dbench`, a UNIX process ([`SEED_000`] holds the seed's
//! table).
//!
//! The P rows (seed 002, NetBSD's loaned pipes, `bench/src/p.rs`) put each
//! of Ridgeback's pipe designs (`p_small`, `p_big`, `p_loan`,
//! `p_loan_overwrite`, each `_1cpu` and `_<N>cpu`; from `pbench`, one boot
//! per design and CPU count) beside Linux's plain pipe (`p_pipe`, and
//! `p_pipe_overwrite` for the overwrite variant) and the loan beside
//! Linux's `vmsplice` (`p_vmsplice`), in MB/s; `p_copy` and
//! `p_copy_checksum` are the limit, one process copying (and checksumming)
//! the same bytes ([`SEED_002`] holds the seed's table).

//!
//! The B rows (seed 004, UNIX V1's buffer count, `bench/src/b.rs`) pair
//! each `b_nbuf<N>` (ms per job, `bbench`, one boot per `nbuf`) with
//! Linux's `b_linux`, and each `b_rk_nbuf<N>` (the `rk` disk) with
//! Linux's `b_rk_linux` on the same disk ([`SEED_004`] holds the seed's
//! curve);
//! the R2 disk rows (`r2_<row>_disk`, `r2_<row>_disk_fsync`) have the same
//! names on both systems.

//!
//! The third column ([`Row::linuxbin`]): the Linux program's figure as
//! measured on Ridgeback, through the Linux server, on the getpid, pipe
//! ping-pong and R2 rows (`<figure>_linuxbin`, [`LINUXBIN_SUFFIX`]).

/// A group of figures: the unit of `--only`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Group {
    Getpid,
    Copy,
    Switch,
    Call,
    Send,
    Data,
    /// Seed 001's Table 2: files, pipe, getpid, sbrk, creat, fork.
    R2,
    /// Seed 000: a RAM disk against a disk, one job and five.
    D,
    /// Seed 002: lmbench's bw_pipe over the three pipe designs.
    P,
    /// Seed 004: V1's `as u*.s` against the number of I/O buffers, on ext2.
    B,
    /// Seed 004's job again, on a disk with a time per access
    /// (`bench::b::Disk::Rk`: `nbdkit`'s delay, one request at a time):
    /// the `b_rk_nbuf<N>` figures, and Linux's `b_rk_linux`.
    BRk,
    /// Seed 001's Table 2 file rows on ext2 on the virtio-blk disk, without
    /// and with `fsync`.
    R2Disk,
    /// Seed 003: loopback TCP, `net=classic` against `net=scalable`, with
    /// the stack's lock statistics.
    N,
}

pub const ALL_GROUPS: [Group; 13] = [
    Group::Getpid,
    Group::Copy,
    Group::Switch,
    Group::Call,
    Group::Send,
    Group::Data,
    Group::R2,
    Group::D,
    Group::P,
    Group::B,
    Group::BRk,
    Group::R2Disk,
    Group::N,
];

/// What `cargo xtask bench` (and its `--quick` smoke test in `cargo xtask
/// test`) measures without `--only`: every group but D and P. D's
/// Ridgeback rows need the virtio-blk and RAM disk drivers, and until they
/// exist those rows can only fail; D joins the default when they do.
/// `--only d` runs it now (the Linux rows, and Ridgeback's as failures
/// that say why). P boots Ridgeback six times (three pipe designs, one
/// and all CPUs): too long for the smoke test; `--only p` runs it. B boots
/// Ridgeback once per `nbuf` (eight boots) and R2 on disk needs a second
/// Linux boot: `--only b`, `--only r2disk`.
pub const DEFAULT_GROUPS: [Group; 7] =
    [Group::Getpid, Group::Copy, Group::Switch, Group::Call, Group::Send, Group::Data, Group::R2];

impl Group {
    pub fn name(self) -> &'static str {
        match self {
            Group::Getpid => "getpid",
            Group::Copy => "copy",
            Group::Switch => "switch",
            Group::Call => "call",
            Group::Send => "send",
            Group::Data => "data",
            Group::R2 => "r2",
            Group::D => "d",
            Group::P => "p",
            Group::B => "b",
            Group::BRk => "brk",
            Group::R2Disk => "r2disk",
            Group::N => "n",
        }
    }

    /// The figure word that measures this group in its Ridgeback program
    /// (`ridgebench`, or `r2bench` for a [`Group::is_unix`] group).
    pub fn ridgeback_figure(self) -> &'static str {
        match self {
            Group::Switch => "yield",
            Group::R2 | Group::D => "all",
            Group::P => "pipe",
            Group::B | Group::BRk => "b",
            Group::R2Disk => "r2disk",
            Group::N => "rr",
            other => other.name(),
        }
    }

    /// Whether Ridgeback measures the group with a UNIX program
    /// (`r2bench`, `dbench` or `pbench`, started by a batch script on the
    /// booted UNIX system) rather than with `ridgebench` booted as init.
    pub fn is_unix(self) -> bool {
        matches!(self, Group::R2 | Group::D | Group::P | Group::B | Group::BRk | Group::R2Disk | Group::N)
    }

    /// Whether the group runs on an ext2 volume on the virtio-blk disk: its
    /// boots get a fresh ext2 image (made on the host with the job's files)
    /// instead of the raw scratch disk, on both systems.
    pub fn needs_ext2_disk(self) -> bool {
        matches!(self, Group::B | Group::BRk | Group::R2Disk)
    }

    /// The Linux `bench` figures of this group's rows.
    pub fn linux_figures(self) -> &'static [&'static str] {
        match self {
            Group::Getpid => &["getpid"],
            Group::Copy => &["copy"],
            Group::Switch => &["yield"],
            Group::Call => &["futex"],
            Group::Send => &["pipe", "unix"],
            Group::Data => &["pipedata"],
            Group::R2 => &["r2"],
            Group::D => &["d"],
            Group::P => &["p"],
            // Linux's B figure on each disk: the plain one, and the same
            // image behind the rk disk's delay (its own boot).
            Group::B => &["b"],
            Group::BRk => &["brk"],
            Group::R2Disk => &["r2disk"],
            Group::N => &["n"],
        }
    }

    /// The Linux `bench` figures of this group that also run on Ridgeback,
    /// the same executable through the Linux server (the rows' third
    /// column, [`LINUXBIN_SUFFIX`]): seed 001's getpid, the pipe
    /// ping-pong and Table 2's rows, the calls the Linux server carries.
    pub fn linuxbin_figures(self) -> &'static [&'static str] {
        match self {
            Group::Getpid => &["getpid"],
            Group::Send => &["pipe"],
            Group::R2 => &["r2"],
            _ => &[],
        }
    }

    /// Whether the group has a figure that needs both ends on one CPU,
    /// which on Ridgeback takes a boot with `cpus=1`.
    pub fn has_one_cpu_figures(self) -> bool {
        matches!(self, Group::Switch | Group::Call | Group::Send | Group::Data)
    }

    /// Whether the group has figures with the two ends free to use several CPUs.
    pub fn has_multi_cpu_figures(self) -> bool {
        !matches!(self, Group::Switch)
    }
}

/// Parses `--only` words: group names (`r2` among them), `yield` (=
/// `switch`) and `r1` (the message round trips: `call,send,data`). Commas
/// separate words.
pub fn parse_groups(words: &[String]) -> Result<Vec<Group>, String> {
    let mut groups = Vec::new();
    for word in words.iter().flat_map(|w| w.split(',')).filter(|w| !w.is_empty()) {
        let found: &[Group] = match word {
            "r1" => &[Group::Call, Group::Send, Group::Data],
            "yield" => &[Group::Switch],
            name => match ALL_GROUPS.iter().find(|g| g.name() == name) {
                Some(group) => std::slice::from_ref(group),
                None => {
                    let names: Vec<&str> = ALL_GROUPS.iter().map(|g| g.name()).collect();
                    return Err(format!(
                        "--only: unknown benchmark `{name}` (known: {}, r1)",
                        names.join(", ")
                    ));
                }
            },
        };
        groups.extend_from_slice(found);
    }
    groups.sort();
    groups.dedup();
    Ok(groups)
}

/// A historical figure from a seed document, in the row's unit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Seed {
    /// Who measured it, on what, e.g. "Ridge 32, 1985".
    pub source: &'static str,
    /// As the document states it, e.g. "52 K/s".
    pub as_published: &'static str,
    pub value: f64,
}

/// One row of the table: a Ridgeback figure and its Linux peer.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// Stable identifier (used by `--compare` and the JSON file).
    pub key: String,
    pub label: String,
    pub group: Group,
    pub ridgeback: String,
    pub linux: String,
    /// The Linux figure measured on Ridgeback (the same `bench` executable
    /// run by the Linux server), when the row has that third column.
    pub linuxbin: Option<String>,
    pub seeds: Vec<Seed>,
}

/// What a figure of the Linux `bench` program is called when it was
/// measured on Ridgeback: its name and this suffix (`getpid_linuxbin`).
pub const LINUXBIN_SUFFIX: &str = "_linuxbin";

/// The row's third column, if it has one: its Linux figure as measured on
/// Ridgeback. The pipe ping-pong's `_1cpu` figure only on a one-CPU
/// machine: Ridgeback cannot pin the two ends to one CPU (the Linux
/// server accepts `sched_setaffinity` and changes nothing), so on more
/// CPUs only the figure with the ends free to spread is the same
/// experiment; the per-file R2 rows are Ridgeback's own variant.
fn linuxbin_figure(row: &Row, smp: u32) -> Option<String> {
    // The rows of the figures `Group::linuxbin_figures` names.
    let has = match row.group {
        Group::Getpid => row.linux == "getpid",
        Group::Send => row.linux.starts_with("pipe_pingpong_"),
        Group::R2 => true,
        _ => false,
    };
    let is_pinned_on_many = smp > 1 && row.linux.ends_with("_1cpu");
    let is_variant = row.key.ends_with(PER_FILE_SUFFIX);
    (has && !is_pinned_on_many && !is_variant).then(|| format!("{}{LINUXBIN_SUFFIX}", row.linux))
}

/// Every third-column figure of a machine of `smp` CPUs (what a boot of
/// the Linux program on Ridgeback keeps).
pub fn linuxbin_figures(smp: u32) -> Vec<String> {
    rows(smp).into_iter().filter_map(|r| r.linuxbin).collect()
}

/// Ridge 32 getpid, seed 001 Table 2: 52 K calls per second.
const RIDGE_GETPID: Seed = Seed { source: "Ridge 32, 1985", as_published: "52 K/s", value: 1e9 / 52_000.0 };
/// VAX 11/780 4.2BSD getpid, seed 001 Table 2: 5 K/s.
const VAX_GETPID: Seed = Seed { source: "VAX 11/780 4.2BSD", as_published: "5 K/s", value: 1e9 / 5_000.0 };
/// Ridge 32 round-trip message, seed 001 Table 1: 190 µs, four kernel
/// entries (Send and ReceiveData on each side).
const RIDGE_ROUND_TRIP: Seed = Seed { source: "Ridge 32, 1985", as_published: "190 µs", value: 190_000.0 };

/// Seed 001's Table 2 sources.
const RIDGE: &str = "Ridge 32, 1985";
const VAX: &str = "VAX 11/780 4.2BSD";

/// A Table 2 bandwidth in the rows' MB/s (10^6 bytes per second), from
/// the seed's KB/s, taking a KB as 1024 bytes like its "8 KB blocks".
const fn kb_per_s(source: &'static str, as_published: &'static str, kb_per_s: f64) -> Seed {
    Seed { source, as_published, value: kb_per_s * 1024.0 / 1e6 }
}

/// A Table 2 rate (operations per second) in ns/op.
const fn per_s(source: &'static str, as_published: &'static str, per_s: f64) -> Seed {
    Seed { source, as_published, value: 1e9 / per_s }
}

/// The rows for a main boot of `smp` CPUs, in table order. With one CPU
/// there are no multi-CPU rows.
pub fn rows(smp: u32) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut row = |key: &str, label: &str, group: Group, ridgeback: &str, linux: &str, seeds: &[Seed]| {
        rows.push(Row {
            key: key.to_string(),
            label: label.to_string(),
            group,
            ridgeback: ridgeback.to_string(),
            linux: linux.to_string(),
            linuxbin: None,
            seeds: seeds.to_vec(),
        })
    };
    row(
        "getpid",
        "getpid (one kernel entry)",
        Group::Getpid,
        "getpid",
        "getpid",
        &[RIDGE_GETPID, VAX_GETPID],
    );
    row("copy_4KiB", "byte copy 4 KiB (memcpy)", Group::Copy, "copy_4KiB", "copy_4KiB", &[]);
    row("copy_1MiB", "byte copy 1 MiB (memcpy)", Group::Copy, "copy_1MiB", "copy_1MiB", &[]);
    row(
        "switch_1cpu",
        "context switch pair: 2 yields, 1 CPU",
        Group::Switch,
        "yield_pair_1cpu",
        "yield_pair_1cpu",
        &[],
    );
    let mut placements = vec![("1cpu", "1cpu", "1 CPU")];
    let multi = format!("{smp}cpu");
    let multi_label = format!("{smp} CPUs");
    if smp > 1 {
        placements.push((multi.as_str(), "2cpu", multi_label.as_str()));
    }
    for (ridgeback, linux, shown) in placements {
        row(
            &format!("r1_call_{linux}"),
            &format!("R1 Call+ReplyWait 32 B vs futex, {shown}"),
            Group::Call,
            &format!("msg_call_32B_{ridgeback}"),
            &format!("futex_pingpong_32B_{linux}"),
            &[],
        );
        let seeds: &[Seed] = if linux == "1cpu" { &[RIDGE_ROUND_TRIP] } else { &[] };
        row(
            &format!("r1_send_pipe_{linux}"),
            &format!("R1 Send+ReceiveData 32 B vs pipe, {shown}"),
            Group::Send,
            &format!("msg_send_32B_{ridgeback}"),
            &format!("pipe_pingpong_32B_{linux}"),
            seeds,
        );
        row(
            &format!("r1_send_unix_{linux}"),
            &format!("R1 Send+ReceiveData 32 B vs Unix socket, {shown}"),
            Group::Send,
            &format!("msg_send_32B_{ridgeback}"),
            &format!("unix_pingpong_32B_{linux}"),
            &[],
        );
        row(
            &format!("r1_data_copy_{linux}"),
            &format!("R1 SendData 4 KiB copy vs pipe, {shown}"),
            Group::Data,
            &format!("msg_senddata_4KiB_copy_{ridgeback}"),
            &format!("pipe_4KiB_{linux}"),
            &[],
        );
        row(
            &format!("r1_data_cow_{linux}"),
            &format!("R1 SendData 4 KiB copy-on-write vs pipe, {shown}"),
            Group::Data,
            &format!("msg_senddata_4KiB_cow_{ridgeback}"),
            &format!("pipe_4KiB_{linux}"),
            &[],
        );
    }
    r2_rows(&mut row);
    d_rows(&mut row);
    p_rows(&mut row, smp);
    b_rows(&mut row);
    n_rows(&mut row, smp);
    for r in &mut rows {
        r.linuxbin = linuxbin_figure(r, smp);
    }
    rows
}

/// Seed 003's modes (the network server's boot option `net=`).
pub const N_MODES: [&str; 2] = ["classic", "scalable"];

/// The CPU counts N measures that a machine of `smp` vCPUs has: 2 and 4
/// (Ridgeback boots `cpus=N`, Linux limits its affinity mask).
pub fn n_cpu_counts(smp: u32) -> Vec<usize> {
    [2usize, 4].into_iter().filter(|&c| c as u32 <= smp).collect()
}

/// Seed 003's table (its lock statistics, classic then scalable), shown
/// beside N's rows: (figure, classic, scalable).
pub const SEED_003: [(&str, &str, &str); 5] = [
    ("hold % all locks", "54.8 %", "35.2 %"),
    ("spin % all locks", "24.1 %", "4.4 %"),
    ("locks per second", "204,153", "162,033"),
    ("global-lock (I/O lock 8) hold", "31.4 %", "< 5 %"),
    ("throughput", "1.0", ">= 1.3 (30 % or more)"),
];

/// N's rows: each workload, client count, CPU count and mode against
/// Linux's loopback with the same clients and CPUs.
fn n_rows(row: &mut impl FnMut(&str, &str, Group, &str, &str, &[Seed]), smp: u32) {
    for cpus in n_cpu_counts(smp) {
        for (workload, shown) in [("rr", "32 B request/response"), ("stream", "streaming")] {
            for clients in [1, 2, 4] {
                for mode in N_MODES {
                    let name = format!("n_{workload}_{clients}c_{cpus}cpu_{mode}");
                    row(
                        &name,
                        &format!("N TCP {shown}, {clients} client(s), {cpus} CPUs, net={mode} vs Linux"),
                        Group::N,
                        &name,
                        &format!("n_{workload}_{clients}c_{cpus}cpu_linux"),
                        &[],
                    );
                }
            }
        }
    }
}

/// Seed 004's curve as the suite measures it: `nbuf` and V1's time for
/// `as u*.s` where the seed measured it (1 to 6; 8 and 12 show where the
/// curve goes past V1's largest kernel).
pub const SEED_004: [(u32, Option<Seed>); 8] = [
    (1, Some(Seed { source: V1, as_published: "3.215 s", value: 3215.0 })),
    (2, Some(Seed { source: V1, as_published: "1.309 s", value: 1309.0 })),
    (3, Some(Seed { source: V1, as_published: "1.004 s", value: 1004.0 })),
    (4, Some(Seed { source: V1, as_published: "780 ms", value: 780.0 })),
    (5, Some(Seed { source: V1, as_published: "734 ms", value: 734.0 })),
    (6, Some(Seed { source: V1, as_published: "724 ms", value: 724.0 })),
    (8, None),
    (12, None),
];
const V1: &str = "UNIX V1 (SIMH), 2026";

/// A B figure's name on Ridgeback (`b_nbuf<N>`), and Linux's one figure.
pub fn b_figure(nbuf: u32) -> String {
    bench::b::figure_name(Some(nbuf))
}
/// A B figure's name on Ridgeback on the `rk` disk (`b_rk_nbuf<N>`).
pub fn b_rk_figure(nbuf: u32) -> String {
    bench::b::Disk::Rk.figure_name(nbuf)
}
pub fn b_linux_figure() -> String {
    bench::b::Disk::Plain.linux_figure_name()
}
/// Linux's B figure on the `rk` disk (`b_rk_linux`).
pub fn b_rk_linux_figure() -> String {
    bench::b::Disk::Rk.linux_figure_name()
}

/// Seed 004's rows: each buffer count against Linux's one figure (its own
/// page cache, dropped before each job), with V1's time.
fn b_rows(row: &mut impl FnMut(&str, &str, Group, &str, &str, &[Seed])) {
    for (nbuf, seed) in SEED_004 {
        let seeds: Vec<Seed> = seed.into_iter().collect();
        row(
            &b_figure(nbuf),
            &format!("B as u*.s on ext2, nbuf={nbuf} vs Linux cold"),
            Group::B,
            &b_figure(nbuf),
            &b_linux_figure(),
            &seeds,
        );
    }
    for (nbuf, seed) in SEED_004 {
        let seeds: Vec<Seed> = seed.into_iter().collect();
        row(
            &b_rk_figure(nbuf),
            &format!("B as u*.s, rk disk ({} ms/access), nbuf={nbuf} vs Linux cold", bench::b::RK_ACCESS_MS),
            Group::BRk,
            &b_rk_figure(nbuf),
            &b_rk_linux_figure(),
            &seeds,
        );
    }
}

/// Seed 002's designs, as Ridgeback's boot option `pipe=` names them, with
/// the seed's column and its figures (PIII/600, 386DX) in MB/s.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Seed002Design {
    /// `pipe=` value and the word in the figure names.
    pub design: &'static str,
    /// The seed's column.
    pub label: &'static str,
    pub seeds: [Seed; 2],
}

const PIII: &str = "NetBSD, Pentium III/600, 2001";
const I386: &str = "NetBSD, 386DX, 2001";

/// Seed 002's table: "old pipes", "new pipes", "new pipes with uvm_loan()".
pub const SEED_002: [Seed002Design; 3] = [
    Seed002Design {
        design: "small",
        label: "old pipes",
        seeds: [
            Seed { source: PIII, as_published: "487 MB/sec", value: 487.0 },
            Seed { source: I386, as_published: "0.75 MB/sec", value: 0.75 },
        ],
    },
    Seed002Design {
        design: "big",
        label: "new pipes",
        seeds: [
            Seed { source: PIII, as_published: "487 MB/sec", value: 487.0 },
            Seed { source: I386, as_published: "3.57 MB/sec", value: 3.57 },
        ],
    },
    Seed002Design {
        design: "loan",
        label: "new pipes with uvm_loan()",
        seeds: [
            Seed { source: PIII, as_published: "567 MB/sec", value: 567.0 },
            Seed { source: I386, as_published: "4.70 MB/sec", value: 4.70 },
        ],
    },
];

/// A P figure's name (as `bench::p::figure_name`).
pub fn p_figure(design: &str, overwrite: bool, cpus: &str) -> String {
    format!("p_{design}{}_{cpus}", if overwrite { "_overwrite" } else { "" })
}

/// The copy limit's figures (`bench::p::COPY`, `COPY_CHECKSUM`).
pub const P_COPY: &str = "p_copy";
pub const P_COPY_CHECKSUM: &str = "p_copy_checksum";

/// Seed 002's rows: for one CPU and for all, each Ridgeback design against
/// Linux's plain pipe (the overwrite variant against the plain pipe with
/// the same overwrite), the loan against `vmsplice`; then the copy limit.
/// The seed's figures are on the one-CPU rows: its machines had one.
fn p_rows(row: &mut impl FnMut(&str, &str, Group, &str, &str, &[Seed]), smp: u32) {
    let multi = format!("{smp}cpu");
    let mut placements = vec![("1cpu", "1cpu", "1 CPU".to_string())];
    if smp > 1 {
        placements.push((multi.as_str(), "2cpu", format!("{smp} CPUs")));
    }
    for (ridgeback, linux, shown) in &placements {
        for design in &SEED_002 {
            let seeds: &[Seed] = if *linux == "1cpu" { &design.seeds } else { &[] };
            row(
                &p_figure(design.design, false, linux),
                &format!("P bw_pipe pipe={} vs pipe, {shown}", design.design),
                Group::P,
                &p_figure(design.design, false, ridgeback),
                &p_figure("pipe", false, linux),
                seeds,
            );
        }
        row(
            &p_figure("loan", true, linux),
            &format!("P bw_pipe loan+overwrite vs pipe+overwrite, {shown}"),
            Group::P,
            &p_figure("loan", true, ridgeback),
            &p_figure("pipe", true, linux),
            &[],
        );
        row(
            &p_figure("vmsplice", false, linux),
            &format!("P bw_pipe pipe=loan vs vmsplice, {shown}"),
            Group::P,
            &p_figure("loan", false, ridgeback),
            &p_figure("vmsplice", false, linux),
            &[],
        );
    }
    row(P_COPY, "P limit: byte copy, one process", Group::P, P_COPY, P_COPY, &[]);
    row(
        P_COPY_CHECKSUM,
        "P limit: byte copy + checksum, one process",
        Group::P,
        P_COPY_CHECKSUM,
        P_COPY_CHECKSUM,
        &[],
    );
}

/// A time of seed 000's table, `minutes:seconds`, in the D rows' ms/job.
const fn vms_time(source: &'static str, as_published: &'static str, minutes: f64, seconds: f64) -> Seed {
    Seed { source, as_published, value: (minutes * 60.0 + seconds) * 1e3 }
}

/// One device of seed 000's table and the Ridgeback device that
/// reproduces it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Seed000Device {
    pub label: &'static str,
    /// `bench::d`'s device name on Ridgeback.
    pub ridgeback: &'static str,
    /// One job's elapsed and CPU time, then the median of the five jobs'
    /// (the seed lists each job; the median is what the rows compare).
    pub one_job: [Seed; 2],
    pub five_jobs: [Seed; 2],
}

/// Seed 000's table (VMS on a VAX, April 1988): "ELAPSED" and "CPU" of the
/// program, alone and as one of five copies.
pub const SEED_000: [Seed000Device; 3] = [
    Seed000Device {
        label: "RA81 disk on an HSC50",
        ridgeback: "virtio",
        one_job: [vms_time(RA81, "6:06.84", 6.0, 6.84), vms_time(RA81, "0:33.54", 0.0, 33.54)],
        five_jobs: [
            vms_time(RA81, "20:40.20 (median of 20:37-20:43)", 20.0, 40.20),
            vms_time(RA81, "0:32.75 (median of 0:31.80-0:34.49)", 0.0, 32.75),
        ],
    },
    Seed000Device {
        label: "PDDRIVER",
        ridgeback: "pddriver",
        one_job: [vms_time(PDDRIVER, "8:47.22", 8.0, 47.22), vms_time(PDDRIVER, "8:10.49", 8.0, 10.49)],
        five_jobs: [
            vms_time(PDDRIVER, "42:16.22 (median of 41:37-43:06)", 42.0, 16.22),
            vms_time(PDDRIVER, "8:03.59 (median of 8:02.16-8:03.88)", 8.0, 3.59),
        ],
    },
    Seed000Device {
        label: "RAMDRIVER",
        ridgeback: "ramdriver",
        one_job: [vms_time(RAMDRIVER, "1:35.64", 1.0, 35.64), vms_time(RAMDRIVER, "1:12.65", 1.0, 12.65)],
        five_jobs: [
            vms_time(RAMDRIVER, "6:03.99 (median of 5:18-6:20)", 6.0, 3.99),
            vms_time(RAMDRIVER, "1:12.32 (median of 1:11.66-1:12.75)", 1.0, 12.32),
        ],
    },
];

const RA81: &str = "VMS, RA81 on HSC50, 1988";
const PDDRIVER: &str = "VMS PDDRIVER, 1988";
const RAMDRIVER: &str = "VMS RAMDRIVER, 1988";

/// The Linux devices of the D rows, as the report names them.
pub const D_LINUX_DEVICES: [(&str, &str); 3] =
    [("virtio", "virtio-blk, O_DIRECT"), ("brd", "brd, O_DIRECT"), ("tmpfs", "tmpfs file (no O_DIRECT)")];

/// A D figure's name (as `bench::d::figure_name`).
pub fn d_figure(device: &str, jobs: &str, is_cpu: bool) -> String {
    format!("d_{device}_{jobs}{}", if is_cpu { "_cpu" } else { "" })
}

/// Seed 000's rows: for one job and five, elapsed then CPU time, each
/// Ridgeback device against its Linux peer, with the seed's figure.
fn d_rows(row: &mut impl FnMut(&str, &str, Group, &str, &str, &[Seed])) {
    let [disk, pddriver, ramdriver] = &SEED_000;
    for (jobs, shown, index) in [("1job", "1 job", 0), ("5jobs", "5 jobs", 1)] {
        for (is_cpu, measure) in [(false, "elapsed"), (true, "CPU")] {
            let slot = usize::from(is_cpu);
            let seed = |device: &Seed000Device| {
                if index == 0 { device.one_job[slot] } else { device.five_jobs[slot] }
            };
            let figure = |device: &str| d_figure(device, jobs, is_cpu);
            let suffix = if is_cpu { "_cpu" } else { "" };
            for (key, label, ridgeback, linux, seeds) in [
                ("ramdriver_brd", "RAMDRIVER vs brd O_DIRECT", "ramdriver", "brd", vec![seed(ramdriver)]),
                ("pddriver_brd", "PDDRIVER vs brd O_DIRECT", "pddriver", "brd", vec![seed(pddriver)]),
                ("virtio", "virtio-blk O_DIRECT", "virtio", "virtio", vec![seed(disk)]),
                ("ramdriver_tmpfs", "RAMDRIVER vs tmpfs file", "ramdriver", "tmpfs", vec![]),
            ] {
                row(
                    &format!("d_{key}_{jobs}{suffix}"),
                    &format!("D {label}, {shown}, {measure}"),
                    Group::D,
                    &figure(ridgeback),
                    &figure(linux),
                    &seeds,
                );
            }
        }
    }
}

/// The `r2bench` figures that open files, measured a second time with
/// the monitor's per-file file managers (`monitor.files=per-file`).
pub const R2_FILE_FIGURES: [&str; 4] = ["write", "read", "copy", "creat"];
/// What those figures' names end with in that boot.
pub const PER_FILE_SUFFIX: &str = "_perfile";

/// Seed 001's Table 2, one row per line of the table, with the Ridge 32's
/// and the VAX's figures. The creat and fork lines' VAX figures are as
/// the suite's definition reads the scan (its row order is unclear there;
/// see `docs/benchmarks.md`).
/// Then the file rows again with Ridge's per-file managers on Ridgeback
/// against the same Linux figures (the seeds are on the first set only).
fn r2_rows(row: &mut impl FnMut(&str, &str, Group, &str, &str, &[Seed])) {
    // (key, label, figure word, figure name, seeds)
    let table: [(&str, &str, &str, &str, [Seed; 2]); 8] = [
        (
            "r2_write",
            "R2 write 8 MB file, 8 KB blocks",
            "write",
            "r2_write_8MB",
            [kb_per_s(RIDGE, "499 KB/s", 499.0), kb_per_s(VAX, "142 KB/s", 142.0)],
        ),
        (
            "r2_read",
            "R2 read 8 MB file, 8 KB blocks",
            "read",
            "r2_read_8MB",
            [kb_per_s(RIDGE, "611 KB/s", 611.0), kb_per_s(VAX, "202 KB/s", 202.0)],
        ),
        (
            "r2_copy",
            "R2 copy 8 MB file (read+write)",
            "copy",
            "r2_copy_8MB",
            [kb_per_s(RIDGE, "303 KB/s", 303.0), kb_per_s(VAX, "243 KB/s", 243.0)],
        ),
        (
            "r2_pipe",
            "R2 pipe 8 MB to a forked reader",
            "pipe",
            "r2_pipe_8MB",
            [kb_per_s(RIDGE, "435 KB/s", 435.0), kb_per_s(VAX, "243 KB/s", 243.0)],
        ),
        ("r2_getpid", "R2 getpid (UNIX process)", "getpid", "r2_getpid", [RIDGE_GETPID, VAX_GETPID]),
        (
            "r2_sbrk",
            "R2 sbrk(+64)",
            "sbrk",
            "r2_sbrk",
            [per_s(RIDGE, "62 K/s", 62_000.0), per_s(VAX, "2 K/s", 2_000.0)],
        ),
        (
            "r2_creat",
            "R2 creat+close, new name",
            "creat",
            "r2_creat_close",
            [per_s(RIDGE, "16 /s", 16.0), per_s(VAX, "30 /s", 30.0)],
        ),
        (
            "r2_fork",
            "R2 fork+exit+wait",
            "fork",
            "r2_fork_exit_wait",
            [per_s(RIDGE, "13 /s", 13.0), per_s(VAX, "28 /s", 28.0)],
        ),
    ];
    for (key, label, _, figure, seeds) in &table {
        row(key, label, Group::R2, figure, figure, seeds);
    }
    // Not in the seed: `sbrk` with the first touch of each new page, the
    // page-fault path to the VM manager against Linux's brk and fault
    // (issue 16; the `sbrk` row above stays, Ridge's design).
    row("r2_sbrk_touch", "R2 sbrk(+4 KiB) + first touch", Group::R2, "r2_sbrk_touch", "r2_sbrk_touch", &[]);
    for (key, label, word, figure, _) in &table {
        if R2_FILE_FIGURES.contains(word) {
            let label = format!("{}, per-file mgr", label.split(',').next().unwrap_or(label));
            let ridgeback = format!("{figure}{PER_FILE_SUFFIX}");
            row(&format!("{key}{PER_FILE_SUFFIX}"), &label, Group::R2, &ridgeback, figure, &[]);
        }
    }
    // On ext2 on the virtio-blk disk, without and with fsync (no seed:
    // the Ridge's figures are for its own disk, the reference is
    // Linux's).
    for (suffix, figures, shown) in [
        (bench::r2::DISK_SUFFIX, &bench::r2::DISK_FIGURES[..], "ext2 disk"),
        (bench::r2::FSYNC_SUFFIX, &bench::r2::FSYNC_FIGURES[..], "ext2 disk, fsync"),
    ] {
        for (key, label, word, figure, _) in &table {
            if figures.contains(word) {
                let label = format!("{}, {shown}", label.split(',').next().unwrap_or(label));
                let name = format!("{figure}{suffix}");
                row(&format!("{key}{suffix}"), &label, Group::R2Disk, &name, &name, &[]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn only_takes_groups_aliases_and_commas() {
        assert_eq!(parse_groups(&words("getpid")).unwrap(), [Group::Getpid]);
        assert_eq!(
            parse_groups(&words("r1,getpid yield")).unwrap(),
            [Group::Getpid, Group::Switch, Group::Call, Group::Send, Group::Data]
        );
        assert_eq!(parse_groups(&words("copy copy")).unwrap(), [Group::Copy]);
        assert!(parse_groups(&words("fork")).unwrap_err().contains("unknown benchmark `fork`"));
        assert_eq!(
            parse_groups(&words("r2,r1")).unwrap(),
            [Group::Call, Group::Send, Group::Data, Group::R2]
        );
    }

    #[test]
    fn rows_have_unique_keys_and_placements_match() {
        let rows = rows(2);
        let mut keys: Vec<&str> = rows.iter().map(|r| r.key.as_str()).collect();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), rows.len());
        assert_eq!(
            rows.len(),
            43 + 12 + 15 + 8 + 12,
            "... + 8 B rows + 7 R2 disk rows + 8 B rk rows + 12 N rows on 2 CPUs"
        );
        // N: 2 workloads x 3 client counts x 2 modes per CPU count (2, and 4 when the machine has them).
        assert_eq!(super::rows(4).iter().filter(|r| r.group == Group::N).count(), 24);
        let n = rows.iter().find(|r| r.key == "n_rr_2c_2cpu_scalable").expect("an N row");
        assert_eq!((n.ridgeback.as_str(), n.linux.as_str()), ("n_rr_2c_2cpu_scalable", "n_rr_2c_2cpu_linux"));
        for row in &rows {
            let placement = |name: &str| name.rsplit('_').next().unwrap().to_string();
            if row.ridgeback.ends_with("cpu") {
                assert_eq!(placement(&row.ridgeback), placement(&row.linux), "{row:?}");
            }
        }
        let one_cpu_rows = super::rows(1);
        assert!(one_cpu_rows.iter().all(|r| !r.key.ends_with("2cpu")));
        assert_eq!(one_cpu_rows.len(), 38 + 7 + 15 + 8);
        // Four CPUs: Ridgeback's figure says 4, Linux's peer still uses 2.
        let four = super::rows(4);
        let call = four.iter().find(|r| r.key == "r1_call_2cpu").unwrap();
        assert_eq!(
            (call.ridgeback.as_str(), call.linux.as_str()),
            ("msg_call_32B_4cpu", "futex_pingpong_32B_2cpu")
        );
    }

    #[test]
    fn seeds_are_in_the_rows_unit() {
        let rows = rows(2);
        let getpid = &rows[0];
        assert!((getpid.seeds[0].value - 19_230.77).abs() < 0.01);
        let send = rows.iter().find(|r| r.key == "r1_send_pipe_1cpu").unwrap();
        assert_eq!(send.seeds[0].value, 190_000.0);
        // Table 2: KB/s become MB/s, operations per second ns/op.
        let write = rows.iter().find(|r| r.key == "r2_write").unwrap();
        assert!((write.seeds[0].value - 0.510_976).abs() < 1e-9);
        let fork = rows.iter().find(|r| r.key == "r2_fork").unwrap();
        assert!((fork.seeds[1].value - 1e9 / 28.0).abs() < 1e-6);
        let r2: Vec<&Row> = rows.iter().filter(|r| r.group == Group::R2).collect();
        assert_eq!(r2.len(), 13);
        assert!(r2[..8].iter().all(|r| r.seeds.len() == 2 && r.ridgeback == r.linux));
        // The touch row (issue 16): no seed, the same figure on both systems.
        assert_eq!(
            (r2[8].key.as_str(), r2[8].ridgeback.as_str(), r2[8].seeds.len()),
            ("r2_sbrk_touch", "r2_sbrk_touch", 0)
        );
        // The per-file rows: Ridgeback's figure with the suffix, the same Linux figure.
        let per_file = rows.iter().find(|r| r.key == "r2_copy_perfile").unwrap();
        assert_eq!(
            (per_file.ridgeback.as_str(), per_file.linux.as_str(), per_file.label.as_str()),
            ("r2_copy_8MB_perfile", "r2_copy_8MB", "R2 copy 8 MB file (read+write), per-file mgr")
        );
        assert!(r2[9..].iter().all(|r| r.seeds.is_empty() && r.key.ends_with(PER_FILE_SUFFIX)));
    }

    #[test]
    fn d_rows_pair_each_ridgeback_device_with_its_linux_peer_and_the_seed() {
        let rows = rows(2);
        let d: Vec<&Row> = rows.iter().filter(|r| r.group == Group::D).collect();
        assert_eq!(d.len(), 16);
        let row = |key: &str| *d.iter().find(|r| r.key == key).unwrap_or_else(|| panic!("{key}"));
        let ram = row("d_ramdriver_brd_1job");
        assert_eq!((ram.ridgeback.as_str(), ram.linux.as_str()), ("d_ramdriver_1job", "d_brd_1job"));
        assert_eq!(ram.label, "D RAMDRIVER vs brd O_DIRECT, 1 job, elapsed");
        assert_eq!(ram.seeds[0].value, 95_640.0, "1:35.64 in ms");
        let pd = row("d_pddriver_brd_5jobs_cpu");
        assert_eq!((pd.ridgeback.as_str(), pd.linux.as_str()), ("d_pddriver_5jobs_cpu", "d_brd_5jobs_cpu"));
        assert!((pd.seeds[0].value - 483_590.0).abs() < 1e-6, "8:03.59");
        let disk = row("d_virtio_5jobs");
        assert_eq!((disk.ridgeback.as_str(), disk.linux.as_str()), ("d_virtio_5jobs", "d_virtio_5jobs"));
        assert!((disk.seeds[0].value - 1_240_200.0).abs() < 1e-6, "20:40.20");
        assert!(row("d_ramdriver_tmpfs_1job_cpu").seeds.is_empty());
        // The shape the suite is to reproduce, in the seed's own numbers.
        let [ra81, pddriver, ramdriver] = SEED_000;
        assert!(pddriver.one_job[0].value > ra81.one_job[0].value);
        assert!(pddriver.one_job[0].value / ramdriver.one_job[0].value > 5.0);
        assert!(pddriver.five_jobs[0].value / ramdriver.five_jobs[0].value > 6.9);
        assert_eq!(parse_groups(&words("d")).unwrap(), [Group::D]);
        assert!(Group::D.is_unix() && !DEFAULT_GROUPS.contains(&Group::D));
    }

    #[test]
    fn p_rows_pair_each_design_with_linux_and_carry_the_seed_on_one_cpu() {
        let rows = rows(2);
        let p: Vec<&Row> = rows.iter().filter(|r| r.group == Group::P).collect();
        assert_eq!(p.len(), 12);
        let row = |key: &str| *p.iter().find(|r| r.key == key).unwrap_or_else(|| panic!("{key}"));
        let loan = row("p_loan_2cpu");
        assert_eq!((loan.ridgeback.as_str(), loan.linux.as_str()), ("p_loan_2cpu", "p_pipe_2cpu"));
        assert!(loan.seeds.is_empty());
        let small = row("p_small_1cpu");
        assert_eq!((small.ridgeback.as_str(), small.linux.as_str()), ("p_small_1cpu", "p_pipe_1cpu"));
        assert_eq!(small.seeds.iter().map(|s| s.value).collect::<Vec<_>>(), [487.0, 0.75]);
        assert_eq!(row("p_loan_1cpu").seeds[1].value, 4.70);
        let splice = row("p_vmsplice_2cpu");
        assert_eq!((splice.ridgeback.as_str(), splice.linux.as_str()), ("p_loan_2cpu", "p_vmsplice_2cpu"));
        let overwrite = row("p_loan_overwrite_1cpu");
        assert_eq!(
            (overwrite.ridgeback.as_str(), overwrite.linux.as_str()),
            ("p_loan_overwrite_1cpu", "p_pipe_overwrite_1cpu")
        );
        assert_eq!(row("p_copy").linux, "p_copy");
        // Four CPUs: Ridgeback's figure says 4, Linux's peer uses 2.
        let four = super::rows(4);
        let big = four.iter().find(|r| r.key == "p_big_2cpu").unwrap();
        assert_eq!((big.ridgeback.as_str(), big.linux.as_str()), ("p_big_4cpu", "p_pipe_2cpu"));
        assert!(Group::P.is_unix() && !DEFAULT_GROUPS.contains(&Group::P));
        assert_eq!(parse_groups(&words("p")).unwrap(), [Group::P]);
    }

    #[test]
    fn b_rows_pair_each_nbuf_with_linux_and_carry_v1_to_six() {
        let rows = rows(2);
        let b: Vec<&Row> = rows.iter().filter(|r| r.group == Group::B).collect();
        assert_eq!(b.len(), 8);
        assert!(b.iter().all(|r| r.linux == "b_linux" && r.ridgeback == r.key));
        assert_eq!(b[0].ridgeback, "b_nbuf1");
        assert_eq!(b[0].seeds[0].value, 3215.0);
        assert_eq!(b[5].seeds[0].as_published, "724 ms");
        assert!(b[6].seeds.is_empty() && b[7].ridgeback == "b_nbuf12");
        let disk: Vec<&Row> = rows.iter().filter(|r| r.group == Group::R2Disk).collect();
        assert_eq!(disk.len(), 7);
        let names: Vec<&str> = disk.iter().map(|r| r.ridgeback.as_str()).collect();
        assert!(names.contains(&"r2_write_8MB_disk") && names.contains(&"r2_creat_close_disk_fsync"));
        assert!(!names.contains(&"r2_read_8MB_disk_fsync"), "a read leaves nothing to fsync");
        assert!(disk.iter().all(|r| r.ridgeback == r.linux));
        assert_eq!(parse_groups(&words("b,r2disk")).unwrap(), [Group::B, Group::R2Disk]);
        assert!(!DEFAULT_GROUPS.contains(&Group::B) && !DEFAULT_GROUPS.contains(&Group::R2Disk));
        assert!(Group::B.needs_ext2_disk() && !Group::R2.needs_ext2_disk());
    }

    #[test]
    fn brk_rows_are_new_names_beside_b_and_carry_v1_too() {
        let rows = rows(2);
        let rk: Vec<&Row> = rows.iter().filter(|r| r.group == Group::BRk).collect();
        assert_eq!(rk.len(), 8);
        assert_eq!(rk[0].ridgeback, "b_rk_nbuf1");
        assert_eq!(rk[7].ridgeback, "b_rk_nbuf12");
        // Linux on the same rk disk, its own figure beside the plain one.
        assert!(rk.iter().all(|r| r.linux == "b_rk_linux" && r.ridgeback == r.key));
        assert_eq!(Group::BRk.linux_figures(), ["brk"]);
        assert_eq!(rk[1].seeds[0].as_published, "1.309 s");
        // The plain disk's published names are untouched by the new group.
        assert!(rows.iter().filter(|r| r.group == Group::B).all(|r| r.key.starts_with("b_nbuf")));
        assert_eq!(parse_groups(&words("brk")).unwrap(), [Group::BRk]);
        assert_eq!(parse_groups(&words("b,brk")).unwrap(), [Group::B, Group::BRk]);
        assert!(
            Group::BRk.needs_ext2_disk() && Group::BRk.is_unix() && !DEFAULT_GROUPS.contains(&Group::BRk)
        );
    }

    #[test]
    fn every_group_has_a_row_and_figures_on_both_systems() {
        let rows = rows(2);
        for group in ALL_GROUPS {
            assert!(rows.iter().any(|r| r.group == group), "{group:?}");
            assert!(!group.linux_figures().is_empty());
            assert!(!group.ridgeback_figure().is_empty());
        }
    }
}
