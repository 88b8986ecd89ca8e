# Types of the compiled record walk (_walk.pyx, built by platform/build_extensions.py), whose
# Python twins are validation.walk_records_python and record_facts_python.
SOURCE_SHA256: str

def walk_records(buf: bytes | bytearray | memoryview, pos: int, end: int, count: int) -> None: ...
def record_facts(
    buf: bytes | bytearray | memoryview, pos: int, count: int
) -> list[tuple[int, bool]]: ...
