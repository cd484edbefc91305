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
    assert_eq!(out("export E=1; export | cat"), "export E=1\n");
}

#[test]
fn unsupported_builtins_say_so_by_name() {
    for name in ["trap 'echo x' EXIT", "umask 022", "command -v ls", "readonly X=1", "local x"] {
        let (o, e, s) = err_of(&alloc::format!("{name}; echo $?"));
        assert_eq!(o, "2\n", "{name}");
        assert_eq!(s, 0, "{name}");
        assert!(e.contains("not supported by this shell yet"), "{name}: {e}");
    }
}
