"""One rank of a two-process run inside this process, for the tests of what the engine does per rank
(tests/core/test_engine.py, test_train_accuracy.py) without torchrun."""

from __future__ import annotations


class OneOfTwoRanks:
    """What the engine needs of a rank of a two-process run, without the other process."""

    @staticmethod
    def make(rank: int):
        from workbench.core.domain.distributed import Distributed

        class Rank(Distributed):
            def wrap(self, model):
                return model

            def mean(self, tensor):
                return tensor

            def sum(self, tensor):
                return tensor * 2

            def gather(self, value):
                return [value, value]

        return Rank(rank=rank, world_size=2)
