//! init as the supervisor of the programs it starts (MINIX 3's
//! reincarnation server; docs/reliability.md, "Restarting dead servers
//! and drivers").
//!
//! Every server and driver of the init file is init's kernel child, and
//! init asked for its children's ends as messages (`set_exit_queue` on
//! `protocols::init::QUEUE`). When one ends, init logs one line naming it
//! and how it ended. A driver whose line ends with the word `restart` is
//! started again from its line after a back-off (`unix_core::restart`:
//! 0.1 s doubling to 5 s; the 6th quick death in a row gives it up, with
//! a line), and its device entry is made again naming the new instance.
//! The monitor notices a device entry whose driver ended and looks it up
//! afresh (`servers/monitor/src/supervised.rs`), so the next `open` of
//! `/dev/ram0` reaches the new driver; a descriptor opened on the old
//! one gets `EIO` (its handle and offset died with the driver).
//!
//! Why init and not a separate reincarnation server: only init may use the
//! device calls (`claim_irq`, `io_ports`, PCI; kernel/src/devices.rs:
//! "only init and init's children") and a process hears only of its own
//! children's ends, so the drivers must stay init's children and their
//! supervisor must be init.
//!
//! A `server` line that says `restart` (the console driver and the
//! terminal manager) is restarted the same way; instead of a device entry
//! the new instance takes its bootstrap slot in init, and init tells the
//! monitor (`monitor::OP_SLOT_SERVER_STARTED`: it moves the terminal's open
//! descriptions to the new manager and takes the slot for the processes
//! it makes) and, for a new console driver, the terminal manager
//! (`tty::OP_SET_CONSOLE`). The monitor hears of every end with whether a
//! new instance may follow (`monitor::ENDED_FOR_GOOD`), so that calls
//! waiting for a new terminal fail rather than wait for ever.
//!
//! What it is not: a restarter of servers with state. memfs, the VM
//! manager and the monitor hold the system's state, and processes reach
//! them through bootstrap slots fixed at their creation: their lines do
//! not say `restart`, their ends are logged and they stay down.
//! A supervised program that neither ends nor reports ready hangs its
//! start, as at boot.
//!
//! Invariant: a child's `pid` is `Some` only while it runs; an exit report
//! for a pid no child holds (one that ended while it started, already
//! counted) is ignored.

use abi::{ExitStatus, Pid, bootstrap};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use protocols::init::{self as sv, state};
use protocols::net;
use protocols::unix::{self as ux, fs, monitor, wait_status};
use runtime::clock::Clock;
use runtime::msg::{self, Link, Queue, Received};
use runtime::{println, sys};
use unix_core::restart::{Decision, INIT_POLICY, Record};

/// How often init, once the session runs, looks for exit reports,
/// requests and restarts due, and asks the monitor whether the session
/// has ended (there is no receive with a time limit, and the monitor
/// answers init's `wait` only when asked).
const POLL_NS: u64 = 100_000_000;
/// How often init looks for a starting driver's ready message.
const READY_POLL_NS: u64 = 1_000_000;
/// The priority of a program started by `OP_START` (a test's driver).
const STARTED_PRIORITY: u64 = 20;
/// init's own priority while it supervises: above every UNIX process
/// (which inherit the monitor's 26) and the drivers (29), as high as the
/// console (30). At the default 8 a UNIX process that never blocks (a
/// reader looping on a RAM disk) kept init from ever running on one CPU,
/// so a dead driver was never started again. init sleeps between its
/// looks (`POLL_NS`), so it takes little.
const SUPERVISOR_PRIORITY: u8 = 30;

/// One program init started, and how to start it again.
pub struct Child {
    program: String,
    priority: u64,
    rights: u64,
    /// The device entry a driver gets (`None`: a server, or no entry).
    path: Option<String>,
    /// The bootstrap slot a restartable server takes (`abi::bootstrap`).
    slot: Option<u64>,
    /// Whether its line says `restart`.
    restart: bool,
    pid: Option<Pid>,
    /// The last instance that was ready (the one the monitor knows).
    last_pid: Option<Pid>,
    state: u64,
    started_ns: u64,
    /// When the next start is due (state `WAITING`).
    due_ns: u64,
    record: Record,
    restarts: u64,
    /// Root asked init to end it (`monitor::OP_SERVER_KILL`).
    kill_asked: bool,
    /// A driver's `client=<program>`: the only program whose process
    /// may attach to it (`protocols::net::eth::OP_SET_CLIENT`).
    client: Option<String>,
    /// The queue its ready message named (where a client is named to it).
    queue: u32,
    /// Its ready message said it found no device: it ends at once with
    /// status 0, which init said at its start (before the first process
    /// runs), so the end is not logged again in the middle of a session.
    no_device: bool,
}

pub struct Supervisor {
    children: Vec<Child>,
    clock: Clock,
    /// `protocols::STARTER_QUEUE`: ready messages.
    ready: Queue,
    /// `protocols::init::QUEUE`: exit reports and requests.
    queue: Queue,
}

impl Supervisor {
    pub fn new(ready: Queue, queue: Queue) -> Supervisor {
        Supervisor { children: Vec::new(), clock: Clock::new(), ready, queue }
    }

    /// A server init started and waited for at boot; `restart`: its line
    /// says `restart`, with its (priority, rights, bootstrap slot).
    pub fn add_server(&mut self, program: &str, pid: Pid, restart: Option<(u64, u64, u64)>) {
        let (priority, rights, slot) = restart.map_or((0, 0, None), |(p, r, s)| (p, r, Some(s)));
        self.children.push(Child {
            program: String::from(program),
            priority,
            rights,
            path: None,
            slot,
            restart: restart.is_some(),
            pid: Some(pid),
            last_pid: Some(pid),
            state: state::RUNNING,
            started_ns: self.clock.now_ns(),
            due_ns: 0,
            record: Record::default(),
            restarts: 0,
            kill_asked: false,
            client: None,
            queue: 0,
            no_device: false,
        });
    }

    /// Start a driver from its line and make its device entry. A driver
    /// whose line says `restart` is supervised even when this first start
    /// fails: it is tried again after the back-off.
    pub fn add_driver(
        &mut self,
        program: &str,
        priority: u64,
        rights: u64,
        path: Option<&str>,
        restart: bool,
    ) -> Result<(), String> {
        self.children.push(Child {
            program: String::from(program),
            priority,
            rights,
            path: path.map(String::from),
            slot: None,
            restart,
            pid: None,
            last_pid: None,
            state: state::STOPPED,
            started_ns: 0,
            due_ns: 0,
            record: Record::default(),
            restarts: 0,
            kill_asked: false,
            client: None,
            queue: 0,
            no_device: false,
        });
        let i = self.children.len() - 1;
        let started = self.start(i, false);
        if let Err(why) = &started
            && restart
        {
            self.died(i, &format!("did not start: {why}"), 0);
        }
        started
    }

    /// Start child `i` and wait until it is ready; make its device entry
    /// (`again`: replacing the one its last instance had).
    fn start(&mut self, i: usize, again: bool) -> Result<(), String> {
        let me = format!("{}", sys::getpid().0);
        let c = &self.children[i];
        let pid = sys::spawn_with_rights(&c.program, &me, c.priority, c.rights)
            .map_err(|e| String::from(e.name()))?;
        if c.slot == Some(bootstrap::TTY) {
            name_the_input_owner(pid);
        }
        // Drivers that serve only this program learn its new pid before
        // it is ready (it attaches while it starts).
        self.name_client_to_drivers(i, pid);
        let m = wait_ready_or_end(pid, self.ready)?;
        self.children[i].queue = m[1] as u32;
        self.children[i].no_device = !device_found(m);
        if self.children[i].no_device {
            println!("init: {}: no device; it ends", self.children[i].program);
        }
        // A driver with a client is told who it is before its entry
        // names it: nobody can reach it through the entry before then.
        if let Some(client) = self.children[i].client.clone() {
            self.name_client_to(pid, m[1] as u32, Some(&client));
        }
        let c = &mut self.children[i];
        c.pid = Some(pid);
        c.last_pid = Some(pid);
        c.state = state::RUNNING;
        c.started_ns = self.clock.now_ns();
        c.kill_asked = false;
        if let Some(slot) = c.slot {
            return take_slot(slot, pid, m[1] as u32);
        }
        match &c.path {
            Some(path) => make_entry(path, pid, m, again),
            None => Ok(()),
        }
    }

    /// The inittab's `client=<program>` on `driver`'s line.
    pub fn set_client_of(&mut self, driver: &str, client: &str) {
        if let Some(i) = self.find(driver.as_bytes()) {
            self.children[i].client = Some(String::from(client));
            if let Some(pid) = self.children[i].pid {
                let queue = self.children[i].queue;
                self.name_client_to(pid, queue, Some(client));
            }
        }
    }

    /// Child `i` was started as `pid`: every running driver whose client
    /// is its program is told (`eth::OP_SET_CLIENT`).
    fn name_client_to_drivers(&self, i: usize, pid: Pid) {
        let program = self.children[i].program.as_str();
        for (j, d) in self.children.iter().enumerate() {
            if j != i
                && d.client.as_deref() == Some(program)
                && let Some(driver) = d.pid
            {
                send_client(driver, d.queue, pid);
            }
        }
    }

    /// Tell the driver `driver` (serving `queue`) the pid of the running
    /// instance of `client`, or that there is none.
    fn name_client_to(&self, driver: Pid, queue: u32, client: Option<&str>) {
        let running = client
            .and_then(|name| self.find(name.as_bytes()))
            .and_then(|k| self.children[k].pid)
            .filter(|&p| p != driver);
        send_client(driver, queue, running.unwrap_or(Pid(0)));
    }

    /// Child `i` ended (`how`, after running `ran_ns`): log it and decide.
    fn died(&mut self, i: usize, how: &str, ran_ns: u64) {
        let now = self.clock.now_ns();
        let c = &mut self.children[i];
        let ended = c.pid.take();
        if !c.restart {
            c.state = state::STOPPED;
            println!("init: {} {how}; its line does not say `restart`, so it stays down", c.program);
            if let Some(pid) = ended {
                tell_the_monitor(pid, true);
            }
            return;
        }
        let decision = c.record.died(&INIT_POLICY, ran_ns);
        let given_up = matches!(decision, Decision::GiveUp(_));
        match (ended, c.last_pid) {
            (Some(pid), _) => tell_the_monitor(pid, given_up),
            // A start that failed: the monitor knew the instance before,
            // and now that none will follow.
            (None, Some(pid)) if given_up => tell_the_monitor(pid, true),
            _ => {}
        }
        match decision {
            Decision::RestartIn(ns) => {
                c.state = state::WAITING;
                c.due_ns = now.saturating_add(ns);
                println!("init: {} {how}; starting it again in {} ms", c.program, ns / 1_000_000);
            }
            Decision::GiveUp(n) => {
                c.state = state::GAVE_UP;
                println!(
                    "init: {} {how}; it ended {n} times in a row within {} ms of its start: init gives up on it",
                    c.program,
                    INIT_POLICY.quick_run_ns / 1_000_000
                );
            }
        }
    }

    /// Start again every child whose back-off is over.
    fn start_due(&mut self) {
        let now = self.clock.now_ns();
        for i in 0..self.children.len() {
            let c = &self.children[i];
            if c.state != state::WAITING || c.due_ns > now {
                continue;
            }
            self.children[i].restarts += 1;
            match self.start(i, true) {
                Ok(()) => {
                    let c = &self.children[i];
                    let pid = c.pid.map_or(0, |p| p.0);
                    match &c.path {
                        Some(path) => {
                            println!("init: {} started again ({pid:#x}); {path} names it", c.program)
                        }
                        None => println!("init: {} started again ({pid:#x})", c.program),
                    }
                    tell_the_monitor_started(Pid(pid));
                }
                Err(why) => self.died(i, &format!("did not start again: {why}"), 0),
            }
        }
    }

    /// An exit report, a request from the monitor or a status call.
    fn on_message(&mut self, r: &Received, data: &[u8]) {
        let monitor = sys::bootstrap(bootstrap::MONITOR).map(|(p, _)| p);
        match r.kind {
            abi::msg::Kind::ChildExit => {
                let pid = Pid(r.message[0]);
                let Some(i) = self.children.iter().position(|c| c.pid == Some(pid)) else { return };
                let status = ExitStatus::decode(r.message[1]);
                let ran_ns = self.clock.now_ns().saturating_sub(self.children[i].started_ns);
                let how = match status {
                    ExitStatus::Exited(0) => {
                        tell_the_monitor(pid, true);
                        let c = &mut self.children[i];
                        c.pid = None;
                        c.state = state::STOPPED;
                        if !c.no_device {
                            println!(
                                "init: {} ({:#x}) exited with status 0; not restarted",
                                c.program, pid.0
                            );
                        }
                        return;
                    }
                    ExitStatus::Exited(code) => format!("({:#x}) exited with status {code}", pid.0),
                    ExitStatus::Fault { vector, address } => {
                        format!("({:#x}) ended by a fault: vector {vector} at {address:#x}", pid.0)
                    }
                    ExitStatus::Killed if self.children[i].kill_asked => {
                        format!("({:#x}) was killed (root asked)", pid.0)
                    }
                    ExitStatus::Killed => format!("({:#x}) was killed", pid.0),
                };
                self.died(i, &how, ran_ns);
            }
            abi::msg::Kind::Call if r.message[0] == sv::OP_STATUS => {
                let answer = match self.find(data) {
                    Some(i) => {
                        let c = &self.children[i];
                        [c.state, c.pid.map_or(0, |p| p.0), c.restarts, c.record.quick_deaths as u64]
                    }
                    None => [ux::encode_result(Err(ux::errno::ENOENT)), 0, 0, 0],
                };
                let _ = msg::reply(r.reply, &answer, &[]);
            }
            abi::msg::Kind::Call => {
                let _ = msg::reply(r.reply, &[ux::encode_result(Err(ux::errno::ENOSYS)), 0, 0, 0], &[]);
            }
            // Only the monitor may ask: it checked that the asker is root.
            _ if Some(r.sender) != monitor => {}
            _ if r.message[0] == sv::OP_KILL => self.kill(data),
            _ if r.message[0] == sv::OP_START => self.start_asked(data),
            _ => {}
        }
    }

    fn find(&self, name: &[u8]) -> Option<usize> {
        self.children.iter().position(|c| c.program.as_bytes() == name)
    }

    /// Root's `OP_SERVER_KILL`: end a running program whose line says
    /// `restart` (the others hold state the system cannot lose).
    fn kill(&mut self, name: &[u8]) {
        let shown = String::from_utf8_lossy(name);
        let Some(i) = self.find(name) else {
            println!("init: asked to end {shown}, which init did not start");
            return;
        };
        let c = &mut self.children[i];
        match c.pid {
            Some(pid) if c.restart => {
                c.kill_asked = true;
                if let Err(e) = sys::kill(pid) {
                    println!("init: cannot end {shown}: {}", e.name());
                }
            }
            Some(_) => println!("init: not ending {shown}: its line does not say `restart`"),
            None => println!("init: asked to end {shown}, which is not running"),
        }
    }

    /// Root's `OP_SERVER_START`: a boot-image program as a supervised
    /// driver with no rights and no device entry (started again, from a
    /// clean record, if it was given up).
    fn start_asked(&mut self, name: &[u8]) {
        let Ok(program) = core::str::from_utf8(name) else { return };
        match self.find(name) {
            Some(i) if self.children[i].pid.is_some() || self.children[i].state == state::WAITING => {
                println!("init: asked to start {program}, which runs already");
            }
            Some(i) => {
                let c = &mut self.children[i];
                c.record = Record::default();
                c.state = state::WAITING;
                c.due_ns = 0;
                self.start_due();
            }
            None if !is_boot_module(program) => {
                println!("init: asked to start {program}, which is not a program of the boot image");
            }
            None => {
                println!("init: starting {program}, as root asked");
                // A failed start is logged and scheduled by `died`.
                let _ = self.add_driver(program, STARTED_PRIORITY, 0, None, true);
            }
        }
    }

    /// Handle whatever waits on init's queue, and start what is due.
    fn tend(&mut self) {
        let mut buf = [0u8; ux::PROCESS_NAME_BYTES];
        while let Ok(Some(r)) = msg::try_receive(self.queue, &mut buf) {
            let len = r.len.min(buf.len());
            self.on_message(&r, &buf[..len]);
        }
        self.start_due();
    }

    /// Supervise until the session's first process (UNIX pid `session`,
    /// reached by `link` to the monitor) ends; its wait status, or `None`
    /// when the monitor cannot say.
    pub fn run_until_ended(&mut self, link: Link, session: u64) -> Option<u64> {
        if let Err(e) = sys::set_priority(sys::getpid(), SUPERVISOR_PRIORITY) {
            println!("init: cannot raise its priority to {SUPERVISOR_PRIORITY}: {}", e.name());
        }
        loop {
            self.tend();
            let asked = msg::call(link, &[monitor::OP_WAIT, session, wait_status::NO_HANG, 0], &[], &mut []);
            match asked.map(|(w, _)| (ux::result(w[0]), w[1])) {
                Ok((Ok(0), _)) => {}
                Ok((Ok(_), status)) => return Some(status),
                _ => return None,
            }
            sys::sleep_ns(POLL_NS);
        }
    }
}

/// Whether the boot image holds a program (module) called `name`.
fn is_boot_module(name: &str) -> bool {
    let mut found = [0u8; 64];
    for index in 0.. {
        match sys::module_info(index, &mut found) {
            Ok((_, len)) if &found[..len.min(found.len())] == name.as_bytes() => return true,
            Ok(_) => {}
            Err(_) => return false,
        }
    }
    false
}

/// `eth::OP_SET_CLIENT` to `driver`'s `queue`: `client` (0: nobody) is
/// the one process it may let attach. One-way: init never waits for a
/// driver; the driver takes it only from its starter, init.
fn send_client(driver: Pid, queue: u32, client: Pid) {
    if let Ok(l) = msg::open_link(driver, Queue(queue)) {
        if let Err(e) = msg::send(l, &[net::eth::OP_SET_CLIENT, client.0, 0, 0]) {
            println!("init: cannot name the client of {:#x}: {}", driver.0, e.name());
        }
        let _ = msg::close_link(l);
    }
}

/// Tell the monitor that `pid` ended (`monitor::OP_SERVER_ENDED`): it
/// drops its links to it and its cached lookups naming it; `for_good`:
/// no new instance will follow. A one-way `send`: init never waits for
/// the monitor here.
fn tell_the_monitor(pid: Pid, for_good: bool) {
    let word2 = if for_good { monitor::ENDED_FOR_GOOD } else { 0 };
    send_to_slot(bootstrap::MONITOR, pid, [monitor::OP_SERVER_ENDED, pid.0, word2, 0]);
}

/// A one-way message to the server in init's bootstrap `slot`, unless
/// that server is `not` (the one that ended or started).
fn send_to_slot(slot: u64, not: Pid, message: [u64; 4]) {
    if let Some((to, queue)) = sys::bootstrap(slot)
        && to != not
        && let Ok(l) = msg::open_link(to, Queue(queue))
    {
        let _ = msg::send(l, &message);
        let _ = msg::close_link(l);
    }
}

/// A restarted server (`pid`, serving `queue`) takes its bootstrap `slot`
/// in init; the monitor is told (`monitor::OP_SLOT_SERVER_STARTED`), and for a
/// console driver the terminal manager too (`tty::OP_SET_CONSOLE`). At
/// boot (the first start) `main` does this for every server, before any
/// of them could be told.
fn take_slot(slot: u64, pid: Pid, queue: u32) -> Result<(), String> {
    sys::set_bootstrap(slot, pid, queue).map_err(|e| String::from(e.name()))?;
    if slot == bootstrap::CONSOLE {
        // init's own output goes to the new driver again.
        runtime::io::reset_console();
        // The new driver hands typed input to the terminal manager only
        // (told before the manager is told to subscribe).
        if let Some((tty, _)) = sys::bootstrap(bootstrap::TTY) {
            send_to_slot(bootstrap::CONSOLE, tty, [protocols::console::OP_SET_INPUT_OWNER, tty.0, 0, 0]);
        }
        send_to_slot(bootstrap::TTY, pid, [ux::tty::OP_SET_CONSOLE, pid.0, queue as u64, 0]);
    }
    send_to_slot(bootstrap::MONITOR, pid, [monitor::OP_SLOT_SERVER_STARTED, slot, pid.0, queue as u64]);
    Ok(())
}

/// Name `pid`, a terminal manager init just started, to the console
/// driver as the one process that may take its typed input
/// (`console::OP_SET_INPUT_OWNER`; docs/reliability.md, "Console input
/// goes only to the terminal manager"). One-way, and sent right after
/// the spawn: the manager tries its subscription again while refused.
pub fn name_the_input_owner(pid: Pid) {
    send_to_slot(bootstrap::CONSOLE, pid, [protocols::console::OP_SET_INPUT_OWNER, pid.0, 0, 0]);
}

/// Tell the monitor that a restarted driver, `pid`, is ready and named by
/// its entry (`monitor::OP_SERVER_STARTED`): a volume it dropped when the
/// last instance ended is mounted again. One-way, as [`tell_the_monitor`].
fn tell_the_monitor_started(pid: Pid) {
    if let Some((monitor_pid, queue)) = sys::bootstrap(bootstrap::MONITOR)
        && let Ok(l) = msg::open_link(monitor_pid, Queue(queue))
    {
        let _ = msg::send(l, &[monitor::OP_SERVER_STARTED, pid.0, 0, 0]);
        let _ = msg::close_link(l);
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

/// Make the device entry `path` naming the driver `pid`, from its ready
/// message `m`; `again`: an entry of its last instance is there, replaced.
/// Whether a driver's ready message `m` says it found its device (a
/// block driver's size, the card's flag); any other ready message: yes.
fn device_found(m: [u64; 4]) -> bool {
    !matches!(m[0], ux::block::READY | net::eth::READY) || m[2] != 0
}

fn make_entry(path: &str, pid: Pid, m: [u64; 4], again: bool) -> Result<(), String> {
    // Which kind of driver it is, from its ready message: the mode of its
    // entry, and whether it found its device (no device: no entry).
    let entry_mode = match m[0] {
        ux::block::READY => ux::mode::S_IFBLK | 0o660,
        // The network card: only the network server talks to it.
        net::eth::READY => ux::mode::S_IFCHR | 0o600,
        // The network server: anyone may open a socket.
        net::READY => ux::mode::S_IFCHR | 0o666,
        _ => return Err(String::from("its ready message is not a driver's")),
    };
    let queue = m[1];
    if !device_found(m) {
        return Ok(());
    }
    let (fs_pid, fs_queue) = sys::bootstrap(bootstrap::FS).ok_or(String::from("no directory manager"))?;
    let link = msg::open_link(fs_pid, Queue(fs_queue)).map_err(|e| String::from(e.name()))?;
    if again {
        // The old entry names the dead instance. init is memfs's starter,
        // which it trusts like the monitor.
        let _ = msg::call(link, &[fs::OP_UNLINK, 0, 0, 0], path.as_bytes(), &mut []);
    }
    let entry_mode = entry_mode as u64;
    // The reply carries the new entry's attributes.
    let mut stat = [0u8; ux::Stat::BYTES];
    let made = msg::call(link, &[fs::OP_MKDEV, pid.0, queue, entry_mode], path.as_bytes(), &mut stat);
    let _ = msg::close_link(link);
    match made.map(|(w, _)| ux::result(w[0])) {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(format!("cannot make {path}: {}", ux::errno::name(e))),
        Err(e) => Err(format!("cannot make {path}: {}", e.name())),
    }
}
