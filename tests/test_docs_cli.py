"""Every ``seer-env`` command the docs show is one the CLI takes: the command
lines of the README's, the site's and the env pages' shell blocks parse with
the CLI's own parser (usage synopses, ``[-h] ...``, aside), and the commands
named in running text (```seer-env bench company```) exist with the options
they name.  The site once sent readers to ``seer-env bench parallelism``,
which is ``seer-env trace ENV --parallelism``."""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import shlex

import pytest

from seer_env.cli import build_parser
from tests.test_docs_examples import _FENCE, PAGES, ROOT  # the pages the docs tests read

_INLINE = re.compile(r"`(seer-env [^`]+)`")
#: a placeholder or a synopsis: ENV, PATH, [--steps N], ..., <name>, a|b
_PLACEHOLDER = re.compile(r"\[|\.\.\.|\b[A-Z]{2,}\b|<|\|")


def _commands() -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _parse_error(args: list[str]) -> str | None:
    """argparse's complaint about ``seer-env ARGS`` (None: it parses)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            build_parser().parse_args(args)
        except SystemExit as exc:
            if exc.code:
                return err.getvalue().strip().splitlines()[-1]
    return None


def block_lines() -> list[tuple[str, int, str]]:
    """(page, line, command line) of every ``seer-env`` line of a shell block."""
    out = []
    for page in PAGES:
        text = page.read_text()
        for m in _FENCE.finditer(text):
            if m.group("lang").strip() not in ("console", "bash", "sh", "shell", ""):
                continue
            first = text[:m.start()].count("\n") + 2
            for k, line in enumerate(m.group("body").splitlines()):
                s = line.strip().removeprefix("$ ")
                if s.startswith("seer-env ") and "[-h]" not in s:
                    out.append((str(page.relative_to(ROOT)), first + k, s.split(" #")[0]))
    return out


def inline_mentions() -> list[tuple[str, int, str]]:
    """(page, line, text) of every ``seer-env ...`` code span of running text."""
    out = []
    for page in PAGES:
        text = page.read_text()
        for m in _INLINE.finditer(text):
            out.append((str(page.relative_to(ROOT)), text[:m.start()].count("\n") + 1,
                        " ".join(m.group(1).split())))
    return out


def test_the_pages_show_commands() -> None:
    # the collectors find what the pages hold (a test that reads nothing passes)
    assert len(block_lines()) >= 30 and len(inline_mentions()) >= 80


@pytest.mark.parametrize("page,line,cmd", block_lines(),
                         ids=[f"{p}:{n}" for p, n, _ in block_lines()])
def test_every_command_line_of_the_docs_parses(page: str, line: int, cmd: str) -> None:
    assert _parse_error(shlex.split(cmd)[1:]) is None, (page, line, cmd,
                                                        _parse_error(shlex.split(cmd)[1:]))


def test_every_command_named_in_the_text_exists_with_its_options() -> None:
    commands = _commands()
    bench = next(a for a in commands["bench"]._actions if a.dest == "what")
    wrong = []
    top = build_parser()._option_string_actions
    for page, line, text in inline_mentions():
        words = text.split()[1:]
        if words[0].endswith(":") or re.fullmatch(r"[A-Z]+", words[0]):
            continue  # a message it prints ("seer-env check: ..."), or a placeholder
        if words[0].startswith("-"):
            wrong += [(page, line, text, f"no option {w}") for w in words
                      if w.startswith("-") and w not in top]
            continue
        for cmd in words[0].split("/"):  # seer-env build/info/check
            if cmd not in commands:
                wrong.append((page, line, text, f"no command {cmd!r}"))
                continue
            options = commands[cmd]._option_string_actions
            flags = [w.split("=")[0] for w in words[1:] if w.startswith("-")]
            wrong += [(page, line, text, f"{cmd} has no option {f}") for f in flags
                      if f not in options]
            what = [w for w in words[1:2] if not w.startswith("-")]
            if cmd == "bench" and what and not _PLACEHOLDER.search(what[0]) \
                    and what[0] not in bench.choices:
                wrong.append((page, line, text, f"bench has no {what[0]!r}"))
    assert not wrong, "\n".join(map(str, wrong))


def test_a_command_the_cli_lacks_is_caught() -> None:
    assert _parse_error(["bench", "parallelism"]) is not None
    assert _parse_error(["trace", "pcs_v0", "--parallelism"]) is None


def test_every_check_report_the_docs_show_lists_the_checkers_passes() -> None:
    """A report copied into a page (``seer-env check``'s listing, or
    ``rep.passes`` printed) names every pass of `seer_env.check.PASSES`, in
    order: the pages showed 4 of 8 and 7 of 8 after passes were added."""
    from seer_env.check import PASSES

    names = [p.name for p in PASSES]
    listings, printed = [], []
    for page in PAGES:
        text = page.read_text()
        for m in _FENCE.finditer(text):
            body, where = m.group("body"), (page.name, text[:m.start()].count("\n") + 2)
            for part in body.split("contract check of model")[1:]:
                rows = re.findall(r"^  ([a-z]+) +(?:ok|finding|skipped|compared)", part, re.M)
                listings.append((where, rows))
            for lst in re.findall(r"^\[\('isolation'.*\]$", body, re.M):
                printed.append((where, re.findall(r"\('([a-z]+)', '", lst)))
    assert listings and printed
    wrong = [(w, rows) for w, rows in listings + printed if rows != names]
    assert not wrong, (names, wrong)
