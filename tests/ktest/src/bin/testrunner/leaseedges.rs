//! The edges of the kernel's one copy between two address spaces
//! (`usermem::copy_pieces_between`, `PageTable::copy_pieces`), through the
//! lease calls that reach it: pieces that cross a page boundary on one
//! side only, pieces of length 0 (at any address: they allege nothing),
//! and lists or ranges that go bad after a good start (an unmapped page, a
//! read-only page, a range running off its last mapped page), which must
//! be refused with `BadAddress` having moved nothing on either side.
//!
//! What it is not: the leases' rules (who may use one and until when,
//! bounds, flags: `messages::leases_*`) or random arguments
//! (`leasefuzz`).

use crate::util::{MAIN_QUEUE, TestResult, check};
use abi::msg::Kind;
use abi::{Error, ExitStatus};
use alloc::format;
use alloc::vec::Vec;
use runtime::msg::{self, ReplyHandle};
use runtime::sys;

const PAGE: u64 = abi::layout::PAGE_SIZE;
/// An address nothing maps (as `messages::empty_buffers_need_no_memory`).
const UNMAPPED: u64 = 0xdead_0000;
/// The end of the runner's stack: its last page is mapped and writable
/// (the loader maps the whole stack), the page at `USER_STACK_TOP` never is
/// (the argument page is the one after it), so a range can start well and
/// run off the end of its last mapped page.
const STACK_END: u64 = abi::layout::USER_STACK_TOP;

/// Byte `i` of tchild's lent send buffer (`lease-call`), as in
/// `messages::lease_pattern`.
fn lease_pattern(i: usize) -> u8 {
    (i * 7 + i / 251) as u8
}

/// The last `N` bytes of the runner's stack, as they are now: the top of
/// the first frames (`_start`, `main`), which do not change while a test
/// runs, so a refused copy into them must leave them so.
fn stack_end<const N: usize>() -> [u8; N] {
    let mut out = [0u8; N];
    // SAFETY: a read of mapped, initialised stack bytes of this process,
    // as bytes, without a reference that outlives the copy.
    unsafe { core::ptr::copy_nonoverlapping((STACK_END - N as u64) as *const u8, out.as_mut_ptr(), N) };
    out
}

/// A lease call with a raw segment list: `(address, length)` pairs.
fn raw_segments(call: abi::Call, h: ReplyHandle, offset: u64, list: &[[u64; 2]]) -> Result<usize, Error> {
    let args = [h.0, offset, list.as_ptr() as u64, list.len() as u64, abi::lease::SEGMENTS, 0];
    abi::decode_return(msg::raw(call as u64, args, [0; 4]).rax).map(|n| n as usize)
}

/// A plain lease call on a raw range.
fn raw_range(
    call: abi::Call,
    h: ReplyHandle,
    offset: u64,
    addr: u64,
    len: u64,
    flags: u64,
) -> Result<usize, Error> {
    let args = [h.0, offset, addr, len, flags, 0];
    abi::decode_return(msg::raw(call as u64, args, [0; 4]).rax).map(|n| n as usize)
}

fn expect(r: Result<usize, Error>, want: Result<usize, Error>, what: &str) -> TestResult {
    if r == want { Ok(()) } else { Err(format!("{what}: got {r:?}, expected {want:?}")) }
}

pub fn lease_copies_at_page_edges() -> TestResult {
    use abi::Call::{LeaseRead, LeaseWrite};
    check(sys::page_owners(STACK_END - PAGE, PAGE).is_ok(), "the stack's last page is mapped")?;
    check(sys::page_owners(STACK_END, PAGE) == Err(Error::BadAddress), "the page after the stack is not")?;
    let me = sys::getpid();
    let (send_len, recv_len) = (3 * PAGE as usize, 3 * PAGE as usize);
    let child = sys::spawn("tchild", &format!("lease-call {} 0 {send_len} {recv_len}", me.0))
        .map_err(|e| e.name())?;
    let r = msg::receive_data(MAIN_QUEUE, &mut []).map_err(|e| e.name())?;
    check(r.kind == Kind::Call && r.sender == child, "the lending call arrives")?;
    let h = r.reply;
    // The runner's side: four pages, from a page boundary `b`.
    let mut store = alloc::vec![0u8; 5 * PAGE as usize];
    let skip = (PAGE as usize - store.as_ptr() as usize % PAGE as usize) % PAGE as usize;
    let own = &mut store[skip..skip + 4 * PAGE as usize];
    let b = own.as_ptr() as u64;
    let p = PAGE as usize;

    // Crossing on one side only, and empty pieces anywhere. Read from the
    // lent offset PAGE - 30: A (20 bytes) crosses nothing; B (40) crosses
    // the lent page at PAGE; C is empty, at an unmapped address; D (100)
    // crosses the runner's page at b + 2 PAGE, not the lent side's.
    own.fill(0x5a);
    let list = [[b + 100, 20], [b + 200, 40], [UNMAPPED, 0], [b + 2 * PAGE - 50, 100]];
    expect(raw_segments(LeaseRead, h, PAGE - 30, &list), Ok(160), "a read crossing one side at a time")?;
    let at = |lent: usize, addr: usize, n: usize| (0..n).all(|i| own[addr + i] == lease_pattern(lent + i));
    check(at(p - 30, 100, 20), "segment A holds its bytes")?;
    check(at(p - 10, 200, 40), "segment B, across the lent page boundary, holds its bytes")?;
    check(at(p + 30, 2 * p - 50, 100), "segment D, across the runner's page boundary, holds its bytes")?;
    let untouched = (0..4 * p)
        .filter(|i| {
            !(100..120).contains(i) && !(200..240).contains(i) && !(2 * p - 50..2 * p + 50).contains(i)
        })
        .all(|i| own[i] == 0x5a);
    check(untouched, "nothing around the segments moved")?;
    expect(raw_segments(LeaseRead, h, 0, &[[UNMAPPED, 0], [0, 0]]), Ok(0), "a list of empty segments")?;
    expect(raw_range(LeaseRead, h, 0, UNMAPPED, 0, 0), Ok(0), "an empty range at an unmapped address")?;

    // The caller's whole receive buffer but three bytes, from pieces cut
    // so that page boundaries fall at different places on the two sides
    // (the runner's side starts 7 bytes into a page), with an empty piece
    // at an unmapped address among them, half of it a byte at a time.
    let written = recv_len - 3;
    for (i, x) in own[7..7 + written].iter_mut().enumerate() {
        *x = !lease_pattern(i);
    }
    let cuts = [0, 1, p, p, 2 * p + 1, written];
    let mut list: Vec<[u64; 2]> =
        cuts.windows(2).map(|w| [b + 7 + w[0] as u64, (w[1] - w[0]) as u64]).collect();
    list[2] = [UNMAPPED, 0];
    let n = raw_segments(LeaseWrite, h, 0, &list[..3]).map_err(|e| format!("first pieces: {}", e.name()))?;
    check(n == p, "the first pieces move their bytes")?;
    let half = raw_range(LeaseWrite, h, p as u64, b + 7 + p as u64, p as u64 + 1, abi::lease::BYTE_AT_A_TIME);
    expect(half, Ok(p + 1), "a range a byte at a time, across both sides' pages")?;
    let n = raw_segments(LeaseWrite, h, 2 * p as u64 + 1, &list[4..]).map_err(|e| e.name())?;
    check(n == written - 2 * p - 1, "the last piece moves its bytes")?;
    // Then lists that go bad after good segments: nothing moves on the
    // side written (the runner's, for lease_read; for lease_write, the
    // caller's buffer, whose bytes above would be overwritten: tchild
    // checks them at the end).
    own.fill(0x5a);
    let fine = [b + 10, 100];
    let crossing = [b + PAGE - 50, 100];
    for (last, what) in [
        ([UNMAPPED, 10], "an unmapped page"),
        ([lease_pattern as *const () as u64, 10], "a read-only page (the runner's text)"),
        ([STACK_END - 50, 100], "a page followed by an unmapped one (the stack's end)"),
    ] {
        let before = stack_end::<50>();
        let refused = raw_segments(LeaseRead, h, 0, &[fine, crossing, last]);
        expect(refused, Err(Error::BadAddress), &format!("a read list ending in {what}"))?;
        check(own.iter().all(|&x| x == 0x5a), &format!("a read list ending in {what} moved nothing"))?;
        check(stack_end::<50>() == before, &format!("a read list ending in {what} left the stack's end"))?;
        if !what.starts_with("a read-only") {
            let refused = raw_segments(LeaseWrite, h, 0, &[fine, crossing, last]);
            expect(refused, Err(Error::BadAddress), &format!("a write list ending in {what}"))?;
        }
    }
    // One range running off its last mapped page, each way and each mode.
    for flags in [0, abi::lease::BYTE_AT_A_TIME] {
        let before = stack_end::<50>();
        let refused = raw_range(LeaseRead, h, 0, STACK_END - 50, 100, flags);
        expect(refused, Err(Error::BadAddress), &format!("a read off the last page (flags {flags})"))?;
        check(stack_end::<50>() == before, "a refused read moved nothing")?;
        let refused = raw_range(LeaseWrite, h, 0, STACK_END - 50, 100, flags);
        expect(refused, Err(Error::BadAddress), &format!("a write off the last page (flags {flags})"))?;
    }

    msg::reply(h, &[written as u64, 0, 0, 0], &[]).map_err(|e| e.name())?;
    let (_, status) = sys::wait(Some(child)).map_err(|e| e.name())?;
    check(
        status == ExitStatus::Exited(0),
        "the caller's buffer holds exactly the pieces' bytes (nothing from a refused list)",
    )
}

/// A caller that lends buffers whose ends wrap past 2^64 (the kernel does
/// not look at a call's buffers until a lease uses them) lends nothing: an
/// offset that wraps round to its own data is refused with `BadAddress`,
/// in every mode, and its data is left alone (`tchild
/// lease-call-wrapping` checks it).
pub fn a_lease_that_wraps_lends_nothing() -> TestResult {
    let me = sys::getpid();
    let child = sys::spawn("tchild", &format!("lease-call-wrapping {} 0", me.0)).map_err(|e| e.name())?;
    let r = msg::receive_data(MAIN_QUEUE, &mut []).map_err(|e| e.name())?;
    check(r.kind == Kind::Call && r.sender == child, "the lending call arrives")?;
    let (h, offset) = (r.reply, r.message[1]);
    let ones = [0xffu8; 64];
    let mut got = [0u8; 64];
    let refused = Err(Error::BadAddress);
    for flags in [0, abi::lease::BYTE_AT_A_TIME] {
        expect(
            msg::lease_write(h, offset, &ones, flags),
            refused,
            &format!("a wrapped lease write ({flags})"),
        )?;
        expect(
            msg::lease_read(h, offset, &mut got, flags),
            refused,
            &format!("a wrapped lease read ({flags})"),
        )?;
    }
    expect(msg::lease_write_segments(h, offset, &[&ones[..]]), refused, "a wrapped segmented write")?;
    expect(msg::lease_read_segments(h, offset, &mut [&mut got[..]]), refused, "a wrapped segmented read")?;
    msg::reply(h, &[0; 4], &[]).map_err(|e| e.name())?;
    let (_, status) = sys::wait(Some(child)).map_err(|e| e.name())?;
    check(status == ExitStatus::Exited(0), &format!("the wrapping caller: {status:?}"))
}
