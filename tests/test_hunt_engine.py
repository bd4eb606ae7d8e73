"""Found by an adversarial hunt on the merge engine (bpe_fast/_train.pyx) and the training around it: one test
a bug, each failing before its fix; expected values come from the plain-Python oracle or by hand."""
import pytest

from bpe_fast._train import MergeEngine
from bpe_fast.train import counts_to_arrays

from train_oracle import oracle_merges


def test_an_engine_set_up_again_is_refused_not_mixed_with_its_first_words():
    # __init__ called on a built engine laid the new words out on top of the old symbols, pairs and arena:
    # {b"ab": 1} then gave 1000 merges (out-of-range positions of the first words read into the new slots).
    words = {b"hello": 3, b"world": 2, b"aaaa": 5}
    eng = MergeEngine(*counts_to_arrays(words))
    eng.run(2)
    with pytest.raises(RuntimeError, match="already"):
        eng.__init__(*counts_to_arrays({b"ab": 1}))
    eng.run(10)                               # the engine is unchanged: it goes on with its own words
    assert eng.merges() == oracle_merges(words, 12)
    eng.finish()
    with pytest.raises(RuntimeError, match="already"):
        eng.__init__(*counts_to_arrays(words))
