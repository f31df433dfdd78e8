"""Forbidden-rule bypasses of issue 14 (point 6): scripts that must never run unasked."""

from __future__ import annotations

# `rm -rf` and `git push` forbidden; the turn is on-request + workspace-write.
BYPASS_RULES = """
prefix_rule(pattern=["rm", ["-rf", "-fr", "-r", "-f"]], decision="forbidden")
prefix_rule(pattern=["git", "push"], decision="forbidden")
"""

# Each script runs as `bash -lc SCRIPT` (what shell_command and exec_command project).
BYPASS_SCRIPTS: tuple[str, ...] = (
    # backslash-escaped words
    r"\rm -rf /tmp/x",
    r"r\m -rf /tmp/x",
    r"rm \-rf /tmp/x",
    r"git pu\sh origin main",
    r"\git push",
    # git global options before the subcommand
    "git -C . push",
    "git --git-dir=.git push",
    "git --git-dir .git push",
    "git -c k=v push",
    "git -c user.name=x -C . push origin main",
    "git --work-tree=. push",
    "git --namespace=x push",
    "git --no-pager push",
    "git -P push",
    "git --bare push",
    "git --exec-path=/usr/lib/git-core push",
    "git --no-replace-objects --literal-pathspecs push",
    # nested shells
    'sh -c \'sh -c "sh -c \\"sh -c \\\\\\"sh -c \\\\\\\\\\\\\\"rm -rf /tmp/x\\\\\\\\\\\\\\"\\\\\\"\\""\'',
    "bash -c 'bash -c \"rm -rf /tmp/x\"'",
    "zsh -c 'git push'",
    "dash -c 'rm -rf /tmp/x'",
    "sh -lc 'git -C . push'",
    # variables and substitutions
    "R=rm; $R -rf /tmp/x",
    'R=rm; "$R" -rf /tmp/x',
    "export R=rm; ${R} -rf /tmp/x",
    "$(echo rm) -rf /tmp/x",
    "`echo rm` -rf /tmp/x",
    "eval rm -rf /tmp/x",
    "eval 'rm -rf /tmp/x'",
    'eval "git push"',
    "G=git; $G push",
    "x=$(rm -rf /tmp/x)",
    "echo `rm -rf /tmp/x`",
    # programs that run other programs
    "find . -exec rm -rf {} +",
    "find . -name '*.o' -exec rm -rf {} \\;",
    "find . -print0 | xargs -0 rm -rf",
    "xargs rm -rf < list",
    "setsid rm -rf /tmp/x",
    "ionice -c 3 rm -rf /tmp/x",
    "ionice -c3 -n7 git push",
    "flock /tmp/lock rm -rf /tmp/x",
    "flock -w 5 /tmp/lock git push",
    "script -q -c 'rm -rf /tmp/x' /dev/null",
    "script -qc 'git push' /dev/null",
    "chrt -i 0 rm -rf /tmp/x",
    "taskset -c 0 rm -rf /tmp/x",
    "taskset 0x1 git push",
    "nice -n 19 rm -rf /tmp/x",
    "nohup git push",
    "timeout 5 rm -rf /tmp/x",
    "stdbuf -oL git push",
    "env -i rm -rf /tmp/x",
    "env A=1 git -C . push",
    "sudo -u root rm -rf /tmp/x",
    "command rm -rf /tmp/x",
    "exec rm -rf /tmp/x",
    "time git push",
    "nice setsid ionice -c3 rm -rf /tmp/x",
    # scripts fed to a shell
    "bash <<EOF\nrm -rf /tmp/x\nEOF",
    "sh <<'EOF'\ngit push\nEOF",
    "echo 'rm -rf /tmp/x' | bash",
    "printf 'git push' | sh",
    "bash < /tmp/script.sh; rm -rf /tmp/x",
    # unparseable or odd scripts
    "rm -rf /tmp/x\n(",
    "if true; then rm -rf /tmp/x; fi",
    "{ git push; }",
    "true && rm -rf /tmp/x",
    "/bin/rm -rf /tmp/x",
    "/usr/bin/git push",
    "'rm' -rf /tmp/x",
    '"git" "push"',
)
