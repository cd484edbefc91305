//! The monitor's part in restarting dead drivers (docs/reliability.md,
//! "Restarting dead servers and drivers"): init supervises the servers
//! and drivers it starts and starts a dead one again (`apps/init`); the
//! monitor only
//! - forwards root's requests to end or start a supervised program to
//!   init (`monitor::OP_SERVER_KILL`, `OP_SERVER_START`), as one-way
//!   messages: init calls the monitor (its session's `wait`), so a call
//!   the other way could leave each waiting for the other;
//! - finds a restarted driver again: init tells it when one of its
//!   children ends (`monitor::OP_SERVER_ENDED`), and the links to it and
//!   the cached lookups naming it go; an open that raced that message and
//!   failed on a device entry whose driver has ended is looked up once
//!   more (init has made the entry name the new driver by then, or the
//!   open fails as before);
//! - gives an ext2 volume's manager handles at its restarted block
//!   driver when init says it is ready (`monitor::OP_SERVER_STARTED`;
//!   the manager kept its cache meanwhile), and drops the volume when
//!   init gives the driver up (mounts.rs).
//!
//! What it is not: the supervisor. It keeps no list of servers and never
//! starts or ends one itself (only init may end init's children).

use crate::state::{Answer, Monitor, answer};
use abi::Pid;
use protocols::init;
use protocols::unix::{Errno, FdInfo, errno};
use runtime::msg::{self, Queue};

impl Monitor {
    /// `OP_SERVER_KILL` and `OP_SERVER_START`: root's request, forwarded
    /// to init. Word 0 = 0: init was asked (not that it did it).
    pub fn server_request(&mut self, me: u64, op: u64, data: &[u8]) -> Answer {
        if self.procs[&me].uid != 0 {
            return answer(Err(errno::EPERM));
        }
        if data.is_empty() || data.len() > protocols::unix::PROCESS_NAME_BYTES || data.contains(&0) {
            return answer(Err(errno::EINVAL));
        }
        let starter = self.starter;
        let sent = self
            .link(starter, init::QUEUE)
            .and_then(|l| msg::send_data(l, &[op, 0, 0, 0], data).map_err(crate::state::kernel_errno));
        answer(sent.map(|()| 0))
    }

    /// init's `OP_SERVER_ENDED`: `pid` has ended. Its links go (a link
    /// slot each, which a driver restarted many times would otherwise use
    /// up), and so do the cached lookups of the device entries naming it,
    /// so that the next open finds the entry init makes for the new one.
    pub fn server_ended(&mut self, pid: Pid, for_good: bool) {
        self.block_driver_ended(pid, for_good);
        self.drop_link(pid);
        self.lookups.retain(|_, (st, rest)| rest.is_none() || st.device_pid != pid.0);
    }

    /// After an open of `abs` failed with `failed`: if the lookup cache
    /// named a device whose driver has ended (a driver init restarts),
    /// forget that entry and the link to the dead driver, and open once
    /// more through a fresh lookup. Otherwise the first error stands,
    /// except that a device whose driver has ended (not restarted yet, or
    /// given up) is `ENODEV` ("no such device"), not the `ESRCH` a
    /// dead manager's link gives.
    pub fn open_after_restart(
        &mut self,
        me: u64,
        abs: &str,
        flags: u64,
        create_mode: u32,
        failed: Errno,
    ) -> Result<FdInfo, Errno> {
        self.open_again(me, abs, flags, create_mode, failed)
            .map_err(|e| if e == errno::ESRCH { errno::ENODEV } else { e })
    }

    fn open_again(
        &mut self,
        me: u64,
        abs: &str,
        flags: u64,
        create_mode: u32,
        failed: Errno,
    ) -> Result<FdInfo, Errno> {
        let Some((st, Some(_))) = self.lookups.get(abs) else { return Err(failed) };
        let driver = Pid(st.device_pid);
        match msg::open_link(driver, Queue(st.device_queue)) {
            Ok(l) => {
                // Alive: the driver itself refused the open.
                let _ = msg::close_link(l);
                Err(failed)
            }
            Err(_) => {
                self.lookups.remove(abs);
                self.drop_link(driver);
                self.open_object(me, abs, flags, create_mode)
            }
        }
    }
}
