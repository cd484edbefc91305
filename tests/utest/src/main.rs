//! utest: the in-QEMU tests of the UNIX personality, as a UNIX program.
//!
//! `cargo xtask test` boots the test image and runs `/bin/utest` through
//! the shell (`cargo xtask run --batch` style, see xtask/src/test.rs); it
//! is an ordinary UNIX process started by the monitor, so every call it
//! makes goes through `runtime::unix` to the monitor and the managers,
//! exactly as any program's would. It prints the line protocol of the
//! kernel tests (`abi::test_protocol`: `ktest: start NAME`, `ktest: ok
//! NAME`, `ktest: FAIL NAME: reason`, then `ktest: summary N passed, M
//! failed`) and exits 0 only when every test passed.
//!
//! Usage: `utest [--repeat N] [--modes small,big,…] [NAME…]`: every
//! test, or those whose names start with one of the NAMEs (e.g. `utest
//! pipe::`), N times over (to catch what fails now and then); with
//! `--modes`, once per pipe design, each set first with `pipe=MODE`
//! (`unix::set_limit`) and its tests named `[MODE] NAME`. `utest
//! role-…` is not for people: the tests exec this program in a role to
//! check what crosses an `exec` (see `proc::role`, `leak::role_hold`).
//!
//! Each test asserts results, never timings; a test that forks reaps its
//! children. Each runs in a forked child of the runner (`run_isolated`),
//! which afterwards checks that no child was left behind and that the
//! monitor holds as many open-file descriptions as before (a test that
//! leaks either fails); a test still running after a generous watchdog
//! (`WATCHDOG_NS`) is killed and reported, so one hang does not hide the
//! rest. Files go under `/tmp/utest.<runner pid>/`, removed at the end.
//!
//! What it is not: a test of the servers' insides (unix-core's host tests
//! do that) nor a benchmark.

#![no_std]
#![no_main]
#![deny(unsafe_code)]

extern crate alloc;

mod blk;
mod files;
mod fs;
mod jobs;
mod leak;
mod mem;
mod net;
mod netcard;
mod pipe;
mod posio;
mod proc;
mod ramdisk;
mod raw;
mod readiness;
mod restart;
mod users;
mod util;

use abi::test_protocol::{FAIL, OK, START, SUMMARY};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::Ordering;
use protocols::unix::signal::SIGKILL;
use runtime::unix;
use runtime::{Args, println};
use util::{RUNNER_PID, TestResult};

runtime::entry!(main);

type Test = (&'static str, fn() -> TestResult);

const TESTS: &[Test] = &[
    ("fs::standard_descriptors_are_open", fs::standard_descriptors_are_open),
    ("fs::create_write_read", fs::create_write_read),
    ("fs::open_errors", fs::open_errors),
    ("fs::bad_descriptors", fs::bad_descriptors),
    ("fs::emfile_at_64_descriptors", fs::emfile_at_64_descriptors),
    ("fs::dup_shares_the_offset", fs::dup_shares_the_offset),
    ("fs::fork_shares_the_offset", fs::fork_shares_the_offset),
    ("posio::pread_and_pwrite_leave_the_offset", posio::pread_and_pwrite_leave_the_offset),
    ("posio::pipes_are_espipe", posio::pipes_are_espipe),
    (
        "posio::a_forked_preader_never_moves_the_shared_offset",
        posio::a_forked_preader_never_moves_the_shared_offset,
    ),
    ("fs::a_close_rides_on_the_next_open", fs::a_close_rides_on_the_next_open),
    ("fs::lseek_whence_and_holes", fs::lseek_whence_and_holes),
    ("fs::o_append_writes_at_the_end", fs::o_append_writes_at_the_end),
    ("fs::o_trunc_empties_the_file", fs::o_trunc_empties_the_file),
    ("fs::unlinked_open_file_stays_readable", fs::unlinked_open_file_stays_readable),
    ("fs::rename_files", fs::rename_files),
    ("fs::rename_directories", fs::rename_directories),
    ("fs::mkdir_rmdir", fs::mkdir_rmdir),
    ("fs::readdir_lists_entries", fs::readdir_lists_entries),
    ("fs::stat_and_fstat_fields", fs::stat_and_fstat_fields),
    ("fs::chdir_and_getcwd", fs::chdir_and_getcwd),
    ("fs::chmod_and_chown", fs::chmod_and_chown),
    ("fs::dev_null", fs::dev_null),
    ("files::unaligned_reads_and_writes_across_pages", files::unaligned_reads_and_writes_across_pages),
    (
        "files::unmapped_buffers_are_efault_and_change_nothing",
        files::unmapped_buffers_are_efault_and_change_nothing,
    ),
    ("perm::non_root_is_refused", fs::permissions_as_non_root),
    ("perm::sticky_tmp_protects_other_users_files", fs::sticky_tmp_protects_other_users_files),
    ("perm::search_permission_on_directories", fs::search_permission_on_directories),
    ("proc::fork_returns_pids", proc::fork_returns_pids),
    ("proc::exit_codes_reach_the_parent", proc::exit_codes_reach_the_parent),
    ("proc::killed_children_report_the_signal", proc::killed_children_report_the_signal),
    ("proc::faulting_child_reports_sigsegv", proc::faulting_child_reports_sigsegv),
    ("proc::wait_nohang", proc::wait_nohang),
    ("proc::wait_errors", proc::wait_errors),
    ("proc::wait_for_a_specific_child", proc::wait_for_a_specific_child),
    ("proc::fork_tree", proc::fork_tree),
    ("proc::orphans_go_to_init", proc::orphans_go_to_init),
    ("proc::process_groups_and_kill_pgid", proc::process_groups_and_kill_pgid),
    ("proc::kill_pgid_reaches_every_member_only", proc::kill_pgid_reaches_every_member_only),
    ("proc::setpgid_errors", proc::setpgid_errors),
    ("proc::kill_errors", proc::kill_errors),
    ("proc::signal_ignore", proc::signal_ignore),
    ("proc::times_count_reaped_children", proc::times_count_reaped_children),
    ("proc::times_include_waited_for_grandchildren", proc::times_include_waited_for_grandchildren),
    ("proc::ps_lists_processes", proc::ps_lists_processes),
    ("proc::ids_of_root", proc::ids_of_root),
    ("proc::clock_and_sleep", proc::clock_and_sleep),
    ("proc::calendar_clock", proc::calendar_clock),
    ("proc::tcsetpgrp", proc::tcsetpgrp),
    ("jobs::background_read_takes_no_line", jobs::background_read_takes_no_line),
    ("jobs::password_line_cannot_be_stolen", jobs::password_line_cannot_be_stolen),
    ("jobs::background_read_sigttin_caught_or_ignored", jobs::background_read_sigttin_caught_or_ignored),
    ("jobs::no_terminal_or_orphaned_group_gets_eio", jobs::no_terminal_or_orphaned_group_gets_eio),
    ("jobs::typing_is_root_only", jobs::typing_is_root_only),
    ("jobs::console_input_only_to_the_tty", jobs::console_input_only_to_the_tty),
    ("exec::arguments_and_environment", proc::exec_arguments_and_environment),
    ("exec::execv_keeps_the_environment", proc::execv_keeps_the_environment),
    ("exec::descriptors_and_pid_survive_exec", proc::descriptors_and_pid_survive_exec),
    ("exec::exit_status", proc::exec_exit_status),
    ("exec::errors", proc::exec_errors),
    ("pipe::data_and_end_of_file", pipe::data_and_end_of_file),
    ("pipe::end_of_file_needs_every_writer_closed", pipe::end_of_file_needs_every_writer_closed),
    ("pipe::errors", pipe::pipe_errors),
    ("pipe::epipe_without_a_reader", pipe::epipe_without_a_reader),
    ("pipe::blocked_writer_wakes_when_the_reader_goes", pipe::blocked_writer_wakes_when_the_reader_goes),
    (
        "pipe::reader_sees_end_of_file_when_the_writer_dies",
        pipe::reader_sees_end_of_file_when_the_writer_dies,
    ),
    ("pipe::small_writes_are_atomic", pipe::small_writes_are_atomic),
    ("pipe::megabytes_between_processes", pipe::megabytes_between_processes),
    ("pipe::the_design_is_the_boot_option", pipe::the_design_is_the_boot_option),
    ("pipe::mixed_sizes_up_to_a_megabyte_arrive_whole", pipe::mixed_sizes_up_to_a_megabyte_arrive_whole),
    ("pipe::many_pipe_pairs_at_once", pipe::many_pipe_pairs_at_once),
    ("pipe::buffered_and_loaned_writes_switch_both_ways", pipe::buffered_and_loaned_writes_switch_both_ways),
    (
        "pipe::overwriting_the_buffer_after_write_changes_nothing_read",
        pipe::overwriting_the_buffer_after_write_changes_nothing_read,
    ),
    (
        "pipe::writer_killed_mid_loan_leaves_a_clean_prefix",
        pipe::writer_killed_mid_loan_leaves_a_clean_prefix,
    ),
    ("pipe::readers_killed_mid_transfer", pipe::readers_killed_mid_transfer),
    (
        "pipe::pipe_buf_writes_from_several_writers_are_atomic",
        pipe::pipe_buf_writes_from_several_writers_are_atomic,
    ),
    ("pipe::loan_cap_reached_writes_fall_back_whole", pipe::loan_cap_reached_writes_fall_back_whole),
    ("pipe::limits_are_root_only_and_checked", pipe::limits_are_root_only_and_checked),
    ("net::tcp_echo_between_processes", net::tcp_echo_between_processes),
    ("net::udp_datagrams", net::udp_datagrams),
    ("net::lock_statistics_and_queued_writes", net::lock_statistics_and_queued_writes),
    ("net::errors", net::errors),
    ("net::nonblocking_connect_and_poll", net::nonblocking_connect_and_poll),
    ("net::port_exhaustion", net::port_exhaustion),
    ("net::a_thousand_sockets", net::a_thousand_sockets),
    ("net::peer_vanishes_mid_stream", net::peer_vanishes_mid_stream),
    ("net::client_killed_with_data_queued", net::client_killed_with_data_queued),
    ("net::reads_take_queued_data_from_the_ring", net::reads_take_queued_data_from_the_ring),
    ("net::a_scribbled_ring_breaks_only_its_socket", net::a_scribbled_ring_breaks_only_its_socket),
    ("net::fork_and_killed_readers_share_the_ring", net::fork_and_killed_readers_share_the_ring),
    ("poll::a_pipe_with_and_without_data", readiness::poll_a_pipe_with_and_without_data),
    ("poll::a_pipe_whose_other_end_closed", readiness::poll_a_pipe_whose_other_end_closed),
    ("poll::timeouts_and_waking", readiness::poll_timeouts_and_waking),
    ("poll::a_socket_and_a_pipe_together", readiness::poll_a_socket_and_a_pipe_together),
    ("poll::the_terminal", readiness::poll_the_terminal),
    ("signal::sigpipe_on_a_pipe", readiness::sigpipe_on_a_pipe),
    ("signal::sigpipe_on_a_socket", readiness::sigpipe_on_a_socket),
    ("net::open_only_from_the_monitor", net::open_only_from_the_monitor),
    ("net::polls_of_dead_callers_leave_room", net::polls_of_dead_callers_leave_room),
    ("mem::sbrk_grows_the_heap_with_zero_pages", mem::sbrk_grows_the_heap_with_zero_pages),
    ("mem::sbrk_errors", mem::sbrk_errors),
    ("mem::fork_is_copy_on_write", mem::fork_is_copy_on_write),
    ("mem::kernel_writes_after_fork_stay_in_the_child", mem::kernel_writes_after_fork_stay_in_the_child),
    ("mem::message_data_from_untouched_pages", mem::message_data_from_untouched_pages),
    ("blk::vda_is_a_block_device", blk::vda_is_a_block_device),
    ("blk::patterned_blocks_round_trip", blk::patterned_blocks_round_trip),
    ("blk::bad_transfers_are_refused_whole", blk::bad_transfers_are_refused_whole),
    ("blk::past_the_end_writes_nothing", blk::past_the_end_writes_nothing),
    ("blk::unmapped_buffer_is_efault", blk::unmapped_buffer_is_efault),
    ("blk::clients_at_once", blk::clients_at_once),
    (
        "blk::client_killed_mid_request_leaves_the_driver_working",
        blk::client_killed_mid_request_leaves_the_driver_working,
    ),
    ("blk::zero_device_reads_zeros", blk::zero_device_reads_zeros),
    ("blk::pwritev_writes_every_part_or_none", blk::pwritev_writes_every_part_or_none),
    ("blk::device_times_count_each_request", blk::device_times_count_each_request),
    ("blk::queue_indices_wrap", blk::queue_indices_wrap),
    ("leak::monitor_counts_descriptions", leak::monitor_counts_descriptions),
    ("leak::exited_children_leak_nothing", leak::exited_children_leak_nothing),
    ("leak::killed_children_leak_nothing", leak::killed_children_leak_nothing),
    ("leak::memfs_handles_come_back_after_kills", leak::memfs_handles_come_back_after_kills),
    ("ramdisk::integrity_boot_mode", ramdisk::integrity_boot_mode),
    ("ramdisk::integrity_ramdriver", ramdisk::integrity_ramdriver),
    ("ramdisk::integrity_pddriver", ramdisk::integrity_pddriver),
    ("ramdisk::rules_ramdriver", ramdisk::rules_ramdriver),
    ("ramdisk::rules_pddriver", ramdisk::rules_pddriver),
    ("ramdisk::shared_offsets", ramdisk::shared_offsets),
    ("ramdisk::shared_reads_take_each_block_once", ramdisk::shared_reads_take_each_block_once),
    ("ramdisk::driver_seek_waits_for_the_lock", ramdisk::driver_seek_waits_for_the_lock),
    ("ramdisk::mapped_seek_waits_for_the_lock", ramdisk::mapped_seek_waits_for_the_lock),
    ("ramdisk::readers_and_writers_at_once", ramdisk::readers_and_writers_at_once),
    ("ramdisk::killed_holder_releases_the_lock", ramdisk::killed_holder_releases_the_lock),
    ("ramdisk::killed_copier_releases_the_lock", ramdisk::killed_copier_releases_the_lock),
    ("ramdisk::many_contenders_sleep_and_wake", ramdisk::many_contenders_sleep_and_wake),
    ("ramdisk::sleeping_waiters_are_woken", ramdisk::sleeping_waiters_are_woken),
    ("ramdisk::killed_waiter_leaves_the_lock_working", ramdisk::killed_waiter_leaves_the_lock_working),
    ("ramdisk::killed_holder_wakes_the_waiters", ramdisk::killed_holder_wakes_the_waiters),
    ("ramdisk::killed_driver_fails_its_clients", ramdisk::killed_driver_fails_its_clients),
    ("ramdisk::pddriver_holds_the_cpu", ramdisk::pddriver_holds_the_cpu),
    ("users::limits_defaults_and_rules", users::limits_defaults_and_rules),
    ("users::nproc_limit_makes_fork_eagain", users::nproc_limit_makes_fork_eagain),
    ("users::nofile_limit_makes_open_emfile", users::nofile_limit_makes_open_emfile),
    ("users::data_limit_makes_sbrk_enomem", users::data_limit_makes_sbrk_enomem),
    ("users::as_limit_refuses_big_programs", users::as_limit_refuses_big_programs),
    ("users::heap_past_the_hard_limit_faults", users::heap_past_the_hard_limit_faults),
    ("users::non_root_cannot_signal_others_or_servers", users::non_root_cannot_signal_others_or_servers),
    ("users::non_root_cannot_touch_another_process", users::non_root_cannot_touch_another_process),
    ("users::non_root_gets_no_rights", users::non_root_gets_no_rights),
    ("users::non_root_cannot_open_private_queues", users::non_root_cannot_open_private_queues),
    ("users::su_checks_the_password", users::su_checks_the_password),
    ("users::login_starts_the_users_shell", users::login_starts_the_users_shell),
    (
        "users::kernel_children_are_charged_and_end_with_it",
        users::kernel_children_are_charged_and_end_with_it,
    ),
    ("users::non_root_cannot_raise_its_priority", users::non_root_cannot_raise_its_priority),
    ("users::foreground_group_only_from_the_session", users::foreground_group_only_from_the_session),
    ("netcard::only_the_network_server_may_attach", netcard::only_the_network_server_may_attach),
    // Last: they end and restart the drivers the tests above use.
    (
        "restart::only_root_may_end_a_server_and_stateful_ones_stay",
        restart::only_root_may_end_a_server_and_stateful_ones_stay,
    ),
    (
        "restart::ramdisk_killed_under_a_reader_comes_back_empty",
        restart::ramdisk_killed_under_a_reader_comes_back_empty,
    ),
    ("restart::ramdisk_killed_under_a_mapping_fails_it", restart::ramdisk_killed_under_a_mapping_fails_it),
    ("restart::vda_killed_under_a_reader_keeps_its_data", restart::vda_killed_under_a_reader_keeps_its_data),
    ("restart::a_driver_that_dies_at_once_is_given_up", restart::a_driver_that_dies_at_once_is_given_up),
    ("netcard::a_restarted_driver_refuses_users", netcard::a_restarted_driver_refuses_users),
];

fn main(args: Args) -> i32 {
    let argv: Vec<&str> = args.iter().collect();
    match argv.get(1) {
        Some(&"role-hold") => return leak::role_hold(&argv),
        Some(&"role-limits") => return users::role_limits(&argv),
        Some(role) if role.starts_with("role-") => return proc::role(&argv),
        _ => {}
    }
    RUNNER_PID.store(unix::getpid(), Ordering::Relaxed);
    let mut filters: Vec<&str> = argv.iter().skip(1).copied().collect();
    let mut repeat = 1;
    if filters.first() == Some(&"--repeat") && filters.len() > 1 {
        repeat = filters[1].parse().unwrap_or(1);
        filters.drain(..2);
    }
    // The design in force before `--modes` changes it: the boot option's.
    let design = unix::limits().unwrap_or_default();
    let design = design.lines().find_map(|l| l.strip_prefix("pipe=")).unwrap_or("?");
    BOOT_DESIGN.store(pipe::design_number(design), Ordering::Relaxed);
    let mut modes: Vec<&str> = alloc::vec![""];
    if filters.first() == Some(&"--modes") && filters.len() > 1 {
        modes = filters[1].split(',').collect();
        filters.drain(..2);
        MODE_OVERRIDE.store(true, Ordering::Relaxed);
    }
    let once: Vec<&Test> = TESTS
        .iter()
        .filter(|(name, _)| filters.is_empty() || filters.iter().any(|f| name.starts_with(f)))
        .collect();
    let mut chosen: Vec<(&str, &Test)> = Vec::new();
    for &m in &modes {
        for _ in 0..repeat {
            chosen.extend(once.iter().map(|&t| (m, t)));
        }
    }
    let root = util::scratch_root();
    if unix::stat(&root).is_ok() {
        let _ = util::remove_tree(&root);
    }
    if let Err(e) = unix::mkdir(&root, 0o755) {
        println!("utest: cannot make {root}: {}", e.name());
        println!("{SUMMARY}0 passed, 1 failed");
        return 1;
    }
    println!("utest: pid {}, {} of {} tests", unix::getpid(), chosen.len(), TESTS.len());
    let (mut passed, mut failed) = (0, 0);
    let mut mode_now = "";
    for (mode, (test_name, test)) in chosen {
        let name = if mode.is_empty() { String::from(*test_name) } else { format!("[{mode}] {test_name}") };
        if mode != mode_now {
            mode_now = mode;
            if let Err(e) = unix::set_limit(&format!("pipe={mode}")) {
                println!("{START}{name}");
                println!("{FAIL}{name}: cannot set pipe={mode}: {}", e.name());
                failed += 1;
                continue;
            }
        }
        println!("{START}{name}");
        let before = util::open_descriptions();
        let started_ns = unix::clock_ns();
        let mut result = run_isolated(*test);
        // For people reading the log; no verdict depends on it.
        println!("utest: {name} took {} ms", (unix::clock_ns() - started_ns) / 1_000_000);
        if result.is_ok() {
            result = check_descriptions(before);
        }
        match result {
            Ok(()) => {
                passed += 1;
                println!("{OK}{name}");
            }
            Err(why) => {
                failed += 1;
                println!("{FAIL}{name}: {}", why.replace('\n', " / "));
            }
        }
    }
    if let Err(e) = util::remove_tree(&root) {
        println!("utest: cannot remove {root}: {e}");
        failed += 1;
    }
    println!("{SUMMARY}{passed} passed, {failed} failed");
    if failed == 0 { 0 } else { 1 }
}

/// `--modes` was given: the pipe design is the test's, not the boot's.
pub static MODE_OVERRIDE: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);
/// The pipe design in force when utest started (`pipe::design_number`).
pub static BOOT_DESIGN: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(u64::MAX);

/// Longest a test may take before the runner ends it. Not a performance
/// limit (the slowest test takes a few seconds even on one emulated CPU):
/// it only turns a hang (a lost wake-up, a signal that never arrives)
/// into one failed test instead of a silent boot that times out with
/// every later test unrun.
const WATCHDOG_NS: u64 = 120_000_000_000;

/// Run `test` in a forked child of the runner, so that a test that hangs
/// can be ended and a test that breaks its process (its descriptors, its
/// ids) cannot disturb the next. The child reports a failure's text
/// through a pipe and reaps its own strays.
fn run_isolated(test: fn() -> TestResult) -> TestResult {
    let (r, w) = unix::pipe().map_err(|e| format!("pipe for the test's report: {}", e.name()))?;
    let child = util::spawn(move || {
        let _ = unix::close(r);
        let mut result = test();
        let strays = reap_strays();
        if result.is_ok() {
            result = strays;
        }
        match result {
            Ok(()) => 0,
            Err(why) => {
                let _ = util::write_all(w, why.as_bytes());
                1
            }
        }
    });
    let _ = unix::close(w);
    let child = match child {
        Ok(pid) => pid,
        Err(e) => {
            let _ = unix::close(r);
            return Err(e);
        }
    };
    let deadline = unix::clock_ns() + WATCHDOG_NS;
    let status = loop {
        match unix::waitpid(child as i64, true) {
            Ok(Some((_, status))) => break Ok(status),
            Ok(None) if unix::clock_ns() < deadline => unix::sleep_ns(5_000_000),
            Ok(None) => break Err(end_hung_test(child)),
            Err(e) => break Err(format!("waitpid for the test process: {}", e.name())),
        }
    };
    let report = util::read_to_end(r);
    let _ = unix::close(r);
    let status = status?;
    let text = match report {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) => format!("(reading the test's report: {})", e.name()),
    };
    match status.exit_code() {
        Some(0) => Ok(()),
        _ if !text.is_empty() => Err(text),
        _ => Err(format!("the test process {}", util::describe(&status))),
    }
}

/// Kill a hung test process and everything it started; the failure text.
fn end_hung_test(child: u64) -> String {
    // Every descendant, from the process table, before anything dies (an
    // orphan's parent becomes init).
    let table = unix::ps().unwrap_or_default();
    let mut tree = alloc::vec![child];
    let mut i = 0;
    while i < tree.len() {
        let parent = tree[i];
        tree.extend(table.iter().filter(|p| p.ppid == parent).map(|p| p.pid));
        i += 1;
    }
    let states: Vec<String> = tree
        .iter()
        .map(|&pid| {
            let state = table.iter().find(|p| p.pid == pid).map_or('?', |p| p.state as char);
            format!("{pid} {state}")
        })
        .collect();
    for &pid in tree.iter().rev() {
        let _ = unix::kill(pid as i64, SIGKILL);
    }
    let _ = unix::waitpid(child as i64, false);
    format!(
        "did not finish within {} s: killed it and its processes (pid state: {})",
        WATCHDOG_NS / 1_000_000_000,
        states.join(", ")
    )
}

/// Kill and reap any child a test left behind; an error names them.
fn reap_strays() -> TestResult {
    let kids = util::children()?;
    if kids.is_empty() {
        return Ok(());
    }
    for &(pid, _) in &kids {
        let _ = unix::kill(pid as i64, SIGKILL);
        let _ = unix::waitpid(pid as i64, false);
    }
    let pids: Vec<String> = kids.iter().map(|(p, s)| format!("{p} ({})", *s as char)).collect();
    Err(format!("the test left children behind: {}", pids.join(", ")))
}

/// The monitor's open-file descriptions are what they were before the test.
fn check_descriptions(before: Result<u64, String>) -> TestResult {
    let before = before?;
    let mut now = util::open_descriptions()?;
    // Orphaned grandchildren end on their own; give the monitor time to
    // close what they held.
    util::poll_until(400, 5, || {
        now = util::open_descriptions()?;
        Ok(now == before)
    })?;
    ensure!(
        now == before,
        "{before} open-file descriptions before the test, {now} after: the test or a server leaked"
    );
    Ok(())
}
