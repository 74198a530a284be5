"""The training engine: one run = a config in, a stream of events out (`Trainer().run(config, emit, stop)`).

trainer.py is the loop, read top to bottom; plan.py which first steps stay off the steady figures; steps.py the
session and one optimizer step; compiling.py explain, compile, the fallback to eager and the final compile report;
state.py what a run knows. Each instrument that watches the loop is a module of its own in instruments/ (base.py
is their interface, standard.py the list a run has); a caller picks a run's with `Trainer(instruments=...)`."""

from .plan import CUDA_WARMUP_STEPS, WarmupPlan, cudagraph_thread_notice, warmup_plan
from .state import CompileFailure, StopFlag
from .steps import Session, lr_schedule, make_optimizer, rank_seed, train_step
from .instruments.standard import Instruments, standard_instruments
from .trainer import FLUSH_SECONDS, SaveCheckpoint, TrainedModel, Trainer

__all__ = ["CUDA_WARMUP_STEPS", "CompileFailure", "FLUSH_SECONDS", "Instruments", "SaveCheckpoint", "Session",
           "StopFlag", "TrainedModel", "Trainer", "WarmupPlan", "cudagraph_thread_notice", "lr_schedule",
           "make_optimizer", "rank_seed", "standard_instruments", "train_step", "warmup_plan"]
