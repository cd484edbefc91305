//! init: the first user process. It starts the system's servers in the
//! order its init file names them (Ridge OS §8: the drivers and managers a
//! system runs are named in a file read at boot), then starts the first
//! UNIX process and powers the machine off when that process ends, with
//! its exit status.
//!
//! The init file is the boot module `etc.inittab` (it also appears as
//! `/etc/inittab`). Lines:
//! - `server <program> <priority> <rights> <slot>`: start a server from the
//!   boot image with that priority and those rights (`-`, or a
//!   comma-separated list of `memory`, `modules`, `devices`), wait for its ready
//!   message, and make it bootstrap connection `<slot>` (`console`, `tty`,
//!   `vm`, `fs`, `monitor`, or `-`) of every process started after it;
//! - `driver <program> <priority> <rights> <path>`: start a driver
//!   (rights as above, with `devices` for `abi::rights::DEVICES`), wait
//!   for its ready message and make the device entry `<path>` naming it
//!   at the directory manager: a block driver's
//!   (`protocols::unix::block::READY`: its queue and the device's size)
//!   gets mode `S_IFBLK | 0660`, the network card's
//!   (`protocols::net::eth::READY`) `S_IFCHR | 0600`, the network
//!   server's (`protocols::net::READY`) `S_IFCHR | 0666`; a driver that
//!   found no device (size 0, or not present) gets no entry. Drivers come after the
//!   monitor: they take opens only from it, and learn who it is from
//!   their bootstrap connections;
//! - `mount <device> <dir> [options]`: once every line is read, mount the
//!   ext2 volume on the block device at `<dir>` through the monitor
//!   (`monitor::OP_MOUNT`); a device that is missing or holds no ext2
//!   volume is reported and the boot goes on. With the boot option
//!   `root=disk` the device of the first `mount` line goes on `/` instead
//!   (the memory file system keeps `/dev` and `/tmp`);
//! - `run <path> [args…]`: the first UNIX process, started through the
//!   monitor with the console as standard input, output and error.
//!
//! When the first process ends, init asks the monitor to `sync` (every
//! mounted disk written and flushed), then powers off.
//!
//! What replaces the `run` line: the boot module `etc.batch` if present
//! (`cargo xtask run --batch`: `/bin/sh /etc/batch`), else init's own
//! arguments (kernel command line after `--`: `/bin/sh -c "<arguments>"`).

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use abi::{Pid, bootstrap, rights};
use alloc::string::String;
use alloc::vec::Vec;
use protocols::net;
use protocols::unix::{self as ux, fs, monitor, vm, wait_status};
use runtime::msg::{self, Queue};
use runtime::{Args, println, sys};

runtime::entry!(main);

const INITTAB: &str = "etc.inittab";
const BATCH: &str = "etc.batch";

fn main(args: Args) -> i32 {
    // The first queue: `protocols::STARTER_QUEUE`, where servers report ready.
    let Ok(ready_queue) = msg::open_queue(8, true) else { return 1 };
    let Some(table) = module_text(INITTAB) else {
        println!("init: no {INITTAB} in the boot image; nothing to start");
        return 1;
    };
    let mut run_line: Option<String> = None;
    let mut mounts: Vec<(String, String, String)> = Vec::new();
    let mut servers: Vec<(String, Pid)> = Vec::new();
    for (number, line) in table.lines().enumerate() {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            [] => {}
            [w, ..] if w.starts_with('#') => {}
            ["server", program, priority, rights, slot] => {
                match start_server(program, priority, rights, slot, ready_queue) {
                    Ok(pid) => servers.push((String::from(*program), pid)),
                    Err(why) => {
                        println!("init: line {}: cannot start {program}: {why}", number + 1);
                        halt(1);
                    }
                }
            }
            ["driver", program, priority, rights, path] => {
                if let Err(why) = start_driver(program, priority, rights, path, ready_queue) {
                    println!("init: line {}: driver {program}: {why}", number + 1);
                }
            }
            ["mount", device, dir, options @ ..] if options.len() <= 1 => mounts.push((
                String::from(*device),
                String::from(*dir),
                String::from(options.first().copied().unwrap_or("")),
            )),
            ["run", rest @ ..] if !rest.is_empty() => run_line = Some(rest.join(" ")),
            _ => println!("init: line {}: not understood: {line}", number + 1),
        }
    }
    tell_servers_the_monitor(&servers);
    let root_on_disk = mount_volumes(&mounts);
    let command: Vec<String> = if let Some(text) = module_text(BATCH).filter(|_| root_on_disk) {
        // `/etc` is the disk's: the batch file is memfs's, so its text
        // goes on the command line instead.
        ["/bin/sh", "-c"].iter().map(|s| String::from(*s)).chain([text]).collect()
    } else if module_text(BATCH).is_some() {
        ["/bin/sh", "/etc/batch"].iter().map(|s| String::from(*s)).collect()
    } else if args.iter().next().is_some() {
        let joined: Vec<&str> = args.iter().collect();
        ["/bin/sh", "-c"].iter().map(|s| String::from(*s)).chain([joined.join(" ")]).collect()
    } else if let Some(line) = run_line {
        line.split_whitespace().map(String::from).collect()
    } else {
        println!("init: the init file has no `run` line");
        halt(1);
    };
    println!("{}", abi::session::START);
    let status = run_session(&command);
    sync_disks();
    println!("{}{status}", abi::session::EXIT);
    halt(status)
}

/// The rights a `server` or `driver` line names: `-`, or a comma-separated
/// list of `memory`, `modules`, `devices`.
fn rights_mask(rights: &str) -> Result<u64, String> {
    let mut mask = 0;
    for r in rights.split(',') {
        mask |= match r {
            "-" => 0,
            "memory" => rights::MEMORY,
            "modules" => rights::MODULES,
            "devices" => rights::DEVICES,
            other => return Err(alloc::format!("unknown right `{other}`")),
        };
    }
    Ok(mask)
}

/// Start `program` with that priority and those rights and wait for its
/// ready message; returns its pid and the message.
fn start_and_wait(
    program: &str,
    priority: &str,
    rights: &str,
    ready: Queue,
) -> Result<(Pid, [u64; 4]), String> {
    let priority: u64 = priority.parse().map_err(|_| String::from("bad priority"))?;
    let mask = rights_mask(rights)?;
    let me = alloc::format!("{}", sys::getpid().0);
    let pid = sys::spawn_with_rights(program, &me, priority, mask).map_err(|e| String::from(e.name()))?;
    loop {
        match msg::receive_data(ready, &mut []) {
            Ok(r) if r.sender == pid => return Ok((pid, r.message)),
            Ok(_) => {}
            Err(e) => return Err(String::from(e.name())),
        }
    }
}

/// Wait for `pid`'s ready message, or notice that it ended without one
/// (a driver that fails while it probes its device must not hang the
/// boot): between tries, whether it still exists.
fn wait_ready_or_end(pid: Pid, ready: Queue) -> Result<[u64; 4], String> {
    let mut ended = false;
    loop {
        match msg::try_receive(ready, &mut []) {
            Ok(Some(r)) if r.sender == pid => return Ok(r.message),
            Ok(Some(_)) => {}
            Ok(None) if ended => return Err(String::from("it ended before it was ready")),
            Ok(None) => {
                // Its ready message may still be on the way: one more try
                // after it is seen gone.
                match msg::open_link(pid, Queue(ux::block::QUEUE)) {
                    Ok(l) => {
                        let _ = msg::close_link(l);
                    }
                    Err(abi::Error::NoSuchProcess | abi::Error::DeadPeer) => ended = true,
                    Err(_) => {}
                }
                sys::sleep_ns(READY_POLL_NS);
            }
            Err(e) => return Err(String::from(e.name())),
        }
    }
}

/// How often init looks for a starting driver's ready message.
const READY_POLL_NS: u64 = 1_000_000;

/// Start a driver and make its device entry at `path`.
fn start_driver(program: &str, priority: &str, rights: &str, path: &str, ready: Queue) -> Result<(), String> {
    let priority: u64 = priority.parse().map_err(|_| String::from("bad priority"))?;
    let me = alloc::format!("{}", sys::getpid().0);
    let pid = sys::spawn_with_rights(program, &me, priority, rights_mask(rights)?)
        .map_err(|e| String::from(e.name()))?;
    let m = wait_ready_or_end(pid, ready)?;
    // Which kind of driver it is, from its ready message: the mode of its
    // entry, and whether it found its device (no device: no entry).
    let (entry_mode, present) = match m[0] {
        ux::block::READY => (ux::mode::S_IFBLK | 0o660, m[2] != 0),
        // The network card: only the network server talks to it.
        net::eth::READY => (ux::mode::S_IFCHR | 0o600, m[2] != 0),
        // The network server: anyone may open a socket.
        net::READY => (ux::mode::S_IFCHR | 0o666, true),
        _ => return Err(String::from("its ready message is not a driver's")),
    };
    let queue = m[1];
    if !present {
        return Ok(());
    }
    let (fs_pid, fs_queue) = sys::bootstrap(bootstrap::FS).ok_or(String::from("no directory manager"))?;
    let link = msg::open_link(fs_pid, Queue(fs_queue)).map_err(|e| String::from(e.name()))?;
    let entry_mode = entry_mode as u64;
    // The reply carries the new entry's attributes.
    let mut stat = [0u8; ux::Stat::BYTES];
    let made = msg::call(link, &[fs::OP_MKDEV, pid.0, queue, entry_mode], path.as_bytes(), &mut stat);
    let _ = msg::close_link(link);
    match made.map(|(w, _)| ux::result(w[0])) {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(alloc::format!("cannot make {path}: {}", ux::errno::name(e))),
        Err(e) => Err(alloc::format!("cannot make {path}: {}", e.name())),
    }
}

/// Start one server and wait for its ready message (`[READY, queue, ..]`).
fn start_server(
    program: &str,
    priority: &str,
    rights: &str,
    slot: &str,
    ready: Queue,
) -> Result<Pid, String> {
    let slot = match slot {
        "-" => None,
        "console" => Some(bootstrap::CONSOLE),
        "monitor" => Some(bootstrap::MONITOR),
        "vm" => Some(bootstrap::VM),
        "fs" => Some(bootstrap::FS),
        "tty" => Some(bootstrap::TTY),
        other => return Err(alloc::format!("unknown bootstrap slot `{other}`")),
    };
    let (pid, m) = start_and_wait(program, priority, rights, ready)?;
    let queue = m[1] as u32;
    if let Some(slot) = slot {
        sys::set_bootstrap(slot, pid, queue).map_err(|e| String::from(e.name()))?;
        if slot == bootstrap::CONSOLE {
            runtime::io::reset_console();
        }
    }
    Ok(pid)
}

/// The directory and VM managers obey only the monitor; init names it.
fn tell_servers_the_monitor(servers: &[(String, Pid)]) {
    let Some((monitor_pid, _)) = sys::bootstrap(bootstrap::MONITOR) else { return };
    for (slot, op) in [(bootstrap::FS, fs::OP_SET_MONITOR), (bootstrap::VM, vm::OP_SET_MONITOR)] {
        if let Some((pid, queue)) = sys::bootstrap(slot) {
            let told = msg::open_link(pid, Queue(queue))
                .and_then(|l| msg::call(l, &[op, monitor_pid.0, 0, 0], &[], &mut []));
            if told.is_err() {
                let name = servers.iter().find(|(_, p)| *p == pid).map_or("?", |(n, _)| n.as_str());
                println!("init: cannot tell {name} who the monitor is");
            }
        }
    }
}

/// The `mount` lines, through the monitor (`root=disk`: the first on `/`).
/// Whether `/` is now on a disk.
fn mount_volumes(mounts: &[(String, String, String)]) -> bool {
    let mut options = [0u8; 1024];
    let len = sys::kernel_options(&mut options).unwrap_or(0).min(options.len());
    let line = core::str::from_utf8(&options[..len]).unwrap_or("");
    let root_on_disk = match protocols::options::lookup(line, "root") {
        None | Some("memfs") => false,
        Some("disk") => true,
        Some(other) => {
            println!("init: root={other} is not `disk` or `memfs`; / stays in memory");
            false
        }
    };
    if root_on_disk && mounts.is_empty() {
        println!("init: root=disk, but the init file mounts no disk");
    }
    let mut root_mounted = false;
    for (i, (device, dir, opts)) in mounts.iter().enumerate() {
        let dir = if root_on_disk && i == 0 { "/" } else { dir.as_str() };
        let mut request = Vec::new();
        for part in [device.as_str(), dir, opts.as_str()] {
            request.extend_from_slice(part.as_bytes());
            request.push(0);
        }
        match monitor_request(&[monitor::OP_MOUNT, 0, 0, 0], &request) {
            Ok(_) => root_mounted |= dir == "/",
            Err(e) => println!("init: {device} not mounted on {dir}: {}", ux::errno::name(e)),
        }
    }
    root_mounted
}

/// Every mounted disk written and flushed before the power goes.
fn sync_disks() {
    if let Err(e) = monitor_request(&[monitor::OP_SYNC, 0, 0, 0], &[]) {
        println!("init: sync failed: {}", ux::errno::name(e));
    }
}

/// One call to the monitor (init is its UNIX process 1).
fn monitor_request(words: &[u64; 4], data: &[u8]) -> Result<u64, ux::Errno> {
    let (monitor_pid, queue) = sys::bootstrap(bootstrap::MONITOR).ok_or(ux::errno::ENOSYS)?;
    let link = msg::open_link(monitor_pid, Queue(queue)).map_err(|_| ux::errno::EIO)?;
    let answered = msg::call(link, words, data, &mut []);
    let _ = msg::close_link(link);
    answered.map_err(|_| ux::errno::EIO).and_then(|(w, _)| ux::result(w[0]))
}

/// Start the first UNIX process and wait for it; its exit status.
fn run_session(command: &[String]) -> u32 {
    let Some((monitor_pid, queue)) = sys::bootstrap(bootstrap::MONITOR) else {
        println!("init: no monitor: cannot run {}", command.join(" "));
        return 1;
    };
    let Ok(link) = msg::open_link(monitor_pid, Queue(queue)) else { return 1 };
    let mut data = Vec::new();
    for s in command {
        data.extend_from_slice(s.as_bytes());
        data.push(0);
    }
    // The request is the path, then argv (argv[0] = the path).
    let mut request = Vec::from(command[0].as_bytes());
    request.push(0);
    request.extend_from_slice(&data);
    let started = msg::call(link, &[monitor::OP_START, command.len() as u64, 0, 0], &request, &mut []);
    let pid = match started.map(|(w, _)| ux::result(w[0])) {
        Ok(Ok(pid)) => pid,
        Ok(Err(e)) => {
            println!("init: cannot run {}: {}", command[0], ux::errno::name(e));
            return 127;
        }
        Err(e) => {
            println!("init: the monitor failed: {}", e.name());
            return 1;
        }
    };
    match msg::call(link, &[monitor::OP_WAIT, pid, 0, 0], &[], &mut []) {
        Ok((w, _)) if ux::result(w[0]).is_ok() => match wait_status::exit_code(w[1]) {
            Some(code) => code,
            None => {
                println!(
                    "init: {} ended by signal {}",
                    command[0],
                    wait_status::term_signal(w[1]).unwrap_or(0)
                );
                128 + wait_status::term_signal(w[1]).unwrap_or(0) as u32
            }
        },
        _ => {
            println!("init: lost track of {}", command[0]);
            1
        }
    }
}

/// The text of a boot module, if present.
fn module_text(wanted: &str) -> Option<String> {
    let mut name = [0u8; 64];
    for index in 0.. {
        let (size, len) = sys::module_info(index, &mut name).ok()?;
        if &name[..len.min(name.len())] == wanted.as_bytes() {
            let mut bytes = alloc::vec![0u8; size as usize];
            let n = sys::module_read(index, 0, &mut bytes).ok()?;
            bytes.truncate(n);
            return String::from_utf8(bytes).ok();
        }
    }
    None
}

fn halt(status: u32) -> ! {
    let _ = sys::shutdown(status);
    sys::exit(status)
}
