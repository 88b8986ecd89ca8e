"""The job's BROKERD_RESULT line is found even when the JVM's output shares it (stderr is
merged into the pipe the launcher reads: a console progress bar ends with a carriage
return, so it can run into the line before or after the result)."""

import pytest

from spark_jobs.launcher import result_of

RESULT = {"rows": 40000, "offsets": {"0": [0, 20000]}}
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
    assert result_of(line) == RESULT


def test_a_broken_result_is_an_error_not_a_guess():
    with pytest.raises(ValueError):
        result_of('BROKERD_RESULT {"rows": 4')
