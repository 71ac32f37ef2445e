"""`grade selfcheck` reaches the self-check through the entry-point group grade.commands (grader.cli), never an
import of reference_kernels: from the installed metadata, from the tree's own pyproject.toml when the metadata
lacks it, and with a one-line reason (exit 4) when neither has it."""

from __future__ import annotations

import argparse
import importlib.metadata
import tomllib

from conftest import ROOT
from grader import cli
from grader.core.errors import EXIT_GRADER

VALUE = "reference_kernels.selfcheck:command"


def test_the_trees_pyproject_names_the_selfcheck():
    found = cli.tree_entry_points(ROOT)
    assert found["selfcheck"].value == VALUE and found["selfcheck"].group == cli.COMMAND_GROUP


def test_the_entry_point_gives_the_selfchecks_parser_and_run():
    from reference_kernels import selfcheck

    own, run = cli.command_entry_point("selfcheck").load()()
    assert run is selfcheck.run and own.format_help() == selfcheck.parser().format_help()


def test_the_trees_entry_point_loads_and_is_the_one_grade_uses():
    """In every checkout, installed or not: the entry point pyproject.toml declares (read here with tomllib, not
    with grader.cli's reader) loads the self-check's parser and run; the installed metadata names no other (an
    install made before the group existed names none); and the one `grade selfcheck` uses is that one."""
    from reference_kernels import selfcheck

    points = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["entry-points"]
    tree = importlib.metadata.EntryPoint(name="selfcheck", value=points[cli.COMMAND_GROUP]["selfcheck"],
                                         group=cli.COMMAND_GROUP)
    assert tree.value == VALUE
    own, run = tree.load()()
    assert run is selfcheck.run and own.format_help() == selfcheck.parser().format_help()
    installed = [e.value for e in importlib.metadata.entry_points(group=cli.COMMAND_GROUP, name="selfcheck")]
    assert installed in ([], [VALUE]), installed
    used = cli.command_entry_point("selfcheck")
    assert used is not None and (used.name, used.value, used.group) == (tree.name, tree.value, tree.group)


def test_a_checkout_not_installed_reads_its_own_pyproject(monkeypatch):
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda **_: [])
    assert cli.command_entry_point("selfcheck").value == VALUE


def test_only_this_projects_pyproject_is_read(tmp_path):
    text = '[project]\nname = "{}"\n[project.entry-points."grade.commands"]\nselfcheck = "x.y:z"\n'
    (tmp_path / "pyproject.toml").write_text(text.format("another-project"))
    assert cli.tree_entry_points(tmp_path) == {}
    (tmp_path / "pyproject.toml").write_text(text.format(cli.DISTRIBUTION))
    assert cli.tree_entry_points(tmp_path)["selfcheck"].value == "x.y:z"
    (tmp_path / "pyproject.toml").write_text("[project\n")
    assert cli.tree_entry_points(tmp_path) == {}
    assert cli.tree_entry_points(tmp_path / "missing") == {}


def test_without_the_entry_point_selfcheck_says_why_and_exits_4(monkeypatch, capsys):
    monkeypatch.setattr(cli, "command_entry_point", lambda name, root=None: None)
    assert cli.main(["selfcheck"]) == EXIT_GRADER
    err = capsys.readouterr().err
    assert "grade selfcheck: not available in this install" in err and "grade.commands" in err


def test_an_entry_point_that_does_not_import_says_why(monkeypatch, capsys):
    broken = importlib.metadata.EntryPoint(name="selfcheck", value="no_such_module_here:command",
                                           group=cli.COMMAND_GROUP)
    monkeypatch.setattr(cli, "command_entry_point", lambda name, root=None: broken)
    own, run = cli._entry_point_command("selfcheck")()
    assert run(argparse.Namespace(), own) == EXIT_GRADER
    assert "does not import" in capsys.readouterr().err and own.prog == "grade selfcheck"
