//! Booting the two systems for the suite: Ridgeback through xtask's own
//! QEMU command line ([`QemuConfig`]), Linux through `linux_guest`, both
//! with the same machine-shaping arguments, taken from Ridgeback's command
//! line itself ([`machine_args`]) so that the two cannot drift apart.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::qemu::{self, QemuConfig, QemuExit};
use crate::tools::Result;

/// QEMU options that shape the machine (and its clock), with one value
/// each. Everything else on a command line is the system's own: kernel,
/// initrd, command line, console, devices; except the disk
/// ([`qemu::is_disk_option`]), which is the machine's too.
const MACHINE_OPTIONS: [&str; 5] = ["-m", "-smp", "-accel", "-cpu", "-icount"];

/// The machine-shaping options of a QEMU argument list, and its disk, in
/// their order.
pub fn machine_args(args: &[String]) -> Vec<String> {
    let mut machine = Vec::new();
    let mut words = args.iter();
    while let Some(word) = words.next() {
        let takes_value = MACHINE_OPTIONS.contains(&word.as_str()) || word == "-drive" || word == "-device";
        if takes_value
            && let Some(value) = words.next()
            && (MACHINE_OPTIONS.contains(&word.as_str()) || qemu::is_disk_option(word, value))
        {
            machine.push(word.clone());
            machine.push(value.clone());
        }
    }
    machine
}

/// QEMU's deterministic mode: the virtual clock advances by 2^0 ns per
/// guest instruction, so TSC ticks count instructions. TCG only.
pub const ICOUNT_ARGS: [&str; 2] = ["-icount", "shift=0"];

/// One Ridgeback boot's outcome.
pub struct RidgebackBoot {
    pub serial_output: String,
    /// `None` when the boot ran into the timeout and QEMU was killed.
    pub exit: Option<QemuExit>,
    pub elapsed: Duration,
    /// The full command line, shell-quoted.
    pub command_line: String,
}

/// Boots `config` (serial captured) with `extra_args` appended, and
/// collects the serial output until QEMU exits or `timeout` passes.
pub fn boot_ridgeback(
    config: &QemuConfig,
    extra_args: &[String],
    timeout: Duration,
) -> Result<RidgebackBoot> {
    let mut command = config.to_command()?;
    command.args(extra_args);
    let mut command_line = config.to_shell()?;
    for arg in extra_args {
        command_line.push(' ');
        command_line.push_str(arg);
    }
    command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let started = Instant::now();
    let mut child = command.spawn().map_err(|e| format!("cannot start {}: {e}", qemu::QEMU_BINARY))?;
    let serial = Arc::new(Mutex::new(String::new()));
    let stdout = child.stdout.take().expect("stdout is piped");
    let reader = {
        let serial = Arc::clone(&serial);
        std::thread::spawn(move || {
            // Bytes, not UTF-8: one bad byte must not end the capture.
            let mut reader = BufReader::new(stdout);
            let mut line = Vec::new();
            while matches!(reader.read_until(b'\n', &mut line), Ok(n) if n > 0) {
                serial.lock().expect("not poisoned").push_str(&String::from_utf8_lossy(&line));
                line.clear();
            }
        })
    };
    let stderr_reader = qemu::collect_stderr(&mut child);
    let deadline = started + timeout;
    let status = qemu::wait_until(&mut child, deadline);
    let elapsed = started.elapsed();
    let _ = reader.join();
    let qemu_stderr = stderr_reader.join().unwrap_or_default();
    let mut serial_output = std::mem::take(&mut *serial.lock().expect("not poisoned"));
    if !qemu_stderr.trim().is_empty() {
        serial_output.push_str(&format!("qemu stderr: {}\n", qemu_stderr.trim()));
    }
    Ok(RidgebackBoot {
        serial_output,
        exit: status.map(|s| qemu::classify_exit(s.code())),
        elapsed,
        command_line,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qemu::{Accel, SerialMode};
    use std::path::PathBuf;

    #[test]
    fn machine_args_are_taken_from_ridgebacks_command_line() {
        let config = QemuConfig {
            kernel: PathBuf::from("/w/kernel"),
            modules: vec![PathBuf::from("/w/ridgebench")],
            cmdline: "init=ridgebench -- -m 1".to_string(),
            smp: 2,
            mem: "512M".to_string(),
            accel: Accel::Tcg,
            serial: SerialMode::Captured,
            is_gdb: false,
            disk: Some(PathBuf::from("/w/target/bench/disk.img")),
            net: crate::qemu::NetChoice::None,
        };
        let mut args = config.to_args().unwrap();
        args.extend(ICOUNT_ARGS.map(String::from));
        assert_eq!(
            machine_args(&args).join(" "),
            "-m 512M -smp 2 -accel tcg -cpu max \
             -drive file=/w/target/bench/disk.img,if=none,format=raw,id=disk0 \
             -device virtio-blk-pci,drive=disk0 -icount shift=0",
            "the kernel command line's own `-m` is a value, not an option; isa-debug-exit is Ridgeback's"
        );
        let config = QemuConfig { disk: None, ..config };
        let kvm = QemuConfig { accel: Accel::Kvm, smp: 1, ..config };
        assert_eq!(machine_args(&kvm.to_args().unwrap()).join(" "), "-m 512M -smp 1 -accel kvm -cpu host");
    }
}
