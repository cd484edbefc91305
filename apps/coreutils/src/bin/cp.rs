//! cp: copy a file to a file (`cp SRC DST`), or files into a directory
//! (`cp SRC... DIR`). The copy gets the source's permission bits.
//! Directories are not copied (there is no `-r`).

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

use coreutils::io::{self, ChunkBuf, CopyError};
use coreutils::text::{self, Options};
use protocols::unix::{errno, mode, open_flags};
use runtime::unix;

runtime::entry!(main);

fn main(args: runtime::Args) -> i32 {
    let ops = io::operands(&args);
    let opts = match Options::parse(&ops, "") {
        Ok(o) => o,
        Err(c) => return io::usage("cp", Some(c), "source dest | source... directory"),
    };
    let Some((target, sources)) = opts.operands.split_last().filter(|(_, s)| !s.is_empty()) else {
        runtime::eprintln!("cp: missing file operand");
        return io::usage("cp", None, "source dest | source... directory");
    };
    let into_dir = unix::stat(target).is_ok_and(|st| mode::is_dir(st.mode));
    if sources.len() > 1 && !into_dir {
        io::report("cp", target, errno::ENOTDIR);
        return io::FAILURE;
    }
    let mut buf = ChunkBuf::new();
    let mut status = 0;
    for src in sources {
        let dest = if into_dir { text::join(target, text::base_name(src)) } else { (*target).into() };
        if copy(src, &dest, &mut buf).is_err() {
            status = io::FAILURE;
        }
    }
    status
}

/// Copy one file; errors are reported here.
fn copy(src: &str, dest: &str, buf: &mut ChunkBuf) -> Result<(), ()> {
    let st = unix::stat(src).map_err(|e| io::report("cp", src, e))?;
    if mode::is_dir(st.mode) {
        io::report("cp", src, errno::EISDIR);
        return Err(());
    }
    if unix::stat(dest).is_ok_and(|d| d.ino == st.ino && d.device_pid == st.device_pid) {
        runtime::eprintln!("cp: '{src}' and '{dest}' are the same file");
        return Err(());
    }
    let from = unix::open(src, open_flags::O_RDONLY, 0).map_err(|e| io::report("cp", src, e))?;
    let flags = open_flags::O_WRONLY | open_flags::O_CREAT | open_flags::O_TRUNC;
    let to = match unix::open(dest, flags, st.mode & 0o777) {
        Ok(fd) => fd,
        Err(e) => {
            let _ = unix::close(from);
            io::report("cp", dest, e);
            return Err(());
        }
    };
    let result = match io::copy_fd(from, to, buf) {
        Ok(_) => Ok(()),
        Err(CopyError::Read(e)) => {
            io::report("cp", src, e);
            Err(())
        }
        Err(CopyError::Write(e)) => {
            io::report("cp", dest, e);
            Err(())
        }
    };
    let _ = unix::close(from);
    if let Err(e) = unix::close(to) {
        io::report("cp", dest, e);
        return Err(());
    }
    result
}
