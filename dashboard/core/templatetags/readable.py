"""Numbers people can read: sizes in KiB/MiB/GiB (IEC, as Kafka's tools count them) and
counts with thousands separators. The exact value stays in the markup (title, data-bytes)."""

from __future__ import annotations

from django import template

register = template.Library()

UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def bytes_text(value) -> str:
    """1536 -> "1.5 KiB"; below 1 KiB the bytes themselves ("512 B")."""
    try:
        size = float(value)
    except (TypeError, ValueError):
        return "–" if value is None else str(value)
    unit = 0
    while abs(size) >= 1024 and unit < len(UNITS) - 1:
        size /= 1024
        unit += 1
    if unit == 0:
        return f"{int(size):,} B"
    return f"{size:,.1f} {UNITS[unit]}" if abs(size) < 100 else f"{size:,.0f} {UNITS[unit]}"


def number_text(value) -> str:
    """12345678 -> "12,345,678"; None -> "–"."""
    if value is None or value == "":
        return "–"
    try:
        return f"{int(value):,}"
    except (TypeError, ValueError):
        return str(value)


def sub_bytes(total, usable) -> str:
    """A disk's used bytes (total minus usable), readable."""
    try:
        return bytes_text(int(total) - int(usable))
    except (TypeError, ValueError):
        return "–"


def bytes_rate(value) -> str:
    """1536.0 -> "1.5 KiB/s"; None -> "–"."""
    return "–" if value is None or value == "" else f"{bytes_text(value)}/s"


def records_rate(value) -> str:
    """1234.56 -> "1,234.6 records/s" (whole numbers from 100 on); None -> "–"."""
    try:
        rate = float(value)
    except (TypeError, ValueError):
        return "–"
    return f"{rate:,.1f} records/s" if 0 < abs(rate) < 100 else f"{rate:,.0f} records/s"


register.filter("bytes", bytes_text)
register.filter("bytes_per_s", bytes_rate)
register.filter("records_per_s", records_rate)
register.filter("sub_bytes", sub_bytes)
register.filter("num", number_text)
