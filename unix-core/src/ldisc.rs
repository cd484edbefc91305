//! The console line discipline: POSIX "canonical mode input processing"
//! (XBD §11.1.6) and the one output-processing rule a serial terminal
//! needs (`ONLCR`), as the console device manager (`servers/tty`) runs it.
//!
//! Input arrives byte by byte ([`LineDiscipline::input`]); each byte may
//! produce bytes to echo and an [`Event`]. Finished lines wait in a queue
//! until [`LineDiscipline::read`] takes them, one line (or the front part of
//! a long one) per read, as `read(2)` on a terminal does.
//!
//! Special characters (the POSIX defaults, with Linux's `ICRNL`, `ECHO`,
//! `ECHOE`, `ECHOKE`, `ECHOCTL` and `ISIG` on):
//! - CR (0x0d) is taken as NL; NL (0x0a) ends a line (the NL is part of it);
//!   both echo as CR NL;
//! - ERASE: backspace (0x08) and DEL (0x7f) remove the last character of
//!   the line being typed (a whole UTF-8 sequence), echoed as `\b \b` per
//!   column it took; nothing at the start of a line;
//! - KILL: ^U (0x15) removes the whole line being typed, rubbed out on the
//!   screen character by character;
//! - INTR: ^C (0x03) echoes `^C\r\n`, throws away all unread input (the
//!   line being typed and finished lines nobody has read: POSIX flushes the
//!   input queue on INTR unless `NOFLSH`) and yields [`Event::Interrupt`];
//! - EOF: ^D (0x04) makes the line typed so far readable without the ^D;
//!   on an empty line, the next read returns end of file (0 bytes);
//! - other control characters are kept and echoed as `^X`.
//!
//! Invariants: the bytes held (finished lines, one unit per pending end of
//! file, and the line being typed) never exceed [`CAPACITY_BYTES`]; input
//! that does not fit is dropped and echoed as BEL. A byte that would leave
//! no room for the line's NL is refused, so a line being typed can always
//! be ended.
//!
//! What it is not: a terminal with modes. There is no raw mode, no `VMIN`
//! and `VTIME`, and no job-control characters besides ^C.

use alloc::collections::VecDeque;
use alloc::vec::Vec;

/// Most bytes of input held (Linux's `N_TTY_BUF_SIZE`; POSIX `MAX_INPUT`).
pub const CAPACITY_BYTES: usize = 4096;

const NL: u8 = b'\n';
const CR: u8 = b'\r';
const BACKSPACE: u8 = 0x08;
const DEL: u8 = 0x7f;
const TAB: u8 = b'\t';
const BEL: u8 = 0x07;
/// ^C, POSIX `VINTR`.
pub const INTR: u8 = 0x03;
/// ^D, POSIX `VEOF`.
pub const EOF: u8 = 0x04;
/// ^U, POSIX `VKILL`.
pub const KILL: u8 = 0x15;

/// Something the device manager must act on, besides echo.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// ^C: signal the foreground process group (SIGINT).
    Interrupt,
}

/// What a read finds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Read {
    /// This many bytes were copied out (never 0 unless the buffer was empty).
    Bytes(usize),
    /// End of file (^D on an empty line): the read returns 0 bytes.
    EndOfFile,
    /// No finished line yet: the reader waits.
    Nothing,
}

/// A finished piece of input waiting for a reader.
#[derive(Debug)]
enum Entry {
    /// A line (ending in NL, or cut short by ^D) and how much of it earlier
    /// reads took.
    Line {
        bytes: Vec<u8>,
        taken: usize,
    },
    EndOfFile,
}

/// One terminal's input queue, line being edited and output column.
#[derive(Debug, Default)]
pub struct LineDiscipline {
    finished: VecDeque<Entry>,
    finished_bytes: usize,
    line: Vec<u8>,
    /// The column the cursor is in (0 = left margin), from everything echoed
    /// and written; needed to erase a tab.
    column: usize,
    /// The column where the line being typed began.
    line_start_column: usize,
    /// Input bytes dropped because the buffer was full.
    dropped_bytes: u64,
}

impl LineDiscipline {
    pub fn new() -> LineDiscipline {
        LineDiscipline::default()
    }

    /// Take one input byte; append what to echo to `echo`.
    pub fn input(&mut self, byte: u8, echo: &mut Vec<u8>) -> Option<Event> {
        let byte = if byte == CR { NL } else { byte };
        match byte {
            NL => {
                if self.held_bytes() + 1 > CAPACITY_BYTES {
                    self.refuse(echo);
                } else {
                    self.line.push(NL);
                    self.finish_line();
                    self.echo_bytes(b"\r\n", echo);
                }
            }
            BACKSPACE | DEL => self.erase_one(echo),
            KILL => {
                while !self.line.is_empty() {
                    self.erase_one(echo);
                }
            }
            INTR => {
                self.line.clear();
                self.finished.clear();
                self.finished_bytes = 0;
                self.echo_bytes(b"^C\r\n", echo);
                return Some(Event::Interrupt);
            }
            EOF => {
                if !self.line.is_empty() {
                    self.finish_line();
                } else if self.held_bytes() + 1 > CAPACITY_BYTES {
                    self.refuse(echo);
                } else {
                    self.finished.push_back(Entry::EndOfFile);
                    self.finished_bytes += 1;
                }
            }
            _ => {
                // Keep one byte free for the NL that ends the line.
                if self.held_bytes() + 2 > CAPACITY_BYTES {
                    self.refuse(echo);
                } else {
                    if self.line.is_empty() {
                        self.line_start_column = self.column;
                    }
                    self.line.push(byte);
                    if is_echoed_as_caret(byte) {
                        self.echo_bytes(&[b'^', byte ^ 0x40], echo);
                    } else {
                        self.echo_bytes(&[byte], echo);
                    }
                }
            }
        }
        None
    }

    /// Take several input bytes; events are passed to `on_event` in order.
    /// (A device manager that must hand lines to waiting readers between
    /// bytes, before a later ^C flushes them, calls [`Self::input`] itself.)
    pub fn input_all(&mut self, bytes: &[u8], echo: &mut Vec<u8>, mut on_event: impl FnMut(Event)) {
        for &b in bytes {
            if let Some(e) = self.input(b, echo) {
                on_event(e);
            }
        }
    }

    /// Is there something for a reader (a line or an end of file)?
    pub fn readable(&self) -> bool {
        !self.finished.is_empty()
    }

    /// Take up to `out.len()` bytes of the first finished line; the rest of
    /// a longer line stays for the next read. An empty `out` takes nothing.
    pub fn read(&mut self, out: &mut [u8]) -> Read {
        let r = self.peek(out);
        self.consume(r);
        r
    }

    /// What [`Self::read`] would return, without taking it: a device
    /// manager peeks, replies, and [`Self::consume`]s only when the reader
    /// was still there to get it (a reader killed while waiting must not
    /// swallow the next line).
    pub fn peek(&self, out: &mut [u8]) -> Read {
        match self.finished.front() {
            None => Read::Nothing,
            Some(Entry::EndOfFile) => Read::EndOfFile,
            Some(Entry::Line { bytes, taken }) => {
                let n = out.len().min(bytes.len() - taken);
                out[..n].copy_from_slice(&bytes[*taken..*taken + n]);
                Read::Bytes(n)
            }
        }
    }

    /// Take what a [`Self::peek`] just returned (with no input in between).
    pub fn consume(&mut self, peeked: Read) {
        match (self.finished.front_mut(), peeked) {
            (Some(Entry::EndOfFile), Read::EndOfFile) => {
                self.finished.pop_front();
                self.finished_bytes -= 1;
            }
            (Some(Entry::Line { bytes, taken }), Read::Bytes(n)) => {
                let n = n.min(bytes.len() - *taken);
                *taken += n;
                self.finished_bytes -= n;
                if *taken == bytes.len() {
                    self.finished.pop_front();
                }
            }
            _ => {}
        }
    }

    /// Output processing for bytes a program writes: NL becomes CR NL
    /// (`OPOST | ONLCR`). Appends to `out`.
    pub fn output(&mut self, bytes: &[u8], out: &mut Vec<u8>) {
        for &b in bytes {
            if b == NL {
                self.echo_bytes(b"\r\n", out);
            } else {
                self.echo_bytes(&[b], out);
            }
        }
    }

    /// Bytes held: finished lines not yet read, pending ends of file, and
    /// the line being typed.
    pub fn held_bytes(&self) -> usize {
        self.finished_bytes + self.line.len()
    }

    /// Input bytes dropped because the buffer was full.
    pub fn dropped_bytes(&self) -> u64 {
        self.dropped_bytes
    }

    fn refuse(&mut self, echo: &mut Vec<u8>) {
        self.dropped_bytes += 1;
        echo.push(BEL);
    }

    fn finish_line(&mut self) {
        let line = core::mem::take(&mut self.line);
        self.finished_bytes += line.len();
        self.finished.push_back(Entry::Line { bytes: line, taken: 0 });
    }

    /// Remove the last character (all bytes of a UTF-8 sequence) of the
    /// line being typed and rub it out on the screen.
    fn erase_one(&mut self, echo: &mut Vec<u8>) {
        let Some(last) = self.line.iter().rposition(|&b| !is_utf8_continuation(b)).or_else(|| {
            // Only continuation bytes (a broken sequence): erase one.
            self.line.len().checked_sub(1)
        }) else {
            return;
        };
        // The column the character started in.
        let start_column = self.line[..last].iter().fold(self.line_start_column, |c, &b| echo_column(c, b));
        let erased = self.line[last];
        self.line.truncate(last);
        let width = self.column.saturating_sub(start_column);
        for _ in 0..width {
            if erased == TAB {
                // A tab's columns held no characters: move back only.
                self.echo_bytes(&[BACKSPACE], echo);
            } else {
                self.echo_bytes(b"\x08 \x08", echo);
            }
        }
    }

    /// Append to `echo` and keep the column up to date.
    fn echo_bytes(&mut self, bytes: &[u8], echo: &mut Vec<u8>) {
        for &b in bytes {
            self.column = advance_column(self.column, b);
        }
        echo.extend_from_slice(bytes);
    }
}

fn is_utf8_continuation(b: u8) -> bool {
    b & 0xc0 == 0x80
}

/// Control characters echoed as `^X` (`ECHOCTL`): all but tab and NL.
fn is_echoed_as_caret(b: u8) -> bool {
    b < 0x20 && b != TAB && b != NL
}

/// The column after echoing input byte `b` at column `c` (as its echo,
/// which may be two characters).
fn echo_column(c: usize, b: u8) -> usize {
    if is_echoed_as_caret(b) { c + 2 } else { advance_column(c, b) }
}

/// The column after the terminal prints byte `b` at column `c`.
fn advance_column(c: usize, b: u8) -> usize {
    match b {
        CR | NL => 0,
        BACKSPACE => c.saturating_sub(1),
        TAB => (c | 7) + 1,
        _ if b < 0x20 || b == DEL || is_utf8_continuation(b) => c,
        _ => c + 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec;

    /// Feed `input`; return (echo, number of interrupts).
    fn feed(l: &mut LineDiscipline, input: &[u8]) -> (Vec<u8>, usize) {
        let mut echo = Vec::new();
        let mut interrupts = 0;
        l.input_all(input, &mut echo, |e| {
            assert_eq!(e, Event::Interrupt);
            interrupts += 1;
        });
        (echo, interrupts)
    }

    fn read_all(l: &mut LineDiscipline, max: usize) -> Option<Vec<u8>> {
        let mut buf = vec![0u8; max];
        match l.read(&mut buf) {
            Read::Bytes(n) => Some(buf[..n].to_vec()),
            Read::EndOfFile => Some(Vec::new()),
            Read::Nothing => None,
        }
    }

    #[test]
    fn a_line_is_echoed_and_read_whole() {
        let mut l = LineDiscipline::new();
        let (echo, _) = feed(&mut l, b"ls -l");
        assert_eq!(echo, b"ls -l");
        assert!(!l.readable());
        assert_eq!(l.read(&mut [0; 16]), Read::Nothing);
        let (echo, _) = feed(&mut l, b"\n");
        assert_eq!(echo, b"\r\n");
        assert_eq!(read_all(&mut l, 100).unwrap(), b"ls -l\n");
        assert_eq!(l.read(&mut [0; 16]), Read::Nothing);
        assert_eq!(l.held_bytes(), 0);
    }

    #[test]
    fn cr_becomes_nl() {
        let mut l = LineDiscipline::new();
        let (echo, _) = feed(&mut l, b"a\rb\r");
        assert_eq!(echo, b"a\r\nb\r\n");
        assert_eq!(read_all(&mut l, 100).unwrap(), b"a\n");
        assert_eq!(read_all(&mut l, 100).unwrap(), b"b\n");
    }

    #[test]
    fn one_line_per_read_and_long_lines_in_pieces() {
        let mut l = LineDiscipline::new();
        feed(&mut l, b"first\nsecond line\n");
        assert_eq!(read_all(&mut l, 100).unwrap(), b"first\n");
        assert_eq!(read_all(&mut l, 4).unwrap(), b"seco");
        assert_eq!(read_all(&mut l, 4).unwrap(), b"nd l");
        assert_eq!(read_all(&mut l, 100).unwrap(), b"ine\n");
        assert!(read_all(&mut l, 100).is_none());
        // An empty buffer takes nothing.
        feed(&mut l, b"x\n");
        assert_eq!(l.read(&mut []), Read::Bytes(0));
        assert_eq!(read_all(&mut l, 100).unwrap(), b"x\n");
    }

    #[test]
    fn erase_with_backspace_and_del() {
        let mut l = LineDiscipline::new();
        let (echo, _) = feed(&mut l, b"abc\x08\x7fd\n");
        assert_eq!(echo, b"abc\x08 \x08\x08 \x08d\r\n");
        assert_eq!(read_all(&mut l, 100).unwrap(), b"ad\n");
    }

    #[test]
    fn erase_at_line_start_does_nothing() {
        let mut l = LineDiscipline::new();
        let (echo, _) = feed(&mut l, b"\x7f\x08");
        assert!(echo.is_empty());
        // Finished lines cannot be erased.
        feed(&mut l, b"ok\n");
        let (echo, _) = feed(&mut l, b"\x7f");
        assert!(echo.is_empty());
        assert_eq!(read_all(&mut l, 100).unwrap(), b"ok\n");
    }

    #[test]
    fn erase_removes_a_whole_utf8_character() {
        let mut l = LineDiscipline::new();
        let (echo, _) = feed(&mut l, "aé€".as_bytes());
        assert_eq!(echo, "aé€".as_bytes());
        let (echo, _) = feed(&mut l, b"\x7f\x7f\n");
        assert_eq!(echo, b"\x08 \x08\x08 \x08\r\n");
        assert_eq!(read_all(&mut l, 100).unwrap(), b"a\n");
    }

    #[test]
    fn control_characters_echo_as_caret_and_erase_two_columns() {
        let mut l = LineDiscipline::new();
        let (echo, _) = feed(&mut l, b"a\x01");
        assert_eq!(echo, b"a^A");
        let (echo, _) = feed(&mut l, b"\x7f");
        assert_eq!(echo, b"\x08 \x08\x08 \x08");
        feed(&mut l, b"\x1b\n");
        assert_eq!(read_all(&mut l, 100).unwrap(), b"a\x1b\n");
    }

    #[test]
    fn erasing_a_tab_moves_back_to_where_it_began() {
        let mut l = LineDiscipline::new();
        // A prompt of 2 columns written first.
        let mut out = Vec::new();
        l.output(b"$ ", &mut out);
        let (echo, _) = feed(&mut l, b"ab\t");
        assert_eq!(echo, b"ab\t");
        // The tab went from column 4 to 8: four columns back.
        let (echo, _) = feed(&mut l, b"\x7f");
        assert_eq!(echo, b"\x08\x08\x08\x08");
        let (echo, _) = feed(&mut l, b"\x7f");
        assert_eq!(echo, b"\x08 \x08");
    }

    #[test]
    fn kill_removes_the_line() {
        let mut l = LineDiscipline::new();
        let (echo, _) = feed(&mut l, b"rm -rf\x15");
        assert_eq!(echo, [&b"rm -rf"[..], &b"\x08 \x08".repeat(6)].concat());
        feed(&mut l, b"ls\n");
        assert_eq!(read_all(&mut l, 100).unwrap(), b"ls\n");
        // ^U on an empty line echoes nothing.
        let (echo, _) = feed(&mut l, b"\x15");
        assert!(echo.is_empty());
    }

    #[test]
    fn interrupt_discards_input_and_reports() {
        let mut l = LineDiscipline::new();
        feed(&mut l, b"typed ahead\n");
        let (echo, interrupts) = feed(&mut l, b"half\x03");
        assert_eq!(echo, b"half^C\r\n");
        assert_eq!(interrupts, 1);
        assert!(!l.readable());
        assert_eq!(l.held_bytes(), 0);
        feed(&mut l, b"next\n");
        assert_eq!(read_all(&mut l, 100).unwrap(), b"next\n");
        let (_, interrupts) = feed(&mut l, b"\x03\x03");
        assert_eq!(interrupts, 2);
    }

    #[test]
    fn eof_on_an_empty_line_is_one_end_of_file() {
        let mut l = LineDiscipline::new();
        let (echo, _) = feed(&mut l, b"\x04");
        assert!(echo.is_empty());
        assert!(l.readable());
        assert_eq!(l.read(&mut [0; 8]), Read::EndOfFile);
        // Only once: the next read waits again.
        assert_eq!(l.read(&mut [0; 8]), Read::Nothing);
        feed(&mut l, b"more\n\x04");
        assert_eq!(read_all(&mut l, 100).unwrap(), b"more\n");
        assert_eq!(l.read(&mut [0; 8]), Read::EndOfFile);
    }

    #[test]
    fn eof_after_text_makes_it_readable_without_the_eof() {
        let mut l = LineDiscipline::new();
        let (echo, _) = feed(&mut l, b"abc\x04");
        assert_eq!(echo, b"abc");
        assert_eq!(read_all(&mut l, 100).unwrap(), b"abc");
        assert_eq!(l.read(&mut [0; 8]), Read::Nothing);
        // ^D twice: the text, then end of file.
        feed(&mut l, b"xy\x04\x04");
        assert_eq!(read_all(&mut l, 100).unwrap(), b"xy");
        assert_eq!(l.read(&mut [0; 8]), Read::EndOfFile);
    }

    #[test]
    fn full_buffer_drops_input_with_bel_but_lets_the_line_end() {
        let mut l = LineDiscipline::new();
        let (echo, _) = feed(&mut l, &vec![b'x'; CAPACITY_BYTES + 10]);
        // One byte stays free for the NL.
        assert_eq!(l.held_bytes(), CAPACITY_BYTES - 1);
        assert_eq!(echo.iter().filter(|&&b| b == BEL).count(), 11);
        assert_eq!(l.dropped_bytes(), 11);
        feed(&mut l, b"\n");
        assert_eq!(l.held_bytes(), CAPACITY_BYTES);
        // Full of finished input: a new NL, ^D or byte is refused.
        let (echo, _) = feed(&mut l, b"\n\x04y");
        assert_eq!(echo, [BEL, BEL, BEL]);
        assert!(l.line.is_empty());
        assert_eq!(l.finished.len(), 1);
        // Reading makes room again.
        let mut buf = vec![0u8; 4096];
        assert_eq!(l.read(&mut buf), Read::Bytes(CAPACITY_BYTES));
        assert_eq!(buf[CAPACITY_BYTES - 1], b'\n');
        assert_eq!(l.held_bytes(), 0);
        feed(&mut l, b"z\n");
        assert_eq!(read_all(&mut l, 10).unwrap(), b"z\n");
    }

    #[test]
    fn pending_ends_of_file_are_bounded() {
        let mut l = LineDiscipline::new();
        let (echo, _) = feed(&mut l, &vec![EOF; CAPACITY_BYTES + 3]);
        assert_eq!(echo, vec![BEL; 3]);
        assert_eq!(l.held_bytes(), CAPACITY_BYTES);
        assert_eq!(l.read(&mut [0; 1]), Read::EndOfFile);
        assert_eq!(l.held_bytes(), CAPACITY_BYTES - 1);
    }

    #[test]
    fn peek_takes_nothing_until_consumed() {
        let mut l = LineDiscipline::new();
        feed(&mut l, b"hello\n\x04");
        let mut buf = [0u8; 3];
        assert_eq!(l.peek(&mut buf), Read::Bytes(3));
        assert_eq!(&buf, b"hel");
        // The reader was gone: nothing consumed, the next one gets it.
        assert_eq!(l.peek(&mut buf), Read::Bytes(3));
        l.consume(Read::Bytes(3));
        assert_eq!(read_all(&mut l, 100).unwrap(), b"lo\n");
        assert_eq!(l.peek(&mut buf), Read::EndOfFile);
        assert!(l.readable());
        l.consume(Read::EndOfFile);
        assert!(!l.readable());
        assert_eq!(l.peek(&mut buf), Read::Nothing);
        l.consume(Read::Nothing);
        assert_eq!(l.held_bytes(), 0);
    }

    #[test]
    fn output_turns_nl_into_cr_nl() {
        let mut l = LineDiscipline::new();
        let mut out = Vec::new();
        l.output(b"one\ntwo\n\n", &mut out);
        assert_eq!(out, b"one\r\ntwo\r\n\r\n");
        let mut out = Vec::new();
        l.output(b"", &mut out);
        assert!(out.is_empty());
    }
}
