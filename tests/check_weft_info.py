#!/usr/bin/env python3
"""tests/check_weft_info.py: CTest's check of `weft-info --json`.

Usage: check_weft_info.py PATH-TO-weft-info

Runs `weft-info --json`, which must exit 0 and print one JSON object, and
checks its shape and its consistency: three backends, interp available,
ptx available exactly when GPUs are listed (else a reason), each GPU
plausible, the cache's bound positive and, when the cache is on, a
directory.  Prints "ok" when all hold; an assertion names what did not.
"""
import json
import subprocess
import sys

out = subprocess.run([sys.argv[1], "--json"], check=True,
                     stdout=subprocess.PIPE, text=True).stdout
d = json.loads(out)
assert len(d["version"].split(".")) == 3, d["version"]
assert set(d["backends"]) == {"interp", "cpu", "ptx"}, d["backends"]
assert d["backends"]["interp"]["available"] is True
for name, b in d["backends"].items():
    assert b["available"] or b["why"], (name, b)
ptx = d["backends"]["ptx"]
assert ptx["available"] == bool(d["gpus"]), (ptx, d["gpus"])
if not d["gpus"]:
    assert d["gpus_why"], d
for g in d["gpus"]:
    assert g["name"] and g["sm"].startswith("sm_"), g
    assert g["memory_bytes"] > 0 and g["multiprocessors"] > 0, g
    assert g["driver_version"] >= 11000, g
assert d["libdevice"]["found"] in (True, False)
assert d["libdevice"].get("path") or d["libdevice"].get("why"), d["libdevice"]
cache = d["cache"]
assert "error" in cache or cache["max_bytes"] > 0, cache
if cache.get("enabled"):
    assert cache["dir"], cache
print("ok")
