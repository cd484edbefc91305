//! `cargo xtask profile`: a sampling profiler of the whole guest, run from
//! the host.
//!
//! What it is: it boots Ridgeback under QEMU with the kernel option
//! `profile=1` (the kernel then prints `profile: space ROOT PID NAME`
//! whenever a process gets an address space) and a QMP socket, and
//! samples every vCPU from the host at a fixed host-time period: QMP
//! `stop`, `human-monitor-command "info registers -a"`, `cont`. Each
//! sample is one (CPU, RIP, CR3, halted) per vCPU. A CR3 names the
//! process through the latest `profile: space` line for that root; a RIP
//! in the upper half is the kernel's (working for that process), a lower
//! one the process's own program. RIPs are symbolised against the ELF
//! files of the build (`nm -C` of `target/x86_64-unknown-none/release/*`,
//! whose release profile keeps the symbol table), and the report is flat:
//! each process's share of the samples, then its top functions.
//!
//! Why `stop` before reading: under TCG a vCPU's `env->eip` is written
//! back only when it leaves its translated code (QEMU chains translation
//! blocks without storing the PC), so reading registers of a running vCPU
//! gives the last exit's RIP (a system call or an interrupt), not where
//! the time goes. `stop` makes every vCPU leave at the next block
//! boundary with its state written back; the guest's virtual clock stops
//! with it, so the guest does not see the pauses (only the host's wall
//! time grows).
//!
//! What it is not: a call-graph profiler (no stacks: the guest's frames
//! are not walked), nor exact below a translation block (a sample lands
//! at the start of the block that was about to run). Under TCG, host time
//! per guest instruction differs by instruction kind (a `mov` to CR3 or a
//! `syscall` costs far more than an `add`), so shares are of emulated
//! time, which is what the benchmarks under TCG measure too.
//!
//! Invariants: the pure parts ([`parse_registers`], [`parse_space_line`],
//! [`Symbols`], [`fold`], [`render`]) take text and return values, and
//! are unit-tested; only [`run`] touches QEMU, sockets and files.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::time::{Duration, Instant};

use crate::image::{ImageKind, Workspace};
use crate::qemu::{self, DiskChoice};
use crate::run::RunOptions;
use crate::tools::Result;

/// Where a kernel address starts: the upper half of the canonical space
/// (the kernel is linked there; every user address is below
/// `abi::layout::USER_MAX` far under it).
const KERNEL_HALF_START: u64 = 0xffff_8000_0000_0000;
/// The bits of CR3 that hold the root's physical address (bits 12..52);
/// the low ones are flags or a PCID.
const CR3_ROOT_MASK: u64 = 0x000f_ffff_ffff_f000;

/// `cargo xtask profile` options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProfileOptions {
    /// How long to sample after the session starts (and `skip_seconds`).
    pub seconds: u64,
    /// Seconds of the session not sampled first (a row's setup, such as
    /// the read row's writing of its file).
    pub skip_seconds: u64,
    /// Host milliseconds between two samples.
    pub period_ms: u64,
    /// Functions listed per process.
    pub top: usize,
    pub workload: Workload,
    pub smp: u32,
    pub accel: qemu::AccelChoice,
    /// Kernel options besides `profile=1`.
    pub cmdline: String,
}

/// What runs while the profiler samples.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Workload {
    /// `--batch CMDS`: shell commands on the normal image (disk at /disk).
    Batch(String),
    /// `--r2disk-row ROW`: one R2 row on ext2 on a fresh disk, as
    /// `cargo xtask bench --only r2disk` runs it.
    R2Disk(String),
    /// `--r2-row ROW`: one R2 row on the memory file system.
    R2Mem(String),
}

impl Default for ProfileOptions {
    fn default() -> Self {
        ProfileOptions {
            seconds: 20,
            skip_seconds: 0,
            period_ms: 10,
            top: 25,
            workload: Workload::R2Disk("read".to_string()),
            smp: qemu::DEFAULT_SMP,
            accel: qemu::AccelChoice::Auto,
            cmdline: String::new(),
        }
    }
}

pub const USAGE: &str = "\
profile options:
  --seconds N           sample for N seconds after the session starts (default 20)
  --skip-seconds N      start sampling N seconds into the session (default 0; the R2 rows
                        run for --seconds plus this)
  --period-ms N         host milliseconds between samples (default 10)
  --top N               functions listed per process (default 25)
  --batch \"COMMANDS\"    profile shell commands on the normal image
  --r2disk-row ROW      profile one R2 row (write|read|copy|creat) on ext2 on a fresh disk
                        (the default: read)
  --r2-row ROW          profile one R2 row on the memory file system
  --smp N               number of CPUs (default 2)
  --cmdline \"OPTIONS\"   further kernel options (profile=1 is always added)
  --accel tcg|kvm|auto  accelerator (default auto; sampling needs TCG to be exact)
";

/// One vCPU's state in one sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuState {
    pub cpu: u32,
    pub rip: u64,
    pub cr3: u64,
    pub is_halted: bool,
}

/// The vCPUs in the text of HMP `info registers -a` (or of `info
/// registers`, one CPU with no `CPU#` line: CPU 0). A CPU whose RIP or
/// CR3 is missing is left out.
pub fn parse_registers(text: &str) -> Vec<CpuState> {
    let mut out = Vec::new();
    let mut cpu = 0u32;
    let (mut rip, mut cr3, mut is_halted) = (None, None, false);
    let mut flush = |cpu: u32, rip: &mut Option<u64>, cr3: &mut Option<u64>, halted: &mut bool| {
        if let (Some(r), Some(c)) = (*rip, *cr3) {
            out.push(CpuState { cpu, rip: r, cr3: c, is_halted: *halted });
        }
        (*rip, *cr3, *halted) = (None, None, false);
    };
    for line in text.lines() {
        let line = line.trim();
        if let Some(n) = line.strip_prefix("CPU#") {
            flush(cpu, &mut rip, &mut cr3, &mut is_halted);
            cpu = n.trim_end_matches(':').trim().parse().unwrap_or(cpu);
            continue;
        }
        for word in line.split_whitespace() {
            let Some((key, value)) = word.split_once('=') else { continue };
            match key {
                "RIP" => rip = u64::from_str_radix(value, 16).ok(),
                "CR3" => cr3 = u64::from_str_radix(value, 16).ok(),
                "HLT" => is_halted = value == "1",
                _ => {}
            }
        }
    }
    flush(cpu, &mut rip, &mut cr3, &mut is_halted);
    out
}

/// The kernel's `profile: space ROOT PID NAME` line (kernel/src/lifecycle.rs,
/// `note_space`): the root's physical address and the process's name. The
/// line may follow other text on the same serial line.
pub fn parse_space_line(line: &str) -> Option<(u64, String)> {
    let at = line.find("profile: space ")?;
    let mut words = line[at + "profile: space ".len()..].split_whitespace();
    let root = u64::from_str_radix(words.next()?.trim_start_matches("0x"), 16).ok()?;
    let _pid = words.next()?;
    let name = words.next().unwrap_or("?");
    Some((root, name.to_string()))
}

/// The function symbols of one ELF file, sorted by address.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Symbols {
    /// (start address, name), ascending.
    entries: Vec<(u64, String)>,
}

impl Symbols {
    /// From the output of `nm -C -n --defined-only FILE`: the text symbols
    /// (`t`, `T`, `w`, `W`); data and absolute symbols cannot hold a RIP.
    pub fn from_nm(text: &str) -> Symbols {
        let mut entries: Vec<(u64, String)> = text
            .lines()
            .filter_map(|line| {
                let mut parts = line.splitn(3, ' ');
                let addr = u64::from_str_radix(parts.next()?, 16).ok()?;
                let kind = parts.next()?;
                let name = parts.next()?.trim();
                matches!(kind, "t" | "T" | "w" | "W").then(|| (addr, name.to_string()))
            })
            .collect();
        entries.sort_by_key(|e| e.0);
        Symbols { entries }
    }

    /// The function `addr` is in: the last symbol at or below it. (A
    /// symbol's size is not kept: an address past a function's end, in
    /// padding, is charged to it, which a profile can bear.)
    pub fn lookup(&self, addr: u64) -> Option<&str> {
        let at = self.entries.partition_point(|e| e.0 <= addr);
        (at > 0).then(|| self.entries[at - 1].1.as_str())
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// One sample of one CPU, resolved: who, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hit {
    /// The process's name (`idle` for a halted CPU; `cr3 0x...` for a root
    /// no `profile: space` line named yet).
    pub process: String,
    /// Whether the CPU was in the kernel.
    pub is_kernel: bool,
    /// The function (`[k] name` for the kernel's, `0x...` unsymbolised).
    pub function: String,
}

/// A process's line in the report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcessRow {
    pub process: String,
    pub samples: u64,
    pub kernel_samples: u64,
    /// (function, samples), most first.
    pub functions: Vec<(String, u64)>,
}

/// The folded profile: processes, most samples first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    pub total: u64,
    pub rows: Vec<ProcessRow>,
}

/// Fold hits into a report: per process, per function, with counts,
/// sorted by count (ties by name, so the report is deterministic).
pub fn fold(hits: &[Hit]) -> Report {
    let mut by_process: HashMap<&str, (u64, u64, HashMap<&str, u64>)> = HashMap::new();
    for hit in hits {
        let entry = by_process.entry(hit.process.as_str()).or_default();
        entry.0 += 1;
        entry.1 += u64::from(hit.is_kernel);
        *entry.2.entry(hit.function.as_str()).or_default() += 1;
    }
    let mut rows: Vec<ProcessRow> = by_process
        .into_iter()
        .map(|(process, (samples, kernel_samples, functions))| {
            let mut functions: Vec<(String, u64)> =
                functions.into_iter().map(|(f, n)| (f.to_string(), n)).collect();
            functions.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            ProcessRow { process: process.to_string(), samples, kernel_samples, functions }
        })
        .collect();
    rows.sort_by(|a, b| b.samples.cmp(&a.samples).then_with(|| a.process.cmp(&b.process)));
    Report { total: hits.len() as u64, rows }
}

fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 { 0.0 } else { part as f64 * 100.0 / whole as f64 }
}

/// The report as text: the process shares, then each process's `top`
/// functions (with their share of that process and of everything).
pub fn render(report: &Report, top: usize) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "{} CPU samples\n\nprocess shares (kernel: time in the kernel with that process's CR3):\n",
        report.total
    ));
    out.push_str(&format!("  {:>6}  {:>7}  {:>7}  process\n", "%", "samples", "kernel"));
    for row in &report.rows {
        out.push_str(&format!(
            "  {:>5.1}%  {:>7}  {:>7}  {}\n",
            percent(row.samples, report.total),
            row.samples,
            row.kernel_samples,
            row.process
        ));
    }
    for row in &report.rows {
        out.push_str(&format!(
            "\n{} ({} samples, {:.1}% of all; [k] = in the kernel):\n",
            row.process,
            row.samples,
            percent(row.samples, report.total)
        ));
        for (function, n) in row.functions.iter().take(top) {
            out.push_str(&format!(
                "  {:>5.1}%  {:>5.1}%all  {:>6}  {}\n",
                percent(*n, row.samples),
                percent(*n, report.total),
                n,
                function
            ));
        }
        if row.functions.len() > top {
            let rest: u64 = row.functions[top..].iter().map(|f| f.1).sum();
            out.push_str(&format!(
                "  {:>5.1}%  {:>5.1}%all  {:>6}  ({} more functions)\n",
                percent(rest, row.samples),
                percent(rest, report.total),
                rest,
                row.functions.len() - top
            ));
        }
    }
    out
}

/// Resolves CPU states to hits: root names from the kernel's lines, and
/// symbols from each program's ELF (read once, on first use).
pub struct Resolver {
    bin_dir: PathBuf,
    kernel: Symbols,
    /// Root physical address -> process name (the latest line wins: a
    /// freed root's frame may be a later process's root).
    roots: HashMap<u64, String>,
    programs: HashMap<String, Symbols>,
}

impl Resolver {
    pub fn new(bin_dir: &Path, kernel: Symbols) -> Resolver {
        Resolver { bin_dir: bin_dir.to_path_buf(), kernel, roots: HashMap::new(), programs: HashMap::new() }
    }

    /// Take note of one serial line (a `profile: space` line, or anything else).
    pub fn note_line(&mut self, line: &str) {
        if let Some((root, name)) = parse_space_line(line) {
            self.roots.insert(root & CR3_ROOT_MASK, name);
        }
    }

    fn program(&mut self, name: &str) -> &Symbols {
        let bin_dir = self.bin_dir.clone();
        self.programs.entry(name.to_string()).or_insert_with(|| {
            // A UNIX program may be named by its path (`/bin/cat`).
            let file = bin_dir.join(name.rsplit('/').next().unwrap_or(name));
            nm_symbols(&file).unwrap_or_default()
        })
    }

    pub fn resolve(&mut self, state: &CpuState) -> Hit {
        let is_kernel = state.rip >= KERNEL_HALF_START;
        let process = if state.is_halted {
            "idle".to_string()
        } else {
            self.roots
                .get(&(state.cr3 & CR3_ROOT_MASK))
                .cloned()
                .unwrap_or_else(|| format!("cr3 {:#x}", state.cr3))
        };
        let function = if is_kernel {
            match self.kernel.lookup(state.rip) {
                Some(name) => format!("[k] {name}"),
                None => format!("[k] {:#x}", state.rip),
            }
        } else {
            let symbols = self.program(&process);
            match symbols.lookup(state.rip) {
                Some(name) => name.to_string(),
                None => format!("{:#x}", state.rip),
            }
        };
        Hit { process, is_kernel, function }
    }
}

/// `nm -C -n --defined-only FILE`, parsed; None if nm fails (a program
/// that is not in the build, or no binutils).
fn nm_symbols(file: &Path) -> Option<Symbols> {
    let output =
        std::process::Command::new("nm").args(["-C", "-n", "--defined-only"]).arg(file).output().ok()?;
    output.status.success().then(|| Symbols::from_nm(&String::from_utf8_lossy(&output.stdout)))
}

/// Parse `profile`'s arguments.
pub fn parse_args(args: &[String]) -> Result<ProfileOptions> {
    let mut opts = ProfileOptions::default();
    let mut it = args.iter();
    let number = |flag: &str, value: Option<&String>, min: u64, max: u64| -> Result<u64> {
        let text = value.ok_or_else(|| format!("{flag} wants a value"))?;
        match text.parse::<u64>() {
            Ok(n) if (min..=max).contains(&n) => Ok(n),
            _ => Err(format!("{flag} wants a whole number from {min} to {max}, got `{text}`")),
        }
    };
    let row = |flag: &str, value: Option<&String>| -> Result<String> {
        let text = value.ok_or_else(|| format!("{flag} wants a row name"))?;
        if bench::r2::DISK_FIGURES.contains(&text.as_str()) {
            Ok(text.clone())
        } else {
            Err(format!("{flag} wants one of {}, got `{text}`", bench::r2::DISK_FIGURES.join(", ")))
        }
    };
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--seconds" => opts.seconds = number(arg, it.next(), 1, 3600)?,
            "--skip-seconds" => opts.skip_seconds = number(arg, it.next(), 0, 3600)?,
            "--period-ms" => opts.period_ms = number(arg, it.next(), 1, 10_000)?,
            "--top" => opts.top = number(arg, it.next(), 1, 10_000)? as usize,
            "--smp" => opts.smp = qemu::parse_smp(it.next().ok_or("--smp wants a value")?)?,
            "--accel" => opts.accel = it.next().ok_or("--accel wants a value")?.parse()?,
            "--cmdline" => opts.cmdline = it.next().ok_or("--cmdline wants a value")?.clone(),
            "--batch" => opts.workload = Workload::Batch(it.next().ok_or("--batch wants commands")?.clone()),
            "--r2disk-row" => opts.workload = Workload::R2Disk(row(arg, it.next())?),
            "--r2-row" => opts.workload = Workload::R2Mem(row(arg, it.next())?),
            "--help" | "-h" => return Err(USAGE.to_string()),
            other => return Err(format!("profile: unknown option `{other}`\n{USAGE}")),
        }
    }
    Ok(opts)
}

/// The batch script of an R2 row: one r2bench run, long enough to sample
/// for `seconds` (three samples, each at least a third of it); on the
/// disk with `--dir` and `--suffix` as the benchmark gives them, else in
/// r2bench's own directory (the memory file system).
fn r2_script(on_disk: bool, row: &str, seconds: u64) -> String {
    let place = match on_disk {
        true => format!(" --dir {}/r2 --suffix {}", bench::r2::DISK_DIR, bench::r2::DISK_SUFFIX),
        false => String::new(),
    };
    format!("/bin/r2bench{place} --samples 3 --sample-ms {} {row}\n", seconds * 1000 / 3)
}

/// One QMP connection (QEMU's JSON machine protocol on a Unix socket).
struct Qmp {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
}

impl Qmp {
    fn connect(path: &Path, deadline: Instant) -> Result<Qmp> {
        let stream = loop {
            match UnixStream::connect(path) {
                Ok(s) => break s,
                Err(err) if Instant::now() >= deadline => {
                    return Err(format!("cannot reach QEMU's QMP socket {}: {err}", path.display()));
                }
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        };
        stream.set_read_timeout(Some(Duration::from_secs(30))).map_err(|e| e.to_string())?;
        let writer = stream.try_clone().map_err(|e| e.to_string())?;
        let mut qmp = Qmp { reader: BufReader::new(stream), writer };
        qmp.read_message()?; // the greeting
        qmp.execute("qmp_capabilities", None)?;
        Ok(qmp)
    }

    fn read_message(&mut self) -> Result<serde_json::Value> {
        let mut line = String::new();
        match self.reader.read_line(&mut line) {
            Ok(0) => Err("QEMU closed the QMP socket".to_string()),
            Ok(_) => {
                serde_json::from_str(&line).map_err(|e| format!("bad QMP message `{}`: {e}", line.trim()))
            }
            Err(e) => Err(format!("QMP read: {e}")),
        }
    }

    /// Run a command and return its `return` value (events are skipped).
    fn execute(&mut self, command: &str, arguments: Option<serde_json::Value>) -> Result<serde_json::Value> {
        let mut message = serde_json::json!({ "execute": command });
        if let Some(arguments) = arguments {
            message["arguments"] = arguments;
        }
        writeln!(self.writer, "{message}").map_err(|e| format!("QMP write: {e}"))?;
        loop {
            let reply = self.read_message()?;
            if let Some(value) = reply.get("return") {
                return Ok(value.clone());
            }
            if let Some(error) = reply.get("error") {
                return Err(format!("QMP {command}: {error}"));
            }
        }
    }

    /// One sample: every vCPU stopped at a block boundary, read, resumed.
    fn sample(&mut self) -> Result<String> {
        self.execute("stop", None)?;
        let text = self.execute(
            "human-monitor-command",
            Some(serde_json::json!({ "command-line": "info registers -a" })),
        );
        self.execute("cont", None)?;
        Ok(text?.as_str().unwrap_or_default().to_string())
    }
}

/// `cargo xtask profile`.
pub fn run(args: &[String]) -> Result<ExitCode> {
    let opts = match parse_args(args) {
        Ok(opts) => opts,
        Err(message) if message == USAGE => {
            print!("{USAGE}");
            return Ok(ExitCode::SUCCESS);
        }
        Err(message) => return Err(message),
    };
    qemu::ensure_qemu()?;
    let workspace = Workspace::load()?;
    let out_dir = workspace.target_dir.join("profile");
    std::fs::create_dir_all(&out_dir).map_err(|e| format!("cannot create {}: {e}", out_dir.display()))?;
    let cmdline = format!("{} profile=1", opts.cmdline).trim().to_string();
    let mut run_opts = RunOptions {
        smp: opts.smp,
        accel: opts.accel,
        cmdline,
        net: qemu::NetChoice::None,
        ..RunOptions::default()
    };
    let (kind, script) = match &opts.workload {
        Workload::Batch(commands) => (ImageKind::Normal, commands.clone()),
        Workload::R2Disk(row) => {
            // A fresh ext2 volume with the `r2` directory, as the
            // benchmark's (xtask/src/bench/mod.rs, write_ext2_tree).
            let tree = out_dir.join("ext2-tree");
            let r2 = tree.join("r2");
            std::fs::create_dir_all(&r2).map_err(|e| format!("cannot create {}: {e}", r2.display()))?;
            let image = out_dir.join("ext2.img");
            let _ = std::fs::remove_file(&image);
            crate::ext2::make_image(&image, crate::ext2::DEFAULT_DISK_BYTES, Some(&tree))?;
            run_opts.disk = DiskChoice::Image(image);
            (ImageKind::Bench, r2_script(true, row, opts.seconds + opts.skip_seconds))
        }
        Workload::R2Mem(row) => {
            run_opts.disk = DiskChoice::None;
            (ImageKind::Bench, r2_script(false, row, opts.seconds + opts.skip_seconds))
        }
    };
    let config = crate::batch::prepare(&workspace, &run_opts, &script, kind)?;
    let key = crate::batch::SessionKey::of(&config);
    let socket = out_dir.join("qmp.sock");
    let _ = std::fs::remove_file(&socket);
    let mut args = config.to_args()?;
    args.push("-qmp".to_string());
    args.push(format!("unix:{},server=on,wait=off", socket.display()));
    let mut child = std::process::Command::new(qemu::QEMU_BINARY)
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .stdin(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start QEMU: {e}"))?;
    let stderr = qemu::collect_stderr(&mut child);
    // The serial console line by line, as the tests that talk with their
    // guest read it.
    let rx = crate::test::serial::lines(child.stdout.take().expect("stdout is piped"));
    let kernel = nm_symbols(&config.kernel).unwrap_or_default();
    if kernel.is_empty() {
        eprintln!("xtask: profile: no symbols in {} (is nm installed?)", config.kernel.display());
    }
    let mut resolver = Resolver::new(&workspace.bin_dir(), kernel);
    let result = sample_session(&opts, &socket, &rx, &key, &mut resolver);
    // Our own child only, by its handle.
    let _ = child.kill();
    let _ = child.wait();
    let transcript_tail = stderr.join().unwrap_or_default();
    let (hits, output, elapsed) = match result {
        Ok(r) => r,
        Err(message) => return Err(format!("{message}\n{}", transcript_tail.trim())),
    };
    let report = fold(&hits);
    let cpus = opts.smp.max(1);
    let mut text = format!(
        "profile: {} samples of {} vCPU(s) over {:.1} s of host time, every {} ms (workload: {:?})\n",
        hits.len() / cpus as usize,
        cpus,
        elapsed.as_secs_f64(),
        opts.period_ms,
        opts.workload
    );
    text.push_str(&render(&report, opts.top));
    if !output.is_empty() {
        text.push_str("\nthe session's output:\n");
        text.push_str(&output);
    }
    print!("{text}");
    let report_path = out_dir.join("report.txt");
    let _ = std::fs::write(&report_path, &text);
    eprintln!("xtask: profile: report written to {}", report_path.display());
    Ok(ExitCode::SUCCESS)
}

type SessionResult = (Vec<Hit>, String, Duration);

/// Sample from the session's start until it ends or `opts.seconds` pass.
fn sample_session(
    opts: &ProfileOptions,
    socket: &Path,
    rx: &std::sync::mpsc::Receiver<String>,
    key: &crate::batch::SessionKey,
    resolver: &mut Resolver,
) -> Result<SessionResult> {
    let boot_deadline = Instant::now() + Duration::from_secs(600);
    let mut qmp = Qmp::connect(socket, Instant::now() + Duration::from_secs(30))?;
    let mut output = String::new();
    let mut transcript = String::new();
    // Wait for the session to start (the boot is not profiled).
    let mut in_session = false;
    let mut ended = false;
    let take_lines = |resolver: &mut Resolver,
                      in_session: &mut bool,
                      ended: &mut bool,
                      output: &mut String,
                      transcript: &mut String,
                      wait: Duration| {
        let first = rx.recv_timeout(wait);
        let lines = first.into_iter().chain(std::iter::from_fn(|| rx.try_recv().ok()));
        for line in lines {
            resolver.note_line(&line);
            if transcript.len() < 1 << 20 {
                transcript.push_str(&line);
                transcript.push('\n');
            }
            if key.is_start(&line) {
                *in_session = true;
                continue;
            }
            if let Some((before, _status)) = key.exit(&line) {
                output.push_str(before);
                *ended = true;
                continue;
            }
            if *in_session && !line.starts_with("profile: space") && output.len() < 1 << 16 {
                output.push_str(&line);
                output.push('\n');
            }
        }
    };
    while !in_session && !ended {
        if Instant::now() >= boot_deadline {
            return Err(format!("the session did not start; the machine said:\n{transcript}"));
        }
        take_lines(
            resolver,
            &mut in_session,
            &mut ended,
            &mut output,
            &mut transcript,
            Duration::from_millis(200),
        );
    }
    let skip_until = Instant::now() + Duration::from_secs(opts.skip_seconds);
    while !ended && Instant::now() < skip_until {
        let left = skip_until.saturating_duration_since(Instant::now()).min(Duration::from_millis(200));
        take_lines(resolver, &mut in_session, &mut ended, &mut output, &mut transcript, left);
    }
    let started = Instant::now();
    let until = started + Duration::from_secs(opts.seconds);
    let mut hits = Vec::new();
    let period = Duration::from_millis(opts.period_ms);
    while !ended && Instant::now() < until {
        let text = qmp.sample()?;
        // Lines the guest printed before the stop name the roots it uses.
        take_lines(resolver, &mut in_session, &mut ended, &mut output, &mut transcript, Duration::ZERO);
        for state in parse_registers(&text) {
            hits.push(resolver.resolve(&state));
        }
        take_lines(resolver, &mut in_session, &mut ended, &mut output, &mut transcript, period);
    }
    Ok((hits, output, started.elapsed()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const REGISTERS: &str = "\
CPU#0
RAX=0000000000000000 RBX=0000000000000001 RCX=0000000000000000 RDX=0000000000000000
RSI=0000000000000000 RDI=0000000000000000 RBP=0000000000000000 RSP=ffffffff80200000
RIP=ffffffff80101234 RFL=00000246 [---Z-P-] CPL=0 II=0 A20=1 SMM=0 HLT=1
CR0=80010033 CR2=0000000000000000 CR3=0000000001234000 CR4=000006a0
CPU#1
RIP=0000000000201010 RFL=00000202 [-------] CPL=3 II=0 A20=1 SMM=0 HLT=0
CR0=80010033 CR2=0000000000000000 CR3=0000000002345018 CR4=000006a0
";

    #[test]
    fn registers_of_every_cpu_are_read() {
        let cpus = parse_registers(REGISTERS);
        assert_eq!(
            cpus,
            [
                CpuState { cpu: 0, rip: 0xffff_ffff_8010_1234, cr3: 0x123_4000, is_halted: true },
                CpuState { cpu: 1, rip: 0x20_1010, cr3: 0x234_5018, is_halted: false },
            ]
        );
        // One CPU's `info registers` has no CPU# line; a CPU without RIP is left out.
        assert_eq!(parse_registers("RIP=10 HLT=0\nCR3=2000\n").len(), 1);
        assert!(parse_registers("CPU#0\nRAX=0\n").is_empty());
        assert!(parse_registers("").is_empty());
    }

    #[test]
    fn space_lines_name_roots() {
        assert_eq!(
            parse_space_line("profile: space 0x2345000 0x10003 ext2fs"),
            Some((0x234_5000, "ext2fs".into()))
        );
        assert_eq!(parse_space_line("text before profile: space 0x1000 0x1 sh"), Some((0x1000, "sh".into())));
        assert_eq!(parse_space_line("profile: space zz 0x1 sh"), None);
        assert_eq!(parse_space_line("process sh (0x1) started"), None);
    }

    const NM: &str = "\
0000000000200238 r ext2fs::RIDGEBACK_PROGRAM_NOTE
0000000000201000 T _start
0000000000201010 t fs_ext2::cache::Cache::find_ready
0000000000201200 W memcpy
0000000000201400 t main
";

    #[test]
    fn symbols_are_found_by_address() {
        let symbols = Symbols::from_nm(NM);
        assert_eq!(symbols.lookup(0x20_1000), Some("_start"));
        assert_eq!(symbols.lookup(0x20_100f), Some("_start"));
        assert_eq!(symbols.lookup(0x20_1010), Some("fs_ext2::cache::Cache::find_ready"));
        assert_eq!(symbols.lookup(0x20_1300), Some("memcpy"));
        assert_eq!(symbols.lookup(0x30_0000), Some("main"));
        // Below the first text symbol (the data symbol does not count).
        assert_eq!(symbols.lookup(0x20_0300), None);
        assert!(Symbols::from_nm("").lookup(1).is_none());
    }

    #[test]
    fn cpu_states_resolve_to_processes_and_functions() {
        let mut resolver = Resolver::new(
            Path::new("/nonexistent"),
            Symbols::from_nm("ffffffff80101000 T kernel::idle\nffffffff80101300 T kernel::other\n"),
        );
        resolver.note_line("profile: space 0x2345000 0x10003 ext2fs");
        let cpus = parse_registers(REGISTERS);
        assert_eq!(
            resolver.resolve(&cpus[0]),
            Hit { process: "idle".into(), is_kernel: true, function: "[k] kernel::idle".into() }
        );
        // The flag bits of CR3 do not hide the root; a program with no ELF
        // gives bare addresses.
        assert_eq!(
            resolver.resolve(&cpus[1]),
            Hit { process: "ext2fs".into(), is_kernel: false, function: "0x201010".into() }
        );
        // A root named again belongs to its latest process.
        resolver.note_line("profile: space 0x2345000 0x20004 sh");
        assert_eq!(resolver.resolve(&cpus[1]).process, "sh");
        let unknown = CpuState { cpu: 0, rip: 5, cr3: 0x9000, is_halted: false };
        assert_eq!(resolver.resolve(&unknown).process, "cr3 0x9000");
    }

    #[test]
    fn hits_fold_into_sorted_rows() {
        let hit = |p: &str, k: bool, f: &str| Hit { process: p.into(), is_kernel: k, function: f.into() };
        let hits = [
            hit("ext2fs", false, "read_into"),
            hit("ext2fs", true, "[k] copy"),
            hit("ext2fs", false, "read_into"),
            hit("idle", true, "[k] idle"),
            hit("r2bench", false, "b"),
            hit("r2bench", false, "a"),
        ];
        let report = fold(&hits);
        assert_eq!(report.total, 6);
        let names: Vec<&str> = report.rows.iter().map(|r| r.process.as_str()).collect();
        assert_eq!(names, ["ext2fs", "r2bench", "idle"]);
        assert_eq!(report.rows[0].samples, 3);
        assert_eq!(report.rows[0].kernel_samples, 1);
        assert_eq!(report.rows[0].functions, [("read_into".to_string(), 2), ("[k] copy".to_string(), 1)]);
        // Ties by name.
        assert_eq!(report.rows[1].functions, [("a".to_string(), 1), ("b".to_string(), 1)]);
        let text = render(&report, 1);
        assert!(text.contains(" 50.0%        3        1  ext2fs"), "{text}");
        assert!(text.contains("  66.7%   33.3%all       2  read_into"), "{text}");
        assert!(text.contains("(1 more functions)"), "{text}");
        assert!(fold(&[]).rows.is_empty());
    }

    #[test]
    fn arguments_parse_and_bad_ones_are_refused() {
        let args = |s: &str| s.split_whitespace().map(String::from).collect::<Vec<_>>();
        let opts = parse_args(&args("--seconds 5 --r2disk-row write --top 3 --skip-seconds 2")).unwrap();
        assert_eq!((opts.seconds, opts.top, opts.skip_seconds), (5, 3, 2));
        assert_eq!(opts.workload, Workload::R2Disk("write".into()));
        assert_eq!(parse_args(&args("--r2-row read")).unwrap().workload, Workload::R2Mem("read".into()));
        assert!(parse_args(&args("--seconds 0")).is_err());
        assert!(parse_args(&args("--seconds")).is_err());
        assert!(parse_args(&args("--r2disk-row pipe")).is_err());
        assert!(parse_args(&args("--bogus")).is_err());
        assert_eq!(parse_args(&[]).unwrap(), ProfileOptions::default());
    }
}
