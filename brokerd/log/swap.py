"""Which old segments a cleaned `.swap` segment replaces, kept on disk beside it.

Kafka's loader infers the replaced range from the swap itself: old segments whose base
offset is in [swap base, swap's next offset). When the group's last segments held only
superseded records, the swap ends before them (an all-superseded group gives an empty swap),
so a crash between writing the `.swap` and finishing the swap would leave those segments
in the log, uncompacted. The cleaner therefore writes `<base>.swap-group` (the base offset of
the group's last segment, as text) before the `.cleaned` -> `.swap` rename and removes it
once the swap is done; recovery replaces every old segment up to it.
"""

from __future__ import annotations

from pathlib import Path

from .checkpoints import write_atomically
from .segment import filename_prefix

SWAP_GROUP_SUFFIX = ".swap-group"


def swap_group_path(directory: Path, base_offset: int) -> Path:
    return Path(directory) / f"{filename_prefix(base_offset)}{SWAP_GROUP_SUFFIX}"


def write_swap_group(directory: Path, base_offset: int, last_base_offset: int) -> None:
    """Durably note that the swap at `base_offset` replaces segments up to `last_base_offset`."""
    write_atomically(swap_group_path(directory, base_offset), b"%d\n" % last_base_offset)


def read_swap_group(directory: Path, base_offset: int) -> int | None:
    """The base offset of the group's last segment, or None if unknown (no or bad file)."""
    try:
        return int(swap_group_path(directory, base_offset).read_text().strip())
    except (OSError, ValueError):
        return None


def remove_swap_group(directory: Path, base_offset: int) -> None:
    swap_group_path(directory, base_offset).unlink(missing_ok=True)
