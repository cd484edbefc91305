//! A fuzzer over the lease calls (issue 11): a server (the runner) holding
//! two live callers' leases makes thousands of `lease_read`,
//! `lease_write` and `lease_copy` calls with random handles (the real
//! ones, used-up ones, forged numbers), offsets, lengths, local addresses
//! (its own buffer, unmapped, kernel, non-canonical) and flags, against
//! those callers and one that was killed mid-call. Every answer must be a
//! known error code or the whole length; a call whose arguments are all
//! valid must succeed; both callers must get their replies and end well,
//! and the runner goes on (the next tests run in it).

use crate::util::{MAIN_QUEUE, TestResult, check};
use abi::msg::Kind;
use abi::{Call, Error, ExitStatus};
use alloc::format;
use alloc::vec;
use runtime::msg::{self, ReplyHandle};
use runtime::sys;

const PAGE: u64 = abi::layout::PAGE_SIZE;
/// Random lease calls made.
const ROUNDS: usize = 4000;

/// A live caller's lease: its handle and the lengths it lent.
#[derive(Clone, Copy)]
struct Lease {
    handle: u64,
    send_len: u64,
    recv_len: u64,
}

/// Receive the call of a `lease-call ... any` child lending these lengths.
fn lending_call(send_len: u64, recv_len: u64) -> Result<(abi::Pid, Lease), alloc::string::String> {
    let me = sys::getpid();
    let child = sys::spawn("tchild", &format!("lease-call {} 0 {send_len} {recv_len} any", me.0))
        .map_err(|e| e.name())?;
    // A send buffer of at most a message's data travels with the call.
    let mut data = vec![0u8; abi::msg::MAX_DATA_BYTES as usize];
    let r = msg::receive_data(MAIN_QUEUE, &mut data).map_err(|e| e.name())?;
    check(r.kind == Kind::Call && r.sender == child, "the lending call arrives")?;
    Ok((child, Lease { handle: r.reply.0, send_len, recv_len }))
}

pub fn leases_survive_random_arguments() -> TestResult {
    let (a_pid, a) = lending_call(3 * PAGE + 100, 2 * PAGE + 7)?;
    let (b_pid, b) = lending_call(5000, 5 * PAGE)?;
    let (dead_pid, dead) = lending_call(PAGE, PAGE)?;
    sys::kill(dead_pid).map_err(|e| e.name())?;
    sys::wait(Some(dead_pid)).map_err(|e| e.name())?;
    // The runner's own memory the leases copy to and from: big enough for
    // any in-bounds length at any of the offsets below.
    let mut own = vec![0u8; 8 * PAGE as usize];
    let own_addr = own.as_mut_ptr() as u64;
    let own_len = own.len() as u64;
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let live = [a, b];
    let (mut successes, mut refusals) = (0usize, 0usize);
    for round in 0..ROUNDS {
        let pick = |r: u64, n: usize| (r % n as u64) as usize;
        // Handles: the two live ones most often, the dead caller's, and
        // forged ones (neighbours of real ones, zero, all ones, random).
        let handle = |r: u64| -> u64 {
            match r % 8 {
                0..=2 => a.handle,
                3..=5 => b.handle,
                6 => [dead.handle, a.handle ^ (1 << 32), b.handle + 1, 0, u64::MAX, abi::msg::NO_REPLY]
                    [pick(r >> 3, 6)],
                _ => r >> 3,
            }
        };
        let lease_of = |h: u64| live.iter().find(|l| l.handle == h).copied();
        let edge = |r: u64, limit: u64| -> u64 {
            match r % 8 {
                0 => 0,
                1 => 1,
                2 => limit,
                3 => limit.saturating_sub(1),
                4 => limit + 1,
                5 => u64::MAX - (r >> 3) % 3,
                _ => (r >> 3) % (limit + 2),
            }
        };
        let addr = |r: u64| -> u64 {
            match r % 8 {
                0..=3 => own_addr + (r >> 3) % PAGE,
                4 => 0,
                5 => 0xdead_0000,
                6 => 0xffff_ffff_8010_0000,
                _ => 0x8000_0000_0000_0000 | (r >> 3),
            }
        };
        let flags = |r: u64| -> u64 {
            match r % 8 {
                0..=3 => 0,
                4 => abi::lease::BYTE_AT_A_TIME,
                5 => abi::lease::MAY_LOAN,
                6 => abi::lease::BYTE_AT_A_TIME | abi::lease::MAY_LOAN,
                _ => r >> 3,
            }
        };
        let f = flags(next());
        let known_flags = f == 0 || f == abi::lease::BYTE_AT_A_TIME || f == abi::lease::MAY_LOAN;
        let (call, args, valid) = match next() % 3 {
            op @ (0 | 1) => {
                let h = handle(next());
                let lease = lease_of(h);
                let lent = lease.map_or(PAGE, |l| if op == 0 { l.send_len } else { l.recv_len });
                let (offset, len, at) = (edge(next(), lent), edge(next(), lent), addr(next()));
                let in_bounds = offset.checked_add(len).is_some_and(|end| end <= lent);
                let own_ok =
                    at >= own_addr && at.checked_add(len).is_some_and(|end| end <= own_addr + own_len);
                let call = if op == 0 { Call::LeaseRead } else { Call::LeaseWrite };
                (call, [h, offset, at, len, f, 0], lease.is_some() && in_bounds && own_ok && known_flags)
            }
            _ => {
                let (src, dst) = (handle(next()), handle(next()));
                let (sl, dl) = (lease_of(src), lease_of(dst));
                let src_len = sl.map_or(PAGE, |l| l.send_len);
                let dst_len = dl.map_or(PAGE, |l| l.recv_len);
                let (so, d_o, len) = (edge(next(), src_len), edge(next(), dst_len), edge(next(), src_len));
                let fits = |o: u64, lent: u64| o.checked_add(len).is_some_and(|end| end <= lent);
                let valid =
                    sl.is_some() && dl.is_some() && src != dst && fits(so, src_len) && fits(d_o, dst_len);
                (Call::LeaseCopy, [src, so, dst, d_o, len, f], valid && known_flags)
            }
        };
        let rax = msg::raw(call as u64, args, [0; 4]).rax;
        let result = abi::decode_return(rax);
        match result {
            Ok(n) if n == args[if call == Call::LeaseCopy { 4 } else { 3 }] => successes += 1,
            Ok(n) => {
                return Err(format!(
                    "round {round}: {call:?} {args:x?} moved {n} bytes, not the length asked"
                ));
            }
            Err(_) if (rax as i64) < 0 && Error::from_raw(rax.wrapping_neg()).is_none() => {
                return Err(format!("round {round}: {call:?} {args:x?} answered an unknown code {rax:#x}"));
            }
            Err(e) if valid => {
                return Err(format!("round {round}: {call:?} {args:x?} with valid arguments failed: {e:?}"));
            }
            Err(_) => refusals += 1,
        }
    }
    check(successes > ROUNDS / 20 && refusals > ROUNDS / 4, "the fuzzer reached both outcomes")?;
    // Both live callers get their answers and end well; their handles are
    // then used up.
    for (pid, lease) in [(a_pid, a), (b_pid, b)] {
        msg::reply(ReplyHandle(lease.handle), &[0; 4], &[]).map_err(|e| e.name())?;
        let (_, status) = sys::wait(Some(pid)).map_err(|e| e.name())?;
        check(status == ExitStatus::Exited(0), "a fuzzed caller ends well")?;
        let mut one = [0u8; 1];
        let after = msg::lease_read(ReplyHandle(lease.handle), 0, &mut one, 0);
        check(after == Err(Error::BadReplyHandle), "a lease after the reply is refused")?;
    }
    Ok(())
}
