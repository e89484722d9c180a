"""``lm_eval``'s CLI with lm-eval's ``hf`` model data-parallel on CPU processes (tests only).

``accelerate launch --num_processes 2 -m lm_eval --model hf`` splits the documents
between the processes only when ``torch.cuda.device_count() > 1`` (lm-eval 0.4.13,
``HFLM.__init__``): on a machine without GPUs every process keeps rank 0 of 1, evaluates
every document, and all but one throw their work away. So a CPU test cannot reach the
code that matters under scale-out (each rank's documents, whole conversations per rank,
lm-eval's padding and its gathering of samples and metrics) with the stock model.

``hf-cpu-dp`` is lm-eval's ``hf`` model plus the one assignment lm-eval makes when it
sees several GPUs: rank and world size from the accelerator. Everything else is the real
thing: the ``lm_eval`` command line (:func:`lm_eval.__main__.cli_evaluate`), accelerate's
process group (gloo on CPU), lm-eval's distributed evaluation loop and our tasks. Run as
``ACCELERATE_USE_CPU=1 accelerate launch --multi_gpu --num_processes 2 -m
tests.support.cpu_dp --model hf-cpu-dp ...`` (accelerate's ``--cpu`` starts one process).
"""

from __future__ import annotations

from typing import Any

from lm_eval.api.registry import register_model
from lm_eval.models.huggingface import HFLM


@register_model("hf-cpu-dp")
class CpuDataParallelHFLM(HFLM):
    """lm-eval's ``hf`` model that takes its rank from accelerate on CPU too."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        accelerator = getattr(self, "accelerator", None)
        if accelerator is not None and accelerator.num_processes > 1 and self._world_size == 1:
            # What HFLM.__init__ does under `accelerate launch` when gpus > 1.
            self._rank = accelerator.local_process_index
            self._world_size = accelerator.num_processes


if __name__ == "__main__":
    from lm_eval.__main__ import cli_evaluate

    cli_evaluate()
