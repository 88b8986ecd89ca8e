"""The readable-number filters the pages use (sizes in IEC units, thousands separators)."""

from __future__ import annotations

from django.template import Context, Template

from dashboard.core.templatetags.readable import bytes_text, number_text


def test_sizes_in_iec_units():
    assert [bytes_text(v) for v in (0, 512, 1023)] == ["0 B", "512 B", "1,023 B"]
    assert bytes_text(1536) == "1.5 KiB"
    assert bytes_text(10 * 2**20) == "10.0 MiB"
    assert bytes_text(150 * 2**30) == "150 GiB"
    assert bytes_text(3 * 2**40) == "3.0 TiB"
    assert bytes_text(None) == "–"


def test_thousands_separators():
    assert number_text(12_345_678) == "12,345,678"
    assert number_text(-4200) == "-4,200"
    assert number_text(7) == "7" and number_text(None) == "–"


def test_filters_in_a_template():
    rendered = Template("{% load readable %}{{ n|num }} / {{ b|bytes }}").render(
        Context({"n": 1_000_000, "b": 2**30})
    )
    assert rendered == "1,000,000 / 1.0 GiB"
