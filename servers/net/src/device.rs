//! Finding the card's driver: its device entry (`/dev/eth0`) at the
//! directory manager names its process and queue. A leaf: the link
//! (link.rs) and the stack (stack.rs) both use it, and it uses neither.
//!
//! What it is not: a check of who may talk to the card; the driver
//! decides that (it serves only the process init names, see
//! `drivers/virtio-net`).

use protocols::net::eth;
use protocols::unix::{Stat, fs};
use runtime::msg::{self, Queue};
use runtime::sys;

/// The card's driver, from its device entry at the directory manager.
pub(crate) fn find_driver() -> Option<(abi::Pid, u32)> {
    let (fs_pid, fs_queue) = sys::bootstrap(abi::bootstrap::FS)?;
    let link = msg::open_link(fs_pid, Queue(fs_queue)).ok()?;
    let mut reply = [0u8; Stat::BYTES];
    let found = msg::call(link, &[fs::OP_LOOKUP, 0, 0, 0], eth::DEVICE_PATH.as_bytes(), &mut reply);
    let _ = msg::close_link(link);
    let (w, _) = found.ok()?;
    protocols::unix::result(w[0]).ok()?;
    let st = Stat::decode(&reply)?;
    (st.device_pid != 0).then_some((abi::Pid(st.device_pid), st.device_queue))
}
