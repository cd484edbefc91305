//! `cargo xtask run` and `cargo xtask image`: build an image, then boot it
//! with the serial console on the terminal (`run`), or print the exact QEMU
//! command line that would boot it (`image`).
//!
//! What it is: two commands over the layers below, sharing their options
//! ([`RunOptions`]) and one step, [`prepare`]: build the image with
//! [`crate::image`], then fill a [`QemuConfig`] from the options.
//!
//! What it is not: the QEMU machine itself (that is [`crate::qemu`]), nor
//! `run --batch` (that is [`crate::batch`], which takes the same options).

use std::path::Path;
use std::process::ExitCode;

use crate::image::{self, ImageKind, TEST_KERNEL_CMDLINE, Workspace};
use crate::qemu::{
    self, AccelChoice, DiskChoice, EndFacts, GDB_PORT, NetChoice, QEMU_BINARY, QemuConfig, QemuExit,
    SerialMode,
};
use crate::tools::Result;

/// The command's arguments as text, or why not: an argument that is not
/// UTF-8 is refused with where its first bad byte is, never a panic. (The
/// commands of `run --batch` travel to the guest as a UTF-8 boot module
/// and the boot's output is read back as text, so bytes that are not text
/// could not come back unchanged either.)
pub fn utf8_args(args: impl IntoIterator<Item = std::ffi::OsString>) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for (i, arg) in args.into_iter().enumerate() {
        match arg.into_string() {
            Ok(text) => out.push(text),
            Err(raw) => {
                let bytes = raw.as_encoded_bytes();
                let bad = std::str::from_utf8(bytes).err().map_or(0, |e| e.valid_up_to());
                return Err(format!(
                    "argument {} ({}) is not UTF-8: byte {:#04x} at offset {bad}; xtask takes its arguments, and the commands of --batch, as UTF-8 text",
                    i + 1,
                    raw.to_string_lossy(),
                    bytes[bad],
                ));
            }
        }
    }
    Ok(out)
}

/// Options shared by `run` and `image`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunOptions {
    pub smp: u32,
    /// Guest memory in QEMU's `-m` syntax (`512M`, `1G`, or a bare number of MiB).
    pub mem: String,
    pub cmdline: String,
    pub is_gdb: bool,
    pub accel: AccelChoice,
    /// `run --batch "<commands>"`: run them with the shell, print their
    /// output, power off and exit with their status.
    pub batch: Option<String>,
    /// `--disk`: the virtio-blk disk (default: the scratch image).
    pub disk: DiskChoice,
    /// `--net`, `--hostfwd`: the virtio-net card (default: user networking).
    pub net: NetChoice,
    /// `--add PATH` (repeatable): host files copied into the image's `/bin`.
    pub add: Vec<std::path::PathBuf>,
    /// `--with-busybox`: Debian's static busybox as `/bin/busybox`.
    pub with_busybox: bool,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            smp: qemu::DEFAULT_SMP,
            mem: qemu::DEFAULT_MEM.to_string(),
            cmdline: String::new(),
            is_gdb: false,
            accel: AccelChoice::Auto,
            batch: None,
            disk: DiskChoice::Scratch,
            net: NetChoice::default(),
            add: Vec::new(),
            with_busybox: false,
        }
    }
}

/// Builds the image and assembles the configuration for it.
fn prepare(opts: &RunOptions, kind: ImageKind, serial: SerialMode) -> Result<QemuConfig> {
    let workspace = Workspace::load()?;
    let built = image::build(&workspace, kind)?;
    let accel = qemu::choose_and_report_accel(opts.accel);
    let disk = opts.disk.image(&workspace.target_dir, &opts.cmdline, &built.modules)?;
    let mut modules = built.modules;
    let extra =
        crate::linux_programs::extra_modules(opts.with_busybox, &opts.add, &workspace.target_dir, &modules)?;
    modules.extend(extra);
    Ok(QemuConfig {
        kernel: built.kernel,
        modules,
        cmdline: opts.cmdline.clone(),
        smp: opts.smp,
        mem: opts.mem.clone(),
        accel,
        serial,
        is_gdb: opts.is_gdb,
        disk,
        net: opts.net.clone(),
    })
}

fn print_gdb_hint(kernel: &Path) {
    eprintln!(
        "xtask: QEMU waits for a debugger; attach with:\n  gdb {} -ex 'target remote :{GDB_PORT}'",
        kernel.display()
    );
}

/// `cargo xtask run`: build, then boot with the serial console on the terminal.
pub fn run_command(opts: &RunOptions) -> Result<ExitCode> {
    qemu::ensure_qemu()?;
    let config = prepare(opts, ImageKind::Normal, SerialMode::Interactive)?;
    if config.is_gdb {
        print_gdb_hint(&config.kernel);
    }
    eprintln!("xtask: booting (Ctrl-A X quits QEMU)\n$ {}", config.to_shell()?);
    // A copy of the console, to say afterwards how the session ended.
    let log = std::env::temp_dir().join(format!("ridgeback-console-{}.log", std::process::id()));
    let args = qemu::with_serial_log(&config.to_args()?, &log)?;
    let status = std::process::Command::new(QEMU_BINARY)
        .args(args)
        .status()
        .map_err(|err| format!("cannot start {QEMU_BINARY}: {err}"))?;
    let exit = qemu::classify_exit(status.code());
    let facts = EndFacts::from_serial(&String::from_utf8_lossy(&std::fs::read(&log).unwrap_or_default()));
    let _ = std::fs::remove_file(&log);
    eprintln!("\nxtask: {}", qemu::describe_end(exit, &facts));
    Ok(if exit == QemuExit::Success { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// `cargo xtask image`: build, then print the exact QEMU command line on
/// stdout (everything else goes to stderr, so the output can be captured).
/// The test image is shown as `test` boots it: serial captured and, unless
/// `--cmdline` says otherwise, the test runner as init.
pub fn image_command(opts: &RunOptions, kind: ImageKind) -> Result<ExitCode> {
    let (serial, opts) = match kind {
        // `image` never asks for the bench image: `bench` prints its own lines.
        ImageKind::Normal | ImageKind::Bench => (SerialMode::Interactive, opts.clone()),
        ImageKind::Test => {
            let mut opts = opts.clone();
            if opts.cmdline.is_empty() {
                opts.cmdline = TEST_KERNEL_CMDLINE.to_string();
            }
            (SerialMode::Captured, opts)
        }
    };
    let config = prepare(&opts, kind, serial)?;
    if config.is_gdb {
        print_gdb_hint(&config.kernel);
    }
    println!("{}", config.to_shell()?);
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::utf8_args;
    use std::ffi::OsString;
    use std::os::unix::ffi::OsStringExt;

    #[test]
    fn text_arguments_pass() {
        let args = vec![OsString::from("run"), OsString::from("--batch"), OsString::from("echo é")];
        assert_eq!(utf8_args(args).unwrap(), ["run", "--batch", "echo é"]);
    }

    #[test]
    fn an_argument_that_is_not_utf8_is_refused_with_its_place() {
        let args =
            vec![OsString::from("run"), OsString::from("--batch"), OsString::from_vec(b"echo \xff".to_vec())];
        let err = utf8_args(args).unwrap_err();
        assert!(err.contains("argument 3"), "{err}");
        assert!(err.contains("byte 0xff at offset 5"), "{err}");
    }
}
