//! What the shell's tests share: a fake [`Host`] with in-memory files and
//! descriptors (no processes: a pipeline's stages run one after the other
//! in copies of the shell, each reading what the previous one wrote), a
//! fixed set of variables, and ways to run a line through it.
//!
//! The fake's external commands: `cat [files]`, `args …` (prints its
//! arguments on one line), `fail` (status 3), `raise N` (signal N
//! arrives: pending if caught, nothing if ignored, status 128+N
//! otherwise, as if the shell died); any other name is "command not
//! found" (127). Files whose names start with `bin/` are programs for
//! `command -v`.

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::rc::Rc;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::cell::RefCell;

use super::errors::ParseErrorKind;
use super::parser::parse;
use super::state::{Expanded, FileInfo, Host, Shell, SignalAction};
use super::syntax::{Command, List, ListItem, Pipeline, RedirKind, Redirection};

/// The variables every test line sees.
const VARS: [(&str, &str); 4] = [("HOME", "/home/u"), ("X", "x"), ("SP", " a  b "), ("EMPTY", "")];

#[derive(Clone)]
pub(super) enum Target {
    /// Appends to the file of that name.
    Out(String),
    /// Reads from the bytes, from the shared position on.
    In(Rc<RefCell<(Vec<u8>, usize)>>),
}

fn input(text: &str) -> Target {
    Target::In(Rc::new(RefCell::new((text.as_bytes().to_vec(), 0))))
}

pub(super) struct Fake {
    pub files: BTreeMap<String, String>,
    pub dirs: BTreeSet<String>,
    fds: BTreeMap<i32, Target>,
    captures: usize,
    /// What each signal does (`trap`); absent: the default.
    pub signals: BTreeMap<u32, SignalAction>,
    pending: u64,
    pub mask: u32,
    /// (soft, hard) per resource (`ulimit`); absent: unlimited. Raising a
    /// hard limit is refused, as for a non-root process.
    pub limits: BTreeMap<u64, (u64, u64)>,
}

/// A path as the fake's file names are written (`./f` is `f`).
fn norm(path: &str) -> String {
    path.strip_prefix("./").unwrap_or(path).to_string()
}

const STDOUT: &str = "<stdout>";
const STDERR: &str = "<stderr>";

impl Fake {
    pub fn new(stdin: &str) -> Fake {
        let mut fds = BTreeMap::new();
        fds.insert(0, input(stdin));
        fds.insert(1, Target::Out(STDOUT.to_string()));
        fds.insert(2, Target::Out(STDERR.to_string()));
        let mut files = BTreeMap::new();
        files.insert(STDOUT.to_string(), String::new());
        files.insert(STDERR.to_string(), String::new());
        Fake {
            files,
            dirs: BTreeSet::new(),
            fds,
            captures: 0,
            signals: BTreeMap::new(),
            pending: 0,
            mask: 0o022,
            limits: BTreeMap::new(),
        }
    }

    pub fn file(mut self, name: &str, text: &str) -> Fake {
        self.files.insert(name.to_string(), text.to_string());
        self
    }

    pub fn dir(mut self, name: &str) -> Fake {
        self.dirs.insert(name.to_string());
        self
    }

    fn take_file(&mut self, name: &str) -> String {
        self.files.remove(name).unwrap_or_default()
    }

    fn apply(&mut self, r: &Redirection<String>) -> Result<(), String> {
        let r = &Redirection {
            fd: r.fd,
            kind: match &r.kind {
                RedirKind::Read(p) => RedirKind::Read(norm(p)),
                RedirKind::Write(p) => RedirKind::Write(norm(p)),
                RedirKind::Append(p) => RedirKind::Append(norm(p)),
                RedirKind::WriteNew(p) => RedirKind::WriteNew(norm(p)),
                RedirKind::ReadWrite(p) => RedirKind::ReadWrite(norm(p)),
                other => other.clone(),
            },
        };
        let target = match &r.kind {
            RedirKind::Read(p) => match self.files.get(p) {
                Some(t) => input(&t.clone()),
                None => return Err(alloc::format!("{p}: ENOENT")),
            },
            RedirKind::Write(p) | RedirKind::Clobber(p) => {
                self.files.insert(p.clone(), String::new());
                Target::Out(p.clone())
            }
            RedirKind::WriteNew(p) => {
                if self.files.contains_key(p) {
                    return Err(alloc::format!("{p}: EEXIST"));
                }
                self.files.insert(p.clone(), String::new());
                Target::Out(p.clone())
            }
            // Reads only, in the fake (enough for `<>` as input).
            RedirKind::ReadWrite(p) => input(&self.files.entry(p.clone()).or_default().clone()),
            RedirKind::Append(p) => {
                self.files.entry(p.clone()).or_default();
                Target::Out(p.clone())
            }
            RedirKind::HereDoc(text) => input(text),
            RedirKind::Dup(m) => match self.fds.get(m) {
                Some(t) => t.clone(),
                None => return Err(alloc::format!("{m}: EBADF")),
            },
            RedirKind::Close => {
                self.fds.remove(&r.fd);
                return Ok(());
            }
        };
        self.fds.insert(r.fd, target);
        Ok(())
    }
}

impl Host for Fake {
    type Saved = BTreeMap<i32, Target>;

    fn write(&mut self, fd: i32, bytes: &[u8]) -> Result<(), String> {
        match self.fds.get(&fd) {
            Some(Target::Out(name)) => {
                let name = name.clone();
                self.files.entry(name).or_default().push_str(&String::from_utf8_lossy(bytes));
                Ok(())
            }
            _ => Err("EBADF".to_string()),
        }
    }

    fn read(&mut self, fd: i32, buf: &mut [u8]) -> Result<usize, String> {
        match self.fds.get(&fd) {
            Some(Target::In(data)) => {
                let mut d = data.borrow_mut();
                let (bytes, pos) = &mut *d;
                let n = buf.len().min(bytes.len() - *pos);
                buf[..n].copy_from_slice(&bytes[*pos..*pos + n]);
                *pos += n;
                Ok(n)
            }
            _ => Err("EBADF".to_string()),
        }
    }

    fn redirect(&mut self, redirections: &[Redirection<String>]) -> Option<Self::Saved> {
        let saved = self.fds.clone();
        for r in redirections {
            if let Err(e) = self.apply(r) {
                self.fds = saved;
                let _ = self.write(2, alloc::format!("sh: {e}\n").as_bytes());
                return None;
            }
        }
        Some(saved)
    }

    fn restore(&mut self, saved: Self::Saved) {
        self.fds = saved;
    }

    fn run_external(&mut self, _sh: &mut Shell, cmd: &Expanded) -> i32 {
        // dash: a failed redirection gives 2.
        let Some(saved) = self.redirect(&cmd.redirections) else { return 2 };
        let status = match cmd.argv[0].as_str() {
            "cat" => {
                let mut text = String::new();
                if cmd.argv.len() == 1 {
                    let mut buf = [0u8; 4096];
                    let mut bytes = Vec::new();
                    while let Ok(n) = self.read(0, &mut buf) {
                        if n == 0 {
                            break;
                        }
                        bytes.extend_from_slice(&buf[..n]);
                    }
                    text = String::from_utf8_lossy(&bytes).into_owned();
                }
                for f in &cmd.argv[1..] {
                    text.push_str(self.files.get(f).map_or("", String::as_str));
                }
                self.write(1, text.as_bytes()).map_or(1, |_| 0)
            }
            "args" => {
                let line = cmd.argv[1..].join(" ") + "\n";
                self.write(1, line.as_bytes()).map_or(1, |_| 0)
            }
            "fail" => 3,
            "raise" => {
                let sig: u32 = cmd.argv.get(1).and_then(|n| n.parse().ok()).unwrap_or(15);
                match self.signals.get(&sig) {
                    Some(SignalAction::Catch) => {
                        self.pending |= 1 << sig;
                        0
                    }
                    Some(SignalAction::Ignore) => 0,
                    _ => 128 + sig as i32,
                }
            }
            other => {
                let _ = self.write(2, alloc::format!("sh: {other}: command not found\n").as_bytes());
                127
            }
        };
        self.restore(saved);
        status
    }

    fn exec(&mut self, sh: &mut Shell, cmd: &Expanded) -> i32 {
        let status = self.run_external(sh, cmd);
        sh.exit_code = Some(status);
        status
    }

    fn pipeline(&mut self, sh: &mut Shell, pipeline: &Pipeline) -> i32 {
        let mut prev: Option<String> = None;
        let mut status = 0;
        let n = pipeline.commands.len();
        for (i, cmd) in pipeline.commands.iter().enumerate() {
            let saved = self.fds.clone();
            if let Some(text) = prev.take() {
                self.fds.insert(0, input(&text));
            }
            let pipe = alloc::format!("<pipe {i}>");
            if i + 1 < n {
                self.files.insert(pipe.clone(), String::new());
                self.fds.insert(1, Target::Out(pipe.clone()));
            }
            let mut sub = sh.clone();
            sub.enter_subshell(self);
            status = sub.run_stage(self, cmd);
            status = sub.finish(self, status);
            if i + 1 < n {
                prev = Some(self.take_file(&pipe));
            }
            self.fds = saved;
        }
        status
    }

    fn subshell(&mut self, sh: &mut Shell, list: &List, capture: bool) -> (i32, String) {
        let saved = self.fds.clone();
        self.captures += 1;
        let name = alloc::format!("<capture {}>", self.captures);
        if capture {
            self.files.insert(name.clone(), String::new());
            self.fds.insert(1, Target::Out(name.clone()));
        }
        let mut sub = sh.clone();
        sub.interactive = false;
        sub.enter_subshell(self);
        let status = sub.run_list(self, list);
        let status = sub.finish(self, status);
        self.fds = saved;
        let out = if capture { self.take_file(&name) } else { String::new() };
        (status, out)
    }

    fn background(&mut self, sh: &mut Shell, item: &ListItem) -> i32 {
        let list = List { items: alloc::vec![ListItem { background: false, ..item.clone() }] };
        self.subshell(sh, &list, false);
        0
    }

    fn read_dir(&mut self, dir: &str) -> Option<Vec<String>> {
        if dir != "." && !self.dirs.contains(dir) {
            return None;
        }
        let prefix = if dir == "." { String::new() } else { alloc::format!("{dir}/") };
        let mut names = BTreeSet::new();
        for key in self.files.keys().chain(self.dirs.iter()) {
            if key.starts_with('<') {
                continue;
            }
            if let Some(rest) = key.strip_prefix(&prefix) {
                names.insert(rest.split('/').next().unwrap_or(rest).to_string());
            }
        }
        Some(names.into_iter().collect())
    }

    fn stat(&mut self, path: &str) -> Option<FileInfo> {
        let path = norm(path);
        let path = path.as_str();
        if let Some(f) = self.files.get(path) {
            return Some(FileInfo {
                is_dir: false,
                is_regular: true,
                size_bytes: f.len() as u64,
                mode: if path.starts_with("bin/") { 0o755 } else { 0o644 },
            });
        }
        let is_dir = self.dirs.contains(path) || path == "." || path == "/";
        is_dir.then_some(FileInfo { is_dir: true, is_regular: false, size_bytes: 0, mode: 0o755 })
    }

    fn read_file(&mut self, path: &str) -> Result<String, String> {
        self.files.get(&norm(path)).cloned().ok_or_else(|| "ENOENT".to_string())
    }

    fn is_host_builtin(&self, name: &str) -> bool {
        name == "pwd"
    }

    fn host_builtin(&mut self, sh: &mut Shell, argv: &[String]) -> i32 {
        match argv[0].as_str() {
            "pwd" => sh.out(self, "pwd", "/fake\n").map_or_else(|s| s, |_| 0),
            _ => 1,
        }
    }

    fn times_ns(&mut self) -> (u64, u64) {
        (0, 0)
    }

    fn signal_action(&mut self, sig: u32, action: SignalAction) -> Result<(), String> {
        if sig == 9 {
            return Err("EINVAL".to_string());
        }
        self.signals.insert(sig, action);
        Ok(())
    }

    fn take_signals(&mut self) -> u64 {
        core::mem::take(&mut self.pending)
    }

    fn umask(&mut self, mask: Option<u32>) -> u32 {
        let old = self.mask;
        if let Some(m) = mask {
            self.mask = m;
        }
        old
    }

    fn rlimit(&mut self, resource: u64, set: Option<(u64, u64)>) -> Result<(u64, u64), String> {
        let inf = protocols::unix::rlimit::INFINITY;
        let old = self.limits.get(&resource).copied().unwrap_or((inf, inf));
        if let Some((soft, hard)) = set {
            if soft > hard {
                return Err("EINVAL".to_string());
            }
            if hard > old.1 {
                return Err("EPERM".to_string());
            }
            self.limits.insert(resource, (soft, hard));
        }
        Ok(old)
    }
}

/// A shell with [`VARS`], `$1` = `first`, `$?` = 3 and `$$` = 42.
pub(super) fn shell() -> Shell {
    let mut sh = Shell::new(42);
    for (n, v) in VARS {
        sh.set_var(n, v);
    }
    sh.params = alloc::vec!["first".to_string()];
    sh.status = 3;
    sh
}

/// What a script printed on standard output and standard error, and its
/// exit status, run with `fake`.
pub(super) fn run_with(script: &str, mut fake: Fake) -> (String, String, i32) {
    let mut sh = shell();
    sh.status = 0;
    let status = sh.run_text(&mut fake, script);
    let status = sh.finish(&mut fake, status);
    (fake.take_file(STDOUT), fake.take_file(STDERR), status)
}

/// A script's standard output and status, with no files and no input.
pub(super) fn run(script: &str) -> (String, i32) {
    let (out, _, status) = run_with(script, Fake::new(""));
    (out, status)
}

/// A script's standard output alone.
pub(super) fn out(script: &str) -> String {
    run(script).0
}

/// The first pipeline's commands of a one-item line, expanded.
fn expanded(src: &str) -> Vec<Expanded> {
    let list = parse(src).unwrap_or_else(|e| panic!("{src:?}: {e}"));
    assert_eq!(list.items.len(), 1, "{src:?}");
    let mut sh = shell();
    let mut fake = Fake::new("");
    list.items[0]
        .and_or
        .first
        .commands
        .iter()
        .map(|c| match c {
            Command::Simple(c) => sh.expand_command(&mut fake, c).unwrap(),
            other => panic!("{src:?}: not a simple command: {other:?}"),
        })
        .collect()
}

/// The argv of every command of a one-item, one-pipeline line.
pub(super) fn argvs(src: &str) -> Vec<Vec<String>> {
    expanded(src).into_iter().map(|c| c.argv).collect()
}

/// The argv of a line of one command.
pub(super) fn argv(src: &str) -> Vec<String> {
    let mut a = argvs(src);
    assert_eq!(a.len(), 1, "{src:?}");
    a.remove(0)
}

/// The first command of a line, expanded.
pub(super) fn simple(src: &str) -> Expanded {
    expanded(src).remove(0)
}

/// The kind of syntax error a line gives (it must give one).
pub(super) fn kind(src: &str) -> ParseErrorKind {
    match parse(src) {
        Ok(l) => panic!("{src:?} parsed: {l:?}"),
        Err(e) => e.kind,
    }
}

/// Owned strings, to compare with what expansion gives.
pub(super) fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}
