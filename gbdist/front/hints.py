"""Hints shared by the front end's messages (a leaf: imports nothing, so any module may
use it without loading the parser or the analysis)."""
from __future__ import annotations

# How to compare gbdist expressions; used where an ``==`` left a bool behind.
EQ_HINT = ("`==` between gbdist expressions tells whether the two are written the same "
           "(True/False at once); it does not compare their values: write gb.eq(a, b) (1 where a == b, "
           "else 0), e.g. gb.where(gb.eq(gb.mxm(A, B.T, sr), 0), 1, 0)")
