"""The job's BROKERD_RESULT and BROKERD_PROGRESS lines are read even when the JVM's output
shares them (stderr is merged into the pipe the launcher reads: a console progress bar ends
with a carriage return, so it can run into the line before or after the marker's object)."""

import pytest

from spark_jobs.launcher import Progress, json_after
from spark_jobs.session import RESULT

EXPECTED = {"rows": 40000, "offsets": {"0": [0, 20000]}}
LINE = 'BROKERD_RESULT {"offsets": {"0": [0, 20000]}, "rows": 40000}'


@pytest.mark.parametrize(
    "line",
    [
        LINE + "\n",
        LINE + "[Stage 3:=====>            (1 + 1) / 2]\r\n",
        "[Stage 3:>                 (0 + 2) / 2]\r" + LINE + "\n",
    ],
)
def test_the_result_is_read_whatever_shares_its_line(line):
    assert json_after(RESULT, line) == EXPECTED


def test_a_broken_result_is_an_error_not_a_guess():
    with pytest.raises(ValueError):
        json_after(RESULT, 'BROKERD_RESULT {"rows": 4')


def test_a_progress_line_is_read_whatever_shares_it():
    line = '[Stage 1:> (0 + 2) / 2]\rBROKERD_PROGRESS {"done": 3, "total": 8}[Stage 1:=>\r\n'
    assert Progress.parse(line) == Progress(3, 8)
