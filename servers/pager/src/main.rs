//! pager: the first user-level pager (Ridge's virtual memory manager, in
//! its smallest form). Clients register regions with it (see
//! `protocols::pager`) and give them to it with `set_pager`; the kernel
//! then sends it each fault in those regions, and it answers with
//! `page_resolve`:
//! - zero regions: a fresh zero-filled writable page;
//! - template regions: the template page itself, shared copy-on-write, so
//!   a client that writes gets its own copy and the template stays as it
//!   was (the mechanism fork is built on in the UNIX personality);
//! - refused regions: the fault fails and the client ends.
//!
//! Arguments: the pid of the process to tell when it is ready.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

use abi::msg::Kind;
use abi::{Pid, pager};
use protocols::pager::{
    OP_CHECK_TEMPLATE, OP_REGISTER_REFUSE, OP_REGISTER_STALL, OP_REGISTER_TEMPLATE, OP_REGISTER_ZERO, READY,
};
use runtime::msg::{self, Page, Queue};
use runtime::{Args, sys};

runtime::entry!(main);

const MAX_REGIONS: usize = 32;
const MAX_TEMPLATES: usize = 4;

#[derive(Clone, Copy)]
enum Policy {
    Zero,
    Template(usize),
    Refuse,
    Stall,
}

#[derive(Clone, Copy)]
struct Region {
    client: Pid,
    start: u64,
    end: u64,
    policy: Policy,
}

struct Template {
    page: Page,
    /// What the page held when registered, to check it later.
    original: Page,
}

fn main(args: Args) -> i32 {
    let starter = args.get(0).and_then(|s| s.parse::<u64>().ok()).map(Pid);
    let Ok(queue) = msg::open_queue(32, true) else { return 1 };
    if let Some(starter) = starter {
        let ready = msg::open_link(starter, Queue(protocols::STARTER_QUEUE))
            .and_then(|l| msg::send(l, &[READY, queue.0 as u64, 0, 0]));
        if ready.is_err() {
            return 2;
        }
    }
    let mut regions: [Option<Region>; MAX_REGIONS] = [None; MAX_REGIONS];
    // Templates live in this process's memory: SHARE maps these very pages.
    let mut templates: [Option<Template>; MAX_TEMPLATES] = [const { None }; MAX_TEMPLATES];
    let mut buf = Page::zeroed();
    loop {
        let Ok(r) = msg::receive_data(queue, &mut buf.0) else { continue };
        match r.kind {
            Kind::PageFault => {
                let [pid, addr, _error, start] = r.message;
                let region =
                    regions.iter().flatten().find(|g| g.client.0 == pid && g.start == start && addr < g.end);
                let _ = match region.map(|g| g.policy) {
                    Some(Policy::Zero) => sys::page_resolve(Pid(pid), addr, 0, pager::ZERO | pager::WRITABLE),
                    Some(Policy::Template(t)) => match &templates[t] {
                        Some(t) => sys::page_resolve(
                            Pid(pid),
                            addr,
                            t.page.0.as_ptr() as u64,
                            pager::SHARE | pager::WRITABLE,
                        ),
                        None => sys::page_resolve(Pid(pid), addr, 0, pager::FAIL),
                    },
                    Some(Policy::Stall) => Ok(()),
                    Some(Policy::Refuse) | None => sys::page_resolve(Pid(pid), addr, 0, pager::FAIL),
                };
            }
            Kind::Call => {
                let [op, start, len, _] = r.message;
                let end = start.saturating_add(len);
                let policy = match op {
                    OP_REGISTER_ZERO => Some(Policy::Zero),
                    OP_REGISTER_REFUSE => Some(Policy::Refuse),
                    OP_REGISTER_STALL => Some(Policy::Stall),
                    OP_REGISTER_TEMPLATE => templates.iter().position(Option::is_none).map(|i| {
                        let mut t = Template { page: Page::zeroed(), original: Page::zeroed() };
                        t.page.0[..r.len].copy_from_slice(&buf.0[..r.len]);
                        t.original.0[..r.len].copy_from_slice(&buf.0[..r.len]);
                        templates[i] = Some(t);
                        Policy::Template(i)
                    }),
                    OP_CHECK_TEMPLATE => {
                        let differing =
                            templates.get(start as usize).and_then(Option::as_ref).map_or(u64::MAX, |t| {
                                t.page.0.iter().zip(t.original.0.iter()).filter(|(a, b)| a != b).count()
                                    as u64
                            });
                        let _ = msg::reply(r.reply, &[differing, 0, 0, 0], &[]);
                        continue;
                    }
                    _ => None,
                };
                let slot = regions.iter().position(Option::is_none);
                let answer = match (policy, slot) {
                    (Some(policy), Some(i)) => {
                        regions[i] = Some(Region { client: r.sender, start, end, policy });
                        let template = if let Policy::Template(t) = policy { t as u64 } else { 0 };
                        [0, template, 0, 0]
                    }
                    _ => [u64::MAX, 0, 0, 0],
                };
                let _ = msg::reply(r.reply, &answer, &[]);
            }
            _ => {}
        }
    }
}
