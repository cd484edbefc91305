//! Whole scripts run by the interpreter on the fake host (`testing`):
//! one test per construct of XCU chapter 2 that the shell implements,
//! with the output dash gives for the same script.

use alloc::string::String;

use super::testing::{Fake, out, run, run_with};

fn err_of(script: &str) -> (String, String, i32) {
    run_with(script, Fake::new(""))
}

#[test]
fn if_elif_else() {
    assert_eq!(out("if true; then echo yes; fi"), "yes\n");
    assert_eq!(out("if false; then echo yes; else echo no; fi"), "no\n");
    assert_eq!(out("if false; then echo 1; elif true; then echo 2; else echo 3; fi"), "2\n");
    // On separate lines, a false condition runs no body (the case).
    assert_eq!(out("if false\nthen\necho BODY\nfi\n"), "");
    assert_eq!(run("if false; then echo x; fi").1, 0);
    assert_eq!(run("if true; then fail; fi").1, 3);
    // Keywords only where a command starts.
    assert_eq!(out("echo if then fi"), "if then fi\n");
    assert_eq!(out("if echo fi; then echo done; fi"), "fi\ndone\n");
}

#[test]
fn while_until_for() {
    assert_eq!(out("for i in 1 2; do echo $i; done"), "1\n2\n");
    assert_eq!(out("for i in a b\ndo\n  echo $i\ndone"), "a\nb\n");
    assert_eq!(out("set -- x y; for i; do echo $i; done"), "x\ny\n");
    assert_eq!(out("set -- x y; for i do echo $i; done"), "x\ny\n");
    assert_eq!(out("for i in; do echo $i; done; echo end"), "end\n");
    assert_eq!(out("i=0; while [ $i -lt 3 ]; do echo $i; i=$((i+1)); done"), "0\n1\n2\n");
    assert_eq!(out("i=0; until [ $i -ge 2 ]; do i=$((i+1)); done; echo $i"), "2\n");
    assert_eq!(run("while false; do :; done").1, 0);
}

#[test]
fn break_and_continue() {
    assert_eq!(out("for i in 1 2 3 4; do if [ $i = 3 ]; then break; fi; echo $i; done"), "1\n2\n");
    assert_eq!(out("for i in 1 2 3; do if [ $i = 2 ]; then continue; fi; echo $i; done"), "1\n3\n");
    assert_eq!(out("for i in 1 2; do for j in a b; do echo $i$j; break 2; done; done"), "1a\n");
    assert_eq!(
        out("for i in 1 2; do for j in a b; do continue 2; echo no; done; echo no; done; echo ok"),
        "ok\n"
    );
    assert_eq!(out("while true; do echo once; break; done"), "once\n");
}

#[test]
fn case_patterns() {
    let script = "for w in apple b.txt zz x; do case $w in a*) echo A;; *.txt|*.md) echo T;; ?) echo one;; [yz]*) echo YZ;; esac; done";
    assert_eq!(out(script), "A\nT\nYZ\none\n");
    assert_eq!(out("case x in (x) echo paren;; esac"), "paren\n");
    assert_eq!(out("case '*' in \\*) echo star;; *) echo other;; esac"), "star\n");
    assert_eq!(out("case abc in \"a*\") echo q;; a*) echo u;; esac"), "u\n");
    assert_eq!(out("case x in\n  y)\n    echo y\n    ;;\n  x)\n    echo x\nesac"), "x\n");
    assert_eq!(run("case x in y) echo;; esac").1, 0);
    assert_eq!(out("P='b*'; case bc in $P) echo pat;; esac"), "pat\n");
}

#[test]
fn groups_functions_and_return() {
    assert_eq!(out("{ echo a; echo b; } | cat"), "a\nb\n");
    assert_eq!(out("f() { echo \"f:$1:$#\"; }; f x y; echo $#"), "f:x:2\n1\n");
    assert_eq!(out("f() { return 4; echo no; }; f; echo $?"), "4\n");
    assert_eq!(out("f()\n{\n  echo multi\n}\nf"), "multi\n");
    assert_eq!(
        out("fact() { if [ $1 -le 1 ]; then echo 1; else echo $(( $1 * $(fact $(($1-1))) )); fi; }; fact 5"),
        "120\n"
    );
    assert_eq!(
        out("f() { for i in 1 2 3; do if [ $i = 2 ]; then return 0; fi; echo $i; done; }; f; echo after"),
        "1\nafter\n"
    );
    assert_eq!(out("f() (echo sub); f"), "sub\n");
    assert_eq!(out("g() { echo in g >&2; }; g 2>/dev/null; echo ok"), "ok\n");
}

#[test]
fn not_and_or() {
    assert_eq!(run("! true").1, 1);
    assert_eq!(run("! false").1, 0);
    assert_eq!(out("true && echo a || echo b; false && echo c || echo d"), "a\nd\n");
    assert_eq!(out("if ! false; then echo neg; fi"), "neg\n");
}

#[test]
fn subshells_do_not_change_the_shell() {
    assert_eq!(out("X=1; (X=2; echo $X); echo $X"), "2\n1\n");
    assert_eq!(out("(exit 3); echo $?"), "3\n");
}

#[test]
fn builtins_basic() {
    assert_eq!(run(":").1, 0);
    assert_eq!(run("false").1, 1);
    assert_eq!(out("echo -n a; echo b"), "ab\n");
    assert_eq!(out("echo 'a\\tb'"), "a\tb\n");
    assert_eq!(out("printf '%s-%d\\n' a 5 b 6"), "a-5\nb-6\n");
    assert_eq!(out("printf '%5s|%-3s|%03d|%x\\n' ab c 7 255"), "   ab|c  |007|ff\n");
    assert_eq!(out("printf '%%\\n'"), "%\n");
    assert_eq!(out("set -- a b c; shift; echo $@ $#"), "b c 2\n");
    assert_eq!(out("set -- a b c; shift 2; echo $1"), "c\n");
    assert_eq!(run("set -- a; shift 2; echo no"), (String::new(), 2));
    assert_eq!(run("exit 5; echo no"), (String::new(), 5));
    assert_eq!(out("eval 'echo $X'"), "x\n");
    assert_eq!(out("eval 'for i in 1 2; do echo $i; done'"), "1\n2\n");
}

#[test]
fn test_builtin() {
    let cases = [
        ("[ a = a ]", 0),
        ("[ a = b ]", 1),
        ("[ a != b ]", 0),
        ("[ 3 -gt 2 ]", 0),
        ("[ 3 -le 2 ]", 1),
        ("[ -n x ]", 0),
        ("[ -z x ]", 1),
        ("[ -z '' ]", 0),
        ("[ x ]", 0),
        ("[ '' ]", 1),
        ("[ ]", 1),
        ("[ ! a = b ]", 0),
        ("[ a = a -a b = c ]", 1),
        ("[ a = a -o b = c ]", 0),
        ("[ \\( a = a \\) ]", 0),
        ("test -f f", 0),
        ("test -d d", 0),
        ("test -e nope", 1),
        ("test -s f", 0),
        ("[ 1 -eq x ]", 2),
        ("[ a = a", 2),
    ];
    for (script, status) in cases {
        let fake = Fake::new("").file("f", "x").dir("d");
        assert_eq!(run_with(script, fake).2, status, "{script}");
    }
}

#[test]
fn set_options() {
    let (o, _, s) = err_of("set -e; echo a; false; echo b");
    assert_eq!((o.as_str(), s), ("a\n", 1));
    assert_eq!(out("set -e; if false; then :; fi; false || echo ok; ! true; echo still"), "ok\nstill\n");
    assert_eq!(out("set -e; f() { false; echo no; }; f || echo caught"), "no\n");
    let (o, e, s) = err_of("set -u; echo $NOPE; echo after");
    assert_eq!((o.as_str(), s), ("", 2));
    assert!(e.contains("NOPE: parameter not set"), "{e}");
    let (o, e, _) = err_of("set -x; echo hi");
    assert_eq!((o.as_str(), e.as_str()), ("hi\n", "+ echo hi\n"));
    let fake = Fake::new("").file("a1", "");
    assert_eq!(run_with("set -f; echo a*; set +f; echo a*", fake).0, "a*\na1\n");
    assert_eq!(out("set -e; echo $-; set +e; echo \"[$-]\""), "e\n[]\n");
}

#[test]
fn read_builtin() {
    let fake = Fake::new("one two three\nback\\\nslash\n  lead  \n");
    let (o, _, s) = run_with(
        "read a b; echo \"$a|$b\"; read c; echo \"$c\"; read -r d; echo \"[$d]\"; read e; echo $?",
        fake,
    );
    assert_eq!(o, "one|two three\nbackslash\n[lead]\n1\n");
    assert_eq!(s, 0);
    let fake = Fake::new("a\\b\n");
    assert_eq!(run_with("read -r x; printf '%s\\n' \"$x\"", fake).0, "a\\b\n");
    let fake = Fake::new("1\n2\n3\n");
    assert_eq!(run_with("n=0; while read l; do n=$((n+l)); done; echo $n", fake).0, "6\n");
    let fake = Fake::new("a:b:c\n");
    assert_eq!(run_with("IFS=: read x y z; echo $x $y $z", fake).0, "a b c\n");
    // The prefix assignment lasts for the builtin only; IFS starts set.
    assert_eq!(out("IFS=: read x <<E\na:b\nE\necho $x; printf '[%s]\\n' \"$IFS\""), "a:b\n[ \t\n]\n");
}

#[test]
fn dot_and_exec() {
    let fake = Fake::new("").file("lib.sh", "V=from_lib\nf() { echo f $1; }\nreturn 3\necho no\n");
    let (o, _, s) = run_with(". ./lib.sh; echo $? $V; f z", fake);
    assert_eq!((o.as_str(), s), ("3 from_lib\nf z\n", 0));
    let (o, _, s) = run_with("exec args a b; echo no", Fake::new(""));
    assert_eq!((o.as_str(), s), ("a b\n", 0));
    let (_, e, s) = run_with(". ./missing", Fake::new(""));
    assert_eq!(s, 2);
    assert!(e.contains("missing"));
}

#[test]
fn builtin_write_errors_are_reported() {
    let (_, e, s) = err_of("pwd >&-");
    assert_eq!(s, 1);
    assert!(e.contains("pwd: write error"), "{e}");
    let (_, e, s) = err_of("echo hi >&-; echo $?");
    assert_eq!(s, 0);
    assert!(e.contains("echo: write error"), "{e}");
    assert_eq!(err_of("printf x >&-").2, 1);
}

#[test]
fn arithmetic() {
    assert_eq!(out("echo $((1+2*3)) $(( (1+2)*3 )) $((7%3)) $((-4/2))"), "7 9 1 -2\n");
    assert_eq!(out("x=5; echo $((x*2)) $(($x+1)); : $((x+=1)); echo $x"), "10 6\n6\n");
    let (_, e, s) = err_of("echo $((1/0)); echo after");
    assert_eq!(s, 2);
    assert!(e.contains("division by zero"), "{e}");
}

#[test]
fn command_substitution() {
    assert_eq!(out("echo $(echo a b)"), "a b\n");
    assert_eq!(out("echo \"[$(printf 'x\\n\\n')]\""), "[x]\n");
    assert_eq!(out("echo `echo back`"), "back\n");
    assert_eq!(out("x=$(echo 'a  b'); echo \"$x\""), "a  b\n");
    assert_eq!(out("set -- $(echo 1 2 3); echo $#"), "3\n");
    assert_eq!(out("x=$(false); echo $?"), "1\n");
    assert_eq!(out("echo $(echo $(echo nested))"), "nested\n");
    assert_eq!(out("X=1; y=$(X=2; echo $X); echo $X $y"), "1 2\n");
    assert_eq!(out("echo $(case a in a) echo in-case;; esac)"), "in-case\n");
}

#[test]
fn parameter_expansion() {
    let script = "u=; s=val; echo ${n:-d1} ${u:-d2} ${u-d3} ${s:-d4} ${n+a1} ${u+a2} ${u:+a3} ${s:+a4}";
    assert_eq!(out(script), "d1 d2 val a2 a4\n");
    assert_eq!(out("echo ${n:=set}; echo $n"), "set\nset\n");
    assert_eq!(out("x=hello; echo ${#x} ${#nope}"), "5 0\n");
    assert_eq!(
        out("p=/a/b/c.tar.gz; echo ${p%.*} ${p%%.*} ${p#*/} ${p##*/}"),
        "/a/b/c.tar /a/b/c a/b/c.tar.gz c.tar.gz\n"
    );
    assert_eq!(out("x='a*b'; echo ${x%\\*b} \"${x%\"*b\"}\""), "a a\n");
    let (o, e, s) = err_of("echo ${nope:?is missing}; echo after");
    assert_eq!((o.as_str(), s), ("", 2));
    assert!(e.contains("nope: is missing"), "{e}");
    assert_eq!(out("set -- 'a b' c; for i in \"$@\"; do echo \"[$i]\"; done"), "[a b]\n[c]\n");
    assert_eq!(out("set -- 'a b' c; for i in $@; do echo \"[$i]\"; done"), "[a]\n[b]\n[c]\n");
    assert_eq!(out("set -- 'a b' c; for i in \"$*\"; do echo \"[$i]\"; done"), "[a b c]\n");
    assert_eq!(out("set --; for i in \"$@\"; do echo x; done; echo \"$#\""), "0\n");
    assert_eq!(out("echo $$ $? \"${1}\""), "42 0 first\n");
    assert_eq!(out("x=${n:-\"a  b\"}; echo \"$x\"; set -- ${n:-\"a  b\"}; echo $#"), "a  b\n1\n");
}

#[test]
fn field_splitting_with_ifs() {
    assert_eq!(out("v='a:b::c'; IFS=:; for i in $v; do echo \"[$i]\"; done"), "[a]\n[b]\n[]\n[c]\n");
    assert_eq!(out("v=' a  b '; for i in $v; do echo \"[$i]\"; done"), "[a]\n[b]\n");
    assert_eq!(out("echo $SP"), "a b\n");
    assert_eq!(out("echo \"$SP\""), " a  b \n");
}

#[test]
fn globbing() {
    let fake = || {
        Fake::new("")
            .file("a.txt", "")
            .file("b.txt", "")
            .file("c.md", "")
            .file(".hidden", "")
            .dir("d")
            .file("d/x.txt", "")
    };
    assert_eq!(run_with("echo *.txt", fake()).0, "a.txt b.txt\n");
    assert_eq!(run_with("echo *", fake()).0, "a.txt b.txt c.md d\n");
    assert_eq!(run_with("echo ?.md [ab].txt", fake()).0, "c.md a.txt b.txt\n");
    assert_eq!(run_with("echo *.none", fake()).0, "*.none\n");
    assert_eq!(run_with("echo '*'.txt \"*\"", fake()).0, "*.txt *\n");
    assert_eq!(run_with("echo d/*", fake()).0, "d/x.txt\n");
    assert_eq!(run_with("echo */*.txt", fake()).0, "d/x.txt\n");
    assert_eq!(run_with("echo .*", fake()).0, ".hidden\n");
    assert_eq!(run_with("p='*.md'; echo $p \"$p\"", fake()).0, "c.md *.md\n");
    assert_eq!(run_with("for f in *.txt; do echo $f; done", fake()).0, "a.txt\nb.txt\n");
}

#[test]
fn here_documents() {
    assert_eq!(out("cat <<EOF\nhello $X\n$((1+1))\nEOF\necho after"), "hello x\n2\nafter\n");
    assert_eq!(out("cat <<'EOF'\nhello $X\nEOF"), "hello $X\n");
    assert_eq!(out("cat <<\"E\"\n$X `no`\nE"), "$X `no`\n");
    assert_eq!(out("cat <<-EOF\n\tindented\n\t\tmore\n\tEOF\necho end"), "indented\nmore\nend\n");
    assert_eq!(out("cat <<A; cat <<B\na\nA\nb\nB\n"), "a\nb\n");
    assert_eq!(out("cat <<EOF | cat\npiped\nEOF"), "piped\n");
    assert_eq!(out("while read l; do echo \"<$l>\"; done <<EOF\n1\n2\nEOF"), "<1>\n<2>\n");
    assert_eq!(out("cat <<EOF\n\\$X \\\\ \\\"q\\\"\nEOF"), "$X \\ \\\"q\\\"\n");
    assert_eq!(out("f() { cat; }; f <<EOF\nin f\nEOF"), "in f\n");
}

#[test]
fn redirections_of_compound_commands() {
    let fake = Fake::new("").file("in", "l1\nl2\n");
    let (o, _, _) = run_with(
        "while read l; do echo got $l; done < in; for i in 1 2; do echo $i; done > out; cat out",
        fake,
    );
    assert_eq!(o, "got l1\ngot l2\n1\n2\n");
    assert_eq!(out("{ echo a; echo b >&2; } 2>&1 | cat"), "a\nb\n");
}

#[test]
fn syntax_errors_and_incomplete_input() {
    use super::errors::ParseErrorKind::*;
    use super::parse;
    use super::testing::kind;
    for incomplete in [
        "if true; then",
        "if true",
        "while :; do",
        "for i in 1",
        "case x in",
        "case x in a) echo",
        "f() {",
        "{ echo",
        "(echo",
        "cat <<EOF\nabc",
        "echo $((",
    ] {
        assert!(parse(incomplete).unwrap_err().is_incomplete(), "{incomplete}");
    }
    assert_eq!(kind("fi"), UnexpectedToken("fi"));
    assert_eq!(kind("if true; fi"), UnexpectedToken("fi"));
    assert_eq!(kind("if true; then fi"), UnexpectedToken("fi"));
    assert_eq!(kind("if true; then echo; done"), UnexpectedToken("done"));
    assert_eq!(kind("for 1 in a; do :; done"), BadForName);
    assert_eq!(kind("f() echo"), BadFunctionBody);
    assert_eq!(kind("{ }"), UnexpectedToken("}"));
    assert_eq!(kind("echo a ( b"), UnexpectedToken("("));
    let (_, e, s) = err_of("echo a\nif true; then\n");
    assert_eq!(s, 2);
    assert!(e.contains("expected 'fi'"), "{e}");
}

#[test]
fn unknown_commands_and_keywords_out_of_place() {
    let (_, e, s) = err_of("nosuch");
    assert_eq!(s, 127);
    assert!(e.contains("nosuch: command not found"));
    let (_, e, s) = err_of("then");
    assert_eq!(s, 2);
    assert!(e.contains("unexpected 'then'"), "{e}");
}

#[test]
fn pipelines_and_status() {
    assert_eq!(out("echo a | cat | cat"), "a\n");
    assert_eq!(run("fail | cat").1, 0);
    assert_eq!(run("cat </dev/null | fail").1, 3);
    assert_eq!(out("echo x | while read l; do echo got $l; done"), "got x\n");
    // The last stage runs in a subshell too: variables do not come back.
    assert_eq!(out("v=1; echo 2 | read v; echo $v"), "1\n");
}

#[test]
fn assignments_and_builtin_prefixes() {
    assert_eq!(out("A=1 B=$A; echo $B"), "1\n");
    assert_eq!(out("f() { echo $V; }; V=tmp f; echo \"[$V]\""), "tmp\n[]\n");
    assert_eq!(out("x=~; echo $x"), "/home/u\n");
    assert_eq!(out("export E=1; export | cat"), "export E='1'\n");
}

#[test]
fn unsupported_builtins_say_so_by_name() {
    for name in ["alias a=b", "unalias a", "fc -l", "times"] {
        let (o, e, s) = err_of(&alloc::format!("{name}; echo $?"));
        assert_eq!(o, "2\n", "{name}");
        assert_eq!(s, 0, "{name}");
        assert!(e.contains("not supported by this shell yet"), "{name}: {e}");
    }
}

// The expected outputs below are dash's for the same scripts.

#[test]
fn trap_exit() {
    assert_eq!(run("trap 'echo bye' EXIT; echo hi"), ("hi\nbye\n".into(), 0));
    assert_eq!(run("trap 'echo bye; exit 3' EXIT; exit 1"), ("bye\n".into(), 3));
    assert_eq!(run("trap 'echo $?' EXIT; false"), ("1\n".into(), 1));
    assert_eq!(out("(trap 'echo sub' EXIT; echo in); echo out"), "in\nsub\nout\n");
    assert_eq!(out("trap 'echo t' EXIT; x=$(echo a); echo $x"), "a\nt\n");
    assert_eq!(out("trap 'echo no' EXIT; trap - EXIT; echo ok"), "ok\n");
    assert_eq!(out("trap 'echo no' 0; trap 0; trap"), "");
    // An error that ends the script still runs it.
    assert_eq!(run("trap 'echo end' EXIT; echo ${u?}; echo no"), ("end\n".into(), 2));
}

#[test]
fn trap_signals() {
    assert_eq!(out("trap '' INT; trap 'echo x' TERM; trap"), "trap -- '' INT\ntrap -- 'echo x' TERM\n");
    // A caught signal's trap runs after the command it arrived during.
    assert_eq!(out("trap 'echo caught' USR1; raise 10; echo after"), "caught\nafter\n");
    assert_eq!(out("trap 'echo t $?' TERM; false; raise 15; echo $?"), "t 0\n0\n");
    assert_eq!(run("trap '' TERM; raise 15; echo alive").0, "alive\n");
    assert_eq!(run("trap - TERM; raise 15").1, 143);
    let (o, e, s) = err_of("trap 'echo x' NOSUCH; echo $?");
    assert_eq!((o.as_str(), s), ("1\n", 0));
    assert!(e.contains("NOSUCH: bad trap"), "{e}");
    // What the system refuses is an error naming the signal.
    let (o, e, _) = err_of("trap 'echo x' KILL; echo $?");
    assert_eq!(o, "1\n");
    assert!(e.contains("trap: KILL: EINVAL"), "{e}");
    // A subshell resets caught signals, keeps ignored ones.
    assert_eq!(out("trap 'echo x' USR1; trap '' INT; (trap)"), "trap -- '' INT\n");
}

#[test]
fn umask_builtin() {
    assert_eq!(out("umask"), "0022\n");
    assert_eq!(out("umask 027; umask; umask -S"), "0027\nu=rwx,g=rx,o=\n");
    assert_eq!(
        out("umask u=rwx,g=rx,o=; umask; umask a-w; umask; umask 7; umask g+w; umask"),
        "0027\n0227\n0007\n"
    );
    let (o, e, _) = err_of("umask 999; echo $?; umask");
    assert_eq!(o, "2\n0022\n");
    assert!(e.contains("umask: Illegal number: 999"), "{e}");
    assert_eq!(err_of("umask u=q; echo $?").0, "2\n");
}

#[test]
fn command_and_type() {
    let fake = || Fake::new("").file("bin/ls", "").dir("bin");
    let with_path = |script: &str| run_with(&alloc::format!("PATH=/x:bin; {script}"), fake());
    assert_eq!(with_path("command -v echo ls if; echo $?").0, "echo\nbin/ls\nif\n0\n");
    assert_eq!(with_path("command -v nosuch; echo $?").0, "127\n");
    assert_eq!(
        with_path("f() { :; }; command -V f if : echo ls; type nosuch; echo $?").0,
        "f is a shell function\nif is a shell keyword\n: is a special shell builtin\necho is a shell builtin\nls is bin/ls\nnosuch: not found\n127\n"
    );
    // `command name` skips functions.
    assert_eq!(out("echo() { printf 'f\\n'; }; echo x; command echo y"), "f\ny\n");
    assert_eq!(out("f() { echo f; }; command f 2>/dev/null; echo $?; f"), "127\nf\n");
    assert_eq!(out("command -p printf '%s\\n' p"), "p\n");
}

#[test]
fn readonly_and_local() {
    assert_eq!(run("readonly R=1; echo $R; R=2; echo no"), ("1\n".into(), 2));
    assert_eq!(run("readonly R=1; for R in a; do echo $R; done; echo no"), ("".into(), 2));
    assert_eq!(run("readonly R=1; unset R; echo no"), ("".into(), 2));
    assert_eq!(out("readonly R=1; R=2 true 2>&1; echo no"), "");
    assert_eq!(
        out("readonly A=1 B; readonly -p; readonly"),
        "readonly A='1'\nreadonly B\nreadonly A='1'\nreadonly B\n"
    );
    assert_eq!(out("readonly R=1; read R <<EOF\nx\nEOF\necho $?"), "2\n");
    assert_eq!(out("f() { local x=2; echo $x; }; x=1; f; echo $x"), "2\n1\n");
    assert_eq!(out("f() { local x; x=5; }; unset x; f; echo \"[${x-unset}]\""), "[unset]\n");
    assert_eq!(
        out("f() { local x; echo \"[$x]\"; x=3; g; }; g() { echo g$x; }; x=1; f; echo $x"),
        "[1]\ng3\n1\n"
    );
    assert_eq!(run("local y; echo no"), ("".into(), 2));
}

#[test]
fn getopts_builtin() {
    assert_eq!(
        out("while getopts ab:c o -a -b arg -ca rest; do echo \"$o ${OPTARG-}\"; done; echo $OPTIND"),
        "a \nb arg\nc \na \n5\n"
    );
    assert_eq!(
        out("set -- -x; getopts ab o; echo \"$? $o\"; getopts :ab o; echo \"$? $o $OPTARG\""),
        "0 ?\n1 ? \n"
    );
    assert_eq!(out("set -- -b; getopts :b: o; echo \"$o $OPTARG\""), ": b\n");
    assert_eq!(out("set -- -bval x; getopts b: o; echo \"$o $OPTARG $OPTIND\""), "b val 2\n");
    assert_eq!(out("set -- -- -a; getopts a o; echo \"$? $o $OPTIND\""), "1 ? 2\n");
    assert_eq!(out("set -- -a; getopts a o; OPTIND=1; getopts a o; echo \"$? $o\""), "0 a\n");
}

#[test]
fn set_o_names() {
    assert_eq!(out("set -o errexit; echo $-; set +o errexit; echo \"[$-]\""), "e\n[]\n");
    assert_eq!(out("set -eu; set -C; echo $-"), "uCe\n");
    let listing = out("set -o noclobber; set -o");
    assert!(listing.starts_with("Current option settings\nerrexit         off\n"), "{listing}");
    assert!(listing.contains("noclobber       on\n"), "{listing}");
    assert!(out("set +o").contains("set +o errexit\nset +o noglob\n"));
    assert_eq!(run("set -o nosuch; echo no"), ("".into(), 2));
    assert_eq!(run("set -o monitor; echo no"), ("".into(), 2));
    assert_eq!(out("set +o monitor; echo yes"), "yes\n");
    assert_eq!(out("set -a; A=1; export -p"), "export A='1'\n");
    assert_eq!(out("set -n; echo no"), "");
}

#[test]
fn noclobber_and_read_write() {
    let (o, _, _) =
        run_with("set -C; echo b > f; echo $?; echo c >| f; cat f", Fake::new("").file("f", "a\n"));
    assert_eq!(o, "2\nc\n");
    assert_eq!(run_with("exec 3<> f; read x <&3; echo $x", Fake::new("").file("f", "data\n")).0, "data\n");
    assert_eq!(run_with("cat <> f", Fake::new("").file("f", "rw\n")).0, "rw\n");
    // A redirection that fails: status 2; on a special builtin it ends the script.
    assert_eq!(out("cat < nosuch; echo $?"), "2\n");
    assert_eq!(run(": < nosuch; echo no"), ("".into(), 2));
    // Targets are neither split nor globbed.
    let (_, _, s) = run_with("x='a b'; echo hi > $x", Fake::new(""));
    assert_eq!(s, 0);
}

#[test]
fn here_documents_in_substitutions_and_after_quoted_newlines() {
    assert_eq!(out("x=$(cat <<EOF\nhello\nEOF\n)\necho $x\n"), "hello\n");
    assert_eq!(out("echo \"$(cat <<EOF\na  b\nEOF\n)\"\n"), "a  b\n");
    assert_eq!(out("x=`cat <<EOF\nbq\nEOF\n`\necho $x\n"), "bq\n");
    assert_eq!(out("cat <<EOF; echo $(echo sub)\nbody\nEOF\n"), "body\nsub\n");
    assert_eq!(out("cat <<EOF && echo \"$(cat <<E2\ninner\nE2\n)\"\nouter\nEOF\n"), "outer\ninner\n");
    assert_eq!(out("cat <<EOF; echo 'x\ny'\nbody\nEOF\n"), "body\nx\ny\n");
    assert_eq!(out("f() { cat; }; f <<EOF | cat\npiped $(echo in)\nEOF\n"), "piped in\n");
    assert_eq!(out("x=$(cat <<'EOF'\n$HOME `lit`\nEOF\n); echo \"$x\"\n"), "$HOME `lit`\n");
}

#[test]
fn character_classes() {
    let script = "for w in a1 B _ 9 ' ' x-; do case $w in [[:digit:]]*) echo D;; [[:upper:]]) echo U;; [[:alpha:]][[:alnum:]]) echo AN;; [[:space:]]) echo S;; [![:alnum:]_]*) echo NA;; *) echo other;; esac; done";
    assert_eq!(out(script), "AN\nU\nother\nD\nS\nother\n");
    assert_eq!(out("x=abc123; echo ${x%%[[:digit:]]*} ${x##*[[:alpha:]]}"), "abc 123\n");
    assert_eq!(out("case a in [[:nosuch:]]) echo y;; *) echo n;; esac"), "n\n");
}

#[test]
fn printf_numbers_and_alternative_forms() {
    // dash: the converted prefix is printed, the status is 1.
    assert_eq!(run("printf '%d|%d|%d|%x\\n' 2x ' 3' 0x1g 12z"), ("2|3|1|c\n".into(), 1));
    assert_eq!(out("printf '[%#x][%#X][%#o][%#o][%#x]\\n' 0 255 0 8 0"), "[0][0XFF][0][010][0]\n");
    assert_eq!(run("printf '%d\\n' ''"), ("0\n".into(), 0));
}

#[test]
fn printf_double_dash_ends_options() {
    assert_eq!(out("printf -- '-%s-\\n' dash"), "-dash-\n");
}

#[test]
fn here_document_delimiter_is_never_expanded() {
    // (The fake sets X=x.)
    assert_eq!(out("cat <<$X\nhi $X\n$X\necho after"), "hi x\nafter\n");
    assert_eq!(out("cat <<\"$X\"\nhi $X\n$X\n"), "hi $X\n");
}

#[test]
fn getopts_survives_changed_arguments() {
    // The arguments change under getopts between two calls: no panic,
    // it starts over at the new OPTIND.
    assert_eq!(out("set -- -ab; getopts ab o; echo $o; set -- x; getopts ab o; echo \"$? $o\""), "a\n1 ?\n");
    assert_eq!(out("set -- -ab; getopts ab o; set --; getopts ab o; echo \"$? $o\""), "1 ?\n");
}
