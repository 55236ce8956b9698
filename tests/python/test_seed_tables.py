"""Seed 000's table at full size against the issue's acceptance ratios and every published
ordering, through `pagesim.reproduce` (the same table definition as `pagesim reproduce
seed-000`).

It runs here, on the release build of the extension (about 10 s on two cores), rather than in
crates/pagesim/tests/seed000.rs with the test profile's debug assertions, where the model's
invariant checker made it take about three minutes of CI's fifteen. The numbers are the same
either way (a run's results do not depend on the build); the invariant checker still runs on
the half-size and tenth-size tables there.
"""

from __future__ import annotations

import pytest

import pagesim


@pytest.fixture(scope="module")
def seed000():
    return pagesim.reproduce("seed-000", progress=False)


def _cell(df, row: str, column: str):
    cell = df[(df["row"] == row) & (df["column"] == column)]
    assert len(cell) == 1, f"no single cell {row} / {column}"
    return cell.iloc[0]


def test_full_size_table_meets_the_acceptance_ratios(seed000):
    # The checks, each within 25% of the published ratio to HughNew.
    for row, column in [
        ("SSD Seq Anon", "HughPC0"),
        ("SSD Rand Anon", "Vanilla"),
        ("SSD Rand Shmem", "Vanilla"),
        ("SSD Rand Shmem", "Shaohua"),
        ("HDD Rand Shmem", "Vanilla"),
    ]:
        c = _cell(seed000, row, column)
        assert c["reference"] == "HughNew"
        assert abs(c["ratio"] / c["published_ratio"] - 1) <= 0.25, (
            f"{row}: {column}/HughNew {c['ratio']:.2f}, published {c['published_ratio']:.2f}"
        )
    # Not asserted: HDD Seq Anon HughPC0/HughNew, 2.6 against the seed's 1.58 (docs/model.md,
    # "Seed 000"; docs/sensitivity.md).


def test_full_size_table_keeps_every_published_ordering(seed000):
    """Every pair of columns that the published table shows more than 10% apart keeps its
    order; all violations are listed in one failure."""
    broken, pairs = [], 0
    for row, cells in seed000[seed000["published"].notna()].groupby("row", sort=False):
        cols = list(zip(cells["column"], cells["published"], cells["value"]))
        for i, (a, pa, va) in enumerate(cols):
            for b, pb, vb in cols[i + 1 :]:
                if max(pa, pb) <= 1.1 * min(pa, pb):
                    continue
                pairs += 1
                if not ((pa < pb and va < vb) or (pa > pb and va > vb)):
                    broken.append(f"{row}: {a} {va} vs {b} {vb} (published {pa} vs {pb})")
    assert pairs >= 30, f"only {pairs} pairs compared: did the table lose its published values?"
    assert not broken, "orderings broken:\n" + "\n".join(broken)


def test_vanilla_readahead_is_mostly_unused_on_random_faults(seed000):
    # Why Vanilla loses on random faults: most of what it reads ahead is never used.
    for row in ["SSD Rand Anon", "SSD Rand Shmem"]:
        c = _cell(seed000, row, "Vanilla")
        assert c["vmstat.swap_ra"] > 3 * c["vmstat.swap_ra_hit"], f"{row}: Vanilla's readahead was mostly used"
