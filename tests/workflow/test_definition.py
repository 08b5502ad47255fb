"""Loading a workflow definition file: a file that does not load is one line with its file:line."""
from __future__ import annotations

import pytest

from lipspark.cli import main
from lipspark.errors import WorkflowError
from lipspark.workflow import load_definition


@pytest.mark.parametrize("text, line, what", [
    ("x = 1\ny = (\n", 2, "SyntaxError: '(' was never closed"),
    ("import os\nimport no_such_module_here\n", 2, "ModuleNotFoundError: No module named 'no_such_module_here'"),
    ("def f():\n    return 1 / 0\n\nf()\n", 2, "ZeroDivisionError: division by zero"),  # the innermost line of the file
])
def test_a_definition_that_does_not_load_is_one_line_with_file_and_line(tmp_path, capsys, text, line, what):
    path = tmp_path / "wf.py"
    path.write_text(text)
    with pytest.raises(WorkflowError) as err:
        load_definition(str(path))
    assert str(err.value) == f"{path}:{line}: the workflow definition does not load: {what}"
    assert main(["run", str(path), "--graph", str(tmp_path / "g")]) == 2
    out = capsys.readouterr().err.strip().splitlines()
    assert out == [f"lipspark: error: {path}:{line}: the workflow definition does not load: {what}"]
    assert not (tmp_path / "g").exists()
