"""Counting under a memory budget: a counter whose table fills more than the budget writes it as a sorted run to a
scratch folder and empties itself (Spill); the runs are then added up by a k-way merge into one sorted run
(merged_run, natively: bpe_fast._runs), which the merge engine lays out from the file (MergeEngine.from_run), so
neither the whole table nor train_bpe's arrays are ever in memory. A corpus whose tables stay under the budget
never spills and takes the path it always took. The runs' format and a worked example: bpe_fast/_runs.pxd.
"""
from __future__ import annotations

import os
import tempfile
from typing import Any

from .pretokenize import ChunkCounter
from ._types import Table

# the bytes a counter's table may fill before it spills: train_bpe counts in a thread and num_processes - 1
# workers, so N processes hold about N times this while they count (the real corpus, 330 MB, and 500 MB of web-like
# text stay under it: they take the path they took before). When none spilled, the workers' tables are then added
# into the caller's, which is not checked against the budget: with many processes each just under it, their sum
# can pass it
DEFAULT_COUNT_BUDGET = 1 << 30
BUDGET_ENV = "BPE_FAST_COUNT_BUDGET"        # bytes, to change it (tests force tiny budgets with it)


def count_budget() -> int:
    """The counters' memory budget in bytes: BPE_FAST_COUNT_BUDGET if set (a whole number >= 1), else
    DEFAULT_COUNT_BUDGET."""
    text = os.environ.get(BUDGET_ENV, "").strip()
    if not text:
        return DEFAULT_COUNT_BUDGET
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"{BUDGET_ENV} must be a whole number of bytes >= 1, got {text!r}")
    return int(text)


class Spill:
    """Where counters over the budget write their runs: a folder (made by the caller, removed with its runs when
    the caller is done: see spill_folder) and the budget. Picklable for the workers: only (folder, budget) go;
    `runs`, the paths of the runs written in this process (and those the caller gathers from its workers),
    stays behind."""

    def __init__(self, folder: str, budget: int) -> None:
        self.folder, self.budget = folder, budget
        self.runs: list[str] = []

    def __getstate__(self) -> dict[str, Any]:
        return {"folder": self.folder, "budget": self.budget}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.folder, self.budget, self.runs = state["folder"], state["budget"], []

    def over(self, counter: ChunkCounter) -> bool:
        """Whether counter's table fills more than the budget."""
        return counter.memory() > self.budget

    def write(self, counter: Any, keep: bool = False) -> str:
        """counter's pre-tokens (a ChunkCounter, or a native PretokenCounter: what has spill(fd, keep)) as a new
        run in the folder, the counter emptied (keep: keeping its memory, for one that counts on); returns the
        run's path."""
        fd, path = tempfile.mkstemp(prefix="run-", suffix=".bin", dir=self.folder)
        self.runs.append(path)          # (listed first: removed with the folder whatever happens)
        try:
            _, err = counter.spill(fd, keep)
        finally:
            os.close(fd)
        if err:
            raise OSError(err, f"{os.strerror(err)}, writing a run of counts in the temporary folder "
                               f"{self.folder} (set TMPDIR to choose another)", path)
        if keep and counter.memory() > self.budget // 2:    # its hash table alone is most of the budget: freed
            counter.arrays(release=True)
        return path

    def write_table(self, table: Table) -> None:
        """A table (tokens, offsets, counts) of distinct pre-tokens as a new run (nothing for an empty one)."""
        if len(table[2]):
            from . import _scan
            self.write(_scan.PretokenCounter(None, 0).add_arrays(*table))


def spill_folder() -> tempfile.TemporaryDirectory[str]:
    """A private folder for the runs in the usual temporary folder (TMPDIR's), removed with what it holds when the
    caller's `with` ends, an error or an interrupt too. Not /dev/shm, where the workers' tables go: the runs of a
    corpus too large for the budget are as large as its distinct pre-tokens several times over (5 GB of web-like
    text: 12 runs of 370 MB and the merged run of 2 GB), and a file in /dev/shm is memory that cannot be given
    back until it is removed, where a file on disk is page cache the system reclaims as it needs."""
    return tempfile.TemporaryDirectory(prefix="bpe_fast-runs-")


def merged_run(spill: Spill) -> tuple[str, dict[str, int]]:
    """The spill's runs added up into one run in its folder (a k-way merge, a buffer of each at a time), each run
    removed once read. Returns (its path, {"pretokens", "pretoken_bytes", "distinct_pretokens"}: as
    train.corpus_statistics gives them, "longest": the longest pre-token's bytes). A run that is not well formed
    is a ValueError naming its file."""
    from ._runs import describe, merge_runs
    fds: list[int] = []
    out_fd, out_path = tempfile.mkstemp(prefix="merged-", suffix=".bin", dir=spill.folder)
    try:
        for path in spill.runs:
            fds.append(os.open(path, os.O_RDONLY))
        bad, problem, err, write_err, distinct, pretokens, pretoken_bytes, longest = merge_runs(fds, out_fd)
    finally:
        for fd in fds:
            os.close(fd)
        os.close(out_fd)
    if 0 <= bad < len(spill.runs):
        os.unlink(out_path)
        raise ValueError(f"{spill.runs[bad]}: this run of counts {describe(problem, err)}")
    if bad >= 0:
        os.unlink(out_path)
        raise ValueError("the counts are too large: their sums overflow int64")
    if write_err:
        os.unlink(out_path)
        raise OSError(write_err, f"{os.strerror(write_err)}, writing the merged run of counts in the temporary "
                                 f"folder {spill.folder}", out_path)
    for path in spill.runs:
        os.unlink(path)
    spill.runs = [out_path]
    return out_path, {"pretokens": pretokens, "pretoken_bytes": pretoken_bytes, "distinct_pretokens": distinct,
                      "longest": longest}
