#!/usr/bin/env python3
"""Fails when code outside the failure table picks a failure status code.

Usage: statuscodes.py [DIR...]   (from the repository root; default: the
crates' src directories)

Failures are answered through one table (core/src/failure.rs, README
"Architecture"): code raises a domain error or names a `Reason`, never a
status code. This check flags, outside that file and outside tests:
  - `StatusCode::<NAME>` for any code but the success ones (200, 201, 202,
    204, 101, 206, 304);
  - a numeric 4xx/5xx literal on a line that speaks of a code or status
    (`code: Some(422)`, `s.code == 403`, `WatchLine::end(503, …)`).
To compare with a code read from an answer, use `Reason::X.code_u16()`.
Comments and string literals are ignored; so are test modules
(`#[cfg(test)]`) and test files (`tests.rs`, `*_tests.rs`, `tests/`).
"""

import pathlib
import re
import sys

DIRS = [
    "core/src",
    "transport/src",
    "apiserver/src",
    "console/src",
    "dashboard/src",
    "kruntimes-console/src",
]
ALLOWED = {"core/src/failure.rs"}
SUCCESS = {
    "OK",
    "CREATED",
    "ACCEPTED",
    "NO_CONTENT",
    "SWITCHING_PROTOCOLS",
    "PARTIAL_CONTENT",
    "NOT_MODIFIED",
}

NAMED = re.compile(r"\bStatusCode::([A-Z][A-Z_0-9]*)\b")
NUMBER = re.compile(r"(?<![\w.])([45]\d\d)(?![\w.])")
SPEAKS_OF_CODE = re.compile(r"code|status|WatchLine", re.IGNORECASE)
STRING = re.compile(r'b?"(?:[^"\\]|\\.)*"')
CHAR = re.compile(r"'(?:[^'\\]|\\.)'")


def code_part(line: str) -> str:
    """The line without string and char literals and without a comment."""
    line = STRING.sub('""', line)
    line = CHAR.sub("' '", line)
    cut = line.find("//")
    return line if cut < 0 else line[:cut]


def is_test_file(path: pathlib.Path) -> bool:
    name = path.name
    return name == "tests.rs" or name.endswith("_tests.rs") or "tests" in path.parts[:-1]


def lines_outside_tests(text: str):
    """(number, code) of each line that is not in a `#[cfg(test)]` item."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        code = code_part(lines[i])
        if code.strip() == "#[cfg(test)]":
            # Skip the item that follows: to its `;` or its closing brace.
            depth, opened = 0, False
            i += 1
            while i < len(lines):
                c = code_part(lines[i])
                depth += c.count("{") - c.count("}")
                opened = opened or "{" in c
                i += 1
                if (opened and depth <= 0) or (not opened and c.rstrip().endswith(";")):
                    break
            continue
        yield i + 1, code
        i += 1


def check(path: pathlib.Path, rel: str) -> list[str]:
    bad = []
    for number, code in lines_outside_tests(path.read_text()):
        for m in NAMED.finditer(code):
            if m.group(1) not in SUCCESS:
                bad.append(f"{rel}:{number}: StatusCode::{m.group(1)}")
        if SPEAKS_OF_CODE.search(code):
            for m in NUMBER.finditer(code):
                bad.append(f"{rel}:{number}: status code {m.group(1)}")
    return bad


def main() -> int:
    dirs = sys.argv[1:] or DIRS
    bad = []
    files = 0
    for d in dirs:
        for path in sorted(pathlib.Path(d).rglob("*.rs")):
            rel = path.as_posix()
            if rel in ALLOWED or is_test_file(path):
                continue
            files += 1
            bad += check(path, rel)
    if bad:
        print("failure status codes chosen outside core/src/failure.rs (raise a domain")
        print("error mapped to a Reason, or compare with Reason::X.code_u16()):")
        for b in bad:
            print("  " + b)
        return 1
    print(f"{files} files: no failure status code outside the failure table")
    return 0


if __name__ == "__main__":
    sys.exit(main())
