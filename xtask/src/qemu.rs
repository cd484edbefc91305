//! The QEMU machine, as a library: its command line, the accelerator
//! choice, the machine's size (CPUs, memory), how a run ended, and the
//! waiting for and reading of a QEMU child.
//!
//! The boot contract (also in `docs/building.md`): QEMU's built-in Multiboot1
//! loader boots the kernel ELF (`-kernel`), each user program is one
//! Multiboot module (`-initrd "a,b,c"`), the kernel command line is
//! `-append`, and the kernel ends the run by writing a code to the
//! `isa-debug-exit` device, which makes QEMU exit with
//! `abi::qemu_exit::host_status(code)`.
//!
//! Map: [`AccelChoice`], [`Accel`] and [`choose_accel`] (which accelerator,
//! and why); [`QemuConfig`] (everything that decides the command line);
//! [`QemuExit`] and [`classify_exit`] (what QEMU's status means);
//! [`collect_stderr`] and [`wait_until`] (ending a child, used by every
//! boot: tests, benchmarks, the Linux guest); [`parse_smp`] and
//! [`parse_mem`] (the machine-size options of `run`, `image` and `bench`);
//! [`DiskChoice`], [`disk_args`] and [`ensure_disk_image`] (the virtio-blk
//! disk: the same arguments for `run`, `test`, `bench` and the Linux
//! guest); [`ensure_qemu`] (installing QEMU when it is missing).
//!
//! What it is not: a command. It builds no image and imports none of the
//! commands (`run`, `image`, `test`, `bench`, `batch`), which all stand on
//! it; it imports only [`crate::tools`].
//!
//! Invariant: [`QemuConfig`] is plain data and [`QemuConfig::to_args`] a
//! pure function of it, so the exact command line is unit-tested and
//! `cargo xtask image` prints the same arguments that `run` and `test`
//! execute.

use std::fmt;
use std::fs::{self, OpenOptions};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::str::FromStr;

use crate::tools::{self, Result};

/// The QEMU system emulator for x86-64 hosts and guests.
pub const QEMU_BINARY: &str = "qemu-system-x86_64";
/// The Debian package that provides [`QEMU_BINARY`].
const QEMU_DEBIAN_PACKAGE: &str = "qemu-system-x86";
/// Default number of guest CPUs for `run`: two, so that SMP paths run by default.
pub const DEFAULT_SMP: u32 = 2;
/// Default guest memory for `run` and `test`, in QEMU's `-m` syntax.
pub const DEFAULT_MEM: &str = "512M";
/// Where QEMU's gdb stub listens with `-s`.
pub const GDB_PORT: u16 = 1234;

/// The QEMU block device of the machine's disk (seed 000's "real disk"),
/// and its drive's id. Ridgeback's virtio-blk driver and Linux's
/// `virtio_blk` find it on the PCI bus.
pub const DISK_DEVICE: &str = "virtio-blk-pci";
pub const DISK_DRIVE_ID: &str = "disk0";
/// Size of the scratch image `run` makes on first use (and `bench` per
/// run): sparse, so it costs only the blocks written.
pub const SCRATCH_DISK_BYTES: u64 = 64 << 20;
/// The scratch image of `run`, under cargo's target directory.
const SCRATCH_DISK_PATH: &str = "disk/scratch.img";

/// Where Linux lists loaded kernel modules, one directory each.
const SYS_MODULE_DIR: &str = "/sys/module";
const DEV_KVM: &str = "/dev/kvm";

/// What the user asked for with `--accel`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccelChoice {
    Tcg,
    Kvm,
    /// KVM when a real hardware-virtualisation module is loaded, else TCG.
    Auto,
}

impl FromStr for AccelChoice {
    type Err = String;
    fn from_str(text: &str) -> Result<AccelChoice> {
        match text {
            "tcg" => Ok(AccelChoice::Tcg),
            "kvm" => Ok(AccelChoice::Kvm),
            "auto" => Ok(AccelChoice::Auto),
            _ => Err(format!("--accel wants tcg, kvm or auto, got `{text}`")),
        }
    }
}

/// The accelerator QEMU will use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Accel {
    /// Software emulation, with every CPU feature QEMU can emulate.
    Tcg,
    /// Hardware virtualisation, with the host's CPU model.
    Kvm,
}

impl Accel {
    fn args(self) -> [&'static str; 4] {
        match self {
            Accel::Tcg => ["-accel", "tcg", "-cpu", "max"],
            Accel::Kvm => ["-accel", "kvm", "-cpu", "host"],
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Accel::Tcg => "tcg",
            Accel::Kvm => "kvm",
        }
    }
}

/// The accelerator chosen and why, for the one line printed before a boot.
#[derive(Debug, PartialEq, Eq)]
pub struct AccelDecision {
    pub accel: Accel,
    pub reason: String,
}

/// Chooses the accelerator. `sys_module_dir` and `dev_kvm` are parameters so
/// that tests can point them at a fake sysfs.
///
/// Why "auto" looks at the modules and not just at `/dev/kvm`: some hosts
/// (these CI machines among them) have a `/dev/kvm` served by the
/// paravirtual `kvm_pvm` module, which cannot run an ordinary kernel. Only
/// `kvm_intel` or `kvm_amd` mean real hardware virtualisation.
pub fn choose_accel(choice: AccelChoice, sys_module_dir: &Path, dev_kvm: &Path) -> AccelDecision {
    let decision = |accel, reason: String| AccelDecision { accel, reason };
    match choice {
        AccelChoice::Tcg => decision(Accel::Tcg, "requested with --accel tcg".to_string()),
        AccelChoice::Kvm => decision(Accel::Kvm, "requested with --accel kvm".to_string()),
        AccelChoice::Auto => {
            let module = ["kvm_intel", "kvm_amd"].into_iter().find(|name| sys_module_dir.join(name).is_dir());
            let Some(module) = module else {
                return decision(Accel::Tcg, "no kvm_intel or kvm_amd module is loaded".to_string());
            };
            match OpenOptions::new().read(true).write(true).open(dev_kvm) {
                Ok(_) => decision(
                    Accel::Kvm,
                    format!("{module} is loaded and {} is accessible", dev_kvm.display()),
                ),
                Err(err) => decision(
                    Accel::Tcg,
                    format!("{module} is loaded but {} is not accessible: {err}", dev_kvm.display()),
                ),
            }
        }
    }
}

/// Chooses the accelerator on this machine and prints the choice (one line,
/// to stderr, so that a log always says how a run was made).
pub fn choose_and_report_accel(choice: AccelChoice) -> Accel {
    let decision = choose_accel(choice, Path::new(SYS_MODULE_DIR), Path::new(DEV_KVM));
    eprintln!("xtask: accelerator: {} ({})", decision.accel.name(), decision.reason);
    decision.accel
}

/// Where the guest's serial port goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SerialMode {
    /// Serial and QEMU monitor multiplexed on the terminal: Ctrl-A X quits,
    /// Ctrl-A C switches to the monitor.
    Interactive,
    /// Serial on QEMU's stdout for the runner to read; no monitor, so that
    /// nothing but guest output reaches the pipe.
    Captured,
}

/// Everything that decides QEMU's command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QemuConfig {
    pub kernel: PathBuf,
    /// One Multiboot module per user program; the kernel names a module by
    /// the basename of its path.
    pub modules: Vec<PathBuf>,
    pub cmdline: String,
    pub smp: u32,
    pub mem: String,
    pub accel: Accel,
    pub serial: SerialMode,
    pub is_gdb: bool,
    /// A raw disk image attached as a virtio-blk disk ([`disk_args`]).
    pub disk: Option<PathBuf>,
    /// The network card ([`NetChoice::args`]).
    pub net: NetChoice,
}

impl QemuConfig {
    /// QEMU's arguments (without the program name).
    pub fn to_args(&self) -> Result<Vec<String>> {
        let mut args = vec!["-kernel".to_string(), path_arg(&self.kernel)?];
        if !self.modules.is_empty() {
            args.push("-initrd".to_string());
            args.push(initrd_arg(&self.modules)?);
        }
        // QEMU itself puts the kernel's path in front of this text in the
        // Multiboot command line, so the kernel sees "<path> <cmdline>".
        if !self.cmdline.is_empty() {
            args.push("-append".to_string());
            args.push(self.cmdline.clone());
        }
        args.extend(["-m".to_string(), self.mem.clone()]);
        args.extend(["-smp".to_string(), self.smp.to_string()]);
        args.extend(self.accel.args().map(String::from));
        args.extend(["-display", "none", "-no-reboot"].map(String::from));
        args.push("-device".to_string());
        args.push(format!("isa-debug-exit,iobase={:#x},iosize=0x04", abi::qemu_exit::PORT));
        if let Some(image) = &self.disk {
            args.extend(disk_args(image)?);
        }
        args.extend(self.net.args());
        match self.serial {
            SerialMode::Interactive => args.extend(["-serial", "mon:stdio"].map(String::from)),
            SerialMode::Captured => args.extend(["-serial", "stdio", "-monitor", "none"].map(String::from)),
        }
        if self.is_gdb {
            // -s: gdb stub on tcp::1234; -S: do not start the CPUs until gdb says so.
            args.extend(["-s", "-S"].map(String::from));
        }
        Ok(args)
    }

    pub fn to_command(&self) -> Result<Command> {
        let mut command = Command::new(QEMU_BINARY);
        command.args(self.to_args()?);
        Ok(command)
    }

    /// The command line as one shell-quoted string, to print and paste.
    pub fn to_shell(&self) -> Result<String> {
        let mut words = vec![QEMU_BINARY.to_string()];
        words.extend(self.to_args()?);
        Ok(words.iter().map(|w| shell_quote(w)).collect::<Vec<_>>().join(" "))
    }
}

fn path_arg(path: &Path) -> Result<String> {
    path.to_str().map(str::to_string).ok_or_else(|| format!("path {} is not UTF-8", path.display()))
}

/// `-initrd` separates modules with commas (and a space starts a module's
/// arguments), so a path must contain neither; absolute paths keep the
/// modules independent of QEMU's working directory.
fn initrd_arg(modules: &[PathBuf]) -> Result<String> {
    let mut parts = Vec::with_capacity(modules.len());
    for module in modules {
        let text = path_arg(module)?;
        if text.contains(',') || text.contains(' ') {
            return Err(format!(
                "module path `{text}` contains a comma or a space, which QEMU's -initrd cannot carry; \
                 move the checkout to a simpler path"
            ));
        }
        if !module.is_absolute() {
            return Err(format!("module path `{text}` is not absolute"));
        }
        parts.push(text);
    }
    Ok(parts.join(","))
}

/// Quotes a word for a POSIX shell only when it needs it.
fn shell_quote(word: &str) -> String {
    let is_plain =
        !word.is_empty() && word.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-./,=:+@%".contains(&b));
    if is_plain { word.to_string() } else { format!("'{}'", word.replace('\'', r"'\''")) }
}

/// How a QEMU run ended, read from its exit status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QemuExit {
    /// The kernel wrote `SUCCESS_CODE` to isa-debug-exit.
    Success,
    /// The kernel wrote `FAILURE_CODE`: a failed test or a kernel panic.
    KernelFailure,
    /// Any other status: QEMU's own errors (1), a quit from the monitor or a
    /// triple fault with `-no-reboot` (0), or a code the contract lacks.
    Other(i32),
    /// QEMU was ended by a signal (for instance killed on a timeout).
    Signal,
}

pub fn classify_exit(code: Option<i32>) -> QemuExit {
    use abi::qemu_exit::{FAILURE_CODE, SUCCESS_CODE, host_status};
    match code {
        Some(c) if c == host_status(SUCCESS_CODE) => QemuExit::Success,
        Some(c) if c == host_status(FAILURE_CODE) => QemuExit::KernelFailure,
        Some(c) => QemuExit::Other(c),
        None => QemuExit::Signal,
    }
}

/// What the guest said about its end, read from its serial output: the
/// session's status (init's `ridgeback: session exit N`), the status the
/// kernel powered off with (`power off (status N)`), a kernel panic.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EndFacts {
    pub session_status: Option<u32>,
    pub power_off_status: Option<u32>,
    pub panic: Option<String>,
}

/// The kernel's line when it powers off (kernel/src/power.rs).
const POWER_OFF: &str = "power off (status ";
/// The start of the kernel's panic line (kernel/src/main.rs).
const KERNEL_PANIC: &str = "KERNEL PANIC";

impl EndFacts {
    /// Take in one line of serial output.
    pub fn feed(&mut self, line: &str) {
        let line = line.trim_end_matches(['\r', '\n']);
        if let Some(at) = line.rfind(abi::session::EXIT) {
            // The status is the first word; a key may follow. Wording only:
            // `batch::SessionKey` is what tells init's line from a forged one.
            let rest = &line[at + abi::session::EXIT.len()..];
            self.session_status = rest.split_whitespace().next().and_then(|w| w.parse().ok());
        } else if let Some(at) = line.find(POWER_OFF) {
            self.power_off_status = line[at + POWER_OFF.len()..].trim_end_matches(')').parse().ok();
        } else if let Some(at) = line.find(KERNEL_PANIC)
            && self.panic.is_none()
        {
            self.panic = Some(line[at..].to_string());
        }
    }

    /// The facts in a whole serial output.
    pub fn from_serial(text: &str) -> EndFacts {
        let mut facts = EndFacts::default();
        text.lines().for_each(|line| facts.feed(line));
        facts
    }
}

/// How a boot ended, in words: the one wording of `run`, `run --batch` and
/// the test runner (issue 16: "the kernel reported failure" said nothing
/// of a shell that exited with status 1). What the guest said comes
/// first; QEMU's status only says it in numbers.
pub fn describe_end(exit: QemuExit, facts: &EndFacts) -> String {
    if let Some(panic) = &facts.panic {
        return format!("the kernel panicked: {panic}");
    }
    let code = match exit {
        QemuExit::Success => "with the success code",
        QemuExit::KernelFailure => "with the failure code",
        _ => return exit.to_string(),
    };
    match (facts.session_status, facts.power_off_status) {
        (Some(status), _) => format!("the shell exited with status {status}; the machine powered off {code}"),
        (None, Some(status)) => {
            format!("init ended with status {status} (no session ran); the machine powered off {code}")
        }
        (None, None) => exit.to_string(),
    }
}

/// `args` (from [`QemuConfig::to_args`] of an interactive config) with the
/// serial console and monitor still on the terminal, and a copy of all
/// they print in `log`, so that `run` can say afterwards how the session
/// ended. `signal=off`: ^C goes to the guest, as with `mon:stdio`.
pub fn with_serial_log(args: &[String], log: &Path) -> Result<Vec<String>> {
    let at = args
        .windows(2)
        .position(|w| w[0] == "-serial" && w[1] == "mon:stdio")
        .ok_or("the configuration is not interactive (no -serial mon:stdio)")?;
    let mut out = args[..at].to_vec();
    out.extend([
        "-chardev".to_string(),
        format!("stdio,id=console0,mux=on,signal=off,logfile={}", path_arg(log)?),
        "-serial".to_string(),
        "chardev:console0".to_string(),
        "-mon".to_string(),
        "chardev=console0,mode=readline".to_string(),
    ]);
    out.extend_from_slice(&args[at + 2..]);
    Ok(out)
}

impl fmt::Display for QemuExit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use abi::qemu_exit::{FAILURE_CODE, SUCCESS_CODE, host_status};
        match self {
            QemuExit::Success => {
                write!(
                    f,
                    "the machine powered off with the success code (QEMU status {})",
                    host_status(SUCCESS_CODE)
                )
            }
            QemuExit::KernelFailure => write!(
                f,
                "the machine powered off with the failure code (QEMU status {}): a failed test, a session \
                 that ended with a non-zero status, or a kernel panic",
                host_status(FAILURE_CODE)
            ),
            QemuExit::Other(0) => write!(
                f,
                "QEMU exited with status 0 without the kernel's exit code \
                 (quit from the monitor, or a triple fault with -no-reboot)"
            ),
            QemuExit::Other(1) => write!(f, "QEMU failed (status 1; see its message above)"),
            QemuExit::Other(code) => write!(f, "QEMU exited with unexpected status {code}"),
            QemuExit::Signal => write!(f, "QEMU was killed by a signal"),
        }
    }
}

/// Makes sure [`QEMU_BINARY`] is on `PATH`, installing Debian's package
/// when it is not.
pub fn ensure_qemu() -> Result<()> {
    tools::ensure_program(QEMU_BINARY, QEMU_DEBIAN_PACKAGE, "QEMU")
}

/// The guest's CPU count (`--smp`): at least one.
pub fn parse_smp(text: &str) -> Result<u32> {
    match text.parse::<u32>() {
        Ok(cpus) if cpus >= 1 => Ok(cpus),
        _ => Err(format!("--smp wants a CPU count of at least 1, got `{text}`")),
    }
}

/// The guest's memory (`--mem`). Accepts what QEMU's `-m` accepts in
/// practice: a number of MiB, or a number with a K/M/G/T suffix. Checking
/// here turns a typo into a usage error instead of a QEMU start-up failure.
pub fn parse_mem(text: &str) -> Result<String> {
    let digits = text.trim_end_matches(['k', 'K', 'm', 'M', 'g', 'G', 't', 'T']);
    let suffix_len = text.len() - digits.len();
    let is_number = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit());
    if is_number && suffix_len <= 1 && digits.parse::<u64>().is_ok_and(|n| n > 0) {
        Ok(text.to_string())
    } else {
        Err(format!("--mem wants a size such as 512M or 1G, got `{text}`"))
    }
}

/// The arguments that attach the raw image `image` as the machine's
/// virtio-blk disk: `-drive file=IMAGE,if=none,format=raw,id=disk0
/// -device virtio-blk-pci,drive=disk0`. Both systems of a benchmark get
/// exactly these (`bench/boot.rs` takes them from Ridgeback's command line
/// for the Linux guest). QEMU's default cache mode (writeback, through the
/// host's page cache) applies to both.
pub fn disk_args(image: &Path) -> Result<[String; 4]> {
    // In QEMU's option syntax a comma inside a value is written twice.
    let file = path_arg(image)?.replace(',', ",,");
    Ok([
        "-drive".to_string(),
        format!("file={file},if=none,format=raw,id={DISK_DRIVE_ID}"),
        "-device".to_string(),
        format!("{DISK_DEVICE},drive={DISK_DRIVE_ID}"),
    ])
}

/// The QEMU network device of the machine's card (seed 003), and its
/// back end's id. Ridgeback's virtio-net driver and Linux's `virtio_net`
/// find it on the PCI bus.
pub const NET_DEVICE: &str = "virtio-net-pci";
const NET_BACKEND_ID: &str = "net0";
/// The card's PCI slot. The kernel gives an interrupt line one holder
/// (`claim_irq`), and QEMU's `pc` firmware routes the INTx pins of
/// neighbouring slots to the same ISA line: in its default slot the card
/// shares the disk's line and its driver cannot claim it. Slot 6 reaches
/// the other line.
pub const NET_PCI_SLOT: &str = "0x6";

/// `--net` and `--hostfwd`: whether the machine has a network card, on
/// QEMU's user network (slirp: the guest is 10.0.2.15/24 by DHCP, the
/// host is 10.0.2.2, nothing outside reaches the guest except forwarded
/// ports).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NetChoice {
    None,
    /// Forwards: (host port on 127.0.0.1, guest port), TCP.
    User {
        forwards: Vec<(u16, u16)>,
    },
}

impl Default for NetChoice {
    fn default() -> Self {
        NetChoice::User { forwards: Vec::new() }
    }
}

impl NetChoice {
    /// `--net user|none`.
    pub fn parse(text: &str) -> Result<NetChoice> {
        match text {
            "user" => Ok(NetChoice::default()),
            "none" => Ok(NetChoice::None),
            _ => Err(format!("--net wants user or none, got `{text}`")),
        }
    }

    /// `--hostfwd HOST:GUEST`: forward the host's 127.0.0.1:HOST to the
    /// guest's port GUEST (turning the network on if it was off).
    pub fn add_forward(&mut self, text: &str) -> Result<()> {
        let parsed =
            text.split_once(':').and_then(|(h, g)| Some((h.parse::<u16>().ok()?, g.parse::<u16>().ok()?)));
        let Some((host, guest)) = parsed.filter(|(h, g)| *h != 0 && *g != 0) else {
            return Err(format!("--hostfwd wants HOST:GUEST ports, such as 8080:80, got `{text}`"));
        };
        match self {
            NetChoice::User { forwards } => forwards.push((host, guest)),
            NetChoice::None => *self = NetChoice::User { forwards: vec![(host, guest)] },
        }
        Ok(())
    }

    /// `-netdev user,id=net0[,hostfwd=tcp:127.0.0.1:H-:G...] -device
    /// virtio-net-pci,netdev=net0,addr=0x6`: forwarded ports listen on the host's
    /// loopback only.
    pub fn args(&self) -> Vec<String> {
        match self {
            NetChoice::None => Vec::new(),
            NetChoice::User { forwards } => {
                let mut netdev = format!("user,id={NET_BACKEND_ID}");
                for (host, guest) in forwards {
                    netdev.push_str(&format!(",hostfwd=tcp:127.0.0.1:{host}-:{guest}"));
                }
                vec![
                    "-netdev".to_string(),
                    netdev,
                    "-device".to_string(),
                    format!("{NET_DEVICE},netdev={NET_BACKEND_ID},addr={NET_PCI_SLOT}"),
                ]
            }
        }
    }
}

/// Whether a QEMU option and its value are part of the machine's disk
/// (what [`disk_args`] makes).
pub fn is_disk_option(option: &str, value: &str) -> bool {
    match option {
        "-drive" => true,
        "-device" => value.split(',').next() == Some(DISK_DEVICE),
        _ => false,
    }
}

/// Makes `path` a zero-filled raw image of `size_bytes` unless it exists
/// (a sparse file: the blocks never written take no space).
pub fn ensure_disk_image(path: &Path, size_bytes: u64) -> Result<()> {
    if path.exists() {
        return Ok(());
    }
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let file = fs::File::create(path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
    file.set_len(size_bytes).map_err(|e| format!("cannot size {}: {e}", path.display()))
}

/// `--disk`: which disk `run` (and `image`, `run --batch`) attaches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DiskChoice {
    /// The default: `<target>/disk/ext2.img`, an empty ext2 volume made
    /// on first use and kept between runs (mounted at `/disk`); with
    /// `root=disk` on the command line, `<target>/disk/root.img`, the
    /// boot image's programs in an ext2 volume (`crate::ext2`).
    Scratch,
    /// A zero-filled raw image at `<target>/disk/scratch.img`
    /// ([`SCRATCH_DISK_BYTES`]), made on first use and kept: for block
    /// device experiments on `/dev/vda` (`--disk scratch`).
    Raw,
    /// `--disk none`.
    None,
    /// `--disk FILE`: an existing raw image.
    Image(PathBuf),
}

impl DiskChoice {
    pub fn parse(text: &str) -> Result<DiskChoice> {
        match text {
            "" => Err("--disk wants a raw image file or `none`".to_string()),
            "none" => Ok(DiskChoice::None),
            "scratch" => Ok(DiskChoice::Raw),
            path => Ok(DiskChoice::Image(PathBuf::from(path))),
        }
    }

    /// The image to attach, made first if it is one of xtask's.
    /// `target_dir` is cargo's target directory; `cmdline` the kernel's
    /// (`root=disk` asks for the root volume, made from `modules`).
    pub fn image(&self, target_dir: &Path, cmdline: &str, modules: &[PathBuf]) -> Result<Option<PathBuf>> {
        match self {
            DiskChoice::None => Ok(None),
            DiskChoice::Scratch if wants_disk_root(cmdline) => {
                crate::ext2::root_image(target_dir, modules).map(Some)
            }
            DiskChoice::Scratch => crate::ext2::default_image(target_dir).map(Some),
            DiskChoice::Raw => {
                let path = target_dir.join(SCRATCH_DISK_PATH);
                ensure_disk_image(&path, SCRATCH_DISK_BYTES)?;
                Ok(Some(path))
            }
            // Absolute, so that QEMU finds it whatever its directory; a
            // missing file is refused rather than made (a typo should not
            // boot with an empty disk).
            DiskChoice::Image(path) => fs::canonicalize(path).map(Some).map_err(|e| {
                format!(
                    "--disk {}: {e} (make one with `truncate -s 64M {}`, or leave --disk out for the \
                     scratch image)",
                    path.display(),
                    path.display()
                )
            }),
        }
    }
}

/// Does the kernel command line ask for `/` on the disk (`root=disk`,
/// the last `root=` before any `--`)?
pub fn wants_disk_root(cmdline: &str) -> bool {
    cmdline.split_whitespace().take_while(|w| *w != "--").filter_map(|w| w.strip_prefix("root=")).last()
        == Some("disk")
}

/// Read a QEMU child's standard error to the end on a thread of its own
/// (so a full pipe never stalls QEMU); join the handle for the text.
pub fn collect_stderr(child: &mut std::process::Child) -> std::thread::JoinHandle<String> {
    let mut stderr = child.stderr.take().expect("stderr is piped");
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut text);
        text
    })
}

/// Wait for a QEMU child until `deadline`; kill it if it is still running
/// then (or if it cannot be waited for). `None` means it was killed. Every
/// boot (tests, benchmarks, the Linux guest) ends through here.
pub fn wait_until(
    child: &mut std::process::Child,
    deadline: std::time::Instant,
) -> Option<std::process::ExitStatus> {
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(20))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn config() -> QemuConfig {
        QemuConfig {
            kernel: PathBuf::from("/w/target/x86_64-unknown-none/release/kernel"),
            modules: vec![
                PathBuf::from("/w/target/x86_64-unknown-none/release/init"),
                PathBuf::from("/w/target/x86_64-unknown-none/release/shell"),
            ],
            cmdline: "init=testrunner".to_string(),
            smp: 4,
            mem: "512M".to_string(),
            accel: Accel::Tcg,
            serial: SerialMode::Captured,
            is_gdb: false,
            disk: None,
            net: NetChoice::None,
        }
    }

    #[test]
    fn net_args_forward_loopback_ports_only() {
        let mut net = NetChoice::default();
        net.add_forward("8080:80").unwrap();
        net.add_forward("2222:22").unwrap();
        assert_eq!(
            net.args().join(" "),
            "-netdev user,id=net0,hostfwd=tcp:127.0.0.1:8080-:80,hostfwd=tcp:127.0.0.1:2222-:22 \
             -device virtio-net-pci,netdev=net0,addr=0x6"
        );
        assert!(NetChoice::None.args().is_empty());
        let mut off = NetChoice::parse("none").unwrap();
        off.add_forward("1:2").unwrap();
        assert_eq!(off, NetChoice::User { forwards: vec![(1, 2)] });
        for bad in ["80", "0:80", "80:0", "x:80", "80:70000", ""] {
            assert!(NetChoice::default().add_forward(bad).is_err(), "{bad}");
        }
        assert!(NetChoice::parse("tap").is_err());
    }

    #[test]
    fn captured_command_line() {
        assert_eq!(
            config().to_args().unwrap().join(" "),
            "-kernel /w/target/x86_64-unknown-none/release/kernel \
             -initrd /w/target/x86_64-unknown-none/release/init,/w/target/x86_64-unknown-none/release/shell \
             -append init=testrunner -m 512M -smp 4 -accel tcg -cpu max -display none -no-reboot \
             -device isa-debug-exit,iobase=0xf4,iosize=0x04 -serial stdio -monitor none"
        );
    }

    #[test]
    fn a_disk_is_a_virtio_blk_device_on_a_raw_drive() {
        let cfg = QemuConfig { disk: Some(PathBuf::from("/w/target/disk/a,b.img")), ..config() };
        let line = cfg.to_args().unwrap().join(" ");
        assert!(
            line.contains(
                "-device isa-debug-exit,iobase=0xf4,iosize=0x04 \
                 -drive file=/w/target/disk/a,,b.img,if=none,format=raw,id=disk0 \
                 -device virtio-blk-pci,drive=disk0 -serial stdio"
            ),
            "{line}"
        );
        let args = disk_args(Path::new("/d.img")).unwrap();
        assert!(is_disk_option(&args[0], &args[1]) && is_disk_option(&args[2], &args[3]));
        assert!(!is_disk_option("-device", "isa-debug-exit,iobase=0xf4"));
        assert!(!is_disk_option("-m", "512M"));
    }

    #[test]
    fn disk_choices() {
        assert_eq!(DiskChoice::parse("none"), Ok(DiskChoice::None));
        assert_eq!(DiskChoice::parse("x.img"), Ok(DiskChoice::Image(PathBuf::from("x.img"))));
        assert_eq!(DiskChoice::parse("scratch"), Ok(DiskChoice::Raw));
        assert!(DiskChoice::parse("").is_err());
        let dir = std::env::temp_dir().join(format!("xtask-disk-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        assert_eq!(DiskChoice::None.image(&dir, "", &[]), Ok(None));
        // The raw scratch image is made once, at its full size, and kept.
        let scratch = DiskChoice::Raw.image(&dir, "", &[]).unwrap().unwrap();
        assert_eq!(scratch, dir.join("disk/scratch.img"));
        assert_eq!(fs::metadata(&scratch).unwrap().len(), SCRATCH_DISK_BYTES);
        fs::write(&scratch, b"kept").unwrap();
        assert_eq!(DiskChoice::Raw.image(&dir, "", &[]).unwrap().unwrap(), scratch);
        assert_eq!(fs::read(&scratch).unwrap(), b"kept");
        // A named image must exist; it comes back absolute.
        let missing = DiskChoice::Image(dir.join("missing.img")).image(&dir, "", &[]).unwrap_err();
        assert!(missing.contains("missing.img") && missing.contains("truncate -s 64M"), "{missing}");
        let named =
            DiskChoice::Image(dir.join("disk/../disk/scratch.img")).image(&dir, "", &[]).unwrap().unwrap();
        assert_eq!(named, fs::canonicalize(&scratch).unwrap());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn root_disk_is_asked_by_the_last_root_option_before_init_args() {
        assert!(wants_disk_root("root=disk"));
        assert!(wants_disk_root("nbuf=3 root=memfs root=disk -- root=memfs"));
        assert!(!wants_disk_root("root=disk root=memfs"));
        assert!(!wants_disk_root("-- root=disk"));
        assert!(!wants_disk_root(""));
    }

    #[test]
    fn interactive_kvm_gdb_command_line() {
        let cfg = QemuConfig {
            cmdline: String::new(),
            modules: Vec::new(),
            accel: Accel::Kvm,
            serial: SerialMode::Interactive,
            is_gdb: true,
            ..config()
        };
        let args = cfg.to_args().unwrap();
        assert!(!args.contains(&"-append".to_string()), "empty cmdline is left out");
        assert!(!args.contains(&"-initrd".to_string()), "no modules, no -initrd");
        let line = args.join(" ");
        assert!(line.contains("-accel kvm -cpu host"));
        assert!(line.ends_with("-serial mon:stdio -s -S"), "{line}");
    }

    #[test]
    fn module_paths_must_be_absolute_and_comma_free() {
        let with_comma = QemuConfig { modules: vec![PathBuf::from("/a,b/init")], ..config() };
        assert!(with_comma.to_args().unwrap_err().contains("comma"));
        let relative = QemuConfig { modules: vec![PathBuf::from("target/init")], ..config() };
        assert!(relative.to_args().unwrap_err().contains("absolute"));
    }

    #[test]
    fn shell_form_quotes_only_when_needed() {
        let cfg = QemuConfig { cmdline: "init=shell it's".to_string(), ..config() };
        let shell = cfg.to_shell().unwrap();
        assert!(shell.starts_with("qemu-system-x86_64 -kernel /w/target/"));
        assert!(shell.contains(r"-append 'init=shell it'\''s' -m 512M"), "{shell}");
    }

    #[test]
    fn exit_statuses() {
        assert_eq!(classify_exit(Some(33)), QemuExit::Success);
        assert_eq!(classify_exit(Some(35)), QemuExit::KernelFailure);
        assert_eq!(classify_exit(Some(1)), QemuExit::Other(1));
        assert_eq!(classify_exit(Some(0)), QemuExit::Other(0));
        assert_eq!(classify_exit(None), QemuExit::Signal);
    }

    #[test]
    fn an_end_is_told_in_words() {
        let shell_failed =
            EndFacts::from_serial("boot\r\nridgeback: session exit 1\r\npower off (status 1)\r\n");
        assert_eq!(shell_failed.session_status, Some(1));
        assert_eq!(shell_failed.power_off_status, Some(1));
        assert_eq!(
            describe_end(QemuExit::KernelFailure, &shell_failed),
            "the shell exited with status 1; the machine powered off with the failure code"
        );
        let fine = EndFacts::from_serial("ridgeback: session exit 0\npower off (status 0)\n");
        assert_eq!(
            describe_end(QemuExit::Success, &fine),
            "the shell exited with status 0; the machine powered off with the success code"
        );
        let runner = EndFacts::from_serial("ktest: summary 3 passed, 1 failed\npower off (status 1)\n");
        assert!(describe_end(QemuExit::KernelFailure, &runner).starts_with("init ended with status 1"));
        let panicked = EndFacts::from_serial("\nKERNEL PANIC on CPU 0: oops\n");
        assert_eq!(
            describe_end(QemuExit::KernelFailure, &panicked),
            "the kernel panicked: KERNEL PANIC on CPU 0: oops"
        );
        assert_eq!(describe_end(QemuExit::Signal, &fine), QemuExit::Signal.to_string());
    }

    #[test]
    fn the_serial_log_keeps_the_console_on_the_terminal() {
        let args: Vec<String> = ["-m", "512M", "-serial", "mon:stdio", "-s"].map(String::from).to_vec();
        let out = with_serial_log(&args, Path::new("/tmp/x.log")).unwrap();
        assert_eq!(
            out,
            [
                "-m",
                "512M",
                "-chardev",
                "stdio,id=console0,mux=on,signal=off,logfile=/tmp/x.log",
                "-serial",
                "chardev:console0",
                "-mon",
                "chardev=console0,mode=readline",
                "-s"
            ]
        );
        assert!(with_serial_log(&["-serial".to_string(), "stdio".to_string()], Path::new("/x")).is_err());
    }

    #[test]
    fn mem_sizes() {
        for ok in ["512M", "512m", "1G", "2048", "65536K"] {
            assert_eq!(parse_mem(ok), Ok(ok.to_string()));
        }
        for bad in ["", "M", "1.5G", "-1G", "1GG"] {
            assert!(parse_mem(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn accel_parses() {
        assert_eq!("auto".parse(), Ok(AccelChoice::Auto));
        assert_eq!("kvm".parse(), Ok(AccelChoice::Kvm));
        assert_eq!("tcg".parse(), Ok(AccelChoice::Tcg));
        assert!("KVM".parse::<AccelChoice>().is_err());
    }

    /// A fake /sys/module and /dev/kvm in a fresh temporary directory
    /// (left behind: a few empty entries under the system's temp dir).
    fn fake_host(name: &str, modules: &[&str], has_dev_kvm: bool) -> (PathBuf, PathBuf) {
        let root = std::env::temp_dir().join(format!("xtask-accel-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let sys_module = root.join("sys/module");
        fs::create_dir_all(&sys_module).unwrap();
        for module in modules {
            fs::create_dir(sys_module.join(module)).unwrap();
        }
        let dev_kvm = root.join("kvm");
        if has_dev_kvm {
            fs::write(&dev_kvm, b"").unwrap();
        }
        (sys_module, dev_kvm)
    }

    #[test]
    fn auto_accel_needs_a_real_kvm_module() {
        // The paravirtual module alone must not select KVM.
        let (sys, dev) = fake_host("pvm", &["kvm", "kvm_pvm"], true);
        let decision = choose_accel(AccelChoice::Auto, &sys, &dev);
        assert_eq!(decision.accel, Accel::Tcg);
        assert!(decision.reason.contains("no kvm_intel or kvm_amd"));

        let (sys, dev) = fake_host("intel", &["kvm", "kvm_intel"], true);
        assert_eq!(choose_accel(AccelChoice::Auto, &sys, &dev).accel, Accel::Kvm);

        let (sys, dev) = fake_host("amd", &["kvm", "kvm_amd"], true);
        assert_eq!(choose_accel(AccelChoice::Auto, &sys, &dev).accel, Accel::Kvm);

        let (sys, dev) = fake_host("nodev", &["kvm_intel"], false);
        let decision = choose_accel(AccelChoice::Auto, &sys, &dev);
        assert_eq!(decision.accel, Accel::Tcg);
        assert!(decision.reason.contains("not accessible"));
    }

    #[test]
    fn explicit_accel_is_obeyed() {
        let (sys, dev) = fake_host("explicit", &[], false);
        assert_eq!(choose_accel(AccelChoice::Kvm, &sys, &dev).accel, Accel::Kvm);
        let (sys, dev) = fake_host("explicit2", &["kvm_intel"], true);
        assert_eq!(choose_accel(AccelChoice::Tcg, &sys, &dev).accel, Accel::Tcg);
    }
}
