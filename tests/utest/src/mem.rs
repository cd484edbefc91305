//! Memory: `sbrk` and copy-on-write `fork`.

use crate::ensure;
use crate::raw;
use crate::util::*;
use alloc::vec;
use protocols::unix::errno::ENOMEM;
use runtime::unix;

const GROW_BYTES: i64 = 1 << 20;

pub fn sbrk_grows_the_heap_with_zero_pages() -> TestResult {
    // In a child: while the break is moved the allocator cannot grow.
    in_child(|| {
        let old = unix::sbrk(0).ctx("sbrk(0)")?;
        let got = unix::sbrk(GROW_BYTES).ctx("sbrk(+1 MiB)")?;
        ensure!(got == old, "sbrk returned {got:#x}, the old break was {old:#x}");
        let now = unix::sbrk(0).ctx("sbrk(0)")?;
        ensure!(now == old + GROW_BYTES as u64, "the break is {now:#x} after growing from {old:#x}");
        let nonzero = raw::first_nonzero_word(old, GROW_BYTES as usize);
        ensure!(nonzero.is_none(), "new heap word {} is not zero", nonzero.unwrap_or(0));
        raw::fill_words(old, GROW_BYTES as usize, 0xa5a5_5a5a_0f0f_f0f0);
        let wrong = raw::first_wrong_word(old, GROW_BYTES as usize, 0xa5a5_5a5a_0f0f_f0f0);
        ensure!(wrong.is_none(), "heap word {} did not keep what was written", wrong.unwrap_or(0));
        // A forked child gets a copy; its writes stay its own.
        let child = spawn(move || {
            if raw::first_wrong_word(old, GROW_BYTES as usize, 0xa5a5_5a5a_0f0f_f0f0).is_some() {
                return 1;
            }
            raw::fill_words(old, GROW_BYTES as usize, 0x1234);
            0
        })?;
        expect_exit(child, 0)?;
        let wrong = raw::first_wrong_word(old, GROW_BYTES as usize, 0xa5a5_5a5a_0f0f_f0f0);
        ensure!(
            wrong.is_none(),
            "the child's writes reached the parent's heap at word {}",
            wrong.unwrap_or(0)
        );
        let back = unix::sbrk(-GROW_BYTES).ctx("sbrk(-1 MiB)")?;
        ensure!(back == old + GROW_BYTES as u64, "shrinking returned {back:#x}");
        ensure!(unix::sbrk(0).ctx("sbrk(0)")? == old, "the break after shrinking back");
        // The allocator can grow again now that the break is its own.
        let big = vec![3u8; 4 << 20];
        ensure!(big.iter().all(|&b| b == 3), "a 4 MiB allocation after sbrk");
        Ok(())
    })
}

pub fn sbrk_errors() -> TestResult {
    let old = unix::sbrk(0).ctx("sbrk(0)")?;
    expect_errno(unix::sbrk(-(1 << 40)), ENOMEM, "shrinking below the heap's start")?;
    expect_errno(unix::sbrk(1 << 46), ENOMEM, "growing past the heap region")?;
    expect_errno(unix::sbrk(i64::MAX), ENOMEM, "growing by i64::MAX")?;
    ensure!(unix::sbrk(0).ctx("sbrk(0)")? == old, "a failed sbrk moved the break");
    Ok(())
}

pub fn fork_is_copy_on_write() -> TestResult {
    let mut data = vec![0u8; 2 << 20];
    Stream::new(77).fill(&mut data);
    let mut sum = Fnv::new();
    sum.add(&data);
    let (r, w) = unix::pipe().ctx("pipe")?;
    let (done_r, done_w) = unix::pipe().ctx("pipe")?;
    let child = spawn(|| {
        let mut mine = Fnv::new();
        mine.add(&data);
        if mine.0 != sum.0 {
            return 1;
        }
        // Change every page of the child's copy.
        for page in data.chunks_mut(PAGE_BYTES) {
            page[0] ^= 0xff;
        }
        if write_all(done_w, b"c").is_err() {
            return 3;
        }
        // Wait until the parent has written its copy, then check this one.
        let mut b = [0u8; 1];
        let _ = unix::read(r, &mut b);
        let mut after = Fnv::new();
        for page in data.chunks_mut(PAGE_BYTES) {
            page[0] ^= 0xff;
        }
        after.add(&data);
        if after.0 != sum.0 { 2 } else { 0 }
    })?;
    // Only the child writes this pipe: without the parent's copy, a child
    // that ends early gives end of file instead of a hang.
    let _ = unix::close(done_w);
    let mut b = [0u8; 1];
    let sync = read_exact(done_r, &mut b);
    let mut now = Fnv::new();
    now.add(&data);
    let parent_unchanged = now.0 == sum.0;
    // The parent's writes must not reach the child either.
    for x in data.iter_mut().step_by(PAGE_BYTES) {
        *x = x.wrapping_add(1);
    }
    let released = write_all(w, b"p").ctx("write");
    let status = wait_for(child)?;
    for fd in [r, w, done_r, done_w] {
        let _ = unix::close(fd);
    }
    sync?;
    released?;
    ensure!(parent_unchanged, "the child's writes changed the parent's memory");
    ensure!(
        status.exit_code() == Some(0),
        "the child {} (1: its copy differed at fork, 2: the parent's writes reached it, 3: write failed)",
        describe(&status)
    );
    Ok(())
}

/// A page shared copy-on-write by a `fork` (this process, like most, held
/// none before), written by the kernel rather than by the child: the
/// child's `counters` call copies into it (`UserSlice::write`). The
/// child's page is made its own first, so the parent's keeps its words;
/// a kernel that skipped the break would write the shared frame.
pub fn kernel_writes_after_fork_stay_in_the_child() -> TestResult {
    const PATTERN: u64 = 0xa5a5_5a5a_0f0f_f0f0;
    const WORDS_PER_PAGE: usize = PAGE_BYTES / 8;
    let mut buf = vec![PATTERN; 3 * WORDS_PER_PAGE];
    // A whole page of the vector, which nothing else on the heap shares,
    // so that neither side touches it before the kernel's write.
    let skip = (PAGE_BYTES - buf.as_ptr() as usize % PAGE_BYTES) % PAGE_BYTES / 8;
    let page = &mut buf[skip..skip + WORDS_PER_PAGE];
    let child = spawn(|| {
        let Ok(n) = runtime::sys::counters(&mut page[..abi::COUNTER_COUNT]) else { return 1 };
        // Counters are small numbers: each word written is not the pattern.
        if n != abi::COUNTER_COUNT || page[..n].contains(&PATTERN) {
            return 2;
        }
        0
    })?;
    let status = wait_for(child)?;
    ensure!(
        status.exit_code() == Some(0),
        "the child {} (1: counters failed, 2: the counters did not arrive)",
        describe(&status)
    );
    ensure!(buf.iter().all(|&w| w == PATTERN), "the kernel's write in the child reached the parent's page");
    Ok(())
}

/// Read-only data this program reads nowhere else, so its pages are still
/// untouched (not yet paged in) when the test below runs.
static UNTOUCHED: [u8; 3 * PAGE_BYTES] = [0x42; 3 * PAGE_BYTES];

/// Message data may sit in pages the process has not touched yet (a
/// constant, paged in by the VM manager on first touch): a `write` from
/// there must work as from any other memory, not fail with `EFAULT`.
pub fn message_data_from_untouched_pages() -> TestResult {
    let (r, w) = unix::pipe().ctx("pipe")?;
    let written = unix::write(w, &UNTOUCHED).ctx("write from untouched read-only data");
    let _ = unix::close(w);
    let got = read_to_end(r).ctx("read");
    let _ = unix::close(r);
    ensure!(written? == UNTOUCHED.len(), "short write");
    let got = got?;
    ensure!(got.len() == UNTOUCHED.len() && got.iter().all(|&b| b == 0x42), "the pipe returned other data");
    Ok(())
}
