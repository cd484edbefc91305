//! The programs' dealings with the system (target only): reading the
//! user database, asking for a password without echo, and becoming a
//! user and starting their shell.
//!
//! What it is not: a permission check. The monitor refuses `setuid` to
//! anyone but root and `/etc/shadow` (mode 0600) to anyone but root.

use crate::db::Passwd;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use protocols::unix::{Errno, errno, open_flags, rlimit};
use runtime::unix;

/// The user database's files.
pub const PASSWD: &str = "/etc/passwd";
pub const GROUP: &str = "/etc/group";
pub const SHADOW: &str = "/etc/shadow";

/// Longest password line read (the rest of a longer line is dropped).
const MAX_PASSWORD_BYTES: usize = 256;

/// A whole (small) file as text.
pub fn read_file(path: &str) -> Result<String, Errno> {
    let fd = unix::open(path, open_flags::O_RDONLY, 0)?;
    let mut bytes = Vec::new();
    let mut buf = [0u8; 1024];
    let result = loop {
        match unix::read(fd, &mut buf) {
            Ok(0) => break Ok(()),
            Ok(n) => bytes.extend_from_slice(&buf[..n]),
            Err(e) => break Err(e),
        }
    };
    let _ = unix::close(fd);
    result?;
    String::from_utf8(bytes).map_err(|_| errno::EINVAL)
}

/// Write `prompt` to standard error, read one line from standard input
/// with the terminal's echo off for it (`tty::OP_NO_ECHO_LINE`; input
/// that is not a terminal is read as it is), without its newline. `None`
/// at end of input before any byte.
pub fn ask_password(prompt: &str) -> Option<Vec<u8>> {
    let terminal = unix::tty_no_echo_line(0).is_ok();
    let _ = unix::write(2, prompt.as_bytes());
    let line = read_line(0);
    if !terminal {
        // The terminal echoes the line's end as CR NL itself.
        let _ = unix::write(2, b"\n");
    }
    line
}

/// One line from `fd`, a byte at a time so nothing after it is taken
/// from a pipe or file the caller's next reader shares.
pub fn read_line(fd: i32) -> Option<Vec<u8>> {
    let mut line = Vec::new();
    let mut b = [0u8; 1];
    loop {
        match unix::read(fd, &mut b) {
            Ok(1) if b[0] == b'\n' => return Some(line),
            Ok(1) => {
                if line.len() < MAX_PASSWORD_BYTES {
                    line.push(b[0]);
                }
            }
            _ => return if line.is_empty() { None } else { Some(line) },
        }
    }
}

/// The user's home directory, made (mode 0700, owned by them) when it is
/// missing, as `pam_mkhomedir` does; needs root.
pub fn make_home(user: &Passwd<'_>) {
    if unix::stat(user.home).is_err() && unix::mkdir(user.home, 0o700).is_ok() {
        let _ = unix::chown(user.home, user.uid, user.gid);
    }
}

/// Become `user` (root only: the monitor refuses anyone else): the gid,
/// then the uid, which brings the user limits. Root's limits are raised
/// back to none when root is the target (a user's `su` to root).
pub fn become_user(user: &Passwd<'_>) -> Result<(), Errno> {
    unix::setuid_gid(None, Some(user.gid))?;
    if user.uid == 0 {
        for r in rlimit::RESOURCES {
            if r != rlimit::RLIMIT_NOFILE {
                let _ = unix::setrlimit(r, rlimit::INFINITY, rlimit::INFINITY);
            }
        }
    }
    unix::setuid_gid(Some(user.uid), None)
}

/// Replace this process by `user`'s shell: a login shell (`-sh` as its
/// name, cwd = home, a fresh environment of HOME, USER, LOGNAME, SHELL
/// and PATH) when `login`, else with the environment kept and those four
/// set; `command` runs as `sh -c`. Returns only on failure.
pub fn exec_shell(user: &Passwd<'_>, login: bool, command: Option<&str>) -> Errno {
    let shell = if user.shell.is_empty() { "/bin/sh" } else { user.shell };
    let set = [
        format!("HOME={}", user.home),
        format!("USER={}", user.name),
        format!("LOGNAME={}", user.name),
        format!("SHELL={shell}"),
    ];
    let mut env: Vec<String> = Vec::new();
    if login {
        env.push(String::from("PATH=/bin"));
        if unix::chdir(user.home).is_err() {
            runtime::eprintln!("warning: cannot change to {}; starting in /", user.home);
            let _ = unix::chdir("/");
        }
    } else {
        let ours = ["HOME=", "USER=", "LOGNAME=", "SHELL="];
        env.extend(unix::env().filter(|e| !ours.iter().any(|p| e.starts_with(p))).map(String::from));
    }
    env.extend(set);
    let base = shell.rsplit('/').next().unwrap_or(shell);
    let name = if login { format!("-{base}") } else { String::from(base) };
    let mut argv: Vec<&str> = alloc::vec![name.as_str()];
    if let Some(c) = command {
        argv.push("-c");
        argv.push(c);
    }
    let envp: Vec<&str> = env.iter().map(String::as_str).collect();
    unix::execve(shell, &argv, &envp)
}
