//! The Linux guest of the benchmark suite: Debian's kernel and busybox, an
//! initramfs written here, booted under the same QEMU machine as Ridgeback.
//!
//! What it is: the Linux half of "one benchmark source, two builds"
//! (`docs/benchmarks.md`). The suite boots Ridgeback and this guest with
//! the *same* machine-shaping QEMU arguments (accelerator, CPU model, vCPU
//! count, memory, disks), so that a ratio between the two measures the
//! operating systems and not the machines. This module
//! 1. fetches `linux-image-<release>-amd64` and `busybox-static` from
//!    Debian's archive with `apt-get download` (nothing from anywhere else)
//!    and unpacks them with `dpkg-deb -x` into a cache directory;
//! 2. writes an initramfs (newc cpio, uncompressed: Linux accepts it as is)
//!    holding busybox, the kernel modules the benchmarks need, the
//!    benchmark executables under `/bench/`, and a generated `/init`;
//! 3. boots it with `-serial stdio` and returns what the guest printed,
//!    with the time the boot took.
//!
//! It also builds the `bench` crate's static Linux executable
//! ([`build_bench_for_linux`]), since that is the only program this guest
//! is for.
//!
//! Map: this file prepares the cache (packages, `vmlinux`) and boots the
//! guest; [`kernel_modules`] finds the kernel modules the guest needs, with
//! their dependencies, and unpacks them in load order; [`cpio`] writes the
//! initramfs archive. Both are below this file and import nothing of xtask.
//!
//! What it is not: it does not interpret benchmark results (the `bench`
//! programs print them, `bench/line.rs` parses them, the suite's report
//! compares them); and it never
//! installs anything into the host system: the packages are only
//! downloaded and unpacked.
//!
//! Invariants:
//! - The cache is usable only while its `READY` file holds
//!   [`cache_key`]; `READY` is written last, so an interrupted preparation,
//!   or one for another module list, is redone from scratch.
//! - The cache keeps only what a boot needs (kernel, busybox, the chosen
//!   modules uncompressed): the packages and the rest of the kernel's
//!   400 MB of modules are deleted once unpacked.
//! - The guest's `/init` prints its own lines with the prefix `GUEST `
//!   (information, then [`GUEST_RUN`], [`GUEST_EXIT`], [`GUEST_DONE`]);
//!   everything else on the serial line is the kernel's or the programs'
//!   own output, passed through untouched.
//! - The caller's QEMU arguments shape the machine only; this module owns
//!   the kernel, initrd, command line, serial, display and monitor options.

use std::collections::{BTreeSet, HashMap};
use std::ffi::OsStr;
use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::qemu::{self, QEMU_BINARY};

mod cpio;
mod kernel_modules;

use cpio::CpioWriter;

/// Debian's metapackage that always depends on the current kernel image.
const KERNEL_METAPACKAGE: &str = "linux-image-amd64";
/// Statically linked busybox: needs no libc inside the initramfs.
pub(crate) const BUSYBOX_PACKAGE: &str = "busybox-static";

/// `/init`'s line before each program: `GUEST run <program> <args>`.
const GUEST_RUN: &str = "GUEST run ";
/// `/init`'s line after each program: `GUEST exit <status> <program> <args>`.
const GUEST_EXIT: &str = "GUEST exit ";
/// `/init`'s last line before powering off.
const GUEST_DONE: &str = "GUEST done";

/// Kernel modules put into the initramfs and loaded by `/init`, in this
/// order, each after the modules it depends on (read from each module's
/// `.modinfo`).
/// A module the kernel has built in is skipped.
/// - `brd`: the RAM block device, the Linux peer of Ridgeback's RAM disk
///   (seed 000). One device of 64 MiB (`rd_size` is in KiB); brd allocates
///   its pages on first write, so the size costs nothing until used.
/// - `virtio_pci`, `virtio_blk`, `virtio_net`: peers for the virtio-blk
///   (seed 000: `/dev/vda`, the disk `bench` attaches to both systems with
///   `qemu::disk_args`) and virtio-net (seed 003) experiments. Harmless
///   when the machine has no such device.
/// - `crc32c_generic`, `ext4`: Debian's kernel serves ext2 volumes with
///   the ext4 driver (`CONFIG_EXT4_USE_FOR_EXT2`), which will not mount
///   without the `crc32c` checksum (a soft dependency, so named here); the
///   peer of Ridgeback's `ext2fs` in benchmark B and R2 on disk (`bench`
///   mounts `/dev/vda` as ext2).
const GUEST_MODULES: &[(&str, &str)] = &[
    ("brd", "rd_nr=1 rd_size=65536"),
    ("virtio_pci", ""),
    ("virtio_blk", ""),
    ("virtio_net", ""),
    ("crc32c_generic", ""),
    ("ext4", ""),
];

/// Busybox applets linked into `/bin`. The first ones are what `/init`
/// itself uses; the rest are what a benchmark script or a person debugging
/// the guest reaches for.
const BUSYBOX_APPLETS: &[&str] = &[
    "sh",
    "mount",
    "umount",
    "insmod",
    "cat",
    "echo",
    "poweroff",
    "mkdir",
    "dd",
    "sync",
    "sleep",
    "ls",
    "rm",
    "cp",
    "mv",
    "uname",
    "dmesg",
    "nproc",
    "mknod",
    "mkfs.ext2",
    "mke2fs",
    "free",
    "time",
    "true",
    "false",
    "test",
    "[",
    "head",
    "tail",
    "wc",
    "md5sum",
];

/// Kernel command line. `panic=-1` reboots at once on a panic (for example
/// when `/init` dies), and `-no-reboot` turns that reboot into QEMU exiting,
/// so a broken guest fails fast instead of running into the timeout.
const KERNEL_CMDLINE: &str = "console=ttyS0 quiet panic=-1";

/// A Linux kernel and busybox ready to boot.
#[derive(Debug, Clone)]
pub struct LinuxGuest {
    /// What QEMU's `-kernel` loads: the uncompressed ELF `vmlinux` taken
    /// out of the bzImage when there is one (see [`extract_vmlinux`]), else
    /// the bzImage (`boot/vmlinuz-<release>`) itself.
    pub kernel_image: PathBuf,
    /// The kernel release, e.g. `6.1.0-56-amd64`.
    pub kernel_release: String,
    /// The static busybox executable.
    busybox: PathBuf,
    /// Uncompressed modules in load order, with their `insmod` parameters.
    modules: Vec<PreparedModule>,
    /// Where per-run initramfs files are written.
    cache_dir: PathBuf,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct PreparedModule {
    name: String,
    /// Uncompressed `.ko`, so busybox's `insmod` needs no decompressor.
    ko_path: PathBuf,
    params: String,
}

/// One guest boot's outcome.
#[derive(Debug, Clone)]
pub struct GuestRun {
    /// Everything the guest wrote to its serial port, `\r` removed.
    pub serial_output: String,
    /// Host time from starting QEMU to `/init` announcing the first
    /// program: the boot cost a benchmark run pays before measuring.
    pub boot_to_first_program: Option<Duration>,
    /// Host time from starting QEMU to QEMU exiting.
    pub elapsed: Duration,
    /// Each program's exit status, in run order (`GUEST exit` lines).
    pub exits: Vec<ProgramExit>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgramExit {
    /// The program's file name under `/bench/` and its arguments.
    pub command: String,
    pub status: i32,
}

impl GuestRun {
    /// True when every program ran and exited with status 0.
    pub fn is_success(&self) -> bool {
        self.serial_output.lines().any(|l| l == GUEST_DONE) && self.exits.iter().all(|e| e.status == 0)
    }
}

/// Makes sure the Debian kernel and busybox are unpacked in `cache_dir`
/// (typically `target/linux-guest/`), downloading them on first use.
pub fn prepare(cache_dir: &Path) -> Result<LinuxGuest, String> {
    let ready_stamp = cache_dir.join("READY");
    if fs::read_to_string(&ready_stamp).ok() != Some(cache_key()) {
        let _ = fs::remove_file(&ready_stamp);
        populate_cache(cache_dir)?;
        fs::write(&ready_stamp, cache_key())
            .map_err(|e| format!("writing {}: {e}", ready_stamp.display()))?;
    }
    load_cache(cache_dir)
}

/// What a populated cache was made for. A change here (another module,
/// other packages) makes [`prepare`] fetch and unpack again.
fn cache_key() -> String {
    let modules: Vec<&str> = GUEST_MODULES.iter().map(|(name, _)| *name).collect();
    format!(
        "linux_guest cache v1: {KERNEL_METAPACKAGE} {BUSYBOX_PACKAGE} modules {}\n\
         (delete this file to fetch the packages again)\n",
        modules.join(",")
    )
}

/// Downloads and unpacks both packages and decompresses the modules.
fn populate_cache(cache_dir: &Path) -> Result<(), String> {
    // Start from nothing: a half-unpacked tree from an interrupted run
    // would otherwise mix with the new one.
    for sub in ["debs", "kernel", "busybox", "modules"] {
        remove_dir_if_present(&cache_dir.join(sub))?;
    }
    let vmlinux = cache_dir.join("vmlinux");
    if vmlinux.exists() {
        fs::remove_file(&vmlinux).map_err(|e| format!("removing {}: {e}", vmlinux.display()))?;
    }
    let debs_dir = cache_dir.join("debs");
    fs::create_dir_all(&debs_dir).map_err(|e| format!("creating {}: {e}", debs_dir.display()))?;

    let kernel_package = resolve_kernel_package()?;
    for (package, unpack_dir) in [(kernel_package.as_str(), "kernel"), (BUSYBOX_PACKAGE, "busybox")] {
        run_checked(Command::new("apt-get").arg("download").arg(package).current_dir(&debs_dir))?;
        let deb =
            find_file(&debs_dir, |name| name.starts_with(&format!("{package}_")) && name.ends_with(".deb"))?
                .ok_or_else(|| {
                    format!("apt-get download {package} left no .deb in {}", debs_dir.display())
                })?;
        run_checked(Command::new("dpkg-deb").arg("-x").arg(&deb).arg(cache_dir.join(unpack_dir)))?;
    }

    let kernel_root = cache_dir.join("kernel");
    let release = kernel_release(&kernel_root)?;
    let modules_root = kernel_root.join("lib/modules").join(&release);
    let busybox = cache_dir.join("busybox/bin/busybox");
    let out_dir = cache_dir.join("modules");
    fs::create_dir_all(&out_dir).map_err(|e| format!("creating {}: {e}", out_dir.display()))?;
    let wanted: Vec<&str> = GUEST_MODULES.iter().map(|(name, _)| *name).collect();
    kernel_modules::unpack(&modules_root, &busybox, &wanted, &out_dir)?;

    // Best effort: without it the guest boots from the bzImage, slower.
    if let Err(why) = extract_vmlinux(&kernel_root, &release, &vmlinux) {
        eprintln!("linux_guest: booting the bzImage, since no vmlinux could be had: {why}");
    }
    // Everything needed is out of these now.
    remove_dir_if_present(&debs_dir)?;
    remove_dir_if_present(&kernel_root.join("lib"))?;
    remove_dir_if_present(&kernel_root.join("usr"))?;
    Ok(())
}

fn remove_dir_if_present(dir: &Path) -> Result<(), String> {
    if dir.exists() {
        fs::remove_dir_all(dir).map_err(|e| format!("removing {}: {e}", dir.display()))?;
    }
    Ok(())
}

/// Writes the uncompressed kernel ELF of the bzImage to `output`, if the
/// kernel can boot from it. Why: under TCG, decompressing Debian's
/// XZ-compressed bzImage in the guest takes about 3 s of a 5.5 s boot; a
/// kernel built with CONFIG_PVH carries an entry point (the PVH ELF note)
/// that QEMU's `-kernel` jumps to directly when given the ELF.
fn extract_vmlinux(kernel_root: &Path, release: &str, output: &Path) -> Result<(), String> {
    let config_path = kernel_root.join("boot").join(format!("config-{release}"));
    let config =
        fs::read_to_string(&config_path).map_err(|e| format!("reading {}: {e}", config_path.display()))?;
    if !config.lines().any(|l| l == "CONFIG_PVH=y") {
        return Err("the kernel is not built with CONFIG_PVH".into());
    }
    let bzimage_path = kernel_root.join("boot").join(format!("vmlinuz-{release}"));
    let bzimage = fs::read(&bzimage_path).map_err(|e| format!("reading {}: {e}", bzimage_path.display()))?;
    let payload = bzimage_payload(&bzimage)?;
    if !payload.starts_with(XZ_MAGIC) {
        return Err("the bzImage payload is not XZ-compressed".into());
    }
    // The payload ends with the 4-byte uncompressed size the kernel's build
    // appends; --single-stream makes xz stop at the end of the XZ stream.
    let mut xz = Command::new("xz")
        .args(["--decompress", "--stdout", "--single-stream"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("starting xz: {e}"))?;
    let mut stdin = xz.stdin.take().expect("stdin is piped");
    let payload = payload.to_vec();
    let feeder = std::thread::spawn(move || std::io::Write::write_all(&mut stdin, &payload));
    let out = xz.wait_with_output().map_err(|e| format!("running xz: {e}"))?;
    let _ = feeder.join();
    if !out.status.success() || !out.stdout.starts_with(b"\x7fELF") {
        return Err(format!("xz gave no ELF: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    fs::write(output, &out.stdout).map_err(|e| format!("writing {}: {e}", output.display()))
}

const XZ_MAGIC: &[u8] = b"\xfd7zXZ\x00";

/// The compressed kernel inside a bzImage, located through its setup
/// header (Linux boot protocol >= 2.08, Documentation/arch/x86/boot.rst):
/// the protected-mode code starts after `setup_sects` + 1 sectors of 512
/// bytes (0 meaning 4), and `payload_offset` / `payload_length` place the
/// payload within it.
fn bzimage_payload(bzimage: &[u8]) -> Result<&[u8], String> {
    let u32_at =
        |at: usize| bzimage.get(at..at + 4).map(|b| u32::from_le_bytes(b.try_into().unwrap()) as usize);
    if bzimage.get(0x202..0x206) != Some(b"HdrS".as_slice()) {
        return Err("no bzImage setup header".into());
    }
    let version = bzimage.get(0x206..0x208).map(|b| u16::from_le_bytes([b[0], b[1]])).unwrap_or(0);
    if version < 0x0208 {
        return Err(format!("boot protocol {version:#x} has no payload fields"));
    }
    let setup_sectors = match bzimage[0x1f1] {
        0 => 4,
        n => n as usize,
    };
    let code_start = (setup_sectors + 1) * 512;
    let (offset, length) = (u32_at(0x248).unwrap_or(0), u32_at(0x24c).unwrap_or(0));
    bzimage
        .get(code_start + offset..code_start + offset + length)
        .ok_or_else(|| "payload outside the file".to_string())
}

/// Reads an already populated cache.
fn load_cache(cache_dir: &Path) -> Result<LinuxGuest, String> {
    let kernel_root = cache_dir.join("kernel");
    let kernel_release = kernel_release(&kernel_root)?;
    let vmlinux = cache_dir.join("vmlinux");
    let kernel_image = if vmlinux.is_file() {
        vmlinux
    } else {
        kernel_root.join("boot").join(format!("vmlinuz-{kernel_release}"))
    };
    let busybox = cache_dir.join("busybox/bin/busybox");
    for path in [&kernel_image, &busybox] {
        if !path.is_file() {
            return Err(format!("{} missing: delete {} and run again", path.display(), cache_dir.display()));
        }
    }
    let modules_dir = cache_dir.join("modules");
    let params: HashMap<&str, &str> = GUEST_MODULES.iter().copied().collect();
    let modules = kernel_modules::load_order(&modules_dir)?
        .into_iter()
        .map(|name| PreparedModule {
            ko_path: modules_dir.join(format!("{name}.ko")),
            params: params.get(name.as_str()).copied().unwrap_or("").to_string(),
            name,
        })
        .collect();
    Ok(LinuxGuest { kernel_image, kernel_release, busybox, modules, cache_dir: cache_dir.to_path_buf() })
}

/// `linux-image-amd64` depends on exactly one versioned image package,
/// e.g. `linux-image-6.1.0-56-amd64`; that one holds the kernel.
fn resolve_kernel_package() -> Result<String, String> {
    let query = || {
        let output = Command::new("apt-cache").arg("depends").arg(KERNEL_METAPACKAGE).output().ok()?;
        let text = String::from_utf8_lossy(&output.stdout);
        text.lines()
            .filter_map(|l| l.trim().strip_prefix("Depends:"))
            .map(str::trim)
            .find(|p| p.starts_with("linux-image-") && *p != KERNEL_METAPACKAGE)
            .map(str::to_string)
    };
    if let Some(package) = query() {
        return Ok(package);
    }
    // A fresh machine's apt knows no packages until its lists are fetched.
    run_checked(&mut as_root(&["apt-get", "update"]))?;
    query().ok_or_else(|| format!("apt-cache depends {KERNEL_METAPACKAGE} names no linux-image package"))
}

/// A command run as root: directly when we are root, through sudo if not.
fn as_root(argv: &[&str]) -> Command {
    let is_root = Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false);
    let (program, args) = if is_root { (argv[0], &argv[1..]) } else { ("sudo", argv) };
    let mut command = Command::new(program);
    command.args(args);
    command
}

/// The single `boot/vmlinuz-<release>` in an unpacked kernel package.
fn kernel_release(kernel_root: &Path) -> Result<String, String> {
    let boot = kernel_root.join("boot");
    let image = find_file(&boot, |name| name.starts_with("vmlinuz-"))?
        .ok_or_else(|| format!("no vmlinuz-* in {}", boot.display()))?;
    let name = image.file_name().and_then(OsStr::to_str).unwrap_or_default();
    Ok(name.trim_start_matches("vmlinuz-").to_string())
}

impl LinuxGuest {
    /// Boots the guest and runs `programs` in order, each a host path to a
    /// static x86_64 Linux executable and its arguments (whitespace-separated
    /// words; each word reaches the program unchanged). `common_qemu_args`
    /// are the machine-shaping arguments shared with Ridgeback's run, e.g.
    /// `-accel tcg -cpu max -smp 2 -m 512M`. Fails if QEMU cannot start or the
    /// guest is still running after `timeout` (it is then killed). A program
    /// failing is not an error here: see [`GuestRun::exits`].
    pub fn run(
        &self,
        common_qemu_args: &[String],
        programs: &[(PathBuf, String)],
        timeout: Duration,
    ) -> Result<GuestRun, String> {
        let initramfs = self.build_initramfs(programs)?;
        // One file per process, so two runs at once do not overwrite each
        // other's initramfs while QEMU is loading it.
        let initramfs_path = self.cache_dir.join(format!("initramfs.{}.cpio", std::process::id()));
        fs::write(&initramfs_path, &initramfs)
            .map_err(|e| format!("writing {}: {e}", initramfs_path.display()))?;
        let result = self.boot(&initramfs_path, common_qemu_args, timeout);
        let _ = fs::remove_file(&initramfs_path);
        result
    }

    /// The newc cpio archive the guest boots from.
    pub fn build_initramfs(&self, programs: &[(PathBuf, String)]) -> Result<Vec<u8>, String> {
        let mut cpio = CpioWriter::new();
        for dir in ["bin", "dev", "proc", "sys", "tmp", "lib", "lib/modules", "bench"] {
            cpio.directory(dir, 0o755);
        }
        // The kernel opens /dev/console for /init's standard streams before
        // /init runs, i.e. before devtmpfs is mounted; without this node
        // /init would have no output at all.
        cpio.char_device("dev/console", 0o600, 5, 1);
        let busybox =
            fs::read(&self.busybox).map_err(|e| format!("reading {}: {e}", self.busybox.display()))?;
        cpio.file("bin/busybox", 0o755, &busybox);
        for applet in BUSYBOX_APPLETS {
            cpio.symlink(&format!("bin/{applet}"), "busybox");
        }
        let mut module_lines = Vec::new();
        for module in &self.modules {
            let bytes = fs::read(&module.ko_path)
                .map_err(|e| format!("reading {}: {e}", module.ko_path.display()))?;
            cpio.file(&format!("lib/modules/{}.ko", module.name), 0o644, &bytes);
            module_lines.push((module.name.clone(), module.params.clone()));
        }
        let mut steps = Vec::new();
        let mut added = BTreeSet::new();
        for (path, args) in programs {
            let file_name = path
                .file_name()
                .and_then(OsStr::to_str)
                .ok_or_else(|| format!("{}: not a file name", path.display()))?
                .to_string();
            // The same executable may run several times with other arguments.
            if added.insert(file_name.clone()) {
                let bytes = fs::read(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
                cpio.file(&format!("bench/{file_name}"), 0o755, &bytes);
            }
            steps.push((file_name, args.split_whitespace().map(str::to_string).collect::<Vec<_>>()));
        }
        cpio.file("init", 0o755, init_script(&module_lines, &steps).as_bytes());
        Ok(cpio.finish())
    }

    fn boot(
        &self,
        initramfs: &Path,
        common_qemu_args: &[String],
        timeout: Duration,
    ) -> Result<GuestRun, String> {
        let mut command = Command::new(QEMU_BINARY);
        command
            .args(common_qemu_args)
            .arg("-kernel")
            .arg(&self.kernel_image)
            .arg("-initrd")
            .arg(initramfs)
            .args(["-append", KERNEL_CMDLINE])
            .args(["-serial", "stdio", "-display", "none", "-monitor", "none", "-no-reboot"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let started = Instant::now();
        let mut child = command.spawn().map_err(|e| format!("starting {command:?}: {e}"))?;

        // Reader threads keep the pipes drained (QEMU would block on a full
        // pipe) and timestamp the line that marks the end of the boot.
        let serial = Arc::new(Mutex::new(String::new()));
        let first_program_at = Arc::new(Mutex::new(None::<Duration>));
        let stdout = child.stdout.take().expect("stdout is piped");
        let stdout_reader = {
            let serial = Arc::clone(&serial);
            let first_program_at = Arc::clone(&first_program_at);
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stdout);
                let mut raw = Vec::new();
                // Lines are read as bytes: a kernel message or a program may
                // print something that is not UTF-8.
                while matches!(reader.read_until(b'\n', &mut raw), Ok(n) if n > 0) {
                    let line = String::from_utf8_lossy(&raw).replace('\r', "");
                    if line.starts_with(GUEST_RUN) {
                        first_program_at.lock().unwrap().get_or_insert(started.elapsed());
                    }
                    serial.lock().unwrap().push_str(&line);
                    raw.clear();
                }
            })
        };
        let stderr_reader = qemu::collect_stderr(&mut child);

        let deadline = started + timeout;
        let status = qemu::wait_until(&mut child, deadline);
        let elapsed = started.elapsed();
        let _ = stdout_reader.join();
        let qemu_stderr = stderr_reader.join().unwrap_or_default();
        let serial_output = std::mem::take(&mut *serial.lock().unwrap());
        let Some(status) = status else {
            return Err(format!(
                "Linux {} guest still running after {timeout:?}; killed. Serial output:\n{serial_output}{qemu_stderr}",
                self.kernel_release
            ));
        };
        if !status.success() {
            return Err(format!("QEMU exited with {status}: {qemu_stderr}\nSerial output:\n{serial_output}"));
        }
        let exits = parse_exits(&serial_output);
        let boot_to_first_program = *first_program_at.lock().unwrap();
        Ok(GuestRun { serial_output, boot_to_first_program, elapsed, exits })
    }
}

/// Reads the `GUEST exit <status> <command>` lines of `/init`.
fn parse_exits(serial_output: &str) -> Vec<ProgramExit> {
    serial_output
        .lines()
        .filter_map(|line| line.strip_prefix(GUEST_EXIT))
        .filter_map(|rest| {
            let (status, command) = rest.split_once(' ').unwrap_or((rest, ""));
            Some(ProgramExit { command: command.to_string(), status: status.parse().ok()? })
        })
        .collect()
}

/// The guest's `/init`: a busybox shell script. `modules` are (name,
/// params) in load order; `programs` are (file name under `/bench/`,
/// argument words).
fn init_script(modules: &[(String, String)], programs: &[(String, Vec<String>)]) -> String {
    let mut script = String::from(
        "#!/bin/sh\n\
         # Generated by xtask's linux_guest.rs: runs the benchmarks, then powers off.\n\
         mount -t proc proc /proc\n\
         mount -t sysfs sysfs /sys\n\
         mount -t devtmpfs devtmpfs /dev\n\
         mount -t tmpfs tmpfs /tmp\n",
    );
    for (name, params) in modules {
        let params = if params.is_empty() { String::new() } else { format!(" {params}") };
        script.push_str(&format!(
            "insmod /lib/modules/{name}.ko{params} || echo \"GUEST insmod {name} failed\"\n"
        ));
    }
    // What the benchmarks ran on, in the output, for the report.
    script.push_str(
        "read uptime_s idle_s </proc/uptime\n\
         echo \"GUEST kernel $(uname -r) cpus $(nproc) uptime_s $uptime_s\"\n\
         for v in /sys/devices/system/cpu/vulnerabilities/*; do echo \"GUEST vulnerability ${v##*/}: $(cat $v)\"; done\n\
         echo \"GUEST ready\"\n\
         cd /tmp\n",
    );
    for (file_name, args) in programs {
        let mut command = shell_quote(&format!("/bench/{file_name}"));
        for arg in args {
            command.push(' ');
            command.push_str(&shell_quote(arg));
        }
        let shown = std::iter::once(file_name.as_str())
            .chain(args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ");
        script.push_str(&format!("echo {}\n", shell_quote(&format!("{GUEST_RUN}{shown}"))));
        // stdin from /dev/null: a program must not read the console.
        script.push_str(&format!("{command} </dev/null\n"));
        script.push_str(&format!("echo \"{GUEST_EXIT}$? \"{}\n", shell_quote(&shown)));
    }
    script.push_str(&format!("echo \"{GUEST_DONE}\"\nsync\npoweroff -f\n"));
    script
}

/// One shell word that the shell reads back as exactly `word`.
fn shell_quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// Runs a command, turning a failure into an error that shows its output.
pub(crate) fn run_checked(command: &mut Command) -> Result<(), String> {
    let output = command.output().map_err(|e| format!("starting {command:?}: {e}"))?;
    if output.status.success() {
        return Ok(());
    }
    Err(format!(
        "{command:?} failed with {}: {}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    ))
}

/// The first file in `dir` (sorted by name, for determinism) whose name
/// satisfies `matches`.
pub(crate) fn find_file(dir: &Path, matches: impl Fn(&str) -> bool) -> Result<Option<PathBuf>, String> {
    let entries = fs::read_dir(dir).map_err(|e| format!("reading {}: {e}", dir.display()))?;
    let mut found: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.file_name().and_then(OsStr::to_str).is_some_and(&matches))
        .collect();
    found.sort();
    Ok(found.into_iter().next())
}

/// The static Linux build of the `bench` crate's `bench` program.
///
/// Prefers `x86_64-unknown-linux-musl` (static by default), adding that
/// target with rustup when it is missing; where it cannot be had, builds for
/// `x86_64-unknown-linux-gnu` with `+crt-static` into a separate target
/// directory, so those flags never invalidate the host build. `target_dir`
/// is cargo's target directory (`CARGO_TARGET_DIR` or the workspace's
/// `target/`, as `cargo metadata` reports it): where the binary lands.
pub fn build_bench_for_linux(workspace_root: &Path, target_dir: &Path) -> Result<PathBuf, String> {
    const MUSL: &str = "x86_64-unknown-linux-musl";
    const GNU: &str = "x86_64-unknown-linux-gnu";
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let has_musl = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .current_dir(workspace_root)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).lines().any(|l| l.trim() == MUSL))
        .unwrap_or(false)
        || run_checked(Command::new("rustup").args(["target", "add", MUSL]).current_dir(workspace_root))
            .is_ok();
    let mut command = Command::new(&cargo);
    command.current_dir(workspace_root).args(["build", "--release", "--package", "bench", "--bin", "bench"]);
    // A static executable with no run-time relocation (ET_EXEC, not the
    // targets' default static-pie): the same file also runs on Ridgeback,
    // whose Linux server loads only such executables (docs/linux-abi.md),
    // as the third column of the benchmark table.
    let binary = if has_musl {
        command.args(["--target", MUSL]).env(
            "CARGO_TARGET_X86_64_UNKNOWN_LINUX_MUSL_RUSTFLAGS",
            "-C relocation-model=static -C target-feature=+crt-static",
        );
        target_dir.join(MUSL).join("release/bench")
    } else {
        let target_dir = target_dir.join("linux-bench-static");
        command.args(["--target", GNU, "--target-dir"]).arg(&target_dir).env(
            "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUSTFLAGS",
            "-C target-feature=+crt-static -C relocation-model=static",
        );
        target_dir.join(GNU).join("release/bench")
    };
    let status = command.status().map_err(|e| format!("starting {command:?}: {e}"))?;
    if !status.success() {
        return Err(format!("{command:?} failed with {status}"));
    }
    Ok(binary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn init_script_loads_modules_then_runs_programs_in_order_then_powers_off() {
        let script = init_script(
            &[("virtio".into(), "".into()), ("brd".into(), "rd_nr=1".into())],
            &[
                ("bench".into(), vec!["getpid".into()]),
                ("bench".into(), vec!["it's".into(), "two words".into()]),
            ],
        );
        assert!(script.starts_with("#!/bin/sh\n"));
        let position = |needle: &str| {
            script.find(needle).unwrap_or_else(|| panic!("{needle:?} missing from:\n{script}"))
        };
        let virtio = position("insmod /lib/modules/virtio.ko ||");
        let brd = position("insmod /lib/modules/brd.ko rd_nr=1 ||");
        let ready = position("echo \"GUEST ready\"");
        let first = position("'/bench/bench' 'getpid' </dev/null\n");
        let second = position(r"'/bench/bench' 'it'\''s' 'two words' </dev/null");
        let done = position("echo \"GUEST done\"");
        let off = position("poweroff -f");
        assert!(
            virtio < brd && brd < ready && ready < first && first < second && second < done && done < off
        );
        for mount in ["-t proc ", "-t sysfs ", "-t devtmpfs ", "-t tmpfs "] {
            assert!(position(mount) < virtio);
        }
    }

    #[test]
    fn exits_are_parsed_from_guest_lines() {
        let serial = "noise\nGUEST exit 0 bench getpid\nBENCH {}\nGUEST exit 3 bench pipe x\nGUEST exit x\n";
        assert_eq!(
            parse_exits(serial),
            vec![
                ProgramExit { command: "bench getpid".into(), status: 0 },
                ProgramExit { command: "bench pipe x".into(), status: 3 },
            ]
        );
    }

    #[test]
    fn bzimage_payload_follows_the_setup_header() {
        let mut image = vec![0u8; 3 * 512 + 64];
        image[0x1f1] = 2; // setup sectors: code starts at 3 * 512
        image[0x202..0x206].copy_from_slice(b"HdrS");
        image[0x206..0x208].copy_from_slice(&0x020f_u16.to_le_bytes());
        image[0x248..0x24c].copy_from_slice(&16_u32.to_le_bytes());
        image[0x24c..0x250].copy_from_slice(&(XZ_MAGIC.len() as u32).to_le_bytes());
        image[3 * 512 + 16..3 * 512 + 16 + XZ_MAGIC.len()].copy_from_slice(XZ_MAGIC);
        assert_eq!(bzimage_payload(&image).unwrap(), XZ_MAGIC);
        image[0x24c..0x250].copy_from_slice(&1000_u32.to_le_bytes());
        assert!(bzimage_payload(&image).is_err(), "payload past the end");
        assert!(bzimage_payload(&image[..0x200]).is_err(), "no header");
    }

    #[test]
    fn shell_quote_survives_single_quotes() {
        assert_eq!(shell_quote("a'b"), r"'a'\''b'");
    }

    /// End to end: builds the Linux benchmarks, boots Debian's kernel under
    /// TCG with 2 vCPUs and 512 MiB, and expects BENCH lines back. Slow
    /// (minutes) and needs apt access on first run: `cargo test -p xtask --
    /// --ignored linux_guest`.
    #[test]
    #[ignore]
    fn linux_guest_runs_the_benchmarks() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let target_dir =
            std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
        let bench = build_bench_for_linux(root, &target_dir).unwrap();
        let guest = prepare(&root.join("target/linux-guest")).unwrap();
        let mut machine: Vec<String> =
            ["-accel", "tcg", "-cpu", "max", "-smp", "2", "-m", "512M"].map(String::from).to_vec();
        // Benchmark D needs the virtio-blk disk (/dev/vda) as `bench` gives it.
        let disk = target_dir.join("linux-guest-test-disk.img");
        qemu::ensure_disk_image(&disk, qemu::SCRATCH_DISK_BYTES).unwrap();
        machine.extend(qemu::disk_args(&disk).unwrap());
        let run = guest.run(&machine, &[(bench, "all".to_string())], Duration::from_secs(900)).unwrap();
        println!("{}", run.serial_output);
        println!("boot to first program: {:?}", run.boot_to_first_program);
        assert!(run.is_success(), "{:?}", run.exits);
        assert!(run.serial_output.lines().any(|line| line.starts_with("BENCH ")));
    }
}
