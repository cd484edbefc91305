//! tforeign: a foreign process for the kernel tests (`foreign_*` in the
//! test runner). It is not a Ridgeback program: it uses no runtime call
//! and runs only its own `_start`, which sets known values in every
//! register (xmm0 = its argument length, so two copies differ), makes
//! `syscall`s whose numbers the runner expects as messages, and stores
//! what it saw in memory for the runner to read with `foreign_read`.
//! Then it makes Ridgeback kernel-call numbers (getpid, exit, shutdown),
//! which must reach the runner as messages too, never the kernel.

#![no_std]
#![no_main]

#[path = "../foreign_words.rs"]
#[allow(dead_code)] // the runner's half
mod foreign_words;

// The runtime's panic handler and allocator; nothing of it runs.
use runtime as _;

use foreign_words::*;

core::arch::global_asm!(
    r#"
    .section .text.tforeign_start, "ax", @progbits
    .global _start
_start:
    movq xmm0, rsi
    mov rbx, {v_rbx}
    mov rbp, {v_rbp}
    mov rdi, {v_rdi}
    mov rsi, {v_rsi}
    mov rdx, {v_rdx}
    mov r8, {v_r8}
    mov r9, {v_r9}
    mov r10, {v_r10}
    mov r12, {v_r12}
    mov r13, {v_r13}
    mov r14, {v_r14}
    mov r15, {v_r15}
    mov rax, {nr_echo}
    syscall
tforeign_after_echo:
    mov [rip + tforeign_area + 0], rax
    mov [rip + tforeign_area + 8], rbx
    mov [rip + tforeign_area + 16], rcx
    mov [rip + tforeign_area + 24], rdx
    mov [rip + tforeign_area + 32], rsi
    mov [rip + tforeign_area + 40], rdi
    mov [rip + tforeign_area + 48], rbp
    mov [rip + tforeign_area + 56], r8
    mov [rip + tforeign_area + 64], r9
    mov [rip + tforeign_area + 72], r10
    mov [rip + tforeign_area + 80], r11
    mov [rip + tforeign_area + 88], r12
    mov [rip + tforeign_area + 96], r13
    mov [rip + tforeign_area + 104], r14
    mov [rip + tforeign_area + 112], r15
    movq rax, xmm0
    mov [rip + tforeign_area + 120], rax
    lea rax, [rip + tforeign_after_echo]
    mov [rip + tforeign_area + 128], rax
    pushfq
    pop rax
    mov [rip + tforeign_area + 136], rax
    mov [rip + tforeign_area + 144], rsp
    mov rax, {nr_report}
    lea rdi, [rip + tforeign_area]
    syscall
    mov rax, {call_getpid}
    syscall
    mov rax, {call_exit}
    mov rdi, 77
    syscall
    mov rax, {call_shutdown}
    syscall
    mov rax, {nr_done}
    syscall
    ud2

    .section .bss.tforeign_area, "aw", @nobits
    .balign 16
tforeign_area:
    .skip {area_bytes}
    "#,
    v_rbx = const V_RBX,
    v_rbp = const V_RBP,
    v_rdi = const V_RDI,
    v_rsi = const V_RSI,
    v_rdx = const V_RDX,
    v_r8 = const V_R8,
    v_r9 = const V_R9,
    v_r10 = const V_R10,
    v_r12 = const V_R12,
    v_r13 = const V_R13,
    v_r14 = const V_R14,
    v_r15 = const V_R15,
    nr_echo = const NR_ECHO,
    nr_report = const NR_REPORT,
    nr_done = const NR_DONE,
    call_getpid = const abi::Call::GetPid as u64,
    call_exit = const abi::Call::Exit as u64,
    call_shutdown = const abi::Call::Shutdown as u64,
    area_bytes = const REPORT_WORDS * 8,
);
