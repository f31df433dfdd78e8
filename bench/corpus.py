"""A deterministic corpus of realistic shell tool calls, as Responses API output items.

The commands are the kind a coding model issues: git, rg, ls, cat, sed, python, npm, pipes,
heredocs, loops, `cd … &&` chains, redirects, env assignments and quoting of every sort,
mostly as `shell_command` calls, some as `exec_command`.
"""

from __future__ import annotations

import json
import random

FILES = [
    "src/main.py",
    "README.md",
    "package.json",
    "tests/test_api.py",
    "lib/utils.ts",
    "Cargo.toml",
    "docs/index.md",
    "setup.cfg",
    "src/app/models.py",
    ".github/ci.yml",
]
DIRS = [".", "src", "tests", "lib", "docs", "src/app", "packages/web", "crates/core"]
PATTERNS = [
    "TODO",
    "def main",
    "import os",
    "class .*Error",
    "fn new",
    "useState",
    "async def",
    "console.log",
    "raise ValueError",
    "FIXME|XXX",
]
BRANCHES = ["main", "feature/login", "fix/issue-42", "release-1.2"]

SIMPLE = [
    "git status",
    "git status --short",
    "git diff",
    "git diff --stat",
    "git log --oneline -20",
    "git branch -a",
    "git show HEAD --stat",
    "git rev-parse HEAD",
    "git stash list",
    "ls",
    "ls -la",
    "pwd",
    "whoami",
    "uname -a",
    "python --version",
    "node --version",
    "npm test",
    "npm run build",
    "npm run lint -- --fix",
    "pytest -q",
    "cargo build",
    "cargo test --workspace",
    "make",
    "make test",
    "go test ./...",
    "ruff check .",
    "mypy src",
    "tree -L 2",
    "df -h",
    "env | sort",
    "which python3",
]


def _commands(rng: random.Random) -> list[str]:
    f, d = rng.choice(FILES), rng.choice(DIRS)
    p, b = rng.choice(PATTERNS), rng.choice(BRANCHES)
    n = rng.randint(1, 400)
    return [
        rng.choice(SIMPLE),
        f"rg -n '{p}' {d}",
        f'rg --files {d} | rg "\\.py$" | head -n {n}',
        f"cat {f}",
        f"sed -n '{n},{n + 40}p' {f}",
        f"head -n {n} {f}",
        f"ls -la {d}",
        f"git log --oneline -n {n} -- {f}",
        f"git diff {b}...HEAD -- {d}",
        f"git checkout -b {b}",
        f"git add {f} && git commit -m 'Fix {p.split()[0]} handling'",
        f"cd {d} && ls -la && cat {f}",
        "python -c 'import sys; print(sys.version)'",
        f"python -c \"import json; print(json.load(open('{f}')))\"",
        f"python -m pytest {f} -x -q -k 'test_{n}'",
        f"npm install --save-dev typescript@5.{n % 9}",
        f"find {d} -name '*.py' -newer {f} | wc -l",
        f'grep -rn "{p}" {d} | head -{n}',
        f'for f in {d}/*.py; do echo "$f"; wc -l "$f"; done',
        f"for i in $(seq 1 {n % 10 + 1}); do python bench.py --run $i; done",
        f"cat > {f}.new <<'EOF'\nline one {n}\nline two with $HOME untouched\nEOF",
        f"python - <<'PY'\nimport os\nprint(os.getcwd(), {n})\nPY",
        f"export DEBUG=1 && npm run dev -- --port {3000 + n}",
        f"FOO=bar BAZ={n} python scripts/run.py --verbose 2>&1 | tail -n 50",
        f"if [ -f {f} ]; then cat {f}; else echo missing; fi",
        f'while read -r line; do echo "$line"; done < {f}',
        f'echo "{p}" >> notes.txt && wc -l notes.txt',
        "rm -rf build/ dist/ && python -m build",
        "sudo apt-get install -y ripgrep",
        f"curl -s https://example.com/api/{n} | python -m json.tool",
        f"tar -czf backup-{n}.tgz {d}",
        f"diff -u {f} {f}.orig || true",
        "awk -F: '{print $1}' /etc/passwd | sort | uniq -c | sort -rn | head",
        f"docker build -t app:{n} . && docker run --rm app:{n} pytest",
        f"git grep -n '{p}' -- '*.py' ':!tests'",
        f"xargs -n1 echo < {f}",
        "chmod +x scripts/*.sh && ./scripts/setup.sh --env dev",
        f"git push origin {b}",
        "jq '.scripts' package.json",
        f"echo $((1 + {n})) && date +%s",
    ]


def corpus(size: int, seed: int = 20260115) -> list[str]:
    """`size` output items (raw JSON text), the same for the same seed."""
    rng = random.Random(seed)
    items: list[str] = []
    while len(items) < size:
        command = rng.choice(_commands(rng))
        i = len(items)
        if i % 5 == 4:
            args: dict[str, object] = {"cmd": command, "yield_time_ms": 1000}
            name = "exec_command"
        else:
            args = {"command": command}
            name = "shell_command"
            if rng.random() < 0.3:
                args["workdir"] = rng.choice(DIRS)
            if rng.random() < 0.3:
                args["timeout_ms"] = rng.choice([10_000, 60_000, 120_000])
            if rng.random() < 0.2:
                args["login"] = False
        items.append(
            json.dumps(
                {
                    "type": "function_call",
                    "name": name,
                    "arguments": json.dumps(args),
                    "call_id": f"call_{i}",
                }
            )
        )
    return items
