//! The ground floor of xtask: running child processes, and installing what
//! the build needs when it is missing (a Rust target, a Debian package).
//!
//! Why xtask installs things itself: the README promises two commands on a
//! fresh Debian machine with only rustup and cargo, and CI may run on a new
//! machine. Each install runs only when its tool is absent, so on a prepared
//! machine these checks cost a file lookup.
//!
//! What it is not: it knows no particular target or program. The layers
//! above name them (`image` the Rust target, `qemu` the emulator and its
//! package), so this file imports nothing of xtask and everything may
//! import it.

use std::ffi::{OsStr, OsString};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Errors are human-readable messages: every one of them ends up printed for
/// a person, and none is inspected by code.
pub type Result<T> = std::result::Result<T, String>;

/// The workspace root: xtask's own manifest sits one level below it.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask lives inside the workspace").to_path_buf()
}

/// A `cargo` command run from the workspace root. `$CARGO` is the cargo
/// that started xtask, so the nested builds use the same toolchain.
pub fn cargo() -> Command {
    let program = std::env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo"));
    let mut command = Command::new(program);
    command.current_dir(workspace_root());
    command
}

/// A command as a person would type it, for logs. The program is shown by
/// its file name (`$CARGO` is a long toolchain path).
pub fn describe(command: &Command) -> String {
    let program = Path::new(command.get_program())
        .file_name()
        .unwrap_or(command.get_program())
        .to_string_lossy()
        .into_owned();
    let mut words = vec![program];
    words.extend(command.get_args().map(|a| a.to_string_lossy().into_owned()));
    words.join(" ")
}

/// Runs a command with inherited stdio and fails unless it exits with 0.
pub fn run(command: &mut Command) -> Result<()> {
    let shown = describe(command);
    eprintln!("$ {shown}");
    let status = command.status().map_err(|err| format!("cannot start `{shown}`: {err}"))?;
    if status.success() { Ok(()) } else { Err(format!("`{shown}` failed ({status})")) }
}

/// Runs a command and returns its stdout; stderr goes to the terminal.
pub fn output(command: &mut Command) -> Result<String> {
    let shown = describe(command);
    let out = command
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|err| format!("cannot start `{shown}`: {err}"))?;
    if !out.status.success() {
        return Err(format!("`{shown}` failed ({})", out.status));
    }
    String::from_utf8(out.stdout).map_err(|_| format!("`{shown}` printed non-UTF-8 output"))
}

/// The first executable file called `name` in a `PATH`-style list.
pub fn find_on_path(name: &str, path_var: &OsStr) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(path_var).map(|dir| dir.join(name)).find(|candidate| {
        fs::metadata(candidate).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}

fn is_on_path(name: &str) -> bool {
    let path_var = std::env::var_os("PATH").unwrap_or_default();
    find_on_path(name, &path_var).is_some()
}

/// The effective user id from the text of `/proc/self/status` (its `Uid:`
/// line holds real, effective, saved and filesystem ids). Read this way
/// because std has no `geteuid` and xtask does not take libc for one call.
pub fn effective_uid(proc_status: &str) -> Option<u32> {
    proc_status
        .lines()
        .find_map(|line| line.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().nth(1))
        .and_then(|euid| euid.parse().ok())
}

fn is_root() -> bool {
    fs::read_to_string("/proc/self/status").ok().and_then(|status| effective_uid(&status)) == Some(0)
}

/// Installs the standard library of the Rust target `target` with rustup
/// when the active toolchain lacks it. rustup normally installs it already,
/// from `rust-toolchain.toml`, but not on a toolchain installed before that
/// file listed the target.
pub fn ensure_target(target: &str) -> Result<()> {
    let mut rustc = Command::new(std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into()));
    rustc.current_dir(workspace_root()).args(["--print", "sysroot"]);
    let sysroot = output(&mut rustc)?;
    let target_lib = Path::new(sysroot.trim()).join("lib/rustlib").join(target);
    if target_lib.is_dir() {
        return Ok(());
    }
    eprintln!("xtask: the Rust target {target} is missing; installing it with rustup");
    let mut rustup = Command::new("rustup");
    rustup.current_dir(workspace_root()).args(["target", "add", target]);
    run(&mut rustup)
        .map_err(|err| format!("{err}\nxtask: install the target by hand with `rustup target add {target}`"))
}

/// Makes sure `program` is on `PATH`, installing the Debian package
/// `debian_package` when it is not. `what` names the tool for a person
/// (`QEMU`) in the hint printed when that fails.
pub fn ensure_program(program: &str, debian_package: &str, what: &str) -> Result<()> {
    install_once(|| is_on_path(program), || install_program(program, debian_package, what))
}

/// Checks for a tool and installs it, one caller at a time in this process.
/// `cargo test` runs xtask's QEMU tests in parallel threads, and on a fresh
/// machine each found QEMU missing and ran `apt-get` at once: the second
/// lost dpkg's lock and its test failed (first boot of the ninth session's
/// checkout). Under the lock, the later callers find the tool the first one
/// installed.
fn install_once(is_present: impl Fn() -> bool, install: impl FnOnce() -> Result<()>) -> Result<()> {
    static INSTALLING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    if is_present() {
        return Ok(());
    }
    // A caller that panicked while holding the lock left nothing half-done
    // that the check below would not see.
    let _installing = INSTALLING.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if is_present() {
        return Ok(());
    }
    install()
}

fn install_program(program: &str, debian_package: &str, what: &str) -> Result<()> {
    let hint = format!(
        "install {what} so that `{program}` is on PATH \
         (Debian/Ubuntu: `sudo apt-get install {debian_package}`)"
    );
    if !is_on_path("apt-get") {
        return Err(format!("{program} is not on PATH and apt-get is missing; {hint}"));
    }
    eprintln!("xtask: {program} is not on PATH; installing Debian's {debian_package}");
    let apt = |args: &[&str]| {
        let mut command = if is_root() {
            Command::new("apt-get")
        } else {
            let mut sudo = Command::new("sudo");
            sudo.arg("apt-get");
            sudo
        };
        // Never stop to ask: CI has no terminal to answer on. Wait for
        // dpkg's lock rather than fail while another apt (a fresh machine's
        // unattended upgrades) holds it.
        command.env("DEBIAN_FRONTEND", "noninteractive").args(["-o", "DPkg::Lock::Timeout=300"]).args(args);
        command
    };
    run(&mut apt(&["update"]))
        .and_then(|()| run(&mut apt(&["install", "-y", debian_package])))
        .map_err(|err| format!("{err}\nxtask: {hint}"))?;
    if is_on_path(program) {
        Ok(())
    } else {
        Err(format!("{debian_package} was installed but {program} is still not on PATH; {hint}"))
    }
}

/// The e2fsprogs programs `fs-ext2`'s host tests use as their oracle
/// (issue 12).
pub const E2FSPROGS: [&str; 3] = ["mke2fs", "e2fsck", "debugfs"];

/// Is every e2fsprogs program found, on `PATH` or in the system
/// directories (`/usr/sbin`, `/sbin`) that a non-root `PATH` may lack and
/// where the tests look too?
fn has_e2fsprogs() -> bool {
    let mut dirs: Vec<PathBuf> =
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()).collect();
    dirs.extend(["/usr/sbin", "/sbin"].map(PathBuf::from));
    let path_var = std::env::join_paths(dirs).unwrap_or_default();
    E2FSPROGS.iter().all(|program| find_on_path(program, &path_var).is_some())
}

/// Makes sure e2fsprogs is installed (Debian's `e2fsprogs`), as
/// [`ensure_program`] does for QEMU.
pub fn ensure_e2fsprogs() -> Result<()> {
    if has_e2fsprogs() {
        return Ok(());
    }
    let installed = ensure_program("mke2fs", "e2fsprogs", "e2fsprogs");
    if has_e2fsprogs() {
        Ok(())
    } else {
        installed.and(Err("e2fsprogs is installed but incomplete".to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn effective_uid_is_the_second_id() {
        let status = "Name:\tcargo\nUmask:\t0022\nUid:\t1000\t0\t1000\t1000\nGid:\t5\t5\t5\t5\n";
        assert_eq!(effective_uid(status), Some(0));
        assert_eq!(effective_uid("Uid:\t1000\t1000\t1000\t1000\n"), Some(1000));
        assert_eq!(effective_uid("Name:\tx\n"), None);
    }

    #[test]
    fn find_on_path_wants_an_executable_file() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("xtask-path-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let (first, second) = (dir.join("a"), dir.join("b"));
        fs::create_dir_all(&first).unwrap();
        fs::create_dir_all(&second).unwrap();
        // Not executable in the first directory, executable in the second.
        fs::write(first.join("tool"), b"").unwrap();
        fs::write(second.join("tool"), b"").unwrap();
        fs::set_permissions(second.join("tool"), fs::Permissions::from_mode(0o755)).unwrap();
        let path_var = std::env::join_paths([&first, &second]).unwrap();
        assert_eq!(find_on_path("tool", &path_var), Some(second.join("tool")));
        assert_eq!(find_on_path("absent", &path_var), None);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn concurrent_callers_install_a_missing_tool_once() {
        use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
        let installed = AtomicBool::new(false);
        let (installs, inside, most_inside) = (AtomicUsize::new(0), AtomicUsize::new(0), AtomicUsize::new(0));
        std::thread::scope(|scope| {
            for _ in 0..8 {
                scope.spawn(|| {
                    install_once(
                        || installed.load(Ordering::SeqCst),
                        || {
                            let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                            most_inside.fetch_max(now, Ordering::SeqCst);
                            installs.fetch_add(1, Ordering::SeqCst);
                            // Long enough for every other thread to arrive
                            // while this one installs.
                            std::thread::sleep(std::time::Duration::from_millis(50));
                            installed.store(true, Ordering::SeqCst);
                            inside.fetch_sub(1, Ordering::SeqCst);
                            Ok(())
                        },
                    )
                    .unwrap();
                });
            }
        });
        assert_eq!(installs.load(Ordering::SeqCst), 1);
        assert_eq!(most_inside.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn describe_shows_program_name_and_args() {
        let mut command = Command::new("/home/u/.rustup/toolchains/x/bin/cargo");
        command.args(["build", "-p", "kernel"]);
        assert_eq!(describe(&command), "cargo build -p kernel");
    }
}
