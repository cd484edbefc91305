//! crashdrv: a "driver" that executes an undefined instruction as soon as
//! it starts, so every start ends by a fault (vector 6) before any ready
//! message. `utest`'s `restart::a_driver_that_dies_at_once_is_given_up`
//! asks init to supervise it (`service start crashdrv`) and checks that
//! init gives it up after its back-off and the system lives.
//!
//! What it is not: a driver. It is in the test image only.

#![no_std]
#![no_main]

use core::arch::asm;
use runtime::Args;

runtime::entry!(main);

fn main(_args: Args) -> i32 {
    // SAFETY: deliberately executes an undefined instruction: the CPU
    // raises #UD and the kernel ends this process with a fault, which is
    // the whole point of this program.
    unsafe { asm!("ud2") };
    1
}
