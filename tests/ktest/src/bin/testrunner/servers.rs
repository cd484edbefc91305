//! Servers killed under their clients (issue 5: "a crashing or killed
//! server must not take the system down: its clients get errors"; Ridge:
//! "failures are reported in messages back to the requesters").
//!
//! Each test starts the real server program from the boot image as init
//! or the monitor would (memfs, a file manager, a pipe manager, vm, the
//! tty and its console driver), gives it clients in `tchild` roles, kills
//! it under them, and checks that each client's call ended with DeadPeer
//! (the client says so in its exit status) instead of hanging. The final
//! leak check (`health`) runs after these.

use crate::server_deaths;
use crate::started::{Started, looper_priority, subject_priority};
use crate::util::{MAIN_QUEUE, MANAGER_QUEUE, MAX_DATA, TestResult, check};
use abi::{Error, ExitStatus, Pid, vector};
use alloc::format;
use alloc::string::String;
use runtime::msg::{self, Page, Queue};
use runtime::sys;

/// The next message on `queue`: it must come from `from` with word 0
/// `word0`.
fn receive_from(queue: Queue, from: Pid, word0: u64, what: &str) -> Result<abi::msg::Message, String> {
    let r = msg::receive_data(queue, &mut []).map_err(|e| format!("receive {what}: {}", e.name()))?;
    if r.sender != from || r.message[0] != word0 {
        return Err(format!(
            "expected {what} from {:#x}, got {:x?} from {:#x}",
            from.0, r.message, r.sender.0
        ));
    }
    Ok(r.message)
}

/// A call the server must answer with a result (`protocols::unix::result`
/// of word 0) that is not an error.
fn server_call(
    link: msg::Link,
    words: [u64; 4],
    data: &[u8],
    reply: &mut [u8],
    what: &str,
) -> Result<([u64; 4], usize), String> {
    let (w, n) = msg::call(link, &words, data, reply).map_err(|e| format!("{what}: {}", e.name()))?;
    protocols::unix::result(w[0]).map_err(|e| format!("{what}: {}", protocols::unix::errno::name(e)))?;
    Ok((w, n))
}

/// Wait for each `call-loop` client's message that it is calling in a loop.
fn wait_looping(clients: &[Pid]) -> TestResult {
    for _ in clients {
        let r = msg::receive_data(MAIN_QUEUE, &mut []).map_err(|e| e.name())?;
        if !clients.contains(&r.sender) || r.message[0] != server_deaths::LOOPING {
            return Err(format!("expected a client's LOOPING, got {:x?} from {:#x}", r.message, r.sender.0));
        }
        if r.message[1] != 1 {
            return Err(format!("client {:#x} was never served", r.sender.0));
        }
    }
    Ok(())
}

/// A Stat in a reply's data.
fn stat_of(data: &[u8], what: &str) -> Result<protocols::unix::Stat, String> {
    protocols::unix::Stat::decode(data).ok_or_else(|| format!("{what}: no Stat in the reply"))
}

/// One memfs for two tests (copying the boot image into it is the slow
/// part): first a file manager is killed under its reader, then memfs
/// under its own.
pub fn file_manager_then_memfs_killed() -> TestResult {
    let mut s = Started::new();
    let memfs = start_memfs(&mut s)?;
    file_manager_killed_under_a_read_loop(&mut s, memfs)?;
    memfs_killed_under_loops(&mut s, memfs)
}

/// memfs started as init starts it, and a link to its queue.
#[derive(Clone, Copy)]
struct Memfs {
    pid: Pid,
    queue: u64,
    link: msg::Link,
}

/// Start memfs as init does (the starter's pid as argument, the right to
/// read the boot image) and take its READY.
fn start_memfs(s: &mut Started) -> Result<Memfs, String> {
    use protocols::unix::fs;
    let me = sys::getpid();
    let pid = s.spawn("memfs", &format!("{}", me.0), abi::PRIORITY_INHERIT, abi::rights::MODULES)?;
    let ready = receive_from(MAIN_QUEUE, pid, fs::READY, "memfs's READY")?;
    let link = s.link(pid, ready[1])?;
    Ok(Memfs { pid, queue: ready[1], link })
}

/// A file manager (Ridge's process per open file) killed while a client
/// reads the file in a loop: the reads end with DeadPeer, and the
/// directory manager it loaded the file from is unharmed.
fn file_manager_killed_under_a_read_loop(s: &mut Started, memfs: Memfs) -> TestResult {
    use protocols::unix::{filemgr, fs, io, open_flags};
    let mut page = Page::zeroed();
    let path = "/tmp/file-manager-killed";
    let text = b"a file whose manager is killed under its reader\n";
    let create = [fs::OP_OPEN, open_flags::O_CREAT | open_flags::O_RDWR, 0o644, 0];
    let (w, _) = server_call(memfs.link, create, path.as_bytes(), &mut page.0, "create")?;
    let fs_handle = w[0];
    let (w, _) = server_call(memfs.link, [io::OP_WRITE, fs_handle, 0, 0], text, &mut [], "write")?;
    check(w[0] == text.len() as u64, "memfs took the whole write")?;
    // Started as the monitor starts it; the runner is its monitor.
    let me = sys::getpid();
    let manager = s.spawn("filemgr", &format!("{}", me.0), abi::PRIORITY_INHERIT, 0)?;
    let ready = receive_from(MANAGER_QUEUE, manager, filemgr::READY, "the file manager's READY")?;
    let queue = ready[1];
    let link = s.link(manager, queue)?;
    let attach = [filemgr::OP_ATTACH, memfs.pid.0, memfs.queue, fs_handle];
    let (w, _) = server_call(link, attach, &[], &mut [], "attach")?;
    check(w[0] == text.len() as u64, "the file manager loaded the whole file")?;
    let (w, _) = server_call(link, [filemgr::OP_OPEN, open_flags::O_RDONLY, 0, 0], &[], &mut [], "open")?;
    let reads = format!("call-loop {} {queue} {} {} {MAX_DATA}", manager.0, io::OP_READ, w[0]);
    let reads = s.spawn("tchild", &reads, looper_priority(), 0)?;
    wait_looping(&[reads])?;
    s.kill(manager, "the file manager")?;
    s.expect(reads, "the file manager's read loop", ExitStatus::Exited(0))?;
    let (_, n) = server_call(memfs.link, [fs::OP_LOOKUP, 0, 0, 0], path.as_bytes(), &mut page.0, "lookup")?;
    let stat = stat_of(&page.0[..n], "lookup")?;
    check(stat.size_bytes == text.len() as u64, "memfs still serves the file as written")?;
    server_call(memfs.link, [io::OP_CLOSE, fs_handle, 0, 0], &[], &mut [], "close at memfs").map(|_| ())
}

/// memfs killed while one client looks a path up in a loop and another
/// reads a file in a loop: both calls end with DeadPeer.
fn memfs_killed_under_loops(s: &mut Started, memfs: Memfs) -> TestResult {
    use protocols::unix::{fs, io, mode, open_flags};
    let mut page = Page::zeroed();
    let path = "/etc/inittab";
    let (_, n) = server_call(memfs.link, [fs::OP_LOOKUP, 0, 0, 0], path.as_bytes(), &mut page.0, "lookup")?;
    let stat = stat_of(&page.0[..n], "lookup")?;
    check(mode::is_reg(stat.mode) && stat.size_bytes > 0, "memfs has the boot image's /etc/inittab")?;
    let open = [fs::OP_OPEN, open_flags::O_RDONLY, 0, 0];
    let (w, _) = server_call(memfs.link, open, path.as_bytes(), &mut page.0, "open")?;
    let (pid, queue) = (memfs.pid.0, memfs.queue);
    let lookups = format!("call-loop {pid} {queue} {} 0 0 {path}", fs::OP_LOOKUP);
    let lookups = s.spawn("tchild", &lookups, looper_priority(), 0)?;
    let reads = format!("call-loop {pid} {queue} {} {} {MAX_DATA}", io::OP_READ, w[0]);
    let reads = s.spawn("tchild", &reads, looper_priority(), 0)?;
    wait_looping(&[lookups, reads])?;
    s.kill(memfs.pid, "memfs")?;
    s.expect(lookups, "the lookup loop", ExitStatus::Exited(0))?;
    s.expect(reads, "the read loop", ExitStatus::Exited(0))?;
    let later = msg::call(memfs.link, &[fs::OP_LOOKUP, 0, 0, 0], path.as_bytes(), &mut page.0);
    check(later.map(|_| ()) == Err(Error::DeadPeer), "a later call to the dead memfs")
}

/// A pipe manager under test: pid, queue, the handles of its two ends and
/// a link to it.
struct PipeUnderTest {
    pid: Pid,
    queue: u64,
    read: u64,
    write: u64,
    link: msg::Link,
}

impl PipeUnderTest {
    /// Start one as the monitor does (the runner's pid as argument: the
    /// runner is its monitor, the only one that may close its ends) and
    /// take its READY from queue 1.
    fn start(s: &mut Started) -> Result<PipeUnderTest, String> {
        use protocols::unix::pipe;
        let me = sys::getpid();
        let pid = s.spawn("pipe", &format!("{}", me.0), subject_priority(), 0)?;
        let ready = receive_from(MANAGER_QUEUE, pid, pipe::READY, "the pipe manager's READY")?;
        let link = s.link(pid, ready[1])?;
        Ok(PipeUnderTest { pid, queue: ready[1], read: ready[2], write: ready[3], link })
    }

    /// tchild's arguments for one call of `op` on `handle` with
    /// `data_bytes` of data, which the pipe keeps.
    fn call_once(&self, op: u64, handle: u64, data_bytes: usize) -> String {
        format!("call-once {} {} {op} {handle} {MAX_DATA} {data_bytes}", self.pid.0, self.queue)
    }

    /// Bytes in the pipe's buffer.
    fn buffered(&self) -> Result<u64, String> {
        let mut buf = [0u8; 128];
        let fstat = [protocols::unix::io::OP_FSTAT, self.read, 0, 0];
        let (_, n) = server_call(self.link, fstat, &[], &mut buf, "fstat of the pipe")?;
        Ok(stat_of(&buf[..n], "fstat of the pipe")?.size_bytes)
    }

    fn write(&self, data: &[u8]) -> TestResult {
        let write = [protocols::unix::io::OP_WRITE, self.write, 0, 0];
        let (w, _) = server_call(self.link, write, data, &mut [], "write")?;
        check(w[0] == data.len() as u64, "the pipe took the whole write")
    }
}

pub fn pipe_killed_under_a_blocked_reader() -> TestResult {
    use protocols::unix::io;
    let mut s = Started::new();
    let pipe = PipeUnderTest::start(&mut s)?;
    s.hold_cpus()?;
    let reader = s.spawn("tchild", &pipe.call_once(io::OP_READ, pipe.read, 0), subject_priority(), 0)?;
    s.until_blocked()?;
    // The reader waits in its read of the empty pipe, kept by the manager.
    s.kill(pipe.pid, "the pipe manager")?;
    s.expect(reader, "the reader", ExitStatus::Exited(0))?;
    s.stop_hogs()
}

pub fn pipe_killed_under_a_blocked_writer() -> TestResult {
    use protocols::unix::{io, pipe};
    let mut s = Started::new();
    let pipe = PipeUnderTest::start(&mut s)?;
    let chunk = [0x77u8; MAX_DATA];
    for _ in 0..pipe::CAPACITY_BYTES / chunk.len() {
        pipe.write(&chunk)?;
    }
    check(pipe.buffered()? == pipe::CAPACITY_BYTES as u64, "the pipe is full")?;
    s.hold_cpus()?;
    let writer =
        s.spawn("tchild", &pipe.call_once(io::OP_WRITE, pipe.write, MAX_DATA), subject_priority(), 0)?;
    s.until_blocked()?;
    // The writer waits in its write to the full pipe, kept by the manager.
    s.kill(pipe.pid, "the pipe manager")?;
    s.expect(writer, "the writer", ExitStatus::Exited(0))?;
    s.stop_hogs()
}

/// The other way round: a client killed while its read waits in the pipe
/// manager does not disturb the manager. The bytes written next are not
/// lost to the dead reader; the next reader gets them, and the manager
/// ends normally when both ends are closed.
pub fn reader_killed_leaves_the_pipe_serving() -> TestResult {
    use protocols::unix::io;
    let mut s = Started::new();
    let pipe = PipeUnderTest::start(&mut s)?;
    s.hold_cpus()?;
    let reader = s.spawn("tchild", &pipe.call_once(io::OP_READ, pipe.read, 0), subject_priority(), 0)?;
    s.until_blocked()?;
    s.kill(reader, "the blocked reader")?;
    s.stop_hogs()?;
    let text = "written-after-the-reader-died";
    pipe.write(text.as_bytes())?;
    let kept = pipe.buffered()? == text.len() as u64;
    check(kept, "the bytes stayed in the pipe, not given to the dead reader")?;
    let next = format!("read-expect {} {} {} {text}", pipe.pid.0, pipe.queue, pipe.read);
    let next = s.spawn("tchild", &next, abi::PRIORITY_INHERIT, 0)?;
    s.expect(next, "the next reader", ExitStatus::Exited(0))?;
    for end in [pipe.read, pipe.write] {
        server_call(pipe.link, [io::OP_CLOSE, end, 0, 0], &[], &mut [], "close an end")?;
    }
    s.expect(pipe.pid, "the pipe manager with both ends closed", ExitStatus::Exited(0))
}

/// The VM manager killed while a process waits on it for a heap page: the
/// kernel ends the process with a page fault there, at once, instead of
/// leaving it waiting for ever. The runner gives the process's heap
/// region to vm with `set_pager`, as `vm::OP_NEW_IMAGE` does for a new
/// UNIX image (which also pages the program's segments from a file and so
/// needs memfs), and checks with `vm::OP_STATS` that vm serves it.
pub fn vm_killed_under_a_heap_fault() -> TestResult {
    use abi::layout::{PAGE_SIZE, USER_HEAP_BASE, USER_HEAP_MAX_BYTES};
    use protocols::unix::vm;
    use server_deaths::{HEAP_HELLO, HEAP_TOUCHED};
    let mut s = Started::new();
    let me = sys::getpid();
    let manager = s.spawn("vm", &format!("{}", me.0), subject_priority(), abi::rights::MEMORY)?;
    let ready = receive_from(MAIN_QUEUE, manager, vm::READY, "vm's READY")?;
    let vm_link = s.link(manager, ready[1])?;
    let child = s.spawn("tchild", "heap-touch", subject_priority(), 0)?;
    let hello = receive_from(MAIN_QUEUE, child, HEAP_HELLO, "heap-touch's hello")?;
    let go = s.link(child, hello[1])?;
    // Faults in the child's heap region go to vm.
    sys::set_pager(child, USER_HEAP_BASE, USER_HEAP_MAX_BYTES, manager, ready[1] as u32)
        .map_err(|e| format!("set_pager: {}", e.name()))?;
    let faults = |what| server_call(vm_link, [vm::OP_STATS, 0, 0, 0], &[], &mut [], what).map(|(w, _)| w[0]);
    let before = faults("vm stats")?;
    msg::send(go, &[0; 4]).map_err(|e| e.name())?;
    receive_from(MAIN_QUEUE, child, HEAP_TOUCHED, "heap-touch's first page")?;
    check(faults("vm stats")? == before + 1, "vm served the first heap page")?;
    // From now on vm runs only on a CPU that nothing above priority 0
    // wants, and the runner and the hogs leave none: the fault on the
    // second page stays queued at vm until vm is killed.
    s.hold_cpus()?;
    sys::set_priority(manager, 0).map_err(|e| e.name())?;
    msg::send(go, &[0; 4]).map_err(|e| e.name())?;
    s.until_blocked()?;
    s.kill(manager, "vm")?;
    let want = ExitStatus::Fault { vector: vector::PAGE_FAULT, address: USER_HEAP_BASE + PAGE_SIZE };
    s.expect(child, "the process waiting for a heap page", want)?;
    s.stop_hogs()
}

/// Regression: a heap region given to a pager that has since died used to
/// fall back to the kernel's zero-fill default, so the process went on as
/// if nothing had happened. The region stays the dead pager's: the next
/// fault there ends the process.
pub fn heap_of_a_dead_pager() -> TestResult {
    use abi::layout::{PAGE_SIZE, USER_HEAP_BASE, USER_HEAP_MAX_BYTES};
    use protocols::unix::vm;
    use server_deaths::{HEAP_HELLO, HEAP_TOUCHED};
    let mut s = Started::new();
    let me = sys::getpid();
    let manager = s.spawn("vm", &format!("{}", me.0), subject_priority(), abi::rights::MEMORY)?;
    let ready = receive_from(MAIN_QUEUE, manager, vm::READY, "vm's READY")?;
    let child = s.spawn("tchild", "heap-touch", subject_priority(), 0)?;
    let hello = receive_from(MAIN_QUEUE, child, HEAP_HELLO, "heap-touch's hello")?;
    let go = s.link(child, hello[1])?;
    sys::set_pager(child, USER_HEAP_BASE, USER_HEAP_MAX_BYTES, manager, ready[1] as u32)
        .map_err(|e| format!("set_pager: {}", e.name()))?;
    msg::send(go, &[0; 4]).map_err(|e| e.name())?;
    receive_from(MAIN_QUEUE, child, HEAP_TOUCHED, "heap-touch's first page")?;
    s.kill(manager, "vm")?;
    msg::send(go, &[0; 4]).map_err(|e| e.name())?;
    let want = ExitStatus::Fault { vector: vector::PAGE_FAULT, address: USER_HEAP_BASE + PAGE_SIZE };
    s.expect(child, "the process touching its heap after its pager died", want)
}

/// The console device manager killed while a reader waits for a line
/// nobody types: the read ends with DeadPeer. Before that, the tty's own
/// server, the console driver, is killed: the tty survives it, keeps what
/// is written meanwhile (the writer is told all of it was taken), and
/// when its starter names a new driver (`tty::OP_SET_CONSOLE`, as init
/// does after a restart) subscribes to it and writes what it kept there
/// (docs/reliability.md, "The console and the terminal").
pub fn tty_killed_under_a_blocked_reader() -> TestResult {
    use protocols::unix::{device, io, open_flags, tty};
    let mut s = Started::new();
    let me = sys::getpid();
    let driver =
        s.spawn("console", &format!("{}", me.0), abi::MAX_PRIORITY as u64 - 1, abi::rights::DEVICES)?;
    let ready = receive_from(MAIN_QUEUE, driver, protocols::console::READY, "the console driver's READY")?;
    // The tty finds its driver in its bootstrap CONSOLE connection.
    sys::set_bootstrap(abi::bootstrap::CONSOLE, driver, ready[1] as u32).map_err(|e| e.name())?;
    let manager = s.spawn("tty", &format!("{}", me.0), subject_priority(), 0);
    sys::set_bootstrap(abi::bootstrap::CONSOLE, Pid(0), 0).map_err(|e| e.name())?;
    let manager = manager?;
    // As init does: the driver's starter names the one process that may
    // take its input (the tty tries its subscription until then).
    let first_driver = s.link(driver, ready[1])?;
    let owner = [protocols::console::OP_SET_INPUT_OWNER, manager.0, 0, 0];
    msg::send(first_driver, &owner).map_err(|e| e.name())?;
    let ready = receive_from(MAIN_QUEUE, manager, tty::READY, "the tty's READY")?;
    let queue = ready[1];
    let link = s.link(manager, queue)?;
    let (w, _) = server_call(link, [device::OP_OPEN, open_flags::O_RDWR, 0, 0], &[], &mut [], "open")?;
    let handle = w[0];
    let text = b"tty test line\n";
    let (w, _) = server_call(link, [io::OP_WRITE, handle, 0, 0], text, &mut [], "write")?;
    check(w[0] == text.len() as u64, "the tty wrote the line")?;
    s.kill(driver, "the console driver")?;
    let kept = b"kept while the console driver was down\n";
    let (w, _) = msg::call(link, &[io::OP_WRITE, handle, 0, 0], kept, &mut []).map_err(|e| e.name())?;
    check(
        w[0] == kept.len() as u64,
        "a write with the driver dead is taken whole (kept for the next driver)",
    )?;
    // A new driver (COM1's ports and line were freed with the old one),
    // named to the tty by its starter.
    let driver =
        s.spawn("console", &format!("{}", me.0), abi::MAX_PRIORITY as u64 - 1, abi::rights::DEVICES)?;
    let ready =
        receive_from(MAIN_QUEUE, driver, protocols::console::READY, "the new console driver's READY")?;
    msg::send(s.link(driver, ready[1])?, &owner).map_err(|e| e.name())?;
    let tell = s.link(manager, queue)?;
    msg::send(tell, &[tty::OP_SET_CONSOLE, driver.0, ready[1], 0]).map_err(|e| e.name())?;
    let new_driver = s.link(driver, ready[1])?;
    let mut subscribed_and_written = false;
    // Bounded in count, not in time: the tty handles the message in turn.
    for _ in 0..2000 {
        let (input, _) = server_call(
            new_driver,
            [protocols::console::OP_INPUT_STATS, 0, 0, 0],
            &[],
            &mut [],
            "input stats",
        )?;
        let (out, _) =
            server_call(new_driver, [protocols::console::OP_STATS, 0, 0, 0], &[], &mut [], "stats")?;
        if input[2] == manager.0 && out[1] >= kept.len() as u64 {
            subscribed_and_written = true;
            break;
        }
        sys::sleep_ns(1_000_000);
    }
    check(subscribed_and_written, "the tty subscribed to the new driver and wrote what it kept")?;
    let (w, _) = server_call(link, [io::OP_WRITE, handle, 0, 0], text, &mut [], "write to the new driver")?;
    check(w[0] == text.len() as u64, "the tty writes through the new driver")?;
    let (out, _) = server_call(new_driver, [protocols::console::OP_STATS, 0, 0, 0], &[], &mut [], "stats")?;
    check(out[1] >= (kept.len() + text.len()) as u64, "the new driver wrote both lines")?;
    let reader = format!("call-once {} {queue} {} {handle} {MAX_DATA} 0", manager.0, io::OP_READ);
    s.hold_cpus()?;
    let reader = s.spawn("tchild", &reader, subject_priority(), 0)?;
    s.until_blocked()?;
    s.kill(manager, "the tty")?;
    s.expect(reader, "the reader", ExitStatus::Exited(0))?;
    s.stop_hogs()
}
