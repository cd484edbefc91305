//! The fuzzer's messages as plain data: which server, which operation,
//! which words, which buffers, sent how. A message is a pure function of
//! (seed, batch, index) ([`message`]), so the coordinator can print the
//! messages of a failed batch without the worker that sent them, and a
//! failure repeats from its seed.
//!
//! What it is not: the sending (that is `worker`), or a model of what each
//! server should answer (the check is that servers keep answering).
//!
//! Operation sets: a message is a function of (seed, batch, index) *and*
//! the operation set, so that a seed recorded with one set replays as it
//! did after operations are added. Set 1 is every list as it was before
//! branch `robust`; set 2 ([`POSITIONAL_OPS`]) adds `io::OP_PREAD` and
//! `OP_PWRITE` to every target that names a handle. Both draw the same
//! random numbers per message (the operation's index is drawn over the
//! longer list), so set 2 changes the operations a seed picks, never the
//! words or buffers beside them. `sfuzz` runs set 1 unless `--ops 2`
//! says (every recorded command line then means what it meant);
//! `cargo xtask fuzz` runs the newest unless `--ops` says.

use protocols::console as console_ops;
use protocols::net as net_ops;
use protocols::unix::{block, device, fs, io, monitor, pipe, tty, vm};

/// One server or driver the worker can reach, and how to speak to it.
pub struct TargetKind {
    pub name: &'static str,
    /// Its operations (the first choice of an operation number).
    pub ops: &'static [u64],
    /// Whether requests name a handle in word 1 (an open object).
    pub has_handle: bool,
    /// Never give it send data: whatever it is given, it prints (the
    /// console and the terminal), and the serial line carries the test
    /// protocol.
    pub is_quiet: bool,
    /// Operations never sent: ones that would change what the rest of the
    /// system relies on rather than test the server (writing the mounted
    /// disk's blocks under its file system).
    pub never: &'static [u64],
    /// Operations that may wait for ever by design (a read of an empty
    /// pipe, an `accept`): sent only from a child killed mid-call.
    pub blocking: &'static [u64],
}

/// The newest operation set ([`message`]'s `ops`).
pub const OP_SETS: u64 = 2;

/// What set 2 adds to the operations of every target with a handle: the
/// positional calls (word 1 the handle, word 2 the length, word 3 the
/// offset), which `ext2fs`, memfs, `filemgr` and the block drivers
/// answer and the pipe server refuses (`ESPIPE`). A target that must not
/// be written (`never` holds `io::OP_WRITE`: the mounted `/dev/vda`) is
/// never sent `OP_PWRITE` either.
pub const POSITIONAL_OPS: &[u64] = &[io::OP_PREAD, io::OP_PWRITE];

const IO_OPS: &[u64] = &[
    io::OP_READ,
    io::OP_WRITE,
    io::OP_SEEK,
    io::OP_FSTAT,
    io::OP_READDIR,
    io::OP_CLOSE,
    io::OP_FOREGROUND,
    io::OP_TRUNCATE,
    io::OP_FSYNC,
];
const MONITOR_OPS: &[u64] = &[
    monitor::OP_WAIT,
    monitor::OP_GETPPID,
    monitor::OP_KILL,
    monitor::OP_OPEN,
    monitor::OP_CLOSE,
    monitor::OP_DUP,
    monitor::OP_DUP2,
    monitor::OP_PIPE,
    monitor::OP_FD_INFO,
    monitor::OP_STAT,
    monitor::OP_UNLINK,
    monitor::OP_MKDIR,
    monitor::OP_RMDIR,
    monitor::OP_RENAME,
    monitor::OP_CHDIR,
    monitor::OP_GETCWD,
    monitor::OP_GETUID,
    monitor::OP_SETUID,
    monitor::OP_TIMES,
    monitor::OP_PS,
    monitor::OP_SETPGID,
    monitor::OP_GETPGRP,
    monitor::OP_SIGNAL_IGNORE,
    monitor::OP_CHMOD,
    monitor::OP_CHOWN,
    monitor::OP_START,
    monitor::OP_SIGNAL_GROUP,
    monitor::OP_STATS,
    monitor::OP_SET_LIMIT,
    monitor::OP_LIMITS,
    monitor::OP_PIPE_LOAN,
    monitor::OP_MOUNT,
    monitor::OP_MOUNTS,
    monitor::OP_SYNC,
    monitor::OP_FS_STATS,
];
const FS_OPS: &[u64] = &[
    fs::OP_LOOKUP,
    fs::OP_OPEN,
    fs::OP_MKDIR,
    fs::OP_UNLINK,
    fs::OP_RMDIR,
    fs::OP_RENAME,
    fs::OP_MKDEV,
    fs::OP_CHMOD,
    fs::OP_CHOWN,
    fs::OP_STATS,
    fs::OP_SET_MONITOR,
    fs::OP_SYNC,
    fs::OP_STATS_TEXT,
    device::OP_OPEN,
    io::OP_READ,
    io::OP_WRITE,
    io::OP_SEEK,
    io::OP_FSTAT,
    io::OP_READDIR,
    io::OP_CLOSE,
    io::OP_TRUNCATE,
    io::OP_FSYNC,
];
const VM_OPS: &[u64] =
    &[vm::OP_NEW_IMAGE, vm::OP_FORK, vm::OP_STATS, vm::OP_SET_MONITOR, vm::OP_LOAD_IMAGE, vm::OP_EXIT];
const TTY_OPS: &[u64] = &[
    tty::OP_SET_MONITOR,
    device::OP_OPEN,
    io::OP_READ,
    io::OP_WRITE,
    io::OP_FSTAT,
    io::OP_CLOSE,
    io::OP_FOREGROUND,
    io::OP_SEEK,
];
const CONSOLE_OPS: &[u64] = &[
    console_ops::OP_WRITE,
    console_ops::OP_READ,
    console_ops::OP_STATS,
    console_ops::OP_SUBSCRIBE,
    console_ops::OP_INPUT_STATS,
];
const PIPE_OPS: &[u64] = &[
    io::OP_READ,
    io::OP_WRITE,
    io::OP_FSTAT,
    io::OP_CLOSE,
    io::OP_SEEK,
    pipe::OP_SET_LOAN_MIN,
    pipe::OP_GRANT,
    pipe::OP_RECLAIM,
];
const BLOCK_OPS: &[u64] = &[
    io::OP_READ,
    io::OP_WRITE,
    io::OP_SEEK,
    io::OP_FSTAT,
    io::OP_CLOSE,
    io::OP_FSYNC,
    block::OP_STATS,
    block::OP_MAP,
    block::OP_LOCK_WAIT,
    block::OP_LOCK_WAKE,
    device::OP_OPEN,
];
const NET_OPS: &[u64] = &[
    net_ops::OP_BIND,
    net_ops::OP_LISTEN,
    net_ops::OP_ACCEPT,
    net_ops::OP_CONNECT,
    net_ops::OP_SENDTO,
    net_ops::OP_RECVFROM,
    net_ops::OP_SHUTDOWN,
    net_ops::OP_NAME,
    net_ops::OP_SETOPT,
    net_ops::OP_GETOPT,
    net_ops::OP_POLL,
    net_ops::OP_STATS,
    net_ops::OP_IFCONFIG,
    device::OP_OPEN,
    io::OP_READ,
    io::OP_WRITE,
    io::OP_FSTAT,
    io::OP_CLOSE,
];

/// Every target, in the order the worker resolves them
/// (`worker::resolve`); the index is a message's `target`.
pub const TARGETS: &[TargetKind] = &[
    TargetKind {
        name: "monitor",
        ops: MONITOR_OPS,
        has_handle: false,
        is_quiet: false,
        // Fork and exec would turn the worker into two, or into another
        // program: calls from processes that end mid-call are made
        // separately (`How::Doomed`).
        never: &[monitor::OP_FORK, monitor::OP_EXEC],
        blocking: &[monitor::OP_WAIT],
    },
    TargetKind {
        name: "memfs (directory manager)",
        ops: FS_OPS,
        has_handle: true,
        is_quiet: false,
        never: &[],
        blocking: &[],
    },
    TargetKind {
        name: "memfs (a directory handle)",
        ops: IO_OPS,
        has_handle: true,
        is_quiet: false,
        never: &[],
        blocking: &[],
    },
    TargetKind {
        name: "memfs (/dev/null)",
        ops: IO_OPS,
        has_handle: true,
        is_quiet: false,
        never: &[],
        blocking: &[],
    },
    TargetKind { name: "vm", ops: VM_OPS, has_handle: false, is_quiet: false, never: &[], blocking: &[] },
    TargetKind {
        name: "tty",
        ops: TTY_OPS,
        has_handle: true,
        is_quiet: true,
        never: &[],
        blocking: &[io::OP_READ],
    },
    TargetKind {
        name: "console",
        ops: CONSOLE_OPS,
        has_handle: false,
        is_quiet: true,
        never: &[],
        blocking: &[console_ops::OP_READ],
    },
    TargetKind {
        name: "pipe (read end)",
        ops: PIPE_OPS,
        has_handle: true,
        is_quiet: false,
        never: &[],
        blocking: &[io::OP_READ, io::OP_WRITE],
    },
    TargetKind {
        name: "pipe (write end)",
        ops: PIPE_OPS,
        has_handle: true,
        is_quiet: false,
        never: &[],
        blocking: &[io::OP_READ, io::OP_WRITE],
    },
    TargetKind {
        name: "ext2fs (a file on /disk)",
        ops: FS_OPS,
        has_handle: true,
        is_quiet: false,
        never: &[],
        blocking: &[],
    },
    TargetKind {
        name: "virtio-blk (/dev/vda)",
        ops: BLOCK_OPS,
        has_handle: true,
        is_quiet: false,
        // /dev/vda carries the file system mounted at /disk.
        never: &[io::OP_WRITE, block::OP_MAP],
        blocking: &[block::OP_LOCK_WAIT],
    },
    TargetKind {
        name: "ramdisk (/dev/ram0)",
        ops: BLOCK_OPS,
        has_handle: true,
        is_quiet: false,
        never: &[],
        blocking: &[block::OP_LOCK_WAIT],
    },
    TargetKind {
        name: "net (a UDP socket)",
        ops: NET_OPS,
        has_handle: true,
        is_quiet: false,
        never: &[],
        blocking: &[
            net_ops::OP_ACCEPT,
            net_ops::OP_RECVFROM,
            net_ops::OP_CONNECT,
            net_ops::OP_POLL,
            io::OP_READ,
        ],
    },
    TargetKind {
        name: "net (a TCP socket)",
        ops: NET_OPS,
        has_handle: true,
        is_quiet: false,
        never: &[],
        blocking: &[
            net_ops::OP_ACCEPT,
            net_ops::OP_RECVFROM,
            net_ops::OP_CONNECT,
            net_ops::OP_POLL,
            io::OP_READ,
        ],
    },
    TargetKind {
        name: "memfs (a file in /tmp)",
        ops: FS_OPS,
        has_handle: true,
        is_quiet: false,
        never: &[],
        blocking: &[],
    },
];

/// A message word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Word {
    Value(u64),
    /// The target's handle.
    Handle,
    /// The target's handle with these bits flipped (a forged neighbour).
    HandleXor(u64),
    /// Another target's handle (a real handle, of the wrong server).
    HandleOf(usize),
}

/// What a buffer's bytes are, when they are ours.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fill {
    /// Random bytes from this seed.
    Random(u64),
    /// Path number `i` of [`PATHS`], NUL-free.
    Path(usize),
    /// Path `i` cut after `n` bytes (a truncated request).
    PathCut(usize, usize),
    /// Two paths joined by a NUL (rename's layout), the second cut.
    PathPair(usize, usize),
    Zeros,
}

/// A buffer lent with a call (or sent with `send_data`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Buf {
    Empty,
    /// `len` bytes of the worker's own memory, filled as said.
    Own(usize, Fill),
    /// An address nothing maps.
    Unmapped(usize),
    /// A kernel address.
    Kernel(usize),
    /// A non-canonical address.
    NonCanonical(usize),
    /// The worker's own code (readable, never writable).
    Text(usize),
    /// In the heap region, past the break: the worker's, never touched.
    PastBreak(usize),
    /// Starts in the worker's buffer and runs past its end.
    Straddle(usize),
    /// Longer than any lease may be.
    TooLong,
}

/// How a message goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum How {
    /// A call, waiting for the reply.
    Call,
    /// A one-way message where a call is expected (a wrong kind).
    Send,
    /// A one-way message with data.
    SendData,
    /// A call from a child the worker kills while it waits: a reply
    /// handle the server then holds for a caller that is gone.
    Doomed,
}

/// One message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Msg {
    pub target: usize,
    pub op: u64,
    pub words: [Word; 3],
    pub send: Buf,
    pub recv: Buf,
    pub how: How,
}

/// Paths the data may hold: the worker's own (`%` becomes its directory),
/// system ones (the monitor must refuse the unprivileged worker), odd ones.
pub const PATHS: &[&str] = &[
    "%/f",
    "%/d",
    "%/new",
    "%",
    "/",
    "",
    ".",
    "..",
    "/tmp",
    "/etc/inittab",
    "/bin/sh",
    "/dev/null",
    "/dev/vda",
    "/dev/ram0",
    "/dev/net",
    "/dev/tty",
    "/disk",
    "/disk/lost+found",
    "%/../../../etc/inittab",
    "%/a/b/c/d/e",
    // Odd spellings, inside the worker's own directory: what a worker
    // makes in the shared `/tmp` would outlive the run.
    "%///x//",
    "%/\u{ff}\u{fe}",
    "/proc/1",
];

/// The generator: xorshift, seeded per message so that any message
/// regenerates alone.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        // splitmix64 of the seed, so that near seeds give unrelated streams.
        let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        Rng((z ^ (z >> 31)) | 1)
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

const PAGE: u64 = abi::layout::PAGE_SIZE;
/// The worker's own buffers are this long; `Own` lengths stay inside.
pub const OWN_BYTES: usize = 3 * PAGE as usize + 64;

/// Values that sit on edges: zero, one, page multiples and neighbours,
/// the largest, the sign bit.
fn edge(r: &mut Rng) -> u64 {
    const EDGES: [u64; 14] = [
        0,
        1,
        2,
        511,
        512,
        PAGE - 1,
        PAGE,
        PAGE + 1,
        1 << 20,
        u32::MAX as u64,
        i64::MAX as u64,
        1 << 63,
        u64::MAX,
        u64::MAX - 1,
    ];
    EDGES[r.below(EDGES.len() as u64) as usize]
}

fn word(r: &mut Rng, has_handle: bool) -> Word {
    match r.below(10) {
        0..=2 => Word::Value(edge(r)),
        3..=5 => Word::Value(r.below(70)),
        6 => Word::Value(r.next()),
        7 if has_handle => Word::Handle,
        8 => Word::HandleOf(r.below(TARGETS.len() as u64) as usize),
        _ => Word::Value(r.below(8192)),
    }
}

fn fill(r: &mut Rng) -> Fill {
    let paths = PATHS.len() as u64;
    match r.below(8) {
        0..=2 => Fill::Path(r.below(paths) as usize),
        3 => Fill::PathCut(r.below(paths) as usize, r.below(12) as usize),
        4 => Fill::PathPair(r.below(paths) as usize, r.below(paths) as usize),
        5 => Fill::Zeros,
        _ => Fill::Random(r.next()),
    }
}

fn length(r: &mut Rng) -> usize {
    match r.below(6) {
        0 => r.below(16) as usize,
        1 => r.below(256) as usize,
        2 => PAGE as usize,
        3 => r.below(OWN_BYTES as u64) as usize,
        4 => 1,
        _ => r.below(64) as usize,
    }
}

fn buffer(r: &mut Rng, is_send: bool) -> Buf {
    match r.below(20) {
        0..=3 => Buf::Empty,
        4..=12 => {
            let len = length(r);
            Buf::Own(len, if is_send { fill(r) } else { Fill::Zeros })
        }
        13 => Buf::Unmapped(length(r).max(1)),
        14 => Buf::Kernel(length(r).max(1)),
        15 => Buf::NonCanonical(length(r).max(1)),
        16 => Buf::Text(length(r).max(1)),
        17 => Buf::PastBreak(length(r).max(1)),
        18 => Buf::Straddle(length(r).max(2)),
        _ => Buf::TooLong,
    }
}

/// Message `index` of `batch` under `seed`, from operation set `ops`
/// (1 to [`OP_SETS`]; see the module's note).
pub fn message(seed: u64, batch: u64, index: u64, ops: u64) -> Msg {
    let mut r = Rng::new(
        seed ^ batch.wrapping_mul(0xd1b5_4a32_d192_ed03) ^ index.wrapping_mul(0x8cb9_2ba7_2f3d_8dd7),
    );
    let target = r.below(TARGETS.len() as u64) as usize;
    let kind = &TARGETS[target];
    let positional = ops >= 2 && kind.has_handle;
    let listed = kind.ops.len() + if positional { POSITIONAL_OPS.len() } else { 0 };
    let mut op = match r.below(10) {
        0..=7 => {
            let i = r.below(listed as u64) as usize;
            kind.ops.get(i).copied().unwrap_or_else(|| POSITIONAL_OPS[i - kind.ops.len()])
        }
        8 => r.below(160),
        _ => r.next(),
    };
    let unwritable = positional && op == io::OP_PWRITE && kind.never.contains(&io::OP_WRITE);
    if kind.never.contains(&op) || unwritable {
        // A harmless neighbour instead: an unknown number.
        op = op.wrapping_add(1000);
    }
    let first = if kind.has_handle {
        match r.below(10) {
            0..=6 => Word::Handle,
            7 => Word::HandleXor(1 << r.below(64)),
            _ => word(&mut r, true),
        }
    } else {
        word(&mut r, false)
    };
    let words = [first, word(&mut r, kind.has_handle), word(&mut r, kind.has_handle)];
    let mut send = buffer(&mut r, true);
    if kind.is_quiet {
        send = Buf::Empty;
    }
    let recv = buffer(&mut r, false);
    let how = if kind.blocking.contains(&op) {
        How::Doomed
    } else {
        match r.below(40) {
            0 => How::Send,
            1 => How::SendData,
            2 => How::Doomed,
            _ => How::Call,
        }
    };
    Msg { target, op, words, send, recv, how }
}
