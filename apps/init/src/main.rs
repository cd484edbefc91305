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
//! - a `server` line may end with the word `restart` too (the console
//!   driver and the terminal manager: their slot is set again to the new
//!   instance, and the monitor and the terminal manager are told;
//!   docs/reliability.md, "The console and the terminal");
//! - a `driver` line may end with the word `restart`: init supervises it
//!   and starts it again when it ends by a fault or is killed (see
//!   [`supervise`]: back-off, giving up, the device entry made again);
//! - a `driver` line may also end with `client=<program>` (the network
//!   card's: `client=net`): only the process init started from that
//!   program's line may attach to the driver; init names its pid to the
//!   driver (`protocols::net::eth::OP_SET_CLIENT`) when it starts the
//!   client and when it starts the driver again (issue 16; a user's
//!   process that opens a link to the driver's queue is refused);
//! - `run <path> [args…]`: the first UNIX process, started through the
//!   monitor with the console as standard input, output and error.
//!
//! While the first process runs, init supervises the servers and drivers
//! it started ([`supervise`]): it hears of their ends from the kernel, logs
//! each, and restarts the drivers marked `restart`. When the first process
//! ends, init asks the monitor to `sync` (every mounted disk written and
//! flushed), then powers off.
//!
//! What replaces the `run` line: the boot module `etc.batch` if present
//! (`cargo xtask run --batch`: `/bin/sh /etc/batch`), else init's own
//! arguments (kernel command line after `--`: `/bin/sh -c "<arguments>"`).

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

mod supervise;

use abi::{Pid, bootstrap, rights};
use alloc::string::String;
use alloc::vec::Vec;
use protocols::unix::{self as ux, fs, monitor, vm, wait_status};
use runtime::msg::{self, Queue};
use runtime::{Args, println, sys};
use supervise::Supervisor;

runtime::entry!(main);

const INITTAB: &str = "etc.inittab";
const BATCH: &str = "etc.batch";

fn main(args: Args) -> i32 {
    // The first queue: `protocols::STARTER_QUEUE`, where servers report ready.
    let Ok(ready_queue) = msg::open_queue(8, true) else { return 1 };
    // The second: `protocols::init::QUEUE`, where the kernel reports the
    // ends of init's children (every server and driver) and the monitor
    // forwards root's requests.
    let supervised_queue = match msg::open_queue(32, true) {
        Ok(q) if q.0 == protocols::init::QUEUE && sys::set_exit_queue(q.0).is_ok() => q,
        _ => {
            println!("init: cannot open the queue for its children's exit reports");
            return 1;
        }
    };
    let mut supervisor = Supervisor::new(ready_queue, supervised_queue);
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
            ["server", program, priority, rights, slot, more @ ..] if matches!(more, [] | ["restart"]) => {
                match start_server(program, priority, rights, slot, ready_queue) {
                    Ok(pid) => {
                        servers.push((String::from(*program), pid));
                        // It started, so its priority, rights and slot parse.
                        let restart =
                            match (more, priority.parse::<u64>(), rights_mask(rights), slot_number(slot)) {
                                ([], ..) => None,
                                (_, Ok(p), Ok(r), Ok(Some(s))) => Some((p, r, s)),
                                _ => {
                                    println!(
                                        "init: line {}: {program}: `restart` needs a bootstrap slot",
                                        number + 1
                                    );
                                    None
                                }
                            };
                        supervisor.add_server(program, pid, restart);
                    }
                    Err(why) => {
                        println!("init: line {}: cannot start {program}: {why}", number + 1);
                        halt(1);
                    }
                }
            }
            ["driver", program, priority, rights, path, more @ ..] if driver_words(more).is_some() => {
                let (restart, client) = driver_words(more).unwrap_or_default();
                let started = priority
                    .parse::<u64>()
                    .map_err(|_| String::from("bad priority"))
                    .and_then(|p| Ok((p, rights_mask(rights)?)))
                    .and_then(|(p, mask)| supervisor.add_driver(program, p, mask, Some(*path), restart));
                if let Err(why) = started {
                    println!("init: line {}: driver {program}: {why}", number + 1);
                }
                // Named even when the first start failed: a restarted
                // instance is told its client too.
                if let Some(client) = client {
                    supervisor.set_client_of(program, client);
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
    // The host's per-boot secret ends both lines, so that a program that
    // prints them cannot end or fake the session (abi::session).
    let key =
        module_text(abi::session::KEY_MODULE).map(|k| alloc::format!(" {}", k.trim())).unwrap_or_default();
    println!("{}{key}", abi::session::START);
    let status = run_session(&command, &mut supervisor);
    sync_disks();
    println!("{}{status}{key}", abi::session::EXIT);
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
    slot: Option<u64>,
) -> Result<(Pid, [u64; 4]), String> {
    let priority: u64 = priority.parse().map_err(|_| String::from("bad priority"))?;
    let mask = rights_mask(rights)?;
    let me = alloc::format!("{}", sys::getpid().0);
    let pid = sys::spawn_with_rights(program, &me, priority, mask).map_err(|e| String::from(e.name()))?;
    if slot == Some(bootstrap::TTY) {
        // Only this process may take the console's typed input.
        supervise::name_the_input_owner(pid);
    }
    loop {
        match msg::receive_data(ready, &mut []) {
            Ok(r) if r.sender == pid => return Ok((pid, r.message)),
            Ok(_) => {}
            Err(e) => return Err(String::from(e.name())),
        }
    }
}

/// The bootstrap slot a `server` line names (`-`: none).
fn slot_number(slot: &str) -> Result<Option<u64>, String> {
    Ok(match slot {
        "-" => None,
        "console" => Some(bootstrap::CONSOLE),
        "monitor" => Some(bootstrap::MONITOR),
        "vm" => Some(bootstrap::VM),
        "fs" => Some(bootstrap::FS),
        "tty" => Some(bootstrap::TTY),
        other => return Err(alloc::format!("unknown bootstrap slot `{other}`")),
    })
}

/// Start one server and wait for its ready message (`[READY, queue, ..]`).
fn start_server(
    program: &str,
    priority: &str,
    rights: &str,
    slot: &str,
    ready: Queue,
) -> Result<Pid, String> {
    let slot = slot_number(slot)?;
    let (pid, m) = start_and_wait(program, priority, rights, ready, slot)?;
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

/// Start the first UNIX process and supervise the servers and drivers
/// until it ends; its exit status.
fn run_session(command: &[String], supervisor: &mut Supervisor) -> u32 {
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
    match supervisor.run_until_ended(link, pid) {
        Some(status) => match wait_status::exit_code(status) {
            Some(code) => code,
            None => {
                println!(
                    "init: {} ended by signal {}",
                    command[0],
                    wait_status::term_signal(status).unwrap_or(0)
                );
                128 + wait_status::term_signal(status).unwrap_or(0) as u32
            }
        },
        None => {
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

/// The words after a `driver` line's path: `restart` and `client=<program>`,
/// each at most once, in any order: (restart, client). `None`: a word
/// that is neither.
fn driver_words<'a>(more: &[&'a str]) -> Option<(bool, Option<&'a str>)> {
    let (mut restart, mut client) = (false, None);
    for word in more {
        match (*word, word.strip_prefix("client=")) {
            ("restart", _) if !restart => restart = true,
            (_, Some(name)) if client.is_none() && !name.is_empty() => client = Some(name),
            _ => return None,
        }
    }
    Some((restart, client))
}
