"""The CUDA backend's on-disk module cache (gbdist/backends/cuda/cache.py): an entry is
served only when its record vouches for a whole binary (a damaged cubin can crash the
driver rather than be refused); writes are atomic and leave nothing behind on failure.
The compile-and-load path itself is in tests/backends/test_cuda_cache_gpu.py."""
import hashlib
import json

import pytest

from gbdist.backends.cuda import cache


def _entry(folder, digest, data=b"\x7fELF binary", names=("k<int>",)):
    cache._write(folder / f"{digest}.bin", data)
    record = {"names": {n: f"_Z{i}" for i, n in enumerate(names)}, "size": len(data),
              "sha256": hashlib.sha256(data).hexdigest()}
    cache._write(folder / f"{digest}.json", json.dumps(record).encode())
    return record


def test_a_whole_entry_is_served(tmp_path):
    record = _entry(tmp_path, "d1")
    path, mapping = cache._read(tmp_path, "d1", ("k<int>",))
    assert path == tmp_path / "d1.bin" and mapping == record["names"]
    assert not list(tmp_path.glob(".tmp-*"))


@pytest.mark.parametrize("damage", ["truncated", "flipped", "record", "names", "missing"])
def test_a_damaged_entry_is_not_served(tmp_path, damage):
    _entry(tmp_path, "d1")
    binary, record = tmp_path / "d1.bin", tmp_path / "d1.json"
    if damage == "truncated":
        binary.write_bytes(binary.read_bytes()[:4])
    elif damage == "flipped":
        data = bytearray(binary.read_bytes())
        data[2] ^= 1
        binary.write_bytes(bytes(data))
    elif damage == "record":
        record.write_text("{not json")
    elif damage == "names":
        _entry(tmp_path, "d1", names=("other<int>",))
    else:
        binary.unlink()
    assert cache._read(tmp_path, "d1", ("k<int>",)) is None


def test_a_failed_write_leaves_nothing(tmp_path, monkeypatch):
    def broken_fsync(fd):
        raise OSError("disk full")
    monkeypatch.setattr(cache.os, "fsync", broken_fsync)
    with pytest.raises(OSError):
        cache._write(tmp_path / "x.bin", b"data")
    assert list(tmp_path.iterdir()) == []
