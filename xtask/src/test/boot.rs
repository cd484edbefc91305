//! One captured boot of `cargo xtask test`: QEMU started from a
//! [`QemuConfig`], its serial output streamed to the terminal (each line
//! prefixed with the configuration's name) and to a log file, fed to a
//! [`SerialReport`] as it comes, and judged once QEMU has exited or the
//! timeout has passed.
//!
//! What it is not: the parsing or the verdict (`verdict.rs`, pure), nor the
//! choice of what to boot (`test.rs`).
//!
//! Invariant: QEMU never outlives a boot: at the deadline it is killed,
//! and what it printed before is still read (for [`GRACE`]).

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::Stdio;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread;
use std::time::{Duration, Instant};

use super::outcome::Outcome;
use super::verdict::{BootEnd, Declared, SerialReport, judge};
use crate::qemu::{self, QemuConfig, QemuExit};

/// Default limit for one boot. TCG on two host cores is slow, and a boot
/// with 4 guest CPUs shares those cores; three boots at this limit still
/// leave most of CI's 90 minutes.
pub const DEFAULT_TIMEOUT_S: u64 = 300;
/// How long to wait for QEMU to exit once its output has ended, and for the
/// reader threads once QEMU was killed.
const GRACE: Duration = Duration::from_secs(5);

/// Where a line of QEMU output came from.
enum Stream {
    Serial,
    QemuStderr,
}

/// Forwards a pipe to the channel line by line. Bytes, not UTF-8: a guest
/// may print anything, and one bad byte must not end the capture.
fn spawn_reader(pipe: impl Read + Send + 'static, stream: Stream, tx: Sender<(Stream, String)>) {
    let is_serial = matches!(stream, Stream::Serial);
    thread::spawn(move || {
        let mut reader = BufReader::new(pipe);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match reader.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let line = String::from_utf8_lossy(&buf).trim_end().to_string();
                    let stream = if is_serial { Stream::Serial } else { Stream::QemuStderr };
                    if tx.send((stream, line)).is_err() {
                        break;
                    }
                }
            }
        }
    });
}

/// One boot: stream its serial output (prefixed with the configuration's
/// name) to the terminal and to `log_path`, parse it, judge it.
/// A test of `declared` (the tests the image declares that this boot
/// runs: [`super::verdict::Declared`]) that did not report fails it too.
pub fn boot(
    name: &str,
    config: &QemuConfig,
    timeout_s: u64,
    log_path: &Path,
    declared: Option<&Declared>,
) -> Outcome {
    let row = format!("boot {name}");
    let command_line = match config.to_shell() {
        Ok(line) => line,
        Err(err) => return Outcome::step(&row, Err(err)),
    };
    println!("\n--- {name}: {command_line}");
    let mut log = match File::create(log_path) {
        Ok(file) => file,
        Err(err) => {
            return Outcome::step(&row, Err(format!("cannot create {}: {err}", log_path.display())));
        }
    };
    let _ = writeln!(log, "$ {command_line}");
    let mut command = match config.to_command() {
        Ok(command) => command,
        Err(err) => return Outcome::step(&row, Err(err)),
    };
    command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let started = Instant::now();
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(err) => {
            return Outcome::step(&row, Err(format!("cannot start {}: {err}", qemu::QEMU_BINARY)));
        }
    };
    let (tx, rx) = mpsc::channel();
    spawn_reader(child.stdout.take().expect("piped"), Stream::Serial, tx.clone());
    spawn_reader(child.stderr.take().expect("piped"), Stream::QemuStderr, tx);

    let mut report = SerialReport::default();
    let mut last_stderr: Option<String> = None;
    let mut take = |(stream, line): (Stream, String)| match stream {
        Stream::Serial => {
            println!("[{name}] {line}");
            let _ = writeln!(log, "{line}");
            report.feed(&line);
        }
        Stream::QemuStderr => {
            println!("[{name}] qemu: {line}");
            let _ = writeln!(log, "qemu: {line}");
            last_stderr = Some(line);
        }
    };

    let deadline = started + Duration::from_secs(timeout_s);
    let end = match pump_until(&rx, deadline, &mut take) {
        // Both pipes closed: QEMU is exiting.
        Pumped::Closed => match qemu::wait_until(&mut child, Instant::now() + GRACE) {
            Some(status) => BootEnd::Exited(qemu::classify_exit(status.code())),
            None => BootEnd::TimedOut,
        },
        Pumped::Deadline => {
            let _ = child.kill();
            let _ = child.wait();
            // Keep what QEMU printed before it died.
            pump_until(&rx, Instant::now() + GRACE, &mut take);
            BootEnd::TimedOut
        }
    };

    let mut verdict = judge(&report, end, timeout_s);
    if let Some(declared) = declared {
        declared.check(&report, &mut verdict);
    }
    if let (BootEnd::Exited(QemuExit::Other(1)), Some(line)) = (end, &last_stderr) {
        verdict.problems.push(format!("QEMU said: {line}"));
    }
    let seconds = started.elapsed().as_secs();
    println!(
        "--- {name}: {} after {seconds} s; log: {}",
        if verdict.problems.is_empty() { "passed" } else { "FAILED" },
        log_path.display()
    );
    if !verdict.problems.is_empty() {
        verdict.problems.push(format!("serial log: {}", log_path.display()));
    }
    Outcome {
        name: format!("{row}, {seconds} s"),
        passed: verdict.passed,
        failed: verdict.failed,
        problems: verdict.problems,
        warnings: verdict.warnings,
    }
}

enum Pumped {
    /// Every sender is gone: both pipes reached end of file.
    Closed,
    Deadline,
}

fn pump_until<T>(rx: &Receiver<T>, deadline: Instant, take: &mut impl FnMut(T)) -> Pumped {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Pumped::Deadline;
        }
        match rx.recv_timeout(left) {
            Ok(item) => take(item),
            Err(RecvTimeoutError::Timeout) => return Pumped::Deadline,
            Err(RecvTimeoutError::Disconnected) => return Pumped::Closed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::TEST_KERNEL_CMDLINE;
    use crate::qemu::SerialMode;
    use std::fs;

    /// A minimal Multiboot1 (a.out kludge) ELF64 kernel: 32-bit code that
    /// prints `text` on COM1, then writes `exit_code` to isa-debug-exit, or
    /// halts forever when there is none. It stands in for the real kernel so
    /// that the runner, the QEMU command line and the Multiboot check are
    /// exercised against QEMU itself.
    fn standin_kernel(text: &str, exit_code: Option<u32>) -> Vec<u8> {
        const BASE: u32 = 0x10_0000; // physical load address; file offset 0x1000
        const ENTRY: u32 = BASE + 0x20; // right after the Multiboot header
        const MESSAGE: u32 = BASE + 0x60;
        let mut code = vec![0x66, 0xba, 0xf8, 0x03]; // mov dx, 0x3f8
        code.push(0xbe); // mov esi, MESSAGE
        code.extend(MESSAGE.to_le_bytes());
        // lodsb; test al, al; jz +3; out dx, al; jmp back to lodsb
        code.extend([0xac, 0x84, 0xc0, 0x74, 0x03, 0xee, 0xeb, 0xf8]);
        match exit_code {
            Some(exit) => {
                code.extend([0x66, 0xba, 0xf4, 0x00, 0xb8]); // mov dx, 0xf4; mov eax, exit
                code.extend(exit.to_le_bytes());
                code.push(0xef); // out dx, eax
            }
            None => code.extend([0x90; 10]),
        }
        code.extend([0xf4, 0xeb, 0xfd]); // hlt; jmp hlt

        let mut image = vec![0u8; 0x60];
        let flags = 1u32 << 16;
        let header = [
            crate::multiboot::MAGIC,
            flags,
            0u32.wrapping_sub(crate::multiboot::MAGIC).wrapping_sub(flags),
            BASE, // header_addr
            BASE, // load_addr
            0,    // load_end_addr: to the end of the file
            0,    // bss_end_addr: no BSS
            ENTRY,
        ];
        for (i, word) in header.iter().enumerate() {
            image[4 * i..4 * i + 4].copy_from_slice(&word.to_le_bytes());
        }
        image[0x20..0x20 + code.len()].copy_from_slice(&code);
        image.extend(text.as_bytes());
        image.push(0);

        let mut elf = vec![0u8; 0x1000];
        elf[0..8].copy_from_slice(b"\x7fELF\x02\x01\x01\x00");
        elf[0x10..0x12].copy_from_slice(&2u16.to_le_bytes()); // ET_EXEC
        elf[0x12..0x14].copy_from_slice(&62u16.to_le_bytes()); // EM_X86_64
        elf[0x14..0x18].copy_from_slice(&1u32.to_le_bytes());
        elf[0x18..0x20].copy_from_slice(&u64::from(ENTRY).to_le_bytes());
        elf[0x20..0x28].copy_from_slice(&64u64.to_le_bytes()); // e_phoff
        elf[0x34..0x36].copy_from_slice(&64u16.to_le_bytes()); // e_ehsize
        elf[0x36..0x38].copy_from_slice(&56u16.to_le_bytes()); // e_phentsize
        elf[0x38..0x3a].copy_from_slice(&1u16.to_le_bytes()); // e_phnum
        let phdr = 64;
        elf[phdr..phdr + 4].copy_from_slice(&1u32.to_le_bytes()); // PT_LOAD
        elf[phdr + 4..phdr + 8].copy_from_slice(&7u32.to_le_bytes()); // RWX
        let len = image.len() as u64;
        for (at, value) in
            [(8, 0x1000), (16, BASE.into()), (24, BASE.into()), (32, len), (40, len), (48, 0x1000)]
        {
            elf[phdr + at..phdr + at + 8].copy_from_slice(&u64::to_le_bytes(value));
        }
        elf.extend(image);
        elf
    }

    /// Boots a stand-in kernel through [`boot`], as `cargo xtask test` does.
    fn boot_standin(name: &str, text: &str, exit_code: Option<u32>, timeout_s: u64) -> Outcome {
        let dir = std::env::temp_dir().join(format!("xtask-boot-{}-{name}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let kernel = dir.join("kernel");
        let bytes = standin_kernel(text, exit_code);
        crate::multiboot::check_kernel(&bytes).expect("the stand-in passes the Multiboot check");
        fs::write(&kernel, bytes).unwrap();
        let module = dir.join("testrunner");
        fs::write(&module, b"module contents").unwrap();
        let config = QemuConfig {
            kernel,
            modules: vec![module],
            cmdline: TEST_KERNEL_CMDLINE.to_string(),
            smp: 1,
            mem: qemu::DEFAULT_MEM.to_string(),
            accel: qemu::Accel::Tcg,
            serial: SerialMode::Captured,
            is_gdb: false,
            disk: None,
            net: qemu::NetChoice::None,
        };
        let outcome = boot(name, &config, timeout_s, &dir.join("serial.log"), None);
        let _ = fs::remove_dir_all(&dir);
        outcome
    }

    /// These tests need QEMU: it is installed when missing (as `cargo
    /// xtask test` does), and a test fails when it cannot be, rather than
    /// passing without having booted anything (issue 16).
    fn require_qemu() {
        if let Err(err) = qemu::ensure_qemu() {
            panic!(
                "{} is needed to boot the stand-in kernel and could not be installed: {err}",
                qemu::QEMU_BINARY
            );
        }
    }

    #[test]
    fn qemu_boot_of_a_passing_standin() {
        require_qemu();
        let text = "ktest: start standin\nktest: ok standin\nktest: summary 1 passed, 0 failed\n";
        let outcome = boot_standin("pass", text, Some(abi::qemu_exit::SUCCESS_CODE), 60);
        assert!(outcome.is_ok(), "{:?}", outcome.problems);
        assert_eq!((outcome.passed, outcome.failed), (1, 0));
    }

    #[test]
    fn qemu_boot_of_a_failing_standin() {
        require_qemu();
        let text = "ktest: start a\nktest: FAIL a: boom\nKERNEL PANIC: test\n";
        let outcome = boot_standin("fail", text, Some(abi::qemu_exit::FAILURE_CODE), 60);
        assert_eq!((outcome.passed, outcome.failed), (0, 1));
        let problems = outcome.problems.join("\n");
        assert!(problems.contains("the kernel panicked: KERNEL PANIC: test"), "{problems}");
        assert!(problems.contains("test a failed: boom"), "{problems}");
        assert!(problems.contains("kernel panic: KERNEL PANIC: test"), "{problems}");
        assert!(problems.contains("no summary line"), "{problems}");
    }

    #[test]
    fn qemu_boot_of_a_hanging_standin_times_out() {
        require_qemu();
        let started = Instant::now();
        // Long enough for QEMU to print the first line on a loaded host (2 s
        // was not: the line had not come when QEMU was killed); the bound on
        // the whole run only tells a kill that never came from a slow boot.
        let outcome = boot_standin("hang", "ktest: start hangs\n", None, 10);
        assert!(started.elapsed() < Duration::from_secs(120), "QEMU was not killed");
        let problems = outcome.problems.join("\n");
        assert!(problems.contains("timed out after 10 s"), "{problems}");
        assert!(problems.contains("test hangs started but never finished"), "{problems}");
        assert_eq!(outcome.failed, 1);
    }
}
