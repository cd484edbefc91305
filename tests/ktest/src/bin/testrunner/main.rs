//! testrunner: boots as init in the test image (`init=testrunner`), runs
//! every in-QEMU system test, prints one line per test over the serial line
//! (`abi::test_protocol`), and powers off with status 0 only when all
//! passed. `cargo xtask test` reads the lines and QEMU's exit status.
//!
//! Each test starts `tchild` in some role and checks how it ended, or
//! checks the kernel's answers directly; the tests near the end start real
//! servers from the boot image (memfs, a file manager, a pipe manager, vm,
//! the tty) and kill them under their clients. After the tests that break
//! things, the kernel must still start programs and must have got back
//! every page it handed out.
//!
//! Map: this file holds the list of tests, in the order they run, and the
//! runner; each module is one group of tests: [`processes`], [`messages`],
//! [`devices`], [`pagers`], [`servers`] (servers killed under their
//! clients) and [`health`] (random kernel calls, then the final leak
//! check). Below them, [`util`] (running `tchild`, the runner's queues)
//! and [`started`] (the processes a test made, and seeing them blocked).
//! `server_deaths` holds the message words shared with `tchild`,
//! `tmsg_words` those shared with `tmsg`.

#![no_std]
#![no_main]

extern crate alloc;

mod affinity;
mod devices;
mod foreign;
mod health;
mod leaseedges;
mod leasefuzz;
mod messages;
mod pagers;
mod processes;
mod servers;
mod started;
mod util;

#[path = "../../args_digest.rs"]
mod args_digest;
#[path = "../../foreign_words.rs"]
mod foreign_words;
#[path = "../../server_deaths.rs"]
mod server_deaths;
#[path = "../../tmsg_words.rs"]
mod tmsg_words;

use abi::InfoKey;
use abi::test_protocol::{FAIL, OK, START, SUMMARY};
use runtime::msg;
use runtime::{Args, println, sys};
use util::{MAIN_QUEUE, MANAGER_QUEUE, TestResult};

runtime::entry!(main);

type Test = (&'static str, fn() -> TestResult);

const TESTS: &[Test] = &[
    ("exit_status_reaches_parent", processes::exit_status_reaches_parent),
    ("arguments_reach_child", processes::arguments_reach_child),
    ("wait_for_a_specific_child", processes::wait_for_a_specific_child),
    ("wait_errors", processes::wait_errors),
    ("user_page_fault_kills_process", processes::user_page_fault),
    ("kernel_memory_is_out_of_reach", processes::kernel_memory_is_out_of_reach),
    ("code_is_read_only", processes::code_is_read_only),
    ("privileged_instruction_kills_process", processes::privileged_instruction),
    ("port_io_kills_process", processes::port_io),
    ("divide_by_zero_kills_process", processes::divide_by_zero),
    ("invalid_opcode_kills_process", processes::invalid_opcode),
    ("sse_is_refused", processes::sse_is_refused),
    ("stack_overflow_hits_guard_page", processes::stack_overflow),
    ("bad_pointers_to_every_call", processes::bad_pointers),
    ("kill_rules", processes::kill_rules),
    ("kill_running_sleeping_and_ready", processes::kill_running_sleeping_and_ready),
    ("stale_pid_never_reaches_new_process", processes::stale_pid),
    ("time_slicing_lets_others_run", processes::time_slicing),
    ("more_processes_than_cpus", processes::more_processes_than_cpus),
    ("work_runs_on_every_cpu", processes::work_runs_on_every_cpu),
    ("orphans_are_cleaned_up", processes::orphans_are_cleaned_up),
    ("sleep_lasts_at_least_the_request", processes::sleep_lasts),
    ("only_init_may_power_off", processes::only_init_may_power_off),
    ("getpid_and_getppid", processes::getpid_and_getppid),
    ("messages_arrive_in_order_with_contents", messages::messages_in_order),
    ("many_senders_on_all_cpus_exactly_once_in_order", messages::message_stress),
    ("calls_and_yields_on_every_cpu_at_once", messages::calls_and_yields_on_every_cpu_at_once),
    ("call_reply_round_trips_with_data", messages::call_round_trips),
    ("message_errors_are_named", messages::message_errors),
    ("private_queues_need_permission", messages::private_queues),
    ("arm_and_wait_on_several_queues", messages::arm_and_wait),
    ("dead_peers_give_errors_and_drop_messages", messages::dead_peers),
    ("send_data_page_is_copy_on_write", messages::copy_on_write),
    ("a_kernel_write_breaks_a_lent_page", messages::kernel_write_breaks_a_lent_page),
    ("page_owners_counts_every_sharer", messages::page_owners_counts_every_sharer),
    ("kill_a_process_blocked_in_receive", messages::kill_blocked_receiver),
    ("closing_a_queue_returns_its_page_quota", messages::close_queue_returns_quota),
    ("a_bad_receive_buffer_is_reported_not_hung", messages::bad_receive_buffer_reported),
    ("empty_buffers_need_no_memory", messages::empty_buffers_need_no_memory),
    ("forward_passes_a_call_on", messages::forward_passes_a_call_on),
    ("leases_lend_call_buffers", messages::leases_lend_call_buffers),
    ("leases_in_segments", messages::leases_in_segments),
    ("lease_copies_at_page_edges", leaseedges::lease_copies_at_page_edges),
    ("a_lease_that_wraps_lends_nothing", leaseedges::a_lease_that_wraps_lends_nothing),
    ("runtime_clock_agrees_with_the_kernel", processes::runtime_clock_agrees_with_the_kernel),
    ("affinity_pins_a_process", affinity::affinity_pins_a_process),
    ("leases_between_two_callers", messages::leases_between_two_callers),
    ("leases_survive_random_arguments", leasefuzz::leases_survive_random_arguments),
    ("a_kept_call_lends_no_priority", messages::a_kept_call_lends_no_priority),
    ("interrupt_lines_and_ports_are_exclusive", devices::device_claim_rules),
    ("interrupts_arrive_as_messages", devices::interrupts_as_messages),
    ("console_driver_serves_programs", devices::console_driver),
    ("pci_dma_and_device_memory_calls", devices::pci_and_dma_calls),
    ("a_dead_drivers_device_stops_dma", devices::dead_drivers_device_stops_dma),
    ("msix_routes_are_the_kernel_s", devices::msix_routes_are_the_kernel_s),
    ("pager_serves_zero_and_copy_on_write_pages", pagers::pager_serves),
    ("pager_refusing_or_dying_ends_the_faulter", pagers::pager_refuses_and_dies),
    ("pager_rights", pagers::pager_rights),
    ("dead_pager_read_window_pages_read_zeros", pagers::dead_pager_read_window_pages_read_zeros),
    ("foreign_calls_are_messages_and_registers_survive", foreign::foreign_calls_are_messages),
    ("foreign_rights", foreign::foreign_rights),
    ("foreign_fpu_state", foreign::foreign_fpu_state),
    ("foreign_unmap_and_protect", foreign::foreign_unmap_and_protect),
    ("file_manager_then_memfs_killed_under_their_clients", servers::file_manager_then_memfs_killed),
    ("pipe_killed_under_a_blocked_reader", servers::pipe_killed_under_a_blocked_reader),
    ("pipe_killed_under_a_blocked_writer", servers::pipe_killed_under_a_blocked_writer),
    ("reader_killed_in_a_pipe_read_leaves_the_pipe_serving", servers::reader_killed_leaves_the_pipe_serving),
    ("vm_killed_under_a_heap_fault_ends_the_faulter", servers::vm_killed_under_a_heap_fault),
    ("heap_of_a_dead_pager_is_not_zero_filled", servers::heap_of_a_dead_pager),
    ("tty_killed_under_a_blocked_reader", servers::tty_killed_under_a_blocked_reader),
    ("proc_memory_counts_frames_by_kind", health::proc_memory_counts_frames),
    ("random_kernel_calls_get_answers", health::random_kernel_calls),
    ("kernel_healthy_and_no_memory_leaked", health::kernel_healthy),
];

fn main(_args: Args) -> i32 {
    // The runner's own queue segment, made before the baseline is taken:
    // queue 0 receives every tmsg child's messages and servers' READY;
    // queue 1 the READY of pipe and file managers (`protocols::unix::pipe`).
    let queues = msg::init_qseg(64, 8, 256, 64)
        .and_then(|_| msg::open_queue(16, true))
        .and_then(|q0| Ok((q0, msg::open_queue(4, true)?)));
    match queues {
        Ok((MAIN_QUEUE, MANAGER_QUEUE)) => {}
        Ok(_) => println!("testrunner: queues are not numbered 0 and 1"),
        Err(e) => println!("testrunner: cannot set up messages: {}", e.name()),
    }
    // The heap's pages arrive on first touch: touch the first stretch now,
    // so the runner's own later allocations do not read as a leak.
    let warm = alloc::vec![1u8; 1024 * 1024];
    drop(core::hint::black_box(warm));
    health::record_free_memory_at_start();
    println!("testrunner: {} CPUs online, {} tests", sys::info(InfoKey::CpusOnline), TESTS.len());
    let (mut passed, mut failed) = (0, 0);
    for (name, test) in TESTS {
        println!("{START}{name}");
        match test() {
            Ok(()) => {
                passed += 1;
                println!("{OK}{name}");
            }
            Err(why) => {
                failed += 1;
                println!("{FAIL}{name}: {why}");
            }
        }
    }
    println!("{SUMMARY}{passed} passed, {failed} failed");
    let _ = sys::shutdown(if failed == 0 { 0 } else { 1 });
    1
}
