//! Message words shared by the test runner and tchild's client roles in the
//! tests where a server dies under its clients (issue 5: "a crashing or
//! killed server must not take the system down: its clients get errors").
//! Both programs include this file with `#[path]`; it holds constants only.

/// Word 0 of a `call-loop` client's one message to its parent's queue 0:
/// its first call was served and it now calls in a loop (word 1 = 1), or
/// the first call failed and it is ending (word 1 = 0). It always sends one,
/// so the runner never waits for a message that cannot come.
pub const LOOPING: u64 = 0x004c_4f4f_5049;
/// Word 0 of `heap-touch`'s first message to its parent's queue 0: word 1
/// is the queue where it waits for each go-ahead.
pub const HEAP_HELLO: u64 = 0x0048_4845_4c4f;
/// Word 0 of `heap-touch`'s message after its first heap page arrived.
pub const HEAP_TOUCHED: u64 = 0x0048_544f_5543;
