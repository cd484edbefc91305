//! Host tests of the pipe: each rule of the module doc, and a random
//! model run over every design that checks the invariants after every
//! step and that readers get exactly the written stream, in order.

use super::*;
use protocols::unix::errno::{EFAULT, EIO};
use std::collections::{BTreeMap, BTreeSet};
use std::vec;
use std::vec::Vec;

/// The processes around a pipe: writers' lent buffers, readers' lent
/// buffers, who has ended, and every answer.
#[derive(Default)]
struct World {
    writes: BTreeMap<u32, Vec<u8>>,
    reads: BTreeMap<u32, Vec<u8>>,
    dead: BTreeSet<u32>,
    replies: Vec<(u32, Result<usize, Errno>)>,
    direct_copies: usize,
}

impl Mover<u32> for World {
    fn pull(&mut self, w: u32, offset: usize, out: &mut [u8]) -> Result<(), Errno> {
        if self.dead.contains(&w) {
            return Err(EIO);
        }
        let data = self.writes.get(&w).ok_or(EFAULT)?;
        out.copy_from_slice(data.get(offset..offset + out.len()).ok_or(EFAULT)?);
        Ok(())
    }
    fn push(&mut self, r: u32, offset: usize, bytes: &[u8]) -> Result<(), Errno> {
        if self.dead.contains(&r) {
            return Err(EIO);
        }
        let buf = self.reads.get_mut(&r).ok_or(EFAULT)?;
        buf.get_mut(offset..offset + bytes.len()).ok_or(EFAULT)?.copy_from_slice(bytes);
        Ok(())
    }
    fn direct(&mut self, w: u32, w_offset: usize, r: u32, len: usize) -> Result<(), Fault> {
        let gone = |side| Fault { side, errno: EIO };
        if self.dead.contains(&w) {
            return Err(gone(Side::Writer));
        }
        if self.dead.contains(&r) {
            return Err(gone(Side::Reader));
        }
        let src = self.writes[&w][w_offset..w_offset + len].to_vec();
        self.reads.get_mut(&r).ok_or(gone(Side::Reader))?[..len].copy_from_slice(&src);
        self.direct_copies += 1;
        Ok(())
    }
    fn reply(&mut self, token: u32, result: Result<usize, Errno>) {
        assert!(!self.replies.iter().any(|(t, _)| *t == token), "call {token} answered twice");
        self.replies.push((token, result));
    }
}

impl World {
    fn write(&mut self, p: &mut Pipe<u32>, token: u32, data: &[u8]) {
        self.writes.insert(token, data.to_vec());
        // Up to one page travels with the message, as the kernel does it.
        let inline = if data.len() <= 4096 { data } else { &[][..] };
        p.write(token, data.len(), inline, self);
        p.check().unwrap();
    }
    fn read(&mut self, p: &mut Pipe<u32>, token: u32, max: usize) {
        self.reads.insert(token, vec![0; max]);
        p.read(token, max, self);
        p.check().unwrap();
    }
    fn answer(&self, token: u32) -> Option<Result<usize, Errno>> {
        self.replies.iter().find(|(t, _)| *t == token).map(|(_, r)| *r)
    }
    /// The bytes read by `token` (it must have been answered with data).
    fn got(&self, token: u32) -> Vec<u8> {
        match self.answer(token) {
            Some(Ok(n)) => self.reads[&token][..n].to_vec(),
            other => panic!("read {token} answered {other:?}"),
        }
    }
}

fn limits(capacity: usize, atomic: usize, loan_min: Option<usize>) -> Limits {
    Limits { capacity_bytes: capacity, atomic_bytes: atomic, max_pending_calls: 8, loan_min_bytes: loan_min }
}

#[test]
fn ring_wraps_around() {
    let mut r = Ring::new(8).unwrap();
    assert_eq!(r.push(b"abcdef"), 6);
    let mut out = [0u8; 4];
    assert_eq!(r.pop(&mut out), 4);
    assert_eq!(&out, b"abcd");
    assert_eq!(r.push(b"ghijklmn"), 6);
    assert_eq!((r.len(), r.free()), (8, 0));
    assert_eq!(r.push(b"z"), 0);
    let (a, b) = r.readable();
    assert_eq!((a, b), (&b"efgh"[..], &b"ijkl"[..]));
    let mut out = [0u8; 8];
    assert_eq!(r.pop(&mut out), 8);
    assert_eq!(&out, b"efghijkl");
    assert!(r.is_empty());
}

#[test]
fn ring_many_wraps_keep_order() {
    let mut r = Ring::new(7).unwrap();
    let (mut next_in, mut next_out) = (0u8, 0u8);
    for step in 0..200usize {
        let chunk: Vec<u8> = (0..(step % 5 + 1)).map(|i| next_in.wrapping_add(i as u8)).collect();
        next_in = next_in.wrapping_add(r.push(&chunk) as u8);
        let mut out = vec![0u8; step % 4 + 1];
        let m = r.pop(&mut out);
        for &b in &out[..m] {
            assert_eq!(b, next_out);
            next_out = next_out.wrapping_add(1);
        }
    }
}

#[test]
fn write_then_read_and_no_buffer_before_the_first_write() {
    let mut p = Pipe::new(limits(16, 8, None));
    let mut w = World::default();
    assert!(!p.has_buffer());
    w.read(&mut p, 1, 4);
    assert!(!p.has_buffer(), "a waiting read needs no buffer");
    w.write(&mut p, 2, b"hello");
    assert!(p.has_buffer());
    assert_eq!(w.got(1), b"hell");
    assert_eq!(w.answer(2), Some(Ok(5)));
    assert_eq!(p.buffered(), 1);
    w.read(&mut p, 3, 100);
    assert_eq!(w.got(3), b"o");
}

#[test]
fn readers_wait_in_order_and_end_of_file_answers_them() {
    let mut p = Pipe::new(limits(16, 8, None));
    let mut w = World::default();
    w.read(&mut p, 1, 4);
    w.read(&mut p, 2, 4);
    w.read(&mut p, 3, 4);
    w.write(&mut p, 9, b"abcdef");
    assert_eq!((w.got(1), w.got(2)), (b"abcd".to_vec(), b"ef".to_vec()));
    assert_eq!(w.answer(3), None);
    p.close(End::Write, &mut w).unwrap();
    assert_eq!(w.answer(3), Some(Ok(0)));
    w.read(&mut p, 4, 4);
    assert_eq!(w.answer(4), Some(Ok(0)), "end of file repeats");
    w.write(&mut p, 5, b"x");
    assert_eq!(w.answer(5), Some(Err(EBADF)));
    assert!(!p.finished());
    p.close(End::Read, &mut w).unwrap();
    assert!(p.finished());
    assert_eq!(p.close(End::Read, &mut w), Err(EBADF));
}

#[test]
fn epipe_and_kept_writes_when_the_read_end_closes() {
    let mut p = Pipe::new(limits(4, 4, None));
    let mut w = World::default();
    w.write(&mut p, 1, b"full");
    w.write(&mut p, 2, b"xy");
    w.write(&mut p, 3, b"0123456789");
    assert_eq!(p.pending_calls(), 2);
    p.close(End::Read, &mut w).unwrap();
    assert_eq!(w.answer(2), Some(Err(EPIPE)));
    assert_eq!(w.answer(3), Some(Err(EPIPE)));
    assert!(!p.has_buffer(), "the buffer goes with the read end");
    w.write(&mut p, 4, b"more");
    assert_eq!(w.answer(4), Some(Err(EPIPE)));
    w.read(&mut p, 5, 4);
    assert_eq!(w.answer(5), Some(Err(EBADF)));
}

#[test]
fn long_write_partly_taken_reports_its_count_at_close() {
    let mut p = Pipe::new(limits(4, 2, None));
    let mut w = World::default();
    w.write(&mut p, 1, b"0123456789");
    p.close(End::Read, &mut w).unwrap();
    assert_eq!(w.answer(1), Some(Ok(4)));
}

#[test]
fn atomic_writes_are_not_split_or_reordered() {
    let mut p = Pipe::new(limits(8, 4, None));
    let mut w = World::default();
    w.write(&mut p, 1, b"AAAAAA");
    w.write(&mut p, 2, b"BBB"); // atomic: not split into the 2 free bytes
    w.write(&mut p, 3, b"C"); // would fit, but waits behind (order)
    assert_eq!((w.answer(2), w.answer(3)), (None, None));
    w.read(&mut p, 10, 1);
    assert_eq!(w.answer(2), Some(Ok(3)));
    assert_eq!(w.answer(3), None);
    w.read(&mut p, 11, 1);
    assert_eq!(w.answer(3), Some(Ok(1)));
    w.read(&mut p, 12, 100);
    assert_eq!(w.got(12), b"AAAABBBC");
}

#[test]
fn long_writes_take_what_fits_and_are_read_from_the_writer_later() {
    let mut p = Pipe::new(limits(8, 4, None));
    let mut w = World::default();
    w.read(&mut p, 9, 3);
    w.write(&mut p, 1, b"0123456789ab");
    assert_eq!(w.got(9), b"012");
    assert_eq!(w.answer(1), None);
    w.read(&mut p, 10, 4);
    assert_eq!(w.got(10), b"3456");
    assert_eq!(w.answer(1), Some(Ok(12)));
    w.read(&mut p, 11, 100);
    assert_eq!(w.got(11), b"789ab");
}

#[test]
fn a_loaned_write_goes_straight_to_readers_without_a_buffer() {
    let mut p = Pipe::new(limits(16, 4, Some(10)));
    p.grant(100);
    let mut w = World::default();
    let data: Vec<u8> = (0..40).collect();
    w.write(&mut p, 1, &data);
    assert_eq!(w.answer(1), None, "kept until read");
    assert_eq!((p.loaned(), p.buffered()), (40, 40));
    w.read(&mut p, 2, 10);
    assert_eq!(w.got(2), &data[..10]);
    assert_eq!(w.answer(1), None, "kept while the rest does not fit the buffer");
    w.read(&mut p, 3, 10);
    assert_eq!(w.got(3), &data[10..20]);
    assert_eq!(w.answer(1), None);
    w.read(&mut p, 4, 25);
    assert_eq!(w.got(4), &data[20..]);
    assert_eq!(w.answer(1), Some(Ok(40)), "answered once all is read");
    assert_eq!((w.direct_copies, p.loaned()), (3, 0));
    assert!(!p.has_buffer(), "loaned bytes never touch a buffer");
    assert_eq!(p.stats().loaned_writes, 1);
    // The rest of a loan that fits the buffer goes there when no reader
    // waits: the writer is answered, the next reader reads the buffer.
    let mut p = Pipe::new(limits(16, 4, Some(10)));
    p.grant(100);
    w.write(&mut p, 5, &data);
    w.read(&mut p, 6, 25);
    assert_eq!(w.got(6), &data[..25]);
    assert_eq!(w.answer(5), Some(Ok(40)), "the last 15 bytes went to the buffer");
    w.read(&mut p, 7, 25);
    assert_eq!(w.got(7), &data[25..]);
    assert_eq!(p.stats().unloaned_writes, 1);
}

#[test]
fn without_budget_a_loan_falls_back_to_the_buffer_and_asks() {
    let mut p = Pipe::new(limits(16, 4, Some(10)));
    let mut w = World::default();
    let data: Vec<u8> = (0..30).collect();
    w.write(&mut p, 1, &data);
    assert_eq!(p.stats().fallback_writes, 1);
    assert_eq!(p.take_wanted(), 30);
    assert_eq!(p.take_wanted(), 0, "asked once");
    assert!(p.has_buffer());
    w.read(&mut p, 2, 100);
    w.read(&mut p, 3, 100);
    assert_eq!([w.got(2), w.got(3)].concat(), data);
    assert_eq!(w.answer(1), Some(Ok(30)));
    // Granted: the next one is loaned.
    p.grant(64);
    w.write(&mut p, 4, &data);
    assert_eq!(p.stats().loaned_writes, 1);
    assert_eq!(p.loaned(), 30);
}

#[test]
fn reclaim_gives_back_unused_budget_now_and_the_rest_as_loans_end() {
    let mut p = Pipe::new(limits(16, 4, Some(10)));
    let mut w = World::default();
    p.grant(100);
    w.write(&mut p, 1, &[7; 30]);
    assert_eq!(p.reclaim(), 70);
    assert_eq!(p.granted(), 30);
    // Past the reclaim, a loan-sized write goes through the buffer and
    // does not ask for more.
    w.read(&mut p, 2, 30);
    assert_eq!(w.answer(1), Some(Ok(30)));
    assert_eq!((p.take_return(), p.granted()), (30, 0));
    w.write(&mut p, 3, &[8; 30]);
    assert_eq!(p.take_wanted(), 0);
    assert_eq!(p.stats().fallback_writes, 1);
}

#[test]
fn switching_between_buffered_and_loaned_writes_keeps_the_order() {
    let mut p = Pipe::new(Limits { max_pending_calls: 64, ..limits(16, 4, Some(10)) });
    p.grant(1000);
    let mut w = World::default();
    let mut stream = Vec::new();
    let sizes = [3usize, 12, 2, 2, 40, 1, 11, 5, 16, 9, 30, 4];
    for (i, &n) in sizes.iter().enumerate() {
        let data: Vec<u8> = (0..n).map(|k| (i * 31 + k) as u8).collect();
        stream.extend_from_slice(&data);
        w.write(&mut p, 100 + i as u32, &data);
    }
    let mut got = Vec::new();
    let mut t = 1;
    while got.len() < stream.len() {
        w.read(&mut p, t, 7);
        got.extend(w.got(t));
        t += 1;
    }
    assert_eq!(got, stream);
    for (i, &n) in sizes.iter().enumerate() {
        assert_eq!(w.answer(100 + i as u32), Some(Ok(n)));
    }
    assert!(p.stats().loaned_writes >= 4 && p.stats().buffered_bytes > 0);
}

#[test]
fn a_gone_reader_leaves_its_bytes_to_the_next() {
    for loan in [None, Some(4)] {
        let mut p = Pipe::new(limits(16, 4, loan));
        p.grant(100);
        let mut w = World::default();
        w.read(&mut p, 1, 4);
        w.read(&mut p, 2, 4);
        w.dead.insert(1);
        w.write(&mut p, 9, b"abcdef");
        assert_eq!(w.got(2), b"abcd", "{loan:?}");
        w.read(&mut p, 3, 10);
        assert_eq!(w.got(3), b"ef");
        assert_eq!(w.answer(9), Some(Ok(6)));
    }
}

#[test]
fn a_gone_writer_leaves_readers_a_prefix_never_garbage() {
    let mut p = Pipe::new(limits(16, 4, Some(8)));
    p.grant(100);
    let mut w = World::default();
    // Longer than the buffer, so the loan is kept (a loaned write that
    // fits in the buffer goes there when no reader waits).
    w.write(&mut p, 1, b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ!#");
    w.write(&mut p, 2, b"abcdefghij");
    w.read(&mut p, 10, 4);
    assert_eq!(w.got(10), b"0123");
    w.dead.insert(1);
    // The dead writer's rest is dropped; the reader goes on with the next write.
    w.read(&mut p, 11, 100);
    assert_eq!(w.got(11), b"abcdefghij");
    assert_eq!(w.answer(1), Some(Ok(4)));
    assert_eq!(p.loaned(), 0, "the dead write's budget is back");
    // Buffered: a dead writer whose write is kept is dropped the same way.
    let mut p = Pipe::new(limits(4, 4, None));
    let mut w = World::default();
    w.write(&mut p, 1, b"full");
    w.write(&mut p, 2, b"0123456789");
    w.dead.insert(2);
    w.read(&mut p, 10, 100);
    assert_eq!(w.got(10), b"full");
    assert_eq!(w.answer(2), Some(Err(EIO)));
    p.close(End::Write, &mut w).unwrap();
    w.read(&mut p, 11, 100);
    assert_eq!(w.answer(11), Some(Ok(0)));
}

#[test]
fn kept_calls_are_bounded() {
    let mut p = Pipe::new(limits(4, 4, None));
    let mut w = World::default();
    for t in 0..8 {
        w.read(&mut p, t, 1);
    }
    w.read(&mut p, 9, 1);
    assert_eq!(w.answer(9), Some(Err(EAGAIN)));
    let mut p = Pipe::new(limits(4, 4, None));
    let mut w = World::default();
    w.write(&mut p, 1, b"full");
    for t in 2..10 {
        w.write(&mut p, t, b"x");
    }
    w.write(&mut p, 10, b"y");
    assert_eq!(w.answer(10), Some(Err(EAGAIN)));
}

/// xorshift64*: the same run every time.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Random writes (1 byte to 3 pages, several writers), reads, readers and
/// writers that die, budget grants and reclaims, in every design. After
/// every step the invariants hold; at the end, what readers got is
/// exactly each write's taken prefix, in write order, and every call was
/// answered once.
#[test]
fn random_runs_keep_the_stream_and_never_stall() {
    for (design, lim) in [
        ("small", limits(64, 16, None)),
        ("big", limits(1024, 16, None)),
        ("loan", limits(1024, 16, Some(100))),
        ("loan, all loaned", limits(64, 16, Some(1))),
    ] {
        for seed in 1..40u64 {
            let mut rng = Rng(seed * 0x9e37_79b9 + 1);
            let mut p = Pipe::new(lim);
            let mut w = World::default();
            let mut token = 0u32;
            let mut writes = Vec::new(); // (token, data) in order
            let mut reads = Vec::new();
            // Budget the monitor would count as this pipe's.
            let mut held = 0usize;
            for _ in 0..300 {
                held -= p.take_return();
                assert_eq!(p.granted(), held, "{design} seed {seed}: budget");
                token += 1;
                match rng.below(10) {
                    0..=3 => {
                        let most = if rng.below(4) == 0 { 3 * 4096 } else { 200 };
                        let n = 1 + rng.below(most);
                        let data: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
                        w.write(&mut p, token, &data);
                        writes.push((token, data));
                    }
                    4..=7 => {
                        let n = 1 + rng.below(600);
                        w.read(&mut p, token, n);
                        reads.push(token);
                    }
                    8 => {
                        // Someone waiting dies.
                        let waiting: Vec<u32> = reads
                            .iter()
                            .chain(writes.iter().map(|(t, _)| t))
                            .copied()
                            .filter(|t| w.answer(*t).is_none() && !w.dead.contains(t))
                            .collect();
                        if !waiting.is_empty() {
                            w.dead.insert(waiting[rng.below(waiting.len())]);
                        }
                    }
                    _ => {
                        if rng.below(3) == 0 {
                            held -= p.reclaim();
                        } else {
                            let n = rng.below(20_000);
                            p.grant(n);
                            held += n;
                        }
                        p.check().unwrap();
                    }
                }
            }
            // Drain: readers until end of file.
            p.close(End::Write, &mut w).unwrap();
            p.check().unwrap();
            loop {
                token += 1;
                w.read(&mut p, token, 5000);
                reads.push(token);
                if w.answer(token) == Some(Ok(0)) {
                    break;
                }
            }
            p.close(End::Read, &mut w).unwrap();
            assert!(p.finished(), "{design} seed {seed}");
            // Every call answered (dead ones too: their answers are lost).
            for t in reads.iter().chain(writes.iter().map(|(t, _)| t)) {
                assert!(w.answer(*t).is_some(), "{design} seed {seed}: call {t} never answered");
            }
            // The stream: each write's taken prefix, in order.
            let mut want = Vec::new();
            for (t, data) in &writes {
                let taken = match w.answer(*t) {
                    Some(Ok(n)) => n,
                    _ => 0,
                };
                // A dead writer's answer says how much was taken.
                want.extend_from_slice(&data[..taken]);
            }
            let mut got = Vec::new();
            for t in &reads {
                if let Some(Ok(n)) = w.answer(*t)
                    && !w.dead.contains(t)
                {
                    got.extend_from_slice(&w.reads[t][..n]);
                }
            }
            assert_eq!(got.len(), want.len(), "{design} seed {seed}: lengths");
            assert!(got == want, "{design} seed {seed}: the stream differs");
            assert_eq!(p.loaned(), 0);
        }
    }
}

#[test]
fn a_loaned_write_that_fits_does_not_wait_for_a_reader() {
    // Regression: a child wrote 32 KiB (>= pipe.loan_min) into a pipe
    // nobody read yet and waited for ever; with the `big` design it
    // returns at once, and so it must with loans.
    let mut p = Pipe::new(limits(64, 4, Some(8)));
    p.grant(1000);
    let mut w = World::default();
    let data: Vec<u8> = (0..32).collect();
    w.write(&mut p, 1, &data);
    assert_eq!(w.answer(1), Some(Ok(32)), "answered without a reader");
    assert_eq!(p.loaned(), 0, "its budget is back");
    assert_eq!(p.stats().unloaned_writes, 1);
    // A reader that waits first still gets a loan straight from the writer.
    w.read(&mut p, 2, 32);
    assert_eq!(w.got(2), &data[..]);
    w.read(&mut p, 3, 32);
    w.write(&mut p, 4, &data);
    assert_eq!(w.got(3), &data[..]);
    assert_eq!(w.answer(4), Some(Ok(32)));
    assert_eq!(p.stats().loaned_writes, 2);
    assert_eq!(w.direct_copies, 1);
}
