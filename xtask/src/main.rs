//! `cargo xtask`: the one build entry point of Ridgeback.
//!
//! What it is: a host program that builds the kernel and the user programs
//! for `x86_64-unknown-none`, checks that QEMU can load the kernel, assembles
//! the boot image (the kernel plus one Multiboot module per user program),
//! boots it in QEMU, and runs the whole test suite (`cargo xtask test`, which
//! is exactly what CI runs). Commands: `build`, `run`, `image`, `test`,
//! `bench`, `fuzz`, `soak` (see [`USAGE`]).
//!
//! What it is not: a build system of its own. Cargo builds everything; xtask
//! only chooses the packages, the target and the flags, and reads
//! `cargo metadata` so that adding a program needs no edit here.
//!
//! Invariants:
//! - Only this crate starts processes (`std::process::Command`); the kernel
//!   and the user programs never see the host.
//! - Every child runs with the workspace root as its working directory, so
//!   `rust-toolchain.toml` and `.cargo/config.toml` always apply, whatever
//!   directory `cargo xtask` was started from.
//! - The pure parts (argument parsing, QEMU command assembly, accelerator
//!   choice, program discovery, the Multiboot check, serial-output parsing)
//!   take their inputs as values and are unit-tested on the host; the code
//!   that touches processes and files is a thin layer around them.
//!
//! Module map, from the ground up (each layer imports only those below it,
//! so there is no import circle):
//! 1. [`tools`]: running children, installing a Rust target or a Debian
//!    package, the crate's [`Result`]; [`multiboot`]: the kernel
//!    loadability check (pure).
//! 2. [`image`]: workspace discovery and the build of a boot image.
//! 3. [`qemu`]: the QEMU machine as a library (command line, accelerator,
//!    exit statuses, waiting for a child); it imports no command.
//! 4. [`linux_guest`]: the Linux guest the benchmarks measure against,
//!    booted on the same machine.
//! 5. The commands: [`run`] (`run`, `image`), [`batch`] (`run --batch`),
//!    [`bench`] (the benchmark suite, which boots its UNIX rows as a
//!    batch), [`test`] (the suite, which also runs batches and the quick
//!    benchmark), [`fuzz`] and [`soak`] (long batch boots of the fuzzers
//!    and of the soak load).
//! 6. This file: the command line, parsed and dispatched.

#![forbid(unsafe_code)]

mod batch;
mod bench;
mod ext2;
mod fuzz;
mod image;
mod linux_guest;
mod linux_programs;
mod multiboot;
mod profile;
mod qemu;
mod run;
mod soak;
mod test;
mod tools;

use std::process::ExitCode;

use image::ImageKind;
use qemu::{DiskChoice, parse_mem, parse_smp};
use run::RunOptions;
use tools::Result;

const USAGE: &str = "\
usage: cargo xtask <command> [options]

commands:
  build                 build the kernel and every user program (release, x86_64-unknown-none)
  run [run options]     build and boot interactively; serial console on the terminal (Ctrl-A X quits)
  image [run options] [--test]
                        build and print the exact QEMU command line (--test: the test image)
  test [test options]   the whole test suite, as CI runs it
  bench [bench options] benchmarks: Ridgeback and Linux in the same QEMU machine
                        (`cargo xtask bench --help` lists the options)
  fuzz --minutes N [--seed S] [--smp N] [--lanes W] [--ops N] [--accel A]
                        the server and kernel fuzzers for N minutes (or --seconds S) in
                        one boot of the test image; prints the counts and the seed of
                        any failure (docs/reliability.md)
  soak --minutes N [--smp N] [--accel A]
                        the soak: a mixed load on 4 CPUs for N minutes (or --seconds S),
                        then a check that nothing leaked (docs/reliability.md)
  profile [profile options]
                        boot under QEMU, sample every vCPU from the host (QMP) and print a
                        flat profile per process (`cargo xtask profile --help`;
                        docs/building.md, section Profiling)
  help                  this text

run options:
  --smp N               number of CPUs (default 2)
  --mem SIZE            guest memory, QEMU syntax such as 512M or 1G (default 512M)
  --cmdline \"OPTIONS\"   kernel command line (default empty)
  --gdb                 wait for a debugger on localhost:1234 (QEMU -s -S)
  --accel tcg|kvm|auto  accelerator (default auto: KVM only with a real kvm_intel/kvm_amd)
  --batch \"COMMANDS\"    run: boot, run COMMANDS with /bin/sh, print their output, power
                        off and exit with their exit status
  --disk FILE|scratch|none
                        raw image attached as a virtio-blk disk (-drive ...,format=raw
                        -device virtio-blk-pci); default target/disk/ext2.img, a 64 MiB
                        ext2 volume made on first use and kept, mounted at /disk (with
                        --cmdline root=disk: target/disk/root.img, the boot image's
                        programs, mounted at /); scratch: target/disk/scratch.img,
                        64 MiB of zeros for /dev/vda experiments; none: no disk
  --net user|none       the virtio-net card on QEMU's user network (default user:
                        -netdev user -device virtio-net-pci; the guest gets 10.0.2.15 by
                        DHCP, the host is 10.0.2.2); none: no card
  --hostfwd HOST:GUEST  forward TCP port HOST of the host's 127.0.0.1 to the guest's port
                        GUEST (repeatable), e.g. --hostfwd 8080:80
  --add PATH            copy the host file PATH into the image's /bin (repeatable); a
                        static x86-64 Linux program runs there through the Linux server
  --with-busybox        add Debian's busybox-static as /bin/busybox (fetched once with
                        apt-get download into target/linux-programs/)

test options:
  --only-host           only formatting, clippy and host unit tests
  --only-qemu           only the in-QEMU boots
  --smp N               boot one configuration only (default: 1, 2 and 4 CPUs)
  --timeout-s S         per-boot timeout in seconds (default 300)
  --accel tcg|kvm|auto  accelerator (default auto)
  --power-cuts N        the disk's power-cut test at N cut points (CI: 2)
";

#[derive(Clone, Debug, PartialEq, Eq)]
enum Cmd {
    Help,
    Build,
    Run(RunOptions),
    Image {
        run: RunOptions,
        kind: ImageKind,
    },
    Test(test::TestOptions),
    /// The bench module parses its own arguments.
    Bench(Vec<String>),
    Fuzz(fuzz::FuzzOptions),
    Soak(soak::SoakOptions),
    /// The profile module parses its own arguments.
    Profile(Vec<String>),
}

fn main() -> ExitCode {
    // Not `std::env::args()`, which panics on an argument that is not
    // UTF-8 (issue 16: `run --batch $'echo \xff'`).
    let args = match run::utf8_args(std::env::args_os().skip(1)) {
        Ok(args) => args,
        Err(message) => {
            eprintln!("xtask: {message}");
            return ExitCode::from(2);
        }
    };
    let cmd = match parse_args(&args) {
        Ok(cmd) => cmd,
        Err(message) if args.is_empty() => {
            eprintln!("xtask: {message}\n\n{USAGE}");
            return ExitCode::from(2);
        }
        Err(message) => {
            eprintln!("xtask: {message} (`cargo xtask help` lists the commands and options)");
            return ExitCode::from(2);
        }
    };
    let result = match cmd {
        Cmd::Help => {
            print!("{USAGE}");
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Build => image::build_command(),
        Cmd::Run(opts) => match &opts.batch {
            Some(commands) => batch::run_command(&opts, commands),
            None => run::run_command(&opts),
        },
        Cmd::Image { run, kind } => run::image_command(&run, kind),
        Cmd::Test(opts) => test::run(&opts),
        Cmd::Bench(args) => Ok(bench::main(&args)),
        Cmd::Fuzz(opts) => fuzz::run(&opts),
        Cmd::Soak(opts) => soak::run(&opts),
        Cmd::Profile(args) => profile::run(&args),
    };
    match result {
        Ok(code) => code,
        Err(message) => {
            eprintln!("xtask: error: {message}");
            ExitCode::FAILURE
        }
    }
}

/// One command-line flag: `--name value`, `--name=value` or a bare `--name`.
struct Flag<'a> {
    name: &'a str,
    inline_value: Option<&'a str>,
}

/// Walks the arguments of one command, handing out flags and their values.
struct ArgCursor<'a> {
    args: std::slice::Iter<'a, String>,
}

impl<'a> ArgCursor<'a> {
    fn next_flag(&mut self) -> Result<Option<Flag<'a>>> {
        let Some(arg) = self.args.next() else {
            return Ok(None);
        };
        let Some(body) = arg.strip_prefix("--") else {
            return Err(format!("unexpected argument `{arg}`"));
        };
        Ok(Some(match body.split_once('=') {
            Some((name, value)) => Flag { name, inline_value: Some(value) },
            None => Flag { name: body, inline_value: None },
        }))
    }

    fn value(&mut self, flag: &Flag<'a>) -> Result<&'a str> {
        match flag.inline_value {
            Some(value) => Ok(value),
            None => {
                self.args.next().map(String::as_str).ok_or_else(|| format!("--{} needs a value", flag.name))
            }
        }
    }
}

fn reject_value(flag: &Flag) -> Result<()> {
    match flag.inline_value {
        Some(_) => Err(format!("--{} takes no value", flag.name)),
        None => Ok(()),
    }
}

fn parse_args(args: &[String]) -> Result<Cmd> {
    let Some((command, rest)) = args.split_first() else {
        return Err("no command given".to_string());
    };
    let mut cursor = ArgCursor { args: rest.iter() };
    match command.as_str() {
        "help" | "--help" | "-h" => Ok(Cmd::Help),
        "build" => match cursor.next_flag()? {
            None => Ok(Cmd::Build),
            Some(flag) => Err(format!("build takes no options (got --{})", flag.name)),
        },
        "run" => {
            let mut run = RunOptions::default();
            while let Some(flag) = cursor.next_flag()? {
                if !parse_run_flag(&flag, &mut cursor, &mut run)? {
                    return Err(format!("unknown option --{} for run", flag.name));
                }
            }
            Ok(Cmd::Run(run))
        }
        "image" => {
            let mut run = RunOptions::default();
            let mut kind = ImageKind::Normal;
            while let Some(flag) = cursor.next_flag()? {
                if flag.name == "test" {
                    reject_value(&flag)?;
                    kind = ImageKind::Test;
                } else if !parse_run_flag(&flag, &mut cursor, &mut run)? {
                    return Err(format!("unknown option --{} for image", flag.name));
                }
            }
            Ok(Cmd::Image { run, kind })
        }
        "test" => parse_test_args(&mut cursor).map(Cmd::Test),
        "bench" => Ok(Cmd::Bench(rest.to_vec())),
        "profile" => Ok(Cmd::Profile(rest.to_vec())),
        "fuzz" => parse_fuzz_args(&mut cursor).map(Cmd::Fuzz),
        "soak" => parse_soak_args(&mut cursor).map(Cmd::Soak),
        other => Err(format!("unknown command `{other}`")),
    }
}

/// Applies one `run`/`image` option; `Ok(false)` when the flag is not one of them.
fn parse_run_flag<'a>(flag: &Flag<'a>, cursor: &mut ArgCursor<'a>, run: &mut RunOptions) -> Result<bool> {
    match flag.name {
        "smp" => run.smp = parse_smp(cursor.value(flag)?)?,
        "mem" => run.mem = parse_mem(cursor.value(flag)?)?,
        "cmdline" => run.cmdline = cursor.value(flag)?.to_string(),
        "gdb" => {
            reject_value(flag)?;
            run.is_gdb = true;
        }
        "accel" => run.accel = cursor.value(flag)?.parse()?,
        "batch" => run.batch = Some(cursor.value(flag)?.to_string()),
        "disk" => run.disk = DiskChoice::parse(cursor.value(flag)?)?,
        "net" => {
            let forwards = match &run.net {
                crate::qemu::NetChoice::User { forwards } => forwards.clone(),
                crate::qemu::NetChoice::None => Vec::new(),
            };
            run.net = crate::qemu::NetChoice::parse(cursor.value(flag)?)?;
            if let crate::qemu::NetChoice::User { forwards: f } = &mut run.net {
                *f = forwards;
            }
        }
        "hostfwd" => run.net.add_forward(cursor.value(flag)?)?,
        "add" => run.add.push(std::path::PathBuf::from(cursor.value(flag)?)),
        "with-busybox" => {
            reject_value(flag)?;
            run.with_busybox = true;
        }
        _ => return Ok(false),
    }
    Ok(true)
}

fn parse_test_args(cursor: &mut ArgCursor) -> Result<test::TestOptions> {
    let mut opts = test::TestOptions::default();
    let mut is_only_host = false;
    let mut is_only_qemu = false;
    while let Some(flag) = cursor.next_flag()? {
        match flag.name {
            "only-host" => {
                reject_value(&flag)?;
                is_only_host = true;
            }
            "only-qemu" => {
                reject_value(&flag)?;
                is_only_qemu = true;
            }
            "smp" => opts.smp = Some(parse_smp(cursor.value(&flag)?)?),
            "timeout-s" => {
                let text = cursor.value(&flag)?;
                opts.timeout_s = match text.parse::<u64>() {
                    Ok(seconds) if seconds > 0 => seconds,
                    _ => return Err(format!("--timeout-s wants a positive number, got `{text}`")),
                };
            }
            "accel" => opts.accel = cursor.value(&flag)?.parse()?,
            "power-cuts" => {
                let text = cursor.value(&flag)?;
                opts.power_cuts = match text.parse::<usize>() {
                    Ok(n) if (1..=1000).contains(&n) => Some(n),
                    _ => return Err(format!("--power-cuts wants a number from 1 to 1000, got `{text}`")),
                };
            }
            other => return Err(format!("unknown option --{other} for test")),
        }
    }
    opts.parts = match (is_only_host, is_only_qemu) {
        (true, true) => return Err("--only-host and --only-qemu exclude each other".to_string()),
        (true, false) => test::Parts::HostOnly,
        (false, true) => test::Parts::QemuOnly,
        (false, false) => test::Parts::All,
    };
    Ok(opts)
}

/// `fuzz` options: `--minutes N` or `--seconds S`, `--seed S`, `--smp N`, `--lanes W`, `--ops N`, `--accel A`.
fn parse_fuzz_args(cursor: &mut ArgCursor) -> Result<fuzz::FuzzOptions> {
    let mut opts = fuzz::FuzzOptions::default();
    let number = |flag: &str, text: &str| {
        text.parse::<u64>().map_err(|_| format!("--{flag} wants a whole number, got `{text}`"))
    };
    while let Some(flag) = cursor.next_flag()? {
        match flag.name {
            "minutes" => opts.seconds = number("minutes", cursor.value(&flag)?)?.saturating_mul(60),
            "seconds" => opts.seconds = number("seconds", cursor.value(&flag)?)?,
            "seed" => opts.seed = number("seed", cursor.value(&flag)?)?,
            "smp" => opts.smp = parse_smp(cursor.value(&flag)?)?,
            "lanes" => opts.lanes = Some(fuzz::parse_lanes(cursor.value(&flag)?)?),
            "ops" => opts.ops = fuzz::parse_ops(cursor.value(&flag)?)?,
            "accel" => opts.accel = cursor.value(&flag)?.parse()?,
            other => return Err(format!("unknown option --{other} for fuzz")),
        }
    }
    if opts.seconds == 0 {
        return Err("fuzz: --minutes or --seconds must be above 0".to_string());
    }
    Ok(opts)
}

/// `soak` options: `--minutes N` or `--seconds S`, `--smp N`, `--accel A`.
fn parse_soak_args(cursor: &mut ArgCursor) -> Result<soak::SoakOptions> {
    let mut opts = soak::SoakOptions::default();
    let number = |flag: &str, text: &str| {
        text.parse::<u64>().map_err(|_| format!("--{flag} wants a whole number, got `{text}`"))
    };
    while let Some(flag) = cursor.next_flag()? {
        match flag.name {
            "minutes" => opts.seconds = number("minutes", cursor.value(&flag)?)?.saturating_mul(60),
            "seconds" => opts.seconds = number("seconds", cursor.value(&flag)?)?,
            "smp" => opts.smp = parse_smp(cursor.value(&flag)?)?,
            "accel" => opts.accel = cursor.value(&flag)?.parse()?,
            other => return Err(format!("unknown option --{other} for soak")),
        }
    }
    if opts.seconds == 0 {
        return Err("soak: --minutes or --seconds must be above 0".to_string());
    }
    Ok(opts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qemu::AccelChoice;

    #[test]
    fn fuzz_options_are_parsed() {
        match parse(&["fuzz", "--minutes", "3", "--seed=9", "--smp", "4"]) {
            Ok(Cmd::Fuzz(o)) => assert_eq!((o.seconds, o.seed, o.smp), (180, 9, 4)),
            other => panic!("{other:?}"),
        }
        assert!(parse(&["fuzz", "--minutes", "x"]).is_err());
        assert!(parse(&["fuzz", "--seconds", "0"]).is_err());
        assert!(parse(&["fuzz", "--bogus"]).is_err());
        match parse(&["fuzz", "--minutes", "1", "--lanes", "3"]) {
            Ok(Cmd::Fuzz(o)) => assert_eq!(o.lanes, Some(3)),
            other => panic!("{other:?}"),
        }
        assert!(parse(&["fuzz", "--minutes", "1", "--lanes", "0"]).is_err());
        assert!(parse(&["fuzz", "--minutes", "1", "--lanes", "99"]).is_err());
        match parse(&["fuzz", "--minutes", "1", "--ops", "1"]) {
            Ok(Cmd::Fuzz(o)) => assert_eq!(o.ops, 1),
            other => panic!("{other:?}"),
        }
        assert!(parse(&["fuzz", "--minutes", "1", "--ops", "3"]).is_err());
    }

    #[test]
    fn soak_options_are_parsed() {
        match parse(&["soak", "--minutes", "60"]) {
            Ok(Cmd::Soak(o)) => assert_eq!((o.seconds, o.smp), (3600, 4)),
            other => panic!("{other:?}"),
        }
        assert!(parse(&["soak", "--minutes", "0"]).is_err());
        assert!(parse(&["soak", "--seed", "1"]).is_err());
    }

    fn parse(words: &[&str]) -> Result<Cmd> {
        let args: Vec<String> = words.iter().map(|w| w.to_string()).collect();
        parse_args(&args)
    }

    #[test]
    fn run_defaults() {
        assert_eq!(parse(&["run"]), Ok(Cmd::Run(RunOptions::default())));
        let defaults = RunOptions::default();
        assert_eq!(defaults.smp, 2);
        assert_eq!(defaults.mem, "512M");
        assert_eq!(defaults.accel, AccelChoice::Auto);
    }

    #[test]
    fn run_batch_takes_the_commands() {
        match parse(&["run", "--batch", "ls; echo hi"]) {
            Ok(Cmd::Run(opts)) => assert_eq!(opts.batch.as_deref(), Some("ls; echo hi")),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn run_options_both_spellings() {
        let expected = Cmd::Run(RunOptions {
            smp: 4,
            mem: "1G".to_string(),
            cmdline: "init=shell verbose".to_string(),
            is_gdb: true,
            accel: AccelChoice::Tcg,
            batch: None,
            disk: DiskChoice::Scratch,
            net: crate::qemu::NetChoice::default(),
            add: Vec::new(),
            with_busybox: false,
        });
        assert_eq!(
            parse(&[
                "run",
                "--smp",
                "4",
                "--mem",
                "1G",
                "--cmdline",
                "init=shell verbose",
                "--gdb",
                "--accel",
                "tcg"
            ]),
            Ok(expected.clone())
        );
        assert_eq!(
            parse(&["run", "--smp=4", "--mem=1G", "--cmdline=init=shell verbose", "--gdb", "--accel=tcg"]),
            Ok(expected)
        );
    }

    #[test]
    fn run_takes_a_disk_or_none() {
        let disk = |words: &[&str]| match parse(words) {
            Ok(Cmd::Run(opts)) => opts.disk,
            other => panic!("{other:?}"),
        };
        assert_eq!(disk(&["run"]), DiskChoice::Scratch);
        assert_eq!(disk(&["run", "--disk", "none"]), DiskChoice::None);
        assert_eq!(disk(&["run", "--disk=my.img"]), DiskChoice::Image("my.img".into()));
        assert!(parse(&["run", "--disk"]).is_err());
        assert!(parse(&["run", "--disk="]).is_err());
        assert!(matches!(
            parse(&["image", "--disk", "none"]),
            Ok(Cmd::Image { run: RunOptions { disk: DiskChoice::None, .. }, .. })
        ));
    }

    #[test]
    fn run_rejects_bad_values() {
        assert!(parse(&["run", "--smp", "0"]).is_err());
        assert!(parse(&["run", "--smp", "two"]).is_err());
        assert!(parse(&["run", "--smp"]).is_err());
        assert!(parse(&["run", "--mem", "lots"]).is_err());
        assert!(parse(&["run", "--mem", "512MB"]).is_err());
        assert!(parse(&["run", "--mem", "0"]).is_err());
        assert!(parse(&["run", "--accel", "hvf"]).is_err());
        assert!(parse(&["run", "--gdb=yes"]).is_err());
        assert!(parse(&["run", "--frobnicate"]).is_err());
        assert!(parse(&["run", "stray"]).is_err());
    }

    #[test]
    fn image_takes_run_options_and_test() {
        assert_eq!(
            parse(&["image", "--test", "--smp", "1"]),
            Ok(Cmd::Image { run: RunOptions { smp: 1, ..RunOptions::default() }, kind: ImageKind::Test })
        );
        assert!(parse(&["run", "--test"]).is_err());
    }

    #[test]
    fn test_options() {
        assert_eq!(parse(&["test"]), Ok(Cmd::Test(test::TestOptions::default())));
        assert_eq!(
            parse(&["test", "--power-cuts", "12"]),
            Ok(Cmd::Test(test::TestOptions { power_cuts: Some(12), ..test::TestOptions::default() }))
        );
        assert!(parse(&["test", "--power-cuts", "0"]).is_err());
        let Ok(Cmd::Test(opts)) =
            parse(&["test", "--only-qemu", "--smp", "4", "--timeout-s=60", "--accel", "kvm"])
        else {
            panic!("test options did not parse");
        };
        assert_eq!(opts.parts, test::Parts::QemuOnly);
        assert_eq!(opts.smp, Some(4));
        assert_eq!(opts.timeout_s, 60);
        assert_eq!(opts.accel, AccelChoice::Kvm);
        assert!(matches!(
            parse(&["test", "--only-host"]),
            Ok(Cmd::Test(test::TestOptions { parts: test::Parts::HostOnly, .. }))
        ));
        assert!(parse(&["test", "--only-host", "--only-qemu"]).is_err());
        assert!(parse(&["test", "--timeout-s", "0"]).is_err());
        assert!(parse(&["test", "--gdb"]).is_err());
    }

    #[test]
    fn other_commands() {
        assert_eq!(parse(&["build"]), Ok(Cmd::Build));
        assert!(parse(&["build", "--smp", "2"]).is_err());
        assert_eq!(parse(&["help"]), Ok(Cmd::Help));
        assert_eq!(
            parse(&["bench", "--anything", "x"]),
            Ok(Cmd::Bench(vec!["--anything".to_string(), "x".to_string()]))
        );
        assert!(parse(&[]).is_err());
        assert!(parse(&["deploy"]).is_err());
    }
}
