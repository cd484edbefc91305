//! Message words shared by the test runner and `tmsg`, the program whose
//! roles are the peers of the message-system tests. Both programs include
//! this file with `#[path]`; it holds constants only.

/// Word 0 of a `tmsg` role's first message, on the runner's queue 0: the
/// role has started, and word 1 is the queue it serves.
pub const HELLO: u64 = 0x0048_454c_4c4f;
